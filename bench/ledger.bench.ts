/**
 * The ledger's cost on the hot path (issue #9): the same keep-alive load
 * through robots-proxy with `ledger.enabled` true and false, in interleaved
 * rounds. Each proxy runs in a child process of its own (access log off, as
 * in bench:proxy's `proxy`), so the CPU time per request of each is its own:
 * that figure is less sensitive than req/s to the other processes sharing the
 * machine's cores. Two request mixes:
 *   allowed  8 bots (User-Agents) fetching allowed pages: rollup upserts only;
 *   mixed    the same, with one request in four to a disallowed path: a
 *            refusal row for each of those too (the ledger's heaviest writes).
 * Target: with the ledger on, req/s within 3% of off, same p99. Prints
 * figures; asserts nothing. Contacts 127.0.0.1 only. Runtime ~90 s.
 * First, the ledger's own work is measured in-process (observe() per request,
 * one write transaction). Each mix also prints the on/off ratios of every
 * round with their spread. Environment: LEDGER_BENCH_ROUNDS (default 5);
 * LEDGER_BENCH_AA=1 runs both proxies with the ledger off (an A/A run).
 */
import { createRequire } from 'node:module';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { forkRole, median, nextMessage, withCpu, type LoadResult } from './support.js';

const CONNECTIONS = 32;
/** Rounds per mix; `LEDGER_BENCH_ROUNDS` overrides (more rounds: a tighter spread on a loaded machine). */
const ROUNDS = Number(process.env['LEDGER_BENCH_ROUNDS'] ?? 5);
const RUN_SECONDS = 3;
const WARMUP_SECONDS = 1;
const BOTS = ['GPTBot/1.2', 'CCBot/2.0', 'ClaudeBot/1.0', 'Bytespider/1.0', 'AhrefsBot/7.0', 'bingbot/2.0', 'Applebot/0.1', 'PetalBot/1.0'];
const ROBOTS_TXT = 'User-agent: *\nDisallow: /private/\n';

interface LoadJob {
  url: string;
  host: string;
  mix: 'allowed' | 'mixed';
  seconds: number;
}

/** Child role: the origin. */
async function runOrigin(): Promise<void> {
  const page = Buffer.from('page\n'.repeat(20));
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(req.url === '/robots.txt' ? ROBOTS_TXT : page);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.send!({ port: (server.address() as AddressInfo).port });
  process.on('disconnect', () => process.exit(0));
}

/** Child role: one robots-proxy, with the ledger on or off. */
async function runProxy(ledger: string): Promise<void> {
  const { validateConfig } = await import('../src/config/index.js');
  const { startProxy } = await import('../src/main.js');
  const proxy = await startProxy(
    validateConfig({
      listen: { host: '127.0.0.1', port: 0 },
      admin: { enabled: false },
      log: { level: 'silent' },
      upstream: { allowPrivateNetworks: true },
      pacing: { maxConcurrency: 64 },
      https: { mode: 'tunnel' },
      stateDir: mkdtempSync(join(os.tmpdir(), 'robots-proxy-ledger-bench-')),
      ledger: { enabled: ledger === 'on' },
    }),
    { logger: pino({ level: 'silent' }) },
  );
  process.send!({ port: proxy.proxyAddress.port });
  process.on('message', () => process.send!(proxy.ledger?.stats() ?? null));
  process.on('disconnect', () => void proxy.close().then(() => process.exit(0)));
}

/** Child role: autocannon, one job per message. */
function runLoad(): void {
  const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<Record<string, any>>;
  process.on('message', async (job: LoadJob) => {
    const requests = BOTS.flatMap((bot, i) => {
      const ua = `Mozilla/5.0 (compatible; ${bot}; +https://bots.example/${i})`;
      const page = { method: 'GET', path: `http://${job.host}/page/${i}?q=1`, headers: { host: job.host, 'user-agent': ua } };
      const refused = { ...page, path: `http://${job.host}/private/${i}` };
      return job.mix === 'allowed' ? [page] : [page, page, page, refused];
    });
    const r = await autocannon({ url: job.url, connections: CONNECTIONS, duration: job.seconds, pipelining: 1, requests });
    const answered = (r['2xx'] as number) + (r['non2xx'] as number);
    const result: LoadResult = { rps: answered / (r['duration'] as number), p50: r['latency'].p50, p99: r['latency'].p99, ok: answered, bad: (r['errors'] as number) + (r['timeouts'] as number) };
    process.send!(result);
  });
  process.on('disconnect', () => process.exit(0));
}

/**
 * The ledger's own work, measured in this process where nothing else competes for the figure:
 * CPU per `observe()` (the only call on a request's path) and time per write transaction, with
 * the bench's 8 bots on one origin, one request in four refused (a refusal row each), flushed
 * every 2,000 requests (about one second of this load).
 */
