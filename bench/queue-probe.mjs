/**
 * A probe preloaded into the Node targets of the proxy bench: where a request's time goes at one
 * origin under the per-origin cap (issue 11's p99), in wall ms (performance.now, sub-millisecond).
 * Not part of the proxy.
 *
 *   BENCH_PROXY_NODE_OPTIONS="--import=$PWD/bench/queue-probe.mjs" \
 *   BENCH_BARE_NODE_OPTIONS="--import=$PWD/bench/queue-probe.mjs" QUEUE_PROBE_OUT=/tmp/q/p [QUEUE_PROBE_SCHED=1] \
 *     BENCH_ONLY=rp,rp-mc64,rp-forwarder,rp-forwarder-cap4,1o-ka npm run bench:proxy
 *   node bench/queue-probe.mjs --summary /tmp/q/p.PID.http.csv [...]   (QUEUE_PROBE_RUN=N: one run)
 *
 * In every Node target (robots-proxy, the floor forwarders), from the SKIPth request on
 * (QUEUE_PROBE_SKIP, default 3000): per request, its arrival (the server's `request` event), its
 * stay (to the response's `finish`), the responses the process finished meanwhile (`served`:
 * with 50 connections served first-in first-out, at most 49) and its socket's gap since the
 * previous response (QUEUE_PROBE_OUT.PID.http.csv); when each origin exchange ended (undici's
 * `undici:request:trailers`, .ends.csv: at the cap, the moments a slot frees); the GC pauses
 * (.gc.csv). In robots-proxy also its own steps, from its built modules (dist/, found from its
 * entry script; ProxiedExchange and Pacer prototypes patched): when the request entered the
 * pacer's queue and in which order, when its slot was granted (the slot's own start time) and in
 * which order (`seq`), when the pacer's answer was delivered, when undici handed it to a
 * connection (`onSent`), the origin's head and end, and the access entry (.csv).
 * QUEUE_PROBE_SCHED=1 adds the scheduler's counters, every millisecond while requests arrive
 * (.sched.csv, see {@link startSampler}).
 *
 * `--summary` prints per run of the bench: the stay's percentiles and p99/mean, `served`;
 * robots-proxy's steps over all requests and over the slowest 1%, whether grants came in queue
 * order, the time between grants; and the spans of 1 ms or more (QUEUE_PROBE_GAP_MS) in which no
 * origin exchange ended, with the GC pauses and (with the sampler) what the loop's thread, its
 * other threads and the origin's thread did meanwhile. The patches and the sampler cost CPU
 * (the sampler reads /proc on the load core): use it for the shape, not for the figures.
 */
import { subscribe } from 'node:diagnostics_channel';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { recordGcPauses } from './gc-pauses.mjs';
import { pathToFileURL } from 'node:url';

if (process.argv[2] === '--summary') {
  for (const file of process.argv.slice(3)) summarise(file);
} else {
  await install();
}

