/**
 * Counts the async resources a process creates per HTTP request it serves: promises, Node's
 * `process.nextTick` objects (TickObject), timers, immediates, ... (async_hooks `init` by type).
 * A count that does not depend on the machine's load, for the per-request work of issue 11
 * (bench/PROFILE.md, "Per-request work, 2026-12-01 session 18").
 *
 *   BENCH_PROXY_NODE_OPTIONS="--import=$PWD/bench/async-count-probe.mjs" ASYNC_PROBE_OUT=/tmp/ac/p \
 *     BENCH_ONLY=rp,rp-warn,50o-ka npm run bench:proxy
 *
 * Counting starts at the ASYNC_PROBE_AFTER-th request the process's HTTP servers receive
 * (default 20000: start-up, robots.txt fetches and JIT warm-up left out) and stops at exit, when
 * ASYNC_PROBE_OUT.PID.json gets `{ requests, perRequest: { PROMISE: n, TickObject: n, ... } }`.
 * ASYNC_PROBE_STACKS=Immediate,Timeout adds, per type named, the creating stacks of its first
 * 2000 resources with their counts (`stacks`).
 * ASYNC_PROBE_CLOCK=1 also counts the clock reads (`performance.now()`, `Date.now()`) per request as
 * `clockReads`, and their call sites (the two frames above the clock's own) as `clockStacks`.
 * An enabled hook turns off some of V8's promise fast paths, so the process is slower while
 * probed; compare two builds both probed. Prints nothing; asserts nothing.
 */
import { createHook } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const out = process.env.ASYNC_PROBE_OUT;
const after = Number(process.env.ASYNC_PROBE_AFTER ?? 20_000);
/** Requests received by any HTTP server of this process (the admin API's too: idle under the bench). */
let requests = 0;
let requestsAtStart = 0;
/** Resources created since counting began, by type. */
const counts = Object.create(null);
/** ASYNC_PROBE_STACKS=Immediate,Timeout: where resources of these types are created (stacks of the first 2000 of each, counted). */
const stackTypes = new Set((process.env.ASYNC_PROBE_STACKS ?? '').split(',').filter(Boolean));
const stacks = Object.create(null);

/** ASYNC_PROBE_CLOCK=1: clock reads since counting began, by kind, and by call site. */
const countClock = process.env.ASYNC_PROBE_CLOCK === '1';
const clockReads = Object.create(null);
const clockStacks = Object.create(null);
let counting = false;
/** Wraps `owner[name]` (a clock read) to count its calls once counting has begun. */
function countCalls(owner, name, label) {
  const read = owner[name];
  owner[name] = function () {
    if (counting) {
      clockReads[label] = (clockReads[label] ?? 0) + 1;
      const where = (new Error().stack ?? '').split('\n').slice(4, 6).map((line) => line.trim()).join(' < ');
      clockStacks[where] = (clockStacks[where] ?? 0) + 1;
    }
    return read.call(this);
  };
}
if (countClock) {
  countCalls(performance, 'now', 'performance.now');
  countCalls(Date, 'now', 'Date.now');
}

const hook = createHook({
  init(_asyncId, type) {
    const n = (counts[type] = (counts[type] ?? 0) + 1);
    if (!stackTypes.has(type) || n > 2000) return;
    const where = (new Error().stack ?? '').split('\n').slice(2, 12).map((line) => line.trim()).join(' < ');
    const byStack = (stacks[type] ??= Object.create(null));
    byStack[where] = (byStack[where] ?? 0) + 1;
  },
});

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, ...args) {
  if (event === 'request') {
    requests++;
    if (requests === after) {
      requestsAtStart = requests;
      hook.enable();
      counting = true;
    }
  }
  return emit.call(this, event, ...args);
};

process.on('exit', () => {
  hook.disable();
  counting = false;
  if (out === undefined) return;
  const counted = requests - requestsAtStart;
  const perRequest = Object.fromEntries(
    Object.entries(counts)
      .sort(([, a], [, b]) => b - a)
      .map(([type, n]) => [type, counted > 0 ? Number((n / counted).toFixed(3)) : null]),
  );
  const per = (table) =>
    Object.fromEntries(
      Object.entries(table)
        .sort(([, a], [, b]) => b - a)
        .map(([key, n]) => [key, counted > 0 ? Number((n / counted).toFixed(3)) : null]),
    );
  const clock = countClock ? { clockReads: per(clockReads), clockStacks: per(clockStacks) } : {};
  writeFileSync(`${out}.${process.pid}.json`, JSON.stringify({ requests: counted, perRequest, ...clock, stacks }, null, 1));
});
