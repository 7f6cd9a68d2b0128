/**
 * The four-host scenario (issue #3): four origins answering pages in 10 ms;
 * A and C disallow /private/, B the same plus Crawl-delay 0.05, D answers 404
 * for robots.txt. A client with 32 concurrent connections and a bot
 * User-Agent fetches 60 pages from each and 27 URLs under /private/.
 *
 * The proxy runs as `robots-proxy serve` and the origins in a process of
 * their own, so the start times the origins record are not skewed by the
 * client load in this process.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertStartSpacing, seenStarts, sentStarts } from '../helpers/spacing.js';
import { assertNothingPrivateUpstream, assertPagesServed, assertPrivateDenied, assertRobotsFetchedOnce } from '../helpers/four-host.js';
import http from 'node:http';
import { proxyGet } from '../helpers/harness.js';
import { startOriginsProcess, startProxyProcess, type OriginsProcess, type ProxyProcess, type RemoteHit } from '../helpers/processes.js';

const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const NAMES = ['A', 'B', 'C', 'D'] as const;

describe('four-host scenario over HTTP', () => {
  let origins: OriginsProcess;
  let proxy: ProxyProcess;
  const results: Array<{ host: string; path: string; status: number; body: string; decision: string }> = [];
  const hits: Record<string, RemoteHit[]> = {};

  before(async () => {
    const disallow = 'User-agent: *\nDisallow: /private/\n';
    [origins, proxy] = await Promise.all([
      startOriginsProcess({
        A: { robots: disallow, pageDelayMs: 10 },
        B: { robots: disallow + 'Crawl-delay: 0.05\n', pageDelayMs: 10 },
        C: { robots: disallow, pageDelayMs: 10 },
        D: { robotsStatus: 404, robots: 'not found', pageDelayMs: 10 },
      }),
      startProxyProcess(
        'listen: { host: 127.0.0.1, port: 0 }\nadmin: { enabled: false }\nupstream: { allowPrivateNetworks: true }\npacing: { maxConcurrency: 8, maxWait: 60s }\nlog: { level: info }\nstateDir: $STATE\nhttps: { mode: tunnel }\n',
      ),
    ]);

    const work: Array<{ host: (typeof NAMES)[number]; path: string }> = [];
    for (let i = 0; i < 60; i++) for (const host of NAMES) work.push({ host, path: `/page/${i}?q=${i}` });
    for (let i = 0; i < 27; i++) work.splice(i * 9, 0, { host: NAMES[i % 3]!, path: `/private/${i}` });

    const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < work.length) {
        const item = work[next++]!;
        const r = await proxyGet(proxy.proxyPort, origins.urlOf(item.host) + item.path, { agent, headers: { 'user-agent': BOT_UA } });
        results.push({ host: item.host, path: item.path, status: r.status, body: r.body, decision: String(r.headers['x-robots-proxy-decision']) });
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
    agent.destroy();
    for (const name of NAMES) hits[name] = await origins.hits(name);
    await proxy.waitForAccessLines(work.length);
  });

  after(async () => {
    await proxy?.close();
    await origins?.close();
  });

  it('fetches each origin\'s robots.txt exactly once', () => {
    assertRobotsFetchedOnce(hits);
  });

  it('sends nothing under /private/ to any origin', () => {
    assertNothingPrivateUpstream(hits);
  });

  it('answers all 27 private URLs with 403 naming the rule', () => {
    assertPrivateDenied(results);
  });

  it('answers every page with 200 and the origin\'s body', () => {
    assertPagesServed(results, hits);
  });

  it('spaces request starts at B by at least 50 ms as sent, and B saw none before it was sent', () => {
    const sent = sentStarts(proxy.logs, origins.urlOf('B'), '/page/');
    assert.equal(sent.length, 60);
    const seen = seenStarts(hits['B']!, '/page/');
    assert.equal(seen.length, 60);
    assertStartSpacing(sent, seen, 50);
  });
});