async function install() {
  const out = process.env.QUEUE_PROBE_OUT;
  const SKIP = Number(process.env.QUEUE_PROBE_SKIP ?? 3000);
  const entry = process.argv[1] ?? '';
  if (!out) return;

  let finished = 0;
  let started = 0;
  let enqueued = 0;
  /** req -> [arrival ms, finished count, gap ms since the socket's last finish] */
  const arrivals = new WeakMap();
  const lastFinish = new WeakMap();
  /** Every Node target: per request, its arrival, stay, responses served meanwhile and the socket's gap before it. */
  const httpRows = [];
  /** When an origin exchange ended (undici's `undici:request:trailers`: its response complete), ms. */
  const ends = [];
  const rows = [];
  const gcs = recordGcPauses(() => started > SKIP);

  subscribe('http.server.request.start', ({ request, socket }) => {
    started++;
    const now = performance.now();
    const last = lastFinish.get(socket);
    arrivals.set(request, [now, finished, last === undefined ? -1 : now - last]);
  });
  subscribe('http.server.response.finish', ({ request, response }) => {
    finished++;
    const now = performance.now();
    const socket = response.socket ?? request.socket;
    if (socket) lastFinish.set(socket, now);
    const arrival = arrivals.get(request);
    if (arrival !== undefined && started > SKIP) httpRows.push(`${arrival[0].toFixed(3)},${(now - arrival[0]).toFixed(3)},${finished - arrival[1] - 1},${arrival[2].toFixed(3)}`);
  });
  subscribe('undici:request:trailers', () => {
    if (started > SKIP) ends.push(performance.now());
  });
  const writeCommon = () => {
    writeFileSync(`${out}.${process.pid}.http.csv`, `arrival,stay,served,gap\n${httpRows.join('\n')}\n`);
    writeFileSync(`${out}.${process.pid}.ends.csv`, `end\n${ends.map((t) => t.toFixed(3)).join('\n')}\n`);
    writeFileSync(`${out}.${process.pid}.gc.csv`, `start,duration,kind\n${gcs.map((g) => g.join(',')).join('\n')}\n`);
  };
  const sampler = startSampler();
  let written = false;
  const write = () => {
    if (written) return;
    written = true;
    writeCommon();
    if (sampler !== undefined) writeFileSync(`${out}.${process.pid}.sched.csv`, sampler());
    if (rows.length > 0) {
      const head = 'arrival,enq,seq,enqAt,grantAt,deliverAt,sentAt,headAt,endAt,finishAt,served,gap,status';
      writeFileSync(`${out}.${process.pid}.csv`, `${head}\n${rows.join('\n')}\n`);
    }
  };
  process.on('exit', write);
  process.on('SIGTERM', write);
  if (!entry.endsWith('cli.js')) return;

  // robots-proxy: its own steps, from its built modules (dist/).
  const dist = dirname(entry);
  const { ProxiedExchange } = await import(pathToFileURL(join(dist, 'proxy/proxied-exchange.js')).href);
  const { Pacer } = await import(pathToFileURL(join(dist, 'pacing/pacer.js')).href);
  const { systemClock } = await import(pathToFileURL(join(dist, 'clock.js')).href);
  // The proxy's clock is performance.now() on the epoch scale: a constant offset.
  const offset = systemClock.nowMs() - performance.now();

  const acquireFor = Pacer.prototype.acquireFor;
  Pacer.prototype.acquireFor = function (origin, delayMs, options, taker) {
    const answered = acquireFor.call(this, origin, delayMs, options, taker);
    taker.qpEnq = answered === undefined ? ++enqueued : 0;
    taker.qpEnqAt = performance.now();
    return answered;
  };
  const stamp = (name, field) => {
    const original = ProxiedExchange.prototype[name];
    ProxiedExchange.prototype[name] = function (...args) {
      this[field] = performance.now();
      return original.apply(this, args);
    };
  };
  stamp('takeSlot', 'qpDeliverAt');
  stamp('onSent', 'qpSentAt');
  stamp('onResponseHead', 'qpHeadAt');
  stamp('onUpstreamEnd', 'qpEndAt');
  const finish = ProxiedExchange.prototype.finish;
  ProxiedExchange.prototype.finish = function () {
    const wasFinished = this.isFinished;
    const result = finish.call(this);
    if (wasFinished || started <= SKIP) return result;
    const arrival = arrivals.get(this.p.req);
    const slot = this.slot;
    if (arrival === undefined || slot === undefined) return result;
    const now = performance.now();
    const a = arrival[0];
    const rel = (t) => (t === undefined ? '' : (t - a).toFixed(3));
    rows.push(
      [
        a.toFixed(3),
        this.qpEnq ?? '',
        slot.seq,
        rel(this.qpEnqAt),
        rel(slot.startedAtMs - offset),
        rel(this.qpDeliverAt),
        rel(this.qpSentAt),
        rel(this.qpHeadAt),
        rel(this.qpEndAt),
        rel(now),
        finished - arrival[1],
        arrival[2].toFixed(3),
        this.status,
      ].join(','),
    );
    return result;
  };

}

/**
 * QUEUE_PROBE_SCHED=1: a worker thread reads, every millisecond, the scheduler's counters
 * (/proc/PID/task/TID/schedstat: ns on the CPU, ns runnable but waiting for a core) of this
 * process's main thread, of its other threads together, and of the bench's origin process
 * (QUEUE_PROBE_WATCH, a substring of its command line; default "bench.ts origins"), so that a
 * span with no grant can be told apart: the loop running, the loop waiting for its core, or the
 * loop asleep waiting for the origin (and the origin running or waiting for its core).
 * @returns a function that returns the samples as CSV, or undefined when off.
 */
