/**
 * Identities bound to product tokens, end to end (issue 8, "Who they are"): a scraper whose
 * client range names the identity `lab-scrapers`, bound to ExampleBot, sends a Chrome
 * User-Agent: it is decided as ExampleBot, flagged in the access line and a metric, and, with
 * `onMismatch: deny`, refused. The outgoing User-Agent is appended to or replaced; `/explain`
 * takes `identity=`; the fairness key is the identity's name.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { captureLogs, proxyGet, startOrigin, startTestProxy, siteHandler, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { identityOf } from '../../src/proxy/pipeline.js';
import { decideWithoutRobots } from '../../src/policy/decide.js';
import type { Config } from '../../src/config/index.js';

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const ROBOTS = 'User-agent: ExampleBot\nDisallow: /private/\n\nUser-agent: *\nAllow: /\n';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

describe('an identity bound to ExampleBot', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  let logs: LogCapture;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: ROBOTS }));
    logs = captureLogs();
    proxy = await startTestProxy(
      {
        access: { clients: [{ range: '127.0.0.1/32', identity: 'lab-scrapers' }] },
        identities: { 'lab-scrapers': { tokens: ['ExampleBot'], userAgent: 'append' } },
        log: { level: 'info' },
      },
      { logger: logs.logger },
    );
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  function withIdentity(change: (config: Config) => Config): void {
    proxy.reload(change(proxy.currentConfig()));
  }

  it('is decided as ExampleBot whatever its User-Agent says, and flagged', async () => {
    const refused = await proxyGet(proxy.proxyAddress.port, `${origin.url}/private/data`, { headers: { 'user-agent': CHROME, accept: 'application/json' } });
    assert.equal(refused.status, 403);
    const body = JSON.parse(refused.body) as { decision: { reason: string; productToken: string; identity: { name: string; boundTokens: string[]; claimedTokens: string[]; isMismatch: boolean } } };
    assert.equal(body.decision.reason, 'rule-disallow');
    assert.equal(body.decision.productToken, 'ExampleBot');
    assert.deepEqual(body.decision.identity, { name: 'lab-scrapers', source: 'client-range', boundTokens: ['ExampleBot'], claimedTokens: [], isMismatch: true });
    const text = await proxyGet(proxy.proxyAddress.port, `${origin.url}/private/data`, { headers: { 'user-agent': CHROME } });
    assert.match(text.body, /identity: +lab-scrapers \(client range\)/);
    assert.match(text.body, /bound to: +ExampleBot/);

    const line = logs.lines.find((l) => l['msg'] === 'request' && String(l['url']).endsWith('/private/data'));
    assert.equal(line?.['identity'], 'lab-scrapers');
    assert.equal((line?.['decision'] as { identity: { isMismatch: boolean } }).identity.isMismatch, true);
    assert.equal(origin.hits.filter((h) => h.url.startsWith('/private')).length, 0);

    const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    assert.match(metrics, /robots_proxy_identity_mismatches_total\{identity="lab-scrapers",claimed="none",bound="ExampleBot"\} 2\b/);
    assert.match(metrics, /robots_proxy_bot_requests_total\{identity="lab-scrapers",token="ExampleBot",verdict="deny",reason="rule-disallow"\} 2\b/);
  });

  it('a User-Agent naming another bot is flagged as claimed vs bound', async () => {
    await proxyGet(proxy.proxyAddress.port, `${origin.url}/other`, { headers: { 'user-agent': 'GPTBot/1.1' } });
    const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    assert.match(metrics, /robots_proxy_identity_mismatches_total\{identity="lab-scrapers",claimed="GPTBot",bound="ExampleBot"\} 1\b/);
  });

  it('appends the bound token to the outgoing User-Agent, or sets the configured one', async () => {
    const appended = await proxyGet(proxy.proxyAddress.port, `${origin.url}/ua-append`, { headers: { 'user-agent': CHROME } });
    assert.equal(appended.status, 200);
    assert.equal(origin.hits.find((h) => h.url === '/ua-append')?.headers['user-agent'], `${CHROME} ExampleBot`);
    await proxyGet(proxy.proxyAddress.port, `${origin.url}/ua-own`, { headers: { 'user-agent': 'ExampleBot/3.0' } });
    assert.equal(origin.hits.find((h) => h.url === '/ua-own')?.headers['user-agent'], 'ExampleBot/3.0', 'a User-Agent that names the token is kept');

    withIdentity((c) => ({ ...c, identities: { 'lab-scrapers': { tokens: ['ExampleBot'], userAgent: 'set', userAgentValue: 'ExampleBot/1.0 (+https://lab.example/bot)' } } }));
    await proxyGet(proxy.proxyAddress.port, `${origin.url}/ua-set`, { headers: { 'user-agent': CHROME } });
    assert.equal(origin.hits.find((h) => h.url === '/ua-set')?.headers['user-agent'], 'ExampleBot/1.0 (+https://lab.example/bot)');
  });

  it('with onMismatch deny a mismatching User-Agent is refused, one naming the bound token is not', async () => {
    withIdentity((c) => ({ ...c, identity: { onMismatch: 'deny' } }));
    const refused = await proxyGet(proxy.proxyAddress.port, `${origin.url}/public`, { headers: { 'user-agent': CHROME } });
    assert.equal(refused.status, 403);
    assert.equal(refused.headers['x-robots-proxy-decision'], 'deny; reason=identity-mismatch');
    assert.equal(origin.hits.filter((h) => h.url === '/public').length, 0);
    const honest = await proxyGet(proxy.proxyAddress.port, `${origin.url}/public`, { headers: { 'user-agent': 'Mozilla/5.0 (compatible; ExampleBot/2.0)' } });
    assert.equal(honest.status, 200);
  });

  it('/explain decides for identity=, and refuses an unknown one', async () => {
    const url = encodeURIComponent(`${origin.url}/private/x`);
    const explained = (await (await fetch(`${proxy.adminUrl}/explain?url=${url}&ua=${encodeURIComponent('ExampleBot/1')}&identity=lab-scrapers`)).json()) as { reason: string; identity: { name: string } };
    assert.equal(explained.reason, 'rule-disallow');
    assert.equal(explained.identity.name, 'lab-scrapers');
    const anonymous = (await (await fetch(`${proxy.adminUrl}/explain?url=${url}&ua=${encodeURIComponent(CHROME)}`)).json()) as { reason: string; identity: null };
    assert.deepEqual([anonymous.reason, anonymous.identity], ['rule-allow', null]);
    const unknown = await fetch(`${proxy.adminUrl}/explain?url=${url}&identity=nobody`);
    assert.equal(unknown.status, 400);
    assert.equal(((await unknown.json()) as { error: string }).error, 'unknown-identity');
  });
});

describe('identityOf (the fairness key)', () => {
  it('is the identity name when there is one, else the client address with its prefix length (an IPv6 client: its /64)', () => {
    const req = { socket: { remoteAddress: '10.0.0.7' } } as unknown as IncomingMessage;
    const named = { ...decideWithoutRobots('rule-allow', { verdict: 'allow' }), identity: { name: 'lab', source: 'credentials' as const, boundTokens: [], claimedTokens: [], isMismatch: false } };
    assert.equal(identityOf(req, named), 'lab');
    assert.equal(identityOf(req, decideWithoutRobots('rule-allow', { verdict: 'allow' })), '10.0.0.7/32');
    assert.equal(identityOf(req), '10.0.0.7/32');
    const from = (remoteAddress: string): string => identityOf({ socket: { remoteAddress } } as unknown as IncomingMessage);
    assert.equal(from('::ffff:10.0.0.7'), '10.0.0.7/32', 'an IPv4-mapped address is its IPv4 client');
    // Two addresses of one /64 (one host's usual allocation) are one client; another /64 is another.
    assert.equal(from('2001:db8:1:2::a'), from('2001:db8:1:2:ffff::b'));
    assert.notEqual(from('2001:db8:1:2::a'), from('2001:db8:1:3::a'));
  });
});
