/**
 * `npm run bench:fleet`: the figures of issue 10 (a fleet on Redis).
 * - throughput at an origin without a delay: one instance (memory backend), one
 *   instance on Redis, three instances on Redis; autocannon, keep-alive, the
 *   load spread evenly over the instances;
 * - Redis round trips per request: client commands (EVALSHA/EVAL and the
 *   rest, from INFO commandstats of the bench's own redis-server) divided by
 *   the requests answered;
 * - pacing precision fleet-wide at Crawl-delay 0.05 and 0.5, three instances:
 *   achieved rate against the ceiling, smallest gap and smallest span of 10
 *   consecutive requests, as the origin saw them.
 * Prints figures; passes or fails nothing. Needs `redis-server` on the PATH.
 */
import { createRequire } from 'node:module';
import http from 'node:http';
import { REDIS_SKIP, startRedisServer, type RedisServer } from '../test/helpers/redis-server.js';
import { startOriginsProcess, startProxyProcess, type OriginsProcess, type ProxyProcess } from '../test/helpers/processes.js';
import { fleetYaml, freshPrefix, sendThroughFleet } from '../test/helpers/fleet.js';
import { sentStarts } from '../test/helpers/spacing.js';

const RUN_SECONDS = Number(process.env['FLEET_BENCH_SECONDS'] ?? 8);
const CONNECTIONS_PER_INSTANCE = 16;
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<Record<string, any>>;

/** Client commands (one round trip each) by name, from INFO commandstats. */
async function commandCalls(redis: RedisServer): Promise<Map<string, number>> {
  const text = await redis.client.info('commandstats');
  const calls = new Map<string, number>();
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(match[1]!, Number(match[2]));
  return calls;
}

/** Commands sent by the proxies between two INFO readings: the bench's own INFO calls left out. */
function diffCalls(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, n] of after) {
    const d = n - (before.get(name) ?? 0);
    if (d > 0 && name !== 'info') out[name] = d;
  }
  return out;
}

async function load(proxies: readonly ProxyProcess[], target: string): Promise<{ rps: number; answered: number; p99: number; bad: number }> {
  const runs = await Promise.all(
    proxies.map((p) =>
      autocannon({
        url: `http://127.0.0.1:${p.proxyPort}`,
        connections: CONNECTIONS_PER_INSTANCE,
        duration: RUN_SECONDS,
        requests: [{ method: 'GET', path: `${target}/page/1?q=1`, headers: { host: new URL(target).host, 'user-agent': 'BenchBot/1.0' } }],
      }),
    ),
  );
  const answered = runs.reduce((sum, r) => sum + (r['2xx'] as number) + (r['non2xx'] as number), 0);
  const non2xx = runs.reduce((sum, r) => sum + (r['non2xx'] as number) + (r['errors'] as number), 0);
  return { rps: answered / RUN_SECONDS, answered, p99: Math.max(...runs.map((r) => r['latency'].p99 as number)), bad: non2xx };
}

async function warm(proxies: readonly ProxyProcess[], target: string): Promise<void> {
  for (const p of proxies) {
    await new Promise<void>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: p.proxyPort, path: `${target}/warm`, headers: { 'user-agent': 'BenchBot/1.0' } }, (res) => res.resume().on('end', resolve)).on('error', reject);
    });
  }
}

const MEMORY_YAML = [
  'listen: { host: 127.0.0.1, port: 0 }',
  'admin: { enabled: false }',
  'upstream: { allowPrivateNetworks: true }',
  'pacing: { maxConcurrency: 64, maxWait: 60s }',
  'log: { level: info }',
  'stateDir: $STATE',
  'https: { mode: tunnel }',
  'ledger: { enabled: false }',
].join('\n');