function startSampler() {
  if (process.env.QUEUE_PROBE_SCHED !== '1') return undefined;
  const SLOTS = 200_000;
  const COLS = 7;
  // Slot 0: samples taken; the last slot: the latest request's arrival (performance.now()).
  const shared = new SharedArrayBuffer(8 * (SLOTS * COLS + 2));
  const samples = new Float64Array(shared);
  const code = `
    const { workerData } = require('node:worker_threads');
    const { readFileSync, readdirSync } = require('node:fs');
    const { performance } = require('node:perf_hooks');
    const { shared, pid, origin, watch, slots, cols } = workerData;
    const out = new Float64Array(shared);
    const stat = (path) => { try { const [run, wait] = readFileSync(path, 'utf8').split(' '); return [Number(run) / 1e6, Number(wait) / 1e6]; } catch { return [NaN, NaN]; } };
    const findWatched = () => {
      for (const p of readdirSync('/proc')) {
        if (!/^[0-9]+$/.test(p)) continue;
        try { if (readFileSync('/proc/' + p + '/cmdline', 'utf8').replaceAll('\0', ' ').includes(watch)) return Number(p); } catch {}
      }
      return undefined;
    };
    const watched = findWatched();
    const sleep = new Int32Array(new SharedArrayBuffer(4));
    let tasks = readdirSync('/proc/' + pid + '/task').filter((t) => Number(t) !== pid);
    let n = 0;
    for (;;) {
      if (n % 1000 === 0) tasks = readdirSync('/proc/' + pid + '/task').filter((t) => Number(t) !== pid);
      const t = performance.timeOrigin + performance.now() - origin;
      const main = stat('/proc/' + pid + '/task/' + pid + '/schedstat');
      let helpers = 0;
      for (const tid of tasks) helpers += stat('/proc/' + pid + '/task/' + tid + '/schedstat')[0] || 0;
      const o = watched === undefined ? [NaN, NaN] : stat('/proc/' + watched + '/task/' + watched + '/schedstat');
      const i = (n % slots) * cols + 1;
      out[i] = t; out[i + 1] = main[0]; out[i + 2] = main[1]; out[i + 3] = helpers; out[i + 4] = o[0]; out[i + 5] = o[1]; out[i + 6] = watched ?? NaN;
      n++;
      out[0] = n;
      // Idle (no request for 100 ms: another target's run): sample rarely, not to take the load core.
      const idle = performance.timeOrigin + performance.now() - origin - out[slots * cols + 1] > 100;
      Atomics.wait(sleep, 0, 0, idle ? 50 : 1);
    }
  `;
  // A worker, not a timer: it samples while the event loop is busy or stalled.
  import('node:worker_threads').then(({ Worker }) => {
    const worker = new Worker(code, {
      eval: true,
      workerData: { shared, pid: process.pid, origin: performance.timeOrigin, watch: process.env.QUEUE_PROBE_WATCH ?? 'bench.ts origins', slots: SLOTS, cols: COLS },
    });
    worker.unref();
  });
  subscribe('http.server.request.start', () => {
    samples[SLOTS * COLS + 1] = performance.now();
  });
  return () => {
    const n = Math.min(samples[0], SLOTS);
    const lines = ['t,mainRun,mainWait,helpersRun,originRun,originWait,originPid'];
    const first = samples[0] > SLOTS ? samples[0] % SLOTS : 0;
    for (let k = 0; k < n; k++) {
      const i = ((first + k) % SLOTS) * COLS + 1;
      lines.push(Array.from(samples.subarray(i, i + COLS), (v) => (Number.isInteger(v) ? v : v.toFixed(3))).join(','));
    }
    return `${lines.join('\n')}\n`;
  };
}

/** A CSV file with a header line as rows of numbers (an empty cell: NaN); [] when it is missing. */
function readCsv(file) {
  let text;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch {
    return [];
  }
  const lines = text.split('\n');
  const keys = lines[0].split(',');
  return lines.slice(1).map((line) => {
    const cells = line.split(',');
    const row = {};
    keys.forEach((k, i) => (row[k] = cells[i] === '' || cells[i] === undefined ? NaN : Number(cells[i])));
    return row;
  });
}

