/**
 * The politeness assertions of the four-host scenarios: request starts at a
 * Crawl-delay origin, as the proxy sent them (its access log) and as the
 * origin saw them. Nothing here reads a wall-clock rate, so a loaded machine
 * cannot fail them: load only makes starts later, never closer together.
 * That starts come no later than the delay requires (no minimum rate) is
 * pinned on the fake clock by test/pacing/pacer.test.ts.
 */
import assert from 'node:assert/strict';
import { SEND_LATENCY_TOLERANCE_MS } from '../../src/pacing/pacer.js';

/** One request start: the request's path and query, and when it started (epoch ms). */
export interface RequestStart {
  path: string;
  atMs: number;
}

/** The starts of requests to `origin` under `pathPrefix`, from the proxy's access-log lines (`url`, `upstreamStartedAt`). */
export function sentStarts(logs: ReadonlyArray<Record<string, unknown>>, origin: string, pathPrefix: string): RequestStart[] {
  return logs
    .filter((l) => typeof l['url'] === 'string' && l['url'].startsWith(origin + pathPrefix))
    .map((l) => ({ path: (l['url'] as string).slice(origin.length), atMs: Date.parse(String(l['upstreamStartedAt'])) }));
}

/**
 * The starts several proxy processes logged (`sentStarts` of each), put on the first one's clock.
 * Each process's log clock is the host's monotonic clock plus its own constant, which it logs in
 * its `listening` line (`epochAheadOfMonotonicMs`); the constants differ by how far the wall clock
 * was slewed between the processes' starts (5 ms a second for a while on this project's test
 * machine, session 28: a fleet's instances started seconds apart then log one instant that many
 * times 5 ms apart). Comparing one instance's start with another's needs one clock.
 * @throws Error when a process's logs have no `listening` line with the value.
 */
export function onFirstProcessClock(processes: ReadonlyArray<{ logs: ReadonlyArray<Record<string, unknown>>; starts: readonly RequestStart[] }>): RequestStart[] {
  const aheadOf = (logs: ReadonlyArray<Record<string, unknown>>): number => {
    const value = logs.find((l) => l['event'] === 'listening')?.['epochAheadOfMonotonicMs'];
    if (typeof value !== 'number') throw new Error('no epochAheadOfMonotonicMs in a listening line');
    return value;
  };
  const firstMs = processes.length === 0 ? 0 : aheadOf(processes[0]!.logs);
  return processes.flatMap((p) => {
    const shiftMs = firstMs - aheadOf(p.logs);
    return p.starts.map((s) => ({ path: s.path, atMs: s.atMs + shiftMs }));
  });
}

/** The starts of requests under `pathPrefix` as an origin recorded them. */
export function seenStarts(hits: ReadonlyArray<{ url: string; atMs: number }>, pathPrefix: string): RequestStart[] {
  return hits.filter((h) => h.url.startsWith(pathPrefix)).map((h) => ({ path: h.url, atMs: h.atMs }));
}

/** The access log's `upstreamStartedAt` is an ISO time: whole milliseconds, the fraction dropped. */
const LOG_PRECISION_MS = 1;

/**
 * How far the origins' process clock may read behind the proxy's, ms. Both
 * read the monotonic clock on the epoch scale (src/clock.ts), whose origin
 * each process measures against the wall clock at start, to well under a
 * millisecond unless the process was preempted at every sample; they differ
 * by that and by how far the system clock was slewed between the two process
 * starts. (Node's own `performance.timeOrigin`, used before, was seen 6 ms off
 * on a loaded machine, every request at once: a clock offset, not an early send.)
 * The spacing itself is asserted on the proxy's own clock (in a fleet, its
 * instances' clocks), not this one.
 */
const CROSS_PROCESS_CLOCK_SKEW_MS = 20;

/**
 * Asserts that the starts at a Crawl-delay origin were polite:
 * - counts: every request the proxy sent reached the origin exactly once, and
 *   the origin saw nothing else;
 * - as sent (the proxy's access log, the moment the request head is handed to
 *   the connection): any k consecutive gaps add up to at least k x `delayMs`,
 *   less the pacer's dispatch tolerance and the log's precision. With k = 1
 *   that is the smallest gap, with all the gaps the rate ceiling
 *   (1000 / `delayMs` per second): deterministic, given the pacer's contract;
 * - as seen: the origin saw no request before the proxy logged sending it, so
 *   the spacing in the log is the spacing the origin got (a proxy that sent
 *   early and logged late, or sent in a burst, fails here). How late the
 *   origin saw them is scheduling, and is not judged.
 */
export function assertStartSpacing(sent: readonly RequestStart[], seen: readonly RequestStart[], delayMs: number): void {
  const sentAt = new Map(sent.map((s) => [s.path, s.atMs]));
  assert.equal(sentAt.size, sent.length, 'a path was sent twice');
  assert.deepEqual(seen.map((s) => s.path).sort(), [...sentAt.keys()].sort(), 'the origin saw exactly the requests the proxy sent');

  const starts = sent.map((s) => s.atMs).sort((a, b) => a - b);
  const slackMs = SEND_LATENCY_TOLERANCE_MS + LOG_PRECISION_MS;
  let worst = { shortMs: -Infinity, from: 0, to: 0 };
  // Every window of k gaps, shortest windows first, so a single short gap is reported as itself.
  for (let k = 1; k < starts.length; k++) {
    for (let i = 0; i + k < starts.length; i++) {
      const shortMs = k * delayMs - (starts[i + k]! - starts[i]!);
      if (shortMs > worst.shortMs) worst = { shortMs, from: i, to: i + k };
    }
  }
  if (process.env['DEBUG_GAPS']) console.log('sent gaps', starts.slice(1).map((t, i) => (t - starts[i]!).toFixed(0)).join(' '));
  assert.ok(
    worst.shortMs <= slackMs,
    `starts ${worst.from}..${worst.to} as sent span ${(starts[worst.to]! - starts[worst.from]!).toFixed(0)} ms, ` +
      `${worst.shortMs.toFixed(1)} ms short of ${worst.to - worst.from} x ${delayMs} ms`,
  );

  const early = seen
    .map((s) => ({ path: s.path, earlyMs: sentAt.get(s.path)! - s.atMs }))
    .filter((s) => s.earlyMs > CROSS_PROCESS_CLOCK_SKEW_MS);
  if (process.env['DEBUG_GAPS']) console.log('seen - sent, ms', seen.map((s) => (s.atMs - sentAt.get(s.path)!).toFixed(1)).join(' '));
  assert.deepEqual(early, [], 'requests the origin saw before the proxy logged sending them');
}
