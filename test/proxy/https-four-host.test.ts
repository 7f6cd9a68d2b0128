/**
 * The four-host scenario (issue #3) over HTTPS with interception (issue #4):
 * four HTTPS origins answering pages in 10 ms; A and C disallow /private/, B
 * the same plus Crawl-delay 0.05, D answers 404 for robots.txt. 32 clients,
 * each with its own undici ProxyAgent (so its own CONNECT tunnels), fetch 60
 * pages from each origin and 27 URLs under /private/, after one warm-up
 * request each to a fifth origin W.
 *
 * The proxy runs as `robots-proxy serve` and the origins in processes of
 * their own, so the start times the origins record are not skewed by the
 * client load (and the TLS work) in this process.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertStartSpacing, seenStarts, sentStarts } from '../helpers/spacing.js';
import { assertNothingPrivateUpstream, assertPagesServed, assertPrivateDenied, assertRobotsFetchedOnce } from '../helpers/four-host.js';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProxyAgent, request } from 'undici';
import { startProxyProcess, type ProxyProcess, type RemoteHit } from '../helpers/processes.js';
import { createTestPki, startHttpsOriginsProcess, writeTempFile, type HttpsOriginsProcess } from '../helpers/https-support.js';

const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const NAMES = ['A', 'B', 'C', 'D'] as const;
const CLIENTS = 32;

describe('four-host scenario over HTTPS (intercepted)', () => {
  // B, the paced origin, has a process of its own, so the TLS work for A, C and D does not
  // delay the moments at which B sees its requests.
  let pacedOrigin: HttpsOriginsProcess;
  let otherOrigins: HttpsOriginsProcess;
  let proxy: ProxyProcess;
  const results: Array<{ host: string; path: string; status: number; body: string; decision: string }> = [];
  const hits: Record<string, RemoteHit[]> = {};
  const originsOf = (name: string): HttpsOriginsProcess => (name === 'B' ? pacedOrigin : otherOrigins);
  const urlOf = (name: string): string => originsOf(name).urlOf(name);

  before(async () => {
    const pki = await createTestPki();
    const caFile = writeTempFile('upstream-ca.pem', pki.caPem);
    const stateDir = mkdtempSync(join(tmpdir(), 'robots-proxy-https-state-'));
    const disallow = 'User-agent: *\nDisallow: /private/\n';
    [pacedOrigin, otherOrigins, proxy] = await Promise.all([
      startHttpsOriginsProcess({ B: { robots: disallow + 'Crawl-delay: 0.05\n', pageDelayMs: 10 } }, pki),
      startHttpsOriginsProcess(
        {
          A: { robots: disallow, pageDelayMs: 10 },
          C: { robots: disallow, pageDelayMs: 10 },
          D: { robotsStatus: 404, robots: 'not found', pageDelayMs: 10 },
          W: { robots: '' },
        },
        pki,
      ),
      startProxyProcess(
        [
          'listen: { host: 127.0.0.1, port: 0 }',
          'admin: { enabled: false }',
          `upstream: { allowPrivateNetworks: true, caFile: ${JSON.stringify(caFile)} }`,
          'pacing: { maxConcurrency: 8, maxWait: 60s }',
          'log: { level: info }',
          `stateDir: ${JSON.stringify(stateDir)}`,
          'https: { mode: intercept }',
          '',
        ].join('\n'),
      ),
    ]);
    const proxyCa = readFileSync(join(stateDir, 'ca', 'ca.pem'), 'utf8');

    const work: Array<{ host: (typeof NAMES)[number]; path: string }> = [];
    for (let i = 0; i < 60; i++) for (const host of NAMES) work.push({ host, path: `/page/${i}?q=${i}` });
    for (let i = 0; i < 27; i++) work.splice(i * 9, 0, { host: NAMES[i % 3]!, path: `/private/${i}` });

    const agents = Array.from({ length: CLIENTS }, () => new ProxyAgent({ uri: `http://127.0.0.1:${proxy.proxyPort}`, requestTls: { ca: proxyCa } }));
    let next = 0;
    const worker = async (dispatcher: ProxyAgent): Promise<void> => {
      while (next < work.length) {
        const item = work[next++]!;
        const r = await request(urlOf(item.host) + item.path, { dispatcher, headers: { 'user-agent': BOT_UA } });
        const body = await r.body.text();
        results.push({ host: item.host, path: item.path, status: r.statusCode, body, decision: String(r.headers['x-robots-proxy-decision']) });
      }
    };
    try {
      // Warm-up: every client fetches one page from a fifth origin W, so the run at A-D does not
      // include the proxy's cold start (first leaf certificate for 127.0.0.1, JIT of every code
      // path). The tunnels to A-D are still opened during the run.
      await Promise.all(agents.map(async (dispatcher) => (await request(`${urlOf('W')}/warm-up`, { dispatcher })).body.text()));
      await Promise.all(agents.map(worker));
    } finally {
      await Promise.all(agents.map((a) => a.close()));
    }
    for (const name of NAMES) hits[name] = await originsOf(name).hits(name);
    await proxy.waitForAccessLines(work.length + agents.length);
  });

  after(async () => {
    await proxy?.close();
    await pacedOrigin?.close();
    await otherOrigins?.close();
  });

  it('fetches each origin\'s robots.txt exactly once, over HTTPS', () => {
    assertRobotsFetchedOnce(hits);
    for (const name of NAMES) {
      const fetches = proxy.logs.filter((l) => l['event'] === 'robots-fetch' && l['origin'] === urlOf(name));
      assert.equal(fetches.length, 1, `robots-fetch lines for ${name}`);
    }
  });

  it('sends nothing under /private/ to any origin', () => {
    assertNothingPrivateUpstream(hits);
  });

  it('answers all 27 private URLs with 403 naming the rule', () => {
    assertPrivateDenied(results);
  });

  it('answers every page with 200 and the origin\'s body, inside the tunnels', () => {
    assertPagesServed(results, hits);
    const lines = proxy.logs.filter((l) => typeof l['url'] === 'string' && NAMES.some((name) => (l['url'] as string).startsWith(`${urlOf(name)}/`)));
    assert.equal(lines.length, 267);
    assert.ok(lines.every((l) => l['via'] === 'https-intercepted'));
  });

  it('spaces request starts at B by at least 50 ms as sent across many tunnels, and B saw none before it was sent', () => {
    const bLines = proxy.logs.filter((l) => typeof l['url'] === 'string' && (l['url'] as string).startsWith(urlOf('B') + '/page/'));
    // The 60 pages came through many client tunnels, not one serialised connection.
    const tunnels = new Set(bLines.map((l) => l['clientPort']));
    assert.ok(tunnels.size >= 8, `B's pages came through ${tunnels.size} tunnels`);

    const sent = sentStarts(bLines, urlOf('B'), '/page/');
    assert.equal(sent.length, 60);
    const seen = seenStarts(hits['B']!, '/page/');
    assert.equal(seen.length, 60);
    assertStartSpacing(sent, seen, 50);
  });
});
