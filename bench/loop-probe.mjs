/**
 * A probe preloaded into a process under the proxy bench, to find what holds
 * a request up (the p99 stall of issue #11). Not part of the proxy.
 *
 *   BENCH_PROXY_NODE_OPTIONS="--import=./bench/loop-probe.mjs" LOOP_PROBE_OUT=/tmp/probe \
 *     BENCH_ONLY=rp,1o-ka npm run bench:proxy
 *
 * It checks the event loop every TICK_MS; when a check comes STALL_MS or more
 * late, it records the stall and what filled it, from the main thread's
 * /proc/self/task/PID/schedstat (time it ran, time it waited for a CPU) and
 * the GC pauses (perf_hooks 'gc' entries) that overlapped it, counting only
 * stalls under load (a request arrived less than BUSY_MS before). A stall with little waiting and little GC
 * was synchronous work: a long batch of callbacks, or a blocking call.
 * At exit it writes LOOP_PROBE_OUT.PID.json: the requests its HTTP servers
 * received (diagnostics_channel), calls of the global timer functions per
 * request, event-loop delay percentiles, GC pauses by
 * kind, and the stalls. Besides, under load: the main thread's CPU time between
 * two checks (ranPerCheckMs percentiles; ranPerCheck, each [at ms, CPU ms]):
 * the loop delay as it would be on a machine where nothing else wants the
 * core; and the synchronous work other than requests, timed so that a stall
 * can be traced to it (syncWorkMs; per stall ledgerMs and logWriteMs): the
 * ledger's write transaction (better-sqlite3, WAL checkpoints included) and
 * the logger's write(2) calls (fs.writeSync).
 *
 * LOOP_PROBE_HEAP=all also samples allocations (V8's sampling heap profiler,
 * one sample per 32 KiB) and writes LOOP_PROBE_OUT.PID.heapprofile (open it
 * in Chrome DevTools, or summarise it with bench/heap-summary.ts): where the
 * bytes are allocated. LOOP_PROBE_HEAP=promoted keeps only the samples that
 * survived the young generation (promoted to the old one): what makes the
 * scavenges copy and the old generation grow. LOOP_PROBE_HEAP_AFTER=N starts
 * sampling at the Nth request (heapSampledRequests in the JSON: the requests
 * the profile covers), leaving start-up and warm-up out. Plain JavaScript (Linux /proc), so it
 * preloads into `node dist/cli.js` without tsx. The probe itself costs a
 * timer every TICK_MS and a small file read: use it for diagnosis, not for
 * the figures.
 */
import { subscribe } from 'node:diagnostics_channel';
import fs, { readFileSync, writeFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { Session } from 'node:inspector';
import { monitorEventLoopDelay, PerformanceObserver, performance } from 'node:perf_hooks';

const TICK_MS = 5;
const STALL_MS = 10;
const BUSY_MS = 50;
const out = process.env.LOOP_PROBE_OUT;

const schedstat = () => {
  try {
    const [run, wait] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ').map(Number);
    return { runMs: run / 1e6, waitMs: wait / 1e6 };
  } catch {
    return { runMs: NaN, waitMs: NaN };
  }
};

const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
const gcKinds = { 1: 'scavenge', 2: 'mark-sweep-compact', 4: 'incremental-marking', 8: 'weak-callbacks', 16: 'minor-mark-sweep' };
/** [start ms, duration ms, kind] */
const gcs = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcs.push([e.startTime, e.duration, gcKinds[e.detail?.kind] ?? String(e.detail?.kind)]);
}).observe({ entryTypes: ['gc'] });

const heapMode = process.env.LOOP_PROBE_HEAP;
const session = heapMode === 'all' || heapMode === 'promoted' ? new Session() : undefined;
/** LOOP_PROBE_HEAP_AFTER=N: sample from the Nth request on (start-up and warm-up left out). */
const heapAfterRequests = Number(process.env.LOOP_PROBE_HEAP_AFTER ?? 0);
/** Requests received when sampling began. */
let requestsAtHeapStart = 0;
let isSampling = false;
const startSampling = () => {
  isSampling = true;
  requestsAtHeapStart = requests;
  session.connect();
  session.post('HeapProfiler.startSampling', {
    samplingInterval: 32 * 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: heapMode === 'all',
  });
};

