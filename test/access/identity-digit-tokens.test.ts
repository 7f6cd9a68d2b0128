/**
 * An identity bound to a crawler whose name holds digits (MJ12bot, 360Spider), through the real
 * proxy: the configuration accepts such tokens (it refused them, though its own message said
 * digits were allowed, while robots.txt groups and policy `token` rules read such names whole),
 * the identity is decided for its bound token's group whatever its User-Agent says, and a
 * User-Agent naming another crawler is a mismatch.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config/index.js';
import { proxyGet, siteHandler, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';

const ROBOTS = 'User-agent: MJ12bot\nDisallow: /private/\n\nUser-agent: 360Spider\nDisallow: /\n\nUser-agent: *\nAllow: /\n';
const MJ12_UA = 'Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)';

describe('an identity bound to a product token with digits', () => {
  let site: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    site = await startOrigin(siteHandler({ robots: ROBOTS }));
    proxy = await startTestProxy({
      access: { clients: [{ range: '127.0.0.1/32', identity: 'majestic' }, '127.0.0.0/8'] },
      identities: { majestic: { tokens: ['MJ12bot'], onMismatch: 'deny' } },
    });
  });
  after(async () => {
    await proxy?.close();
    await site?.close();
  });

  it('is accepted by the configuration: identities.<name>.tokens take letters, digits, "_" and "-"', () => {
    const config = parseConfig('identities:\n  a:\n    tokens: [MJ12bot, 360Spider, Bot-2_x]\n', 'x.yaml');
    assert.deepEqual(config.identities['a']?.tokens, ['MJ12bot', '360Spider', 'Bot-2_x']);
    assert.throws(() => parseConfig('identities:\n  a:\n    tokens: [MJ12bot/1.4]\n', 'x.yaml'), /identities\.a\.tokens\[0\]: must be a product token/);
  });

  it('is decided for its bound token\'s group, and another crawler\'s User-Agent is a mismatch', async () => {
    const get = (path: string, ua: string) => proxyGet(proxy.proxyAddress.port, `${site.url}${path}`, { headers: { 'user-agent': ua } });
    const refused = await get('/private/x', MJ12_UA);
    assert.deepEqual([refused.status, refused.headers['x-robots-proxy-decision']], [403, 'deny; reason=rule-disallow']);
    const allowed = await get('/public', MJ12_UA);
    assert.equal(allowed.status, 200);
    const other = await get('/public', 'Mozilla/5.0 (compatible; 360Spider)');
    assert.deepEqual([other.status, other.headers['x-robots-proxy-decision']], [403, 'deny; reason=identity-mismatch']);
    assert.ok(!site.hits.some((h) => h.url.startsWith('/private')));
  });
});
