/**
 * Times in milliseconds are whole numbers wherever they are shown: the access
 * line (durations, the robots snapshot's times, the queue wait) and the admin
 * API's `/robots` and `/explain`, through a real proxy and origin on loopback.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { captureLogs, proxyGet, siteHandler, startOrigin, startTestProxy } from '../helpers/harness.js';
import { waitFor } from '../helpers/proxy-client.js';

/** Every `*Ms` number anywhere in `value`, with its path. */
function msFields(value: unknown, path = ''): Array<[string, number]> {
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([key, v]) => {
    const at = path ? `${path}.${key}` : key;
    return typeof v === 'number' && key.endsWith('Ms') ? [[at, v] as [string, number]] : msFields(v, at);
  });
}

describe('whole milliseconds', () => {
  const closers: Array<() => Promise<void>> = [];
  after(async () => {
    for (const close of closers.reverse()) await close();
  });

  it('in the access line and the admin JSON', async () => {
    const origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nCrawl-delay: 0.3\nDisallow: /x\n', pageDelayMs: 7 }));
    const logs = captureLogs();
    const proxy = await startTestProxy({ log: { level: 'info' } }, { logger: logs.logger });
    closers.push(() => origin.close(), () => proxy.close());
    const headers = { 'user-agent': 'ExampleBot/1.0' };
    // The second waits for the crawl-delay: a queue wait, an upstream time and a duration.
    const answers = await Promise.all([1, 2].map((i) => proxyGet(proxy.proxyAddress.port, `${origin.url}/page/${i}`, { headers })));
    assert.deepEqual(answers.map((a) => a.status), [200, 200]);
    await waitFor(() => logs.lines.filter((l) => l['msg'] === 'request').length === 2, 'two access lines');
    const lines = logs.lines.filter((l) => l['msg'] === 'request');
    const robots = await (await fetch(`${proxy.adminUrl}/robots?origin=${encodeURIComponent(origin.url)}`)).json();
    const explain = await (await fetch(`${proxy.adminUrl}/explain?url=${encodeURIComponent(`${origin.url}/x`)}&ua=ExampleBot`)).json();
    const fields = [...lines.flatMap((l) => msFields(l, 'line')), ...msFields(robots, 'robots'), ...msFields(explain, 'explain')];
    const names = new Set(fields.map(([path]) => path.replace(/^line\./, '')));
    for (const expected of ['queueWaitMs', 'upstreamMs', 'durationMs', 'decision.snapshot.fetchedAtMs', 'decision.pacing.waitedMs']) {
      assert.ok(names.has(expected), `the access line has ${expected}: ${[...names].join(' ')}`);
    }
    assert.ok(names.has('robots.nextFetchAtMs') && names.has('explain.snapshot.expiresAtMs'), [...names].join(' '));
    assert.deepEqual(fields.filter(([, v]) => !Number.isInteger(v)), [], 'no fractional milliseconds');
  });
});