/**
 * Synchronous work the proxy does on its event loop besides requests, timed so that a stall can
 * be traced to it: the ledger's write transaction (better-sqlite3's `transaction().immediate()`,
 * WAL checkpoints included) and the logger's write(2) calls (`fs.writeSync`).
 * [start ms, duration ms, what]
 */
const syncWork = [];
const timed = (what, fn) =>
  function (...args) {
    const start = performance.now();
    try {
      return fn.apply(this, args);
    } finally {
      syncWork.push([start, performance.now() - start, what]);
    }
  };
{
  const originalWriteSync = fs.writeSync;
  fs.writeSync = timed('log-write', originalWriteSync);
  syncBuiltinESMExports();
  try {
    // The same module instance as the proxy's: resolved from this repository's node_modules.
    const Database = createRequire(import.meta.url)('better-sqlite3');
    const transaction = Database.prototype.transaction;
    Database.prototype.transaction = function (fn) {
      const t = transaction.call(this, fn);
      // Every variant timed (the ledger runs `.immediate()`).
      const wrapped = timed('ledger-transaction', t);
      for (const variant of ['default', 'deferred', 'immediate', 'exclusive']) wrapped[variant] = timed('ledger-transaction', t[variant]);
      return wrapped;
    };
  } catch {
    // better-sqlite3 not installed here: nothing to time.
  }
}

/**
 * Calls of the global timer functions (Node's own socket timeouts use internal lists and are
 * not counted): timer churn per request.
 */
const timerCalls = { setTimeout: 0, clearTimeout: 0, setInterval: 0, setImmediate: 0, clearImmediate: 0, refresh: 0 };
for (const name of ['setTimeout', 'clearTimeout', 'setInterval', 'setImmediate', 'clearImmediate']) {
  const original = globalThis[name];
  globalThis[name] = function (...args) {
    timerCalls[name]++;
    return original.apply(this, args);
  };
}
{
  // Timeout.prototype.refresh: undici and others re-arm timers without a new setTimeout.
  const probe = setTimeout(() => {}, 1);
  const proto = Object.getPrototypeOf(probe);
  clearTimeout(probe);
  const refresh = proto.refresh;
  proto.refresh = function () {
    timerCalls.refresh++;
    return refresh.call(this);
  };
  timerCalls.setTimeout = 0;
  timerCalls.clearTimeout = 0;
}

/** Requests the process's HTTP servers received (to turn totals into per-request figures). */
let requests = 0;
let lastRequestAt = -Infinity;
subscribe('http.server.request.start', () => {
  requests++;
  lastRequestAt = performance.now();
  if (session && !isSampling && requests > heapAfterRequests) startSampling();
});
if (session && heapAfterRequests <= 0) startSampling();

const stalls = [];
/** [at ms, the main thread's CPU ms since the previous check], while busy. */
const ranPerTick = [];
let last = performance.now();
let lastSched = schedstat();
const timer = setInterval(() => {
  const now = performance.now();
  const late = now - last - TICK_MS;
  const sched = schedstat();
  // Stalls under load only: a request arrived within BUSY_MS before the stall began. Start-up
  // (module loading, the CA's key) and the idle time while the bench measures other targets
  // are not the question.
  const isBusy = lastRequestAt > last - BUSY_MS;
  // The main thread's own CPU time between two checks, under load: what the loop delay would be on
  // a machine where nothing else wants the core (a long turn of callbacks, a GC pause, a
  // synchronous write all show here; waiting for the core does not).
  if (isBusy) ranPerTick.push([Math.round(now), +(sched.runMs - lastSched.runMs).toFixed(2)]);
  if (late >= STALL_MS && isBusy) {
    const gcMs = gcs.filter(([start, duration]) => start + duration > last && start < now).reduce((sum, [, duration]) => sum + duration, 0);
    const overlapping = (what) =>
      +syncWork.filter(([start, duration, w]) => w === what && start + duration > last && start < now).reduce((sum, [, duration]) => sum + duration, 0).toFixed(1);
    stalls.push({
      atMs: Math.round(last),
      gapMs: +(now - last).toFixed(1),
      ranMs: +(sched.runMs - lastSched.runMs).toFixed(1),
      waitedMs: +(sched.waitMs - lastSched.waitMs).toFixed(1),
      gcMs: +gcMs.toFixed(1),
      ledgerMs: overlapping('ledger-transaction'),
      logWriteMs: overlapping('log-write'),
    });
  }
  last = now;
  lastSched = sched;
}, TICK_MS);
timer.unref();

