/**
 * GC pauses as the bench's probes record them (bench/latency-probe.mjs, bench/queue-probe.mjs):
 * perf_hooks 'gc' entries, each [start ms (performance.now's scale), duration ms, kind] (V8's
 * kind: 1 scavenge, 2 mark-compact, 4 incremental marking, 8 weak callbacks). Not part of the proxy.
 * @param {() => boolean} isRecording whether a pause is kept (e.g. once the warm-up is over).
 * @returns {Array<[number, number, number]>} the array the pauses are appended to, as they come.
 */
import { PerformanceObserver } from 'node:perf_hooks';

export function recordGcPauses(isRecording) {
  const gcs = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (isRecording()) gcs.push([e.startTime, e.duration, e.detail?.kind ?? e.kind]);
  }).observe({ entryTypes: ['gc'] });
  return gcs;
}
