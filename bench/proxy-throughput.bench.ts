/**
 * Proxy throughput (issue #3, "Benchmarks"): keep-alive req/s and p50/p99
 * latency in one run, for
 *   direct  autocannon straight to a local origin;
 *   bare    through a bare forward proxy written here: the product's forwarding
 *           technique (one undici Pool per origin, hop-by-hop headers dropped,
 *           Host set, abort on client close, streamed body) without robots.txt,
 *           pacing, logging or metrics;
 *   proxy   through robots-proxy (`startProxy`, log level silent): robots.txt
 *           cached, the path allowed, no crawl-delay, pacing.maxConcurrency 64;
 *   proxy+log  the same with the access log on (info, JSON lines written
 *           written to /dev/null exactly as `serve` writes them to stdout).
 * Target: proxy >= 80% of bare's req/s. Prints figures; asserts nothing.
 *
 * Processes: the origin runs in a child process, autocannon in another; the
 * bare forwarder and robots-proxy run in this process (one at a time under
 * load). Each config runs ROUNDS times, interleaved; medians are reported.
 * Contacts 127.0.0.1 only. Runtime ~75 s.
 *
 * Profiling: `BENCH_ONLY=proxy node --cpu-prof --cpu-prof-dir=/tmp/prof
 * --import tsx bench/proxy-throughput.bench.ts` runs only the proxy config.
 */
import { createRequire } from 'node:module';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { pino } from 'pino';
import { forkRole, median, nextMessage, withCpu, type LoadResult } from './support.js';

const CONNECTIONS = 32;
const ROUNDS = 5;
const RUN_SECONDS = 3;
const WARMUP_SECONDS = 1;
const MAX_CONCURRENCY = 64;
const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const ROBOTS_TXT = 'User-agent: *\nDisallow: /private/\n';
const PAGE_PATH = '/page/1?q=1';

/** CPU seconds each named process used during a run, and the run's wall time. */
interface CpuUse {
  cpuS: Record<string, number>;
  wallS: number;
}

/** Runs `work` and measures the CPU time each named process used meanwhile. */
async function measureCpu<T>(pids: Record<string, number | undefined>, work: () => Promise<T>): Promise<[T, CpuUse]> {
  const [result, cpuS, wallS] = await withCpu(pids, work);
  return [result, { cpuS, wallS }];
}

const coresOf = (use: CpuUse): string => Object.entries(use.cpuS).map(([name, s]) => `${name} ${(s / use.wallS).toFixed(2)}`).join(', ');

const loadAverage = (): string => os.loadavg().map((l) => l.toFixed(2)).join(' ');

interface LoadJob {
  url: string;
  path: string;
  host: string;
  seconds: number;
}

// ---------------------------------------------------------------- child roles

/** Child role: the origin. robots.txt and a small page, answered at once. */
async function runOrigin(): Promise<void> {
  const page = Buffer.from('page\n'.repeat(20));
  const server = http.createServer((req, res) => {
    if (req.url === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(ROBOTS_TXT);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(page.length) });
    res.end(page);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.send!({ port: (server.address() as AddressInfo).port });
  process.on('disconnect', () => process.exit(0));
}

/** Child role: autocannon, one job per message. */
function runLoad(): void {
  const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<Record<string, any>>;
  process.on('message', async (job: LoadJob) => {
    const r = await autocannon({
      url: job.url,
      connections: CONNECTIONS,
      duration: job.seconds,
      pipelining: 1,
      requests: [{ method: 'GET', path: job.path, headers: { host: job.host, 'user-agent': BOT_UA } }],
    });
    const ok = r['2xx'] as number;
    const result: LoadResult = { rps: ok / (r['duration'] as number), p50: r['latency'].p50, p99: r['latency'].p99, ok, bad: (r['non2xx'] as number) + (r['errors'] as number) + (r['timeouts'] as number) };
    process.send!(result);
  });
  process.on('disconnect', () => process.exit(0));
}

// ------------------------------------------------------------ the bare forwarder

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** Copies headers without hop-by-hop fields, nor those named in Connection (RFC 9110 §7.6.1). */
function stripHopByHop(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const named = new Set(String(headers['connection'] ?? '').toLowerCase().split(',').map((s) => s.trim()));
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name) && !named.has(name)) out[name] = value;
  return out;
}

