/**
 * A private target's 403, through a real proxy: the summary and the detail name
 * the address with one wording (loopback, private, link-local or other
 * non-public), and the setting that allows it.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { siteHandler, startOrigin, startTestProxy, proxyGet } from '../helpers/harness.js';
import { NON_PUBLIC_ADDRESS } from '../../src/proxy/target-guard.js';

describe('target-private-network wording', () => {
  const closers: Array<() => Promise<void>> = [];
  after(async () => {
    for (const close of closers.reverse()) await close();
  });

  it('says "loopback, private, link-local or other non-public" in the summary and the detail', async () => {
    const origin = await startOrigin(siteHandler({}));
    const proxy = await startTestProxy({ upstream: { allowPrivateNetworks: false } });
    closers.push(() => origin.close(), () => proxy.close());
    const r = await proxyGet(proxy.proxyAddress.port, `${origin.url}/page`, { headers: { 'user-agent': 'ExampleBot/1.0' } });
    assert.equal(r.status, 403);
    assert.equal(r.headers['x-robots-proxy-decision'], 'deny; reason=target-private-network');
    assert.ok(r.body.startsWith(`The target is ${NON_PUBLIC_ADDRESS}, which this proxy does not reach.`), r.body);
    assert.match(r.body, new RegExp(`^detail: +127\\.0\\.0\\.1 is ${NON_PUBLIC_ADDRESS}$`, 'm'));
    assert.match(r.body, /upstream\.allowPrivateNetworks: true/);
    assert.deepEqual(origin.hits, []);
  });
});
