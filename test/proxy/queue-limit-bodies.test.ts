/**
 * A 429 names the limit that refused it and the setting behind it, in every
 * body format, through a real proxy and a real origin on loopback: `max-wait`
 * (`pacing.maxWait`), `max-queue` (`pacing.maxQueue`) and
 * `max-queue-per-identity` (`pacing.maxQueuePerIdentity`).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { siteHandler, startOrigin, startTestProxy, proxyGet, type TestOrigin } from '../helpers/harness.js';
import { waitFor } from '../helpers/proxy-client.js';

const UA = 'ExampleBot/1.0';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/** The three renderings of the next request to `url`. */
async function threeBodies(proxy: Proxy, url: string): Promise<{ text: string; html: string; json: Record<string, unknown>; statuses: number[] }> {
  const ask = (accept: string) => proxyGet(proxy.proxyAddress.port, url, { headers: { 'user-agent': UA, accept } });
  const [text, html, json] = [await ask('text/plain'), await ask('text/html'), await ask('application/json')];
  return { text: text.body, html: html.body, json: JSON.parse(json.body) as Record<string, unknown>, statuses: [text.status, html.status, json.status] };
}

describe('429 bodies name the queue limit and its setting', () => {
  const closers: Array<() => Promise<void>> = [];
  after(async () => {
    for (const close of closers.reverse()) await close();
  });

  async function setUp(pacing: Record<string, unknown>, crawlDelay: number): Promise<{ proxy: Proxy; origin: TestOrigin }> {
    const origin = await startOrigin(siteHandler({ robots: `User-agent: *\nCrawl-delay: ${crawlDelay}\n` }));
    const proxy = await startTestProxy({ pacing });
    closers.push(() => origin.close(), () => proxy.close());
    return { proxy, origin };
  }

  it('max-wait: pacing.maxWait', async () => {
    const { proxy, origin } = await setUp({ maxWait: '2s' }, 30);
    assert.equal((await proxyGet(proxy.proxyAddress.port, `${origin.url}/first`, { headers: { 'user-agent': UA } })).status, 200);
    const r = await threeBodies(proxy, `${origin.url}/next`);
    assert.deepEqual(r.statuses, [429, 429, 429]);
    assert.match(r.text, /longer than the proxy allows \(limit max-wait, set by pacing\.maxWait\)/);
    assert.match(r.text, /^limit: +max-wait: pacing\.maxWait \(/m);
    assert.match(r.html, /<th>limit<\/th><td>max-wait: pacing\.maxWait \(/);
    assert.deepEqual(r.json['limit'], { name: 'max-wait', setting: 'pacing.maxWait', bounds: 'the longest expected wait in the queue' });
    assert.match(String(r.json['message']), /pacing\.maxWait/);
  });

  it('max-queue: pacing.maxQueue; max-queue-per-identity: pacing.maxQueuePerIdentity', async () => {
    for (const [pacing, name, setting] of [
      [{ maxQueue: 1 }, 'max-queue', 'pacing.maxQueue'],
      [{ maxQueuePerIdentity: 1 }, 'max-queue-per-identity', 'pacing.maxQueuePerIdentity'],
    ] as const) {
      const { proxy, origin } = await setUp({ ...pacing, maxWait: '1h' }, 30);
      assert.equal((await proxyGet(proxy.proxyAddress.port, `${origin.url}/first`, { headers: { 'user-agent': UA } })).status, 200);
      // One request waits 30 s for its turn (answered 503 when the proxy closes); the next is refused.
      void proxyGet(proxy.proxyAddress.port, `${origin.url}/waiting`, { headers: { 'user-agent': UA } }).catch(() => undefined);
      await waitFor(() => proxy.pacer.stats().queued === 1, 'one request queued');
      const r = await threeBodies(proxy, `${origin.url}/next`);
      assert.deepEqual(r.statuses, [429, 429, 429], name);
      assert.match(r.text, new RegExp(`\\(limit ${name}, set by ${setting.replace('.', '\\.')}\\)`));
      assert.match(r.text, new RegExp(`^limit: +${name}: ${setting.replace('.', '\\.')} \\(`, 'm'));
      assert.match(r.html, new RegExp(`<th>limit</th><td>${name}: ${setting.replace('.', '\\.')} \\(`));
      assert.equal((r.json['limit'] as Record<string, unknown>)['setting'], setting);
      assert.equal((r.json['decision'] as { pacing: { limit: string } }).pacing.limit, name);
    }
  });
});