async function throughput(redis: RedisServer, origins: OriginsProcess): Promise<void> {
  const target = origins.urlOf('FREE');
  const quiet = (yaml: string): string => yaml; // access lines on, as deployed (the listening line is info too)
  console.log(`\nThroughput, no delay (autocannon, ${CONNECTIONS_PER_INSTANCE} keep-alive connections per instance, ${RUN_SECONDS} s, maxConcurrency 64 fleet-wide):`);
  console.log('  setup                         req/s   p99 ms   non-2xx   Redis round trips/request');
  const shapes: Array<[string, () => Promise<ProxyProcess[]>]> = [
    ['1 instance, memory', async () => [await startProxyProcess(MEMORY_YAML)]],
    ['1 instance, Redis', async () => [await startProxyProcess(quiet(fleetYaml(redis.url, freshPrefix(), { pacing: '{ maxConcurrency: 64, maxWait: 60s }' })))]],
    [
      '3 instances, Redis',
      async () => {
        const yaml = quiet(fleetYaml(redis.url, freshPrefix(), { pacing: '{ maxConcurrency: 64, maxWait: 60s }' }));
        return Promise.all([0, 1, 2].map(() => startProxyProcess(yaml)));
      },
    ],
  ];
  for (const [name, start] of shapes) {
    const proxies = await start();
    await warm(proxies, target);
    const before = await commandCalls(redis);
    const r = await load(proxies, target);
    await new Promise((resolve) => setTimeout(resolve, 200)); // batched releases land
    const calls = diffCalls(before, await commandCalls(redis));
    // A client command is one round trip; the commands a script runs inside Redis are listed apart.
    const trips = (calls['evalsha'] ?? 0) + (calls['eval'] ?? 0) + (calls['ping'] ?? 0);
    const perRequest = r.answered > 0 ? (trips / r.answered).toFixed(3) : '-';
    const inner = Object.entries(calls).filter(([k]) => !['evalsha', 'eval', 'ping'].includes(k));
    const detail = inner.length ? `inside scripts: ${inner.map(([k, v]) => `${k} ${(v / Math.max(1, r.answered)).toFixed(2)}`).join(', ')}` : '';
    console.log(`  ${name.padEnd(28)} ${r.rps.toFixed(0).padStart(6)}   ${String(r.p99).padStart(6)}   ${String(r.bad).padStart(7)}   ${perRequest}${detail ? ` (${detail})` : ''}`);
    await Promise.all(proxies.map((p) => p.close()));
  }
}

async function precision(redis: RedisServer, origins: OriginsProcess, name: string, delayMs: number, count: number): Promise<void> {
  const yaml = fleetYaml(redis.url, freshPrefix(), { slotLease: '30s', pacing: '{ maxConcurrency: 8, maxWait: 120s }' });
  const proxies = await Promise.all([0, 1, 2].map(() => startProxyProcess(yaml)));
  await warm(proxies, origins.urlOf(name));
  const work = Array.from({ length: count }, (_, i) => ({ host: name, path: `/p/${i}` }));
  const results = await sendThroughFleet(proxies, work, (h) => origins.urlOf(h), { concurrency: 12 });
  const seen = (await origins.hits(name)).filter((h) => h.url.startsWith('/p/')).map((h) => h.atMs);
  // The access lines are buffered for up to 100 ms.
  const sentOf = (): number[] => proxies.flatMap((p) => sentStarts(p.logs, origins.urlOf(name), '/p/').map((s) => s.atMs));
  for (const deadline = Date.now() + 5_000; sentOf().length < count && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 50));
  const ok = results.filter((r) => r.status === 200).length;
  console.log(`  Crawl-delay ${delayMs / 1000}: ${seen.length} requests (${ok} answered 200) over 3 instances`);
  for (const [label, times] of [['as the origin saw them', seen], ['as the instances sent them (access logs)', sentOf()]] as const) {
    const starts = [...times].sort((a, b) => a - b);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    const spanMs = starts.at(-1)! - starts[0]!;
    const rate = ((starts.length - 1) / spanMs) * 1000;
    let span10 = Infinity;
    for (let i = 0; i + 9 < starts.length; i++) span10 = Math.min(span10, starts[i + 9]! - starts[i]!);
    console.log(
      `    ${label.padEnd(42)} ${rate.toFixed(2)} req/s of ceiling ${(1000 / delayMs).toFixed(2)} (${((rate * delayMs) / 10).toFixed(1)} %), ` +
        `smallest gap ${Math.min(...gaps).toFixed(1)} ms, smallest span of 10 ${span10.toFixed(1)} ms (floor ${9 * delayMs} ms)`,
    );
  }
  await Promise.all(proxies.map((p) => p.close()));
}

async function main(): Promise<void> {
  if (REDIS_SKIP) {
    console.log(REDIS_SKIP);
    return;
  }
  const redis = await startRedisServer();
  const origins = await startOriginsProcess({
    FREE: { robots: 'User-agent: *\nAllow: /\n' },
    FAST: { robots: 'User-agent: *\nCrawl-delay: 0.05\n' },
    SLOW: { robots: 'User-agent: *\nCrawl-delay: 0.5\n' },
  });
  try {
    console.log(`robots-proxy fleet bench: redis-server ${(await redis.client.info('server')).match(/redis_version:(\S+)/)?.[1]} on port ${redis.port}, node ${process.version}`);
    await throughput(redis, origins);
    console.log('\nPacing precision fleet-wide (3 instances, 12 client connections spread over them):');
    await precision(redis, origins, 'FAST', 50, 101);
    await precision(redis, origins, 'SLOW', 500, 21);
  } finally {
    await origins.close();
    await redis.close();
  }
}

await main();