/** A minimal forward proxy: absolute-form requests to one undici Pool per origin. */
async function startBareForwarder(): Promise<{ port: number; close(): Promise<void> }> {
  const pools = new Map<string, Pool>();
  const server = http.createServer((req, res) => {
    const target = new URL(req.url ?? '');
    let pool = pools.get(target.origin);
    if (pool === undefined) {
      pool = new Pool(target.origin, { connections: 64, pipelining: 1 });
      pools.set(target.origin, pool);
    }
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const headers = stripHopByHop(req.headers);
    headers['host'] = target.host;
    const hasBody = req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined;
    pool
      .request({ method: req.method as 'GET', path: target.pathname + target.search, headers, body: hasBody ? req : null, signal: abort.signal })
      .then(
        (up) => {
          res.writeHead(up.statusCode, stripHopByHop(up.headers));
          pipeline(up.body, res, () => undefined);
        },
        () => {
          if (!res.headersSent) res.writeHead(502).end();
          else res.destroy();
        },
      );
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all([...pools.values()].map((p) => p.destroy()));
    },
  };
}

// ------------------------------------------------------------------ the driver

async function main(): Promise<void> {
  const { validateConfig } = await import('../src/config/index.js');
  const { startProxy } = await import('../src/main.js');
  const { createLogger } = await import('../src/audit/index.js');

  const origin = forkRole(fileURLToPath(import.meta.url), 'origin');
  const load = forkRole(fileURLToPath(import.meta.url), 'load');
  const { port: originPort } = await nextMessage<{ port: number }>(origin);
  const originHost = `127.0.0.1:${originPort}`;
  const targetUrl = `http://${originHost}${PAGE_PATH}`;

  const proxyConfig = (): ReturnType<typeof validateConfig> =>
    validateConfig({
      listen: { host: '127.0.0.1', port: 0 },
      admin: { enabled: false },
      log: { level: 'silent' },
      upstream: { allowPrivateNetworks: true },
      pacing: { maxConcurrency: MAX_CONCURRENCY },
      https: { mode: 'tunnel' },
      stateDir: mkdtempSync(join(os.tmpdir(), 'robots-proxy-bench-')),
    });
  const bare = await startBareForwarder();
  const proxy = await startProxy(proxyConfig(), { logger: pino({ level: 'silent' }) });
  const proxyLogged = await startProxy(proxyConfig(), { logger: createLogger({ level: 'info', file: '/dev/null' }) });

  const configs: Array<{ name: string; job: LoadJob }> = [
    { name: 'direct', job: { url: `http://${originHost}`, path: PAGE_PATH, host: originHost, seconds: RUN_SECONDS } },
    { name: 'bare', job: { url: `http://127.0.0.1:${bare.port}`, path: targetUrl, host: originHost, seconds: RUN_SECONDS } },
    { name: 'proxy', job: { url: `http://127.0.0.1:${proxy.proxyAddress.port}`, path: targetUrl, host: originHost, seconds: RUN_SECONDS } },
    { name: 'proxy+log', job: { url: `http://127.0.0.1:${proxyLogged.proxyAddress.port}`, path: targetUrl, host: originHost, seconds: RUN_SECONDS } },
  ].filter((c) => !process.env['BENCH_ONLY'] || c.name === process.env['BENCH_ONLY']);

  console.log(`proxy-throughput: node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), load average ${loadAverage()}`);
  console.log(`  origin: child process pid ${origin.pid}; autocannon: child process pid ${load.pid}; bare forwarder and robots-proxy: this process pid ${process.pid}`);
  console.log(`  autocannon: ${CONNECTIONS} keep-alive connections, pipelining 1, ${RUN_SECONDS} s per run, ${ROUNDS} rounds interleaved; GET ${PAGE_PATH} (100 B body)`);
  console.log(`  robots-proxy: pacing.maxConcurrency ${MAX_CONCURRENCY} (> ${CONNECTIONS} connections, so never the bottleneck), robots.txt "Disallow: /private/" cached, no crawl-delay`);
  console.log(`  bare forwarder and robots-proxy both use undici Pool(connections 64, pipelining 1) per origin`);

  const pids = { proxies: process.pid, origin: origin.pid, autocannon: load.pid };
  const run = (job: LoadJob): Promise<[LoadResult, CpuUse]> =>
    measureCpu(pids, async () => {
      load.send(job);
      return nextMessage<LoadResult>(load);
    });
  // Warm-up: caches robots.txt, opens upstream pools, lets V8 optimise.
  for (const c of configs) await run({ ...c.job, seconds: WARMUP_SECONDS });

  // CPU per request of the process doing the forwarding (the origin's for `direct`):
  // less sensitive than req/s to the other processes sharing the 2 cores.
  const serverOf = (name: string): string => (name === 'direct' ? 'origin' : 'proxies');
  const results = new Map<string, Array<LoadResult & { cpuUsPerReq: number }>>(configs.map((c) => [c.name, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 === 1 ? configs : [...configs].reverse();
    for (const c of order) {
      const [r, use] = await run(c.job);
      const cpuUsPerReq = ((use.cpuS[serverOf(c.name)] ?? NaN) / r.ok) * 1e6;
      results.get(c.name)!.push({ ...r, cpuUsPerReq });
      console.log(`  round ${round} ${c.name.padEnd(9)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  ${cpuUsPerReq.toFixed(0)} us CPU/req  (${r.ok} ok, ${r.bad} not 2xx/errors; cores used: ${coresOf(use)})`);
    }
  }

  console.log('\n  config      req/s (median)   p50 ms   p99 ms   CPU us/req*   runs (req/s)');
  const medians = new Map<string, { rps: number; cpu: number }>();
  for (const c of configs) {
    const rs = results.get(c.name)!;
    const m = { rps: median(rs.map((r) => r.rps)), cpu: median(rs.map((r) => r.cpuUsPerReq)) };
    medians.set(c.name, m);
    console.log(`  ${c.name.padEnd(10)} ${m.rps.toFixed(0).padStart(10)}   ${String(median(rs.map((r) => r.p50))).padStart(7)}  ${String(median(rs.map((r) => r.p99))).padStart(7)}   ${m.cpu.toFixed(0).padStart(8)}      ${rs.map((r) => r.rps.toFixed(0)).join(', ')}`);
  }
  console.log('  * CPU time of the forwarding process (the origin for direct) per completed request');
  const ratio = (a: string, b: string, f: (m: { rps: number; cpu: number }) => number): string => {
    const x = medians.get(a);
    const y = medians.get(b);
    return x !== undefined && y !== undefined ? (f(x) / f(y)).toFixed(3) : 'n/a';
  };
  console.log(`\n  robots-proxy / bare forwarder, req/s: ${ratio('proxy', 'bare', (m) => m.rps)}  (target >= 0.80)`);
  console.log(`  bare forwarder / robots-proxy, CPU per request: ${ratio('bare', 'proxy', (m) => m.cpu)}  (the req/s ratio on a CPU-bound core)`);
  console.log(`  robots-proxy with access log / bare forwarder, req/s: ${ratio('proxy+log', 'bare', (m) => m.rps)}  (informative)`);
  console.log(`  bare forwarder / direct, req/s: ${ratio('bare', 'direct', (m) => m.rps)}`);
  console.log(`  (latency percentiles from autocannon, 1 ms resolution; load average at the end ${loadAverage()}; other processes on the machine share the 2 cores)`);

  await Promise.all([bare.close(), proxy.close(), proxyLogged.close()]);
  origin.disconnect();
  load.disconnect();
}

const role = process.argv[2];
if (role === 'origin') await runOrigin();
else if (role === 'load') runLoad();
else await main();