const percentiles = (values) => {
  const s = [...values].sort((a, b) => a - b);
  const at = (p) => (s.length === 0 ? null : +s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))].toFixed(2));
  return { count: s.length, p50: at(50), p99: at(99), max: at(100), totalMs: +s.reduce((a, b) => a + b, 0).toFixed(1) };
};

process.on('exit', () => {
  if (!out) return;
  // An in-process inspector session answers synchronously.
  if (isSampling) session.post('HeapProfiler.stopSampling', (err, result) => {
    if (!err) writeFileSync(`${out}.${process.pid}.heapprofile`, JSON.stringify(result.profile));
  });
  delay.disable();
  const byKind = {};
  for (const [, duration, kind] of gcs) (byKind[kind] ??= []).push(duration);
  const sum = (key) => +stalls.reduce((a, s) => a + s[key], 0).toFixed(1);
  const summary = {
    pid: process.pid,
    uptimeMs: Math.round(performance.now()),
    requests,
    ...(session ? { heapSampledRequests: isSampling ? requests - requestsAtHeapStart : 0 } : {}),
    timerCallsPerRequest: Object.fromEntries(Object.entries(timerCalls).map(([k, n]) => [k, requests > 0 ? +(n / requests).toFixed(2) : null])),
    eventLoopDelayMs: { p50: delay.percentile(50) / 1e6, p90: delay.percentile(90) / 1e6, p99: delay.percentile(99) / 1e6, p999: delay.percentile(99.9) / 1e6, max: delay.max / 1e6 },
    gcPausesMs: Object.fromEntries(Object.entries(byKind).map(([kind, ds]) => [kind, percentiles(ds)])),
    ranPerCheckMs: (() => {
      const s = ranPerTick.map(([, ran]) => ran).sort((a, b) => a - b);
      const at = (p) => (s.length === 0 ? null : +s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))].toFixed(2));
      return { checks: s.length, p50: at(50), p90: at(90), p99: at(99), p999: at(99.9), max: at(100), over10: s.filter((v) => v >= 10).length, over20: s.filter((v) => v >= 20).length };
    })(),
    stallsOver: STALL_MS,
    stallTotals: { count: stalls.length, gapMs: sum('gapMs'), ranMs: sum('ranMs'), waitedMs: sum('waitedMs'), gcMs: sum('gcMs'), ledgerMs: sum('ledgerMs'), logWriteMs: sum('logWriteMs') },
    syncWorkMs: Object.fromEntries(
      [...new Set(syncWork.map(([, , what]) => what))].map((what) => [what, percentiles(syncWork.filter(([, , w]) => w === what).map(([, d]) => d))]),
    ),
    syncWorkOver1Ms: syncWork.filter(([, d]) => d >= 1).map(([start, d, what]) => [Math.round(start), +d.toFixed(2), what]),
    ranPerCheck: ranPerTick,
    stalls: stalls.sort((a, b) => b.gapMs - a.gapMs).slice(0, 200),
    gcs,
  };
  writeFileSync(`${out}.${process.pid}.json`, JSON.stringify(summary));
});
