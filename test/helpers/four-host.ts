/**
 * The outcome assertions of the four-host scenario (issue #3), shared by its
 * HTTP and HTTPS runs: origins A-D, 60 pages each, 27 URLs under /private/ on
 * A-C, D's robots.txt answering 404.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { proxyGet } from './harness.js';

/** The four origins' names. */
export const FOUR_HOST_NAMES = ['A', 'B', 'C', 'D'] as const;

/** The scenario's bot User-Agent (product token ExampleBot). */
export const FOUR_HOST_BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';

/** The robots.txt of A and C (B adds `Crawl-delay: 0.05`; D answers 404). */
export const FOUR_HOST_DISALLOW = 'User-agent: *\nDisallow: /private/\n';

/** The four origins (for `startOriginsProcess`): pages answered in 10 ms. */
export const FOUR_HOST_ORIGINS = {
  A: { robots: FOUR_HOST_DISALLOW, pageDelayMs: 10 },
  B: { robots: FOUR_HOST_DISALLOW + 'Crawl-delay: 0.05\n', pageDelayMs: 10 },
  C: { robots: FOUR_HOST_DISALLOW, pageDelayMs: 10 },
  D: { robotsStatus: 404, robots: 'not found', pageDelayMs: 10 },
} as const;

/** The proxy's config for the scenario over plain HTTP (for `startProxyProcess`), plus `extra` YAML lines. */
export function fourHostProxyYaml(extra = ''): string {
  return `listen: { host: 127.0.0.1, port: 0 }\nadmin: { enabled: false }\nupstream: { allowPrivateNetworks: true }\npacing: { maxConcurrency: 8, maxWait: 60s }\nlog: { level: info }\nstateDir: $STATE\nhttps: { mode: tunnel }\n${extra}`;
}

/** The requests of the scenario, in order: 60 pages per origin, 27 private URLs on A-C spread among them. */
export function fourHostWork(): Array<{ host: (typeof FOUR_HOST_NAMES)[number]; path: string }> {
  const work: Array<{ host: (typeof FOUR_HOST_NAMES)[number]; path: string }> = [];
  for (let i = 0; i < 60; i++) for (const host of FOUR_HOST_NAMES) work.push({ host, path: `/page/${i}?q=${i}` });
  for (let i = 0; i < 27; i++) work.splice(i * 9, 0, { host: FOUR_HOST_NAMES[i % 3]!, path: `/private/${i}` });
  return work;
}

/** Runs the scenario's client over plain HTTP: 32 keep-alive connections through the proxy at `proxyPort`. */
export async function crawlFourHosts(proxyPort: number, urlOf: (name: string) => string): Promise<FourHostResult[]> {
  const work = fourHostWork();
  const results: FourHostResult[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < work.length) {
      const item = work[next++]!;
      const r = await proxyGet(proxyPort, urlOf(item.host) + item.path, { agent, headers: { 'user-agent': FOUR_HOST_BOT_UA } });
      results.push({ host: item.host, path: item.path, status: r.status, body: r.body, decision: String(r.headers['x-robots-proxy-decision']) });
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  agent.destroy();
  return results;
}

/** One client request and what came back. */
export interface FourHostResult {
  host: string;
  path: string;
  status: number;
  body: string;
  /** The `x-robots-proxy-decision` header. */
  decision: string;
}

/** Requests an origin received, by origin name. */
export type HitsByOrigin = Record<string, ReadonlyArray<{ url: string }>>;

/** Each origin's robots.txt was fetched exactly once. */
export function assertRobotsFetchedOnce(hits: HitsByOrigin): void {
  for (const [name, list] of Object.entries(hits)) assert.equal(list.filter((h) => h.url === '/robots.txt').length, 1, `robots.txt hits at ${name}`);
}

/** No request under /private/ reached any origin. */
export function assertNothingPrivateUpstream(hits: HitsByOrigin): void {
  for (const [name, list] of Object.entries(hits)) assert.deepEqual(list.filter((h) => h.url.startsWith('/private/')), [], `private hits at ${name}`);
}

/** All 27 private URLs got 403 naming the rule and its line. */
export function assertPrivateDenied(results: readonly FourHostResult[]): void {
  const denied = results.filter((r) => r.path.startsWith('/private/'));
  assert.equal(denied.length, 27);
  for (const r of denied) {
    assert.equal(r.status, 403);
    assert.equal(r.decision, 'deny; reason=rule-disallow');
    assert.match(r.body, /disallow: \/private\/ +\(line 2\)/);
  }
}

/** Every page got 200 with the origin's body, each origin saw its 60 pages, and D's were allowed as robots-unavailable. */
export function assertPagesServed(results: readonly FourHostResult[], hits: HitsByOrigin): void {
  const pages = results.filter((r) => r.path.startsWith('/page/'));
  assert.equal(pages.length, 240);
  for (const r of pages) {
    assert.equal(r.status, 200, `${r.host}${r.path}: ${r.body}`);
    assert.equal(r.body, `page ${r.path}\n`);
  }
  for (const [name, list] of Object.entries(hits)) assert.equal(list.filter((h) => h.url.startsWith('/page/')).length, 60, `pages at ${name}`);
  assert.ok(pages.filter((r) => r.host === 'D').every((r) => r.decision === 'allow; reason=robots-unavailable'));
}
