/**
 * A fleet for end-to-end tests: three `robots-proxy serve` processes sharing a
 * private redis-server, and clients spread over them.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import { proxyGet } from './harness.js';
import { startOriginsProcess, startProxyProcess, type OriginsProcess, type ProxyProcess } from './processes.js';
import { startRedisServer, type RedisServer } from './redis-server.js';

/** The YAML of one fleet instance; `extra` adds top-level sections (and may override `pacing`). */
export function fleetYaml(redisUrl: string, keyPrefix: string, options: { onUnavailable?: 'local' | 'deny'; commandTimeout?: string; slotLease?: string; robotsLockLease?: string; pacing?: string; extra?: string } = {}): string {
  return [
    'listen: { host: 127.0.0.1, port: 0 }',
    'admin: { enabled: false }',
    'upstream: { allowPrivateNetworks: true }',
    `pacing: ${options.pacing ?? '{ maxConcurrency: 8, maxWait: 60s }'}`,
    'log: { level: info }',
    'stateDir: $STATE',
    'https: { mode: tunnel }',
    'ledger: { enabled: false }',
    'state:',
    '  backend: redis',
    '  fleetSize: 3',
    '  redis:',
    `    url: ${redisUrl}`,
    `    keyPrefix: "${keyPrefix}"`,
    `    onUnavailable: ${options.onUnavailable ?? 'local'}`,
    // Long enough that a loaded test machine does not fall back (a fallback paces per instance:
    // within the site's rate on average, not gap by gap). A stopped Redis closes the connection,
    // which is noticed at once whatever this is.
    `    commandTimeout: ${options.commandTimeout ?? '2s'}`,
    `    slotLease: ${options.slotLease ?? '30s'}`,
    `    robotsLockLease: ${options.robotsLockLease ?? '15s'}`,
    options.extra ?? '',
  ].join('\n');
}

/** A fresh key prefix, so tests sharing one Redis never see each other's keys. */
export function freshPrefix(): string {
  return `t${randomBytes(4).toString('hex')}:`;
}

/**
 * Starts `count` instances on `yaml`.
 * @throws the first failed instance's StartFailure (see processes.ts) when any does not start; the others, started
 *   or not, have then been closed, so a failed start leaves no instance running.
 */
export async function startFleet(yaml: string, count = 3): Promise<ProxyProcess[]> {
  const settled = await Promise.allSettled(Array.from({ length: count }, () => startProxyProcess(yaml)));
  const started = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed === undefined) return started;
  await Promise.all(started.map((p) => p.close()));
  throw failed.reason;
}

/** One answer seen by a client. */
export interface FleetResult {
  host: string;
  path: string;
  status: number;
  body: string;
  decision: string;
  /** Index of the instance that answered. */
  instance: number;
  retryAfter: string | undefined;
}

/**
 * Sends `work` through the fleet with `concurrency` workers, item i through instance i mod N.
 * @param urlOf the origin URL of a host name.
 */
export async function sendThroughFleet(
  proxies: readonly ProxyProcess[],
  work: ReadonlyArray<{ host: string; path: string }>,
  urlOf: (host: string) => string,
  options: { concurrency?: number; userAgent?: string; timeoutMs?: number } = {},
): Promise<FleetResult[]> {
  const agents = proxies.map(() => new http.Agent({ keepAlive: true, maxSockets: options.concurrency ?? 32 }));
  const results: FleetResult[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < work.length) {
      const index = next++;
      const item = work[index]!;
      const instance = index % proxies.length;
      const r = await proxyGet(proxies[instance]!.proxyPort, urlOf(item.host) + item.path, {
        agent: agents[instance]!,
        headers: { 'user-agent': options.userAgent ?? 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)' },
      });
      const retryAfter = r.headers['retry-after'];
      results.push({ host: item.host, path: item.path, status: r.status, body: r.body, decision: String(r.headers['x-robots-proxy-decision']), instance, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter });
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 32 }, worker));
  for (const agent of agents) agent.destroy();
  return results;
}

/** A running fleet with its Redis and its origins, as {@link useFleet} registers them. */
export interface FleetUnderTest {
  redis: RedisServer;
  origins: OriginsProcess;
  fleet: ProxyProcess[];
}

/**
 * Registers, in the calling `describe`, a private redis-server, the origins of `specs` in a child
 * process and `count` instances on the YAML `yamlOf` gives for the Redis URL; all closed after its tests.
 * @returns the running parts, filled in once `before` has run.
 */
export function useFleet(specs: Parameters<typeof startOriginsProcess>[0], yamlOf: (redisUrl: string) => string, count: number): FleetUnderTest {
  const running = {} as FleetUnderTest;
  before(async () => {
    running.redis = await startRedisServer();
    [running.origins, running.fleet] = await Promise.all([startOriginsProcess(specs), startFleet(yamlOf(running.redis.url), count)]);
  });
  after(async () => {
    await Promise.all((running.fleet ?? []).map((p) => p.close()));
    await running.origins?.close();
    await running.redis?.close();
  });
  return running;
}