async function measureLedgerWork(): Promise<string> {
  const { Ledger } = await import('../src/audit/ledger/index.js');
  const { systemClock } = await import('../src/clock.js');
  const { makeDecision, makeEntry } = await import('../test/audit/factories.js');
  const ledger = new Ledger({
    path: join(mkdtempSync(join(os.tmpdir(), 'robots-proxy-ledger-work-')), 'ledger.sqlite'),
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    flushIntervalMs: 0,
    pruneIntervalMs: 0,
  });
  const entries = BOTS.flatMap((bot) => {
    const token = bot.split('/')[0]!;
    const allowed = makeEntry({ decision: makeDecision({ verdict: 'allow', reason: 'no-matching-rule', rule: null, productToken: token }), productTokens: [token], timings: { queueWaitMs: 3 }, response: { status: 200, upstreamStatus: 200 } });
    return [allowed, allowed, allowed, makeEntry({ decision: makeDecision({ productToken: token }), productTokens: [token] })];
  });
  const batches = 200;
  const perBatch = 2_000;
  let observeUs = 0;
  const flushMs: number[] = [];
  for (let b = 0; b < batches; b++) {
    const startedMs = Date.now();
    const cpu = process.cpuUsage();
    for (let i = 0; i < perBatch; i++) {
      const entry = entries[i % entries.length]!;
      entry.startedAtMs = startedMs;
      ledger.observe(entry);
    }
    const used = process.cpuUsage(cpu);
    observeUs += used.user + used.system;
    const t0 = performance.now();
    ledger.flush();
    flushMs.push(performance.now() - t0);
  }
  ledger.close();
  return `observe() ${(observeUs / (batches * perBatch)).toFixed(2)} us CPU per request; write transaction of ${perBatch} requests (${BOTS.length} bots, ${perBatch / 4} refusal rows) median ${median(flushMs).toFixed(2)} ms`;
}

async function main(): Promise<void> {
  console.log(`ledger work in-process: ${await measureLedgerWork()}`);
  const self = fileURLToPath(import.meta.url);
  const origin = forkRole(self, 'origin');
  const load = forkRole(self, 'load');
  // LEDGER_BENCH_AA=1: both proxies run with the ledger off (an A/A run: the bias and spread of the
  // ratios when there is no difference, to read the real run's ratios against).
  const isAa = process.env['LEDGER_BENCH_AA'] === '1';
  if (isAa) console.log('A/A run: both proxies have the ledger OFF ("on" is a second "off")');
  const on = forkRole(self, 'proxy', isAa ? 'off' : 'on');
  const off = forkRole(self, 'proxy', 'off');
  const { port: originPort } = await nextMessage<{ port: number }>(origin);
  const ports = { on: (await nextMessage<{ port: number }>(on)).port, off: (await nextMessage<{ port: number }>(off)).port };
  const host = `127.0.0.1:${originPort}`;
  const pids: Record<'on' | 'off', number | undefined> = { on: on.pid, off: off.pid };

  console.log(`ledger: node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`  each proxy in its own process (ledger on: pid ${on.pid}, off: pid ${off.pid}); origin pid ${origin.pid}; autocannon pid ${load.pid}`);
  console.log(`  autocannon: ${CONNECTIONS} keep-alive connections, ${RUN_SECONDS} s per run, ${ROUNDS} rounds, on/off interleaved; ${BOTS.length} bot User-Agents`);

  const run = async (which: 'on' | 'off', mix: LoadJob['mix'], seconds: number): Promise<LoadResult & { cpuUsPerReq: number }> => {
    const [r, cpuS] = await withCpu({ proxy: pids[which] }, async () => {
      load.send({ url: `http://127.0.0.1:${ports[which]}`, host, mix, seconds } satisfies LoadJob);
      return nextMessage<LoadResult>(load);
    });
    return { ...r, cpuUsPerReq: ((cpuS['proxy'] ?? NaN) / r.ok) * 1e6 };
  };
  for (const mix of ['allowed', 'mixed'] as const) {
    await run('on', mix, WARMUP_SECONDS);
    await run('off', mix, WARMUP_SECONDS);
    const results: Record<'on' | 'off', Array<LoadResult & { cpuUsPerReq: number }>> = { on: [], off: [] };
    for (let round = 1; round <= ROUNDS; round++) {
      for (const which of round % 2 === 1 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
        const r = await run(which, mix, RUN_SECONDS);
        results[which].push(r);
        console.log(`  ${mix.padEnd(7)} round ${round} ledger ${which.padEnd(3)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  ${r.cpuUsPerReq.toFixed(1)} us CPU/req  (${r.bad} errors)`);
      }
    }
    const m = (which: 'on' | 'off') => ({
      rps: median(results[which].map((r) => r.rps)),
      p99: median(results[which].map((r) => r.p99)),
      cpu: median(results[which].map((r) => r.cpuUsPerReq)),
    });
    const a = m('on');
    const b = m('off');
    console.log(`  ${mix}: median req/s on ${a.rps.toFixed(0)} / off ${b.rps.toFixed(0)} = ${(a.rps / b.rps).toFixed(3)} (target >= 0.97); p99 on ${a.p99} ms / off ${b.p99} ms; CPU us/req on ${a.cpu.toFixed(1)} / off ${b.cpu.toFixed(1)} = ${(a.cpu / b.cpu).toFixed(3)}`);
    // Ratios of the two runs of each round (run back to back, so they shared the machine's load): their spread says what the machine can resolve.
    const spread = (key: 'rps' | 'cpuUsPerReq' | 'p99'): string => {
      const ratios = results.on.map((r, i) => r[key] / results.off[i]![key]).sort((x, y) => x - y);
      return `median ${median(ratios).toFixed(3)}, min ${ratios[0]!.toFixed(3)}, max ${ratios[ratios.length - 1]!.toFixed(3)}`;
    };
    console.log(`  ${mix}: per-round on/off ratios: CPU us/req ${spread('cpuUsPerReq')}; req/s ${spread('rps')}; p99 ${spread('p99')}`);
  }
  on.send('stats');
  const stats = await nextMessage<{ writes: number; lastWriteMs: number; failures: Record<string, number> } | null>(on);
  if (stats !== null) console.log(`  ledger (on): ${stats.writes} write transactions, last one ${stats.lastWriteMs.toFixed(2)} ms, failures ${JSON.stringify(stats.failures)}`);
  for (const child of [origin, load, on, off]) child.disconnect();
}

const role = process.argv[2];
if (role === 'origin') await runOrigin();
else if (role === 'proxy') await runProxy(process.argv[3] ?? 'on');
else if (role === 'load') runLoad();
else await main();