/** The `p`th percentile of `values` (NaNs left out). */
function pct(values, p) {
  const s = Float64Array.from(values.filter((v) => !Number.isNaN(v))).sort();
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

/** A figure in a fixed width. */
function f(v) {
  return Number.isNaN(v) ? '   -  ' : v.toFixed(2).padStart(6);
}

/**
 * Prints one process's files (`base` = QUEUE_PROBE_OUT.PID, or any of its files): per run of the
 * bench (arrivals more than 300 ms apart start a new one; QUEUE_PROBE_RUN=N for one of them), the
 * stay's percentiles and responses served meanwhile, robots-proxy's steps, and the spans with no
 * origin exchange ending.
 */
function summarise(file) {
  const base = file.replace(/(\.(http|ends|gc|sched))?\.csv$/, '');
  const http = readCsv(`${base}.http.csv`).sort((x, y) => x.arrival - y.arrival);
  const steps = readCsv(`${base}.csv`);
  const gcs = readCsv(`${base}.gc.csv`).map((g) => [g.start, g.duration, g.kind]);
  const sched = readCsv(`${base}.sched.csv`).map((r) => [r.t, r.mainRun, r.mainWait, r.helpersRun, r.originRun, r.originWait]);
  const ends = readCsv(`${base}.ends.csv`).map((r) => r.end);
  const runs = [];
  for (const row of http) {
    const run = runs.at(-1);
    if (run === undefined || row.arrival - run.at(-1).arrival > 300) runs.push([row]);
    else run.push(row);
  }
  console.log(`${base}: ${http.length} requests in ${runs.length} runs (${runs.map((r) => r.length).join(', ')})`);
  runs.forEach((run, i) => {
    if (process.env.QUEUE_PROBE_RUN !== undefined && Number(process.env.QUEUE_PROBE_RUN) !== i) return;
    const [from, to] = [run[0].arrival, run.at(-1).arrival + run.at(-1).stay];
    const stays = run.map((r) => r.stay);
    const mean = stays.reduce((a, b) => a + b, 0) / stays.length;
    const served = run.map((r) => r.served);
    console.log(
      `run ${i}: ${run.length} requests over ${(to - from).toFixed(0)} ms; stay ms p50 ${f(pct(stays, 50))} mean ${f(mean)} p99 ${f(pct(stays, 99))} max ${f(pct(stays, 100))} (p99/mean ${(pct(stays, 99) / mean).toFixed(2)}); ` +
        `responses served meanwhile p50 ${pct(served, 50)} p99 ${pct(served, 99)} max ${pct(served, 100)}`,
    );
    const inRun = steps.filter((r) => r.arrival >= from && r.arrival <= to);
    if (inRun.length > 0) summariseRows(inRun, gcs);
    summariseGaps(ends.filter((t) => t >= from && t <= to), gcs, sched);
  });
}

/**
 * The spans in which no origin exchange ended for QUEUE_PROBE_GAP_MS (default 1) or more (at the
 * cap, no slot was freed, so nothing was granted): their share of the run, the GC pauses inside,
 * and, with the scheduler samples, what the loop's thread and the origin's did meanwhile.
 */
function summariseGaps(ends, gcs, sched) {
  const threshold = Number(process.env.QUEUE_PROBE_GAP_MS ?? 1);
  ends.sort((x, y) => x - y);
  if (ends.length < 2) return;
  // Cumulative counters at time t, linearly interpolated between samples.
  const at = (t, col) => {
    let lo = 0;
    let hi = sched.length - 1;
    if (hi < 1 || t < sched[0][0] || t > sched[hi][0]) return NaN;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (sched[mid][0] <= t) lo = mid;
      else hi = mid;
    }
    const [a, b] = [sched[lo], sched[hi]];
    return a[col] + ((b[col] - a[col]) * (t - a[0])) / (b[0] - a[0] || 1);
  };
  const sum = { n: 0, ms: 0, gc: 0, mainRun: 0, mainWait: 0, helpersRun: 0, originRun: 0, originWait: 0 };
  const sizes = [];
  for (let k = 1; k < ends.length; k++) {
    const [from, to] = [ends[k - 1], ends[k]];
    if (to - from < threshold || to - from > 300) continue;
    sum.n++;
    sum.ms += to - from;
    sizes.push(to - from);
    for (const [start, duration] of gcs) if (start < to && start + duration > from) sum.gc += Math.min(to, start + duration) - Math.max(from, start);
    if (sched.length > 1) {
      sum.mainRun += at(to, 1) - at(from, 1);
      sum.mainWait += at(to, 2) - at(from, 2);
      sum.helpersRun += at(to, 3) - at(from, 3);
      sum.originRun += at(to, 4) - at(from, 4);
      sum.originWait += at(to, 5) - at(from, 5);
    }
  }
  const span = ends.at(-1) - ends[0];
  sizes.sort((x, y) => x - y);
  const share = (v) => `${v.toFixed(1)} ms (${((100 * v) / sum.ms).toFixed(0)}%)`;
  console.log(`  spans of >= ${threshold} ms with no origin exchange ending: ${sum.n}, ${sum.ms.toFixed(1)} ms = ${((100 * sum.ms) / span).toFixed(1)}% of the run's ${span.toFixed(0)} ms; sizes p50 ${sizes[sizes.length >> 1]?.toFixed(2)} p90 ${sizes[Math.floor(sizes.length * 0.9)]?.toFixed(2)} max ${sizes.at(-1)?.toFixed(2)} ms`);
  console.log(`    inside them: GC pauses ${share(sum.gc)}; the loop's thread ran ${share(sum.mainRun)}, waited for its core ${share(sum.mainWait)}; its other threads ran ${sum.helpersRun.toFixed(1)} ms; the origin's thread ran ${share(sum.originRun)}, waited for its core ${share(sum.originWait)}`);
}

