/**
 * A probe preloaded into a process under the proxy bench, to find where a
 * request's time goes at the tail (the p99 of issue #11). Not part of the proxy.
 *
 *   BENCH_PROXY_NODE_OPTIONS="--import=$PWD/bench/latency-probe.mjs" \
 *   BENCH_BARE_NODE_OPTIONS="--import=$PWD/bench/latency-probe.mjs" LATENCY_PROBE_OUT=/tmp/lat/p \
 *     BENCH_ONLY=rp,rp-forwarder,50o-ka npm run bench:proxy
 *
 * For every request its HTTP servers receive (diagnostics_channel
 * `http.server.request.start` and `http.server.response.finish`), two spans:
 *   - in:  from the request's 'request' event to its response's 'finish' (the
 *          proxy holds it: pipeline, upstream, write);
 *   - gap: from the previous response's 'finish' on the same client connection
 *          to this request's 'request' event (the client's turnaround, loopback,
 *          and the time the request's bytes sat in the socket before the
 *          event loop read them).
 * Each span in three units: wall ms; the process's CPU ms (process.cpuUsage,
 * all threads) spent meanwhile, which does not grow when other processes take
 * the core; and the count of other responses finished meanwhile, which does
 * not depend on the machine at all (with 50 connections served fairly, about
 * 50 per round trip). At exit it writes LATENCY_PROBE_OUT.PID.json: the
 * percentiles of each, from the SKIPth request on (LATENCY_PROBE_SKIP,
 * default 3000: start-up and warm-up left out). The probe costs two
 * cpuUsage() calls per request: use it for the shape of the distribution,
 * not for throughput.
 */
import { subscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { recordGcPauses } from './gc-pauses.mjs';

const out = process.env.LATENCY_PROBE_OUT;
const SKIP = Number(process.env.LATENCY_PROBE_SKIP ?? 3000);
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

let finished = 0;
let started = 0;
/** request -> [wall, cpu, finished] at its start */
const open = new WeakMap();
/** socket -> [wall, cpu, finished] at its last response's finish */
const lastFinish = new WeakMap();
const series = { inWall: [], inCpu: [], inServed: [], gapWall: [], gapCpu: [], gapServed: [] };
/** The process's CPU between two consecutive request events of STALL_CPU_MS or more: [wall at start, wall at end, cpu ms]. */
const STALL_CPU_MS = Number(process.env.LATENCY_PROBE_STALL_MS ?? 2);
const stalls = [];
let lastEvent = [0, 0];
const event = (now) => {
  if (started > SKIP && now[1] - lastEvent[1] >= STALL_CPU_MS) stalls.push([lastEvent[0], now[0], now[1] - lastEvent[1]]);
  lastEvent = now;
};
/** GC pauses: [start wall ms, duration ms, kind] */
const gcs = recordGcPauses(() => started > SKIP);

subscribe('http.server.request.start', ({ request, socket }) => {
  started++;
  const now = [performance.now(), cpuMs(), finished];
  open.set(request, now);
  event(now);
  const last = lastFinish.get(socket);
  if (last !== undefined && started > SKIP) {
    series.gapWall.push(now[0] - last[0]);
    series.gapCpu.push(now[1] - last[1]);
    series.gapServed.push(now[2] - last[2]);
  }
});
subscribe('http.server.response.finish', ({ request, response }) => {
  finished++;
  const now = [performance.now(), cpuMs(), finished];
  const begin = open.get(request);
  event(now);
  const socket = response.socket ?? request.socket;
  if (socket) lastFinish.set(socket, now);
  if (begin === undefined || started <= SKIP) return;
  series.inWall.push(now[0] - begin[0]);
  series.inCpu.push(now[1] - begin[1]);
  series.inServed.push(now[2] - begin[2] - 1);
});

const pct = (values) => {
  if (values.length === 0) return null;
  const s = Float64Array.from(values).sort();
  const at = (p) => Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 100) / 100;
  return { n: s.length, p50: at(50), p90: at(90), p99: at(99), p999: at(99.9), max: at(100) };
};

let written = false;
const write = () => {
  if (!out || written) return;
  written = true;
  const summary = { pid: process.pid, argv: process.argv.slice(1), requests: started };
  for (const [k, v] of Object.entries(series)) summary[k] = pct(v);
  // Each stall: the GC pauses inside it (kind 1 scavenge, 2 mark-compact, 4 incremental, 8 weak callbacks).
  const kinds = { 1: 'scavenge', 2: 'markCompact', 4: 'incremental', 8: 'weak' };
  const byCause = {};
  for (const [a, b, cpu] of stalls) {
    const inside = gcs.filter(([t, d]) => t < b && t + d > a);
    const gcMs = inside.reduce((x, [, d]) => x + d, 0);
    const cause = inside.length === 0 ? 'no-gc' : [...new Set(inside.map(([, , k]) => kinds[k] ?? k))].join('+');
    const c = (byCause[cause] ??= { n: 0, cpuMs: 0, gcWallMs: 0 });
    c.n++; c.cpuMs += cpu; c.gcWallMs += gcMs;
  }
  summary.stalls = { thresholdCpuMs: STALL_CPU_MS, n: stalls.length, perKiloRequests: Math.round((stalls.length / Math.max(1, series.inWall.length)) * 1e4) / 10, cpuMs: pct(stalls.map(([, , c]) => c)), byCause };
  summary.gc = {};
  for (const [, d, k] of gcs) { const g = (summary.gc[kinds[k] ?? k] ??= { n: 0, ms: 0 }); g.n++; g.ms += d; }
  writeFileSync(`${out}.${process.pid}.json`, JSON.stringify(summary, null, 1));
};
// On SIGTERM too (the bench stops its targets so): a process that takes longer than the bench's grace to exit is killed.
process.on('exit', write);
process.on('SIGTERM', write);