function summariseRows(rows, gcs) {
  console.log(`  ${rows.length} requests, ${rows.filter((r) => r.enq > 0).length} queued`);
  // Spans, ms: each request's stay cut at the pacer's and the relay's steps.
  const spans = {
    'arrival -> queue': (r) => r.enqAt,
    'queue -> grant': (r) => r.grantAt - r.enqAt,
    'grant -> delivered': (r) => r.deliverAt - r.grantAt,
    'delivered/grant -> sent': (r) => r.sentAt - (Number.isNaN(r.deliverAt) ? r.grantAt : r.deliverAt),
    'sent -> origin head': (r) => r.headAt - r.sentAt,
    'head -> origin end': (r) => r.endAt - r.headAt,
    'origin end -> finish': (r) => r.finishAt - r.endAt,
    'stay (arrival -> finish)': (r) => r.finishAt,
    'GC pauses inside the stay': (r) => gcInside(r.arrival, r.arrival + r.finishAt),
    'socket gap before arrival': (r) => r.gap,
    'responses served meanwhile': (r) => r.served,
  };
  const gcInside = (from, to) => {
    let ms = 0;
    for (const [start, duration] of gcs) if (start < to && start + duration > from) ms += Math.min(to, start + duration) - Math.max(from, start);
    return ms;
  };
  const stays = rows.map((r) => r.finishAt);
  const p99 = pct(stays, 99);
  const tail = rows.filter((r) => r.finishAt >= p99);
  console.log(`  span                          p50    p90    p99    max   | mean over the slowest 1% (stay >= ${p99.toFixed(2)} ms) vs all`);
  for (const [name, fn] of Object.entries(spans)) {
    const all = rows.map(fn);
    const t = tail.map(fn).filter((v) => !Number.isNaN(v));
    const a = all.filter((v) => !Number.isNaN(v));
    const mean = (v) => (v.length ? v.reduce((x, y) => x + y, 0) / v.length : NaN);
    console.log(`  ${name.padEnd(27)} ${f(pct(all, 50))} ${f(pct(all, 90))} ${f(pct(all, 99))} ${f(pct(all, 100))}   | ${f(mean(t))} vs ${f(mean(a))}`);
  }
  // Order: queued requests granted in the order they queued? (seq is the grant order of every start.)
  const queued = rows.filter((r) => r.enq > 0).sort((x, y) => x.enq - y.enq);
  let inversions = 0;
  let maxSeq = -Infinity;
  for (const r of queued) {
    if (r.seq < maxSeq) inversions++;
    else maxSeq = r.seq;
  }
  console.log(`  queued requests granted before one that queued earlier: ${inversions} of ${queued.length}`);
  // Grants in time: the gaps between consecutive grants (any request), and how many grants share one instant.
  const grants = rows.map((r) => r.arrival + r.grantAt).sort((x, y) => x - y);
  const gaps = [];
  for (let i = 1; i < grants.length; i++) gaps.push(grants[i] - grants[i - 1]);
  console.log(`  time between grants ms: p50 ${f(pct(gaps, 50))} p90 ${f(pct(gaps, 90))} p99 ${f(pct(gaps, 99))} p99.9 ${f(pct(gaps, 99.9))} max ${f(pct(gaps, 100))}`);
}
