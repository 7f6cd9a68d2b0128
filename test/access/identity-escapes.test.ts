/**
 * Ways out of a bound identity, tried through the real proxy (correctness hunt 3, session 24):
 * a client range bound to `vendor-x` (`binding: true`), whose identity is bound to ExampleBot
 * with `onMismatch: deny`, tries another User-Agent (none, `*`, a longer token, two headers),
 * and, on one keep-alive connection, its own credentials then another identity's. And in
 * report mode (shadow): the identity check still refuses, and a tunnel-mode CONNECT a `deny`
 * rule matches is forwarded, saying so in its header and counted as a would-be refusal.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { startOrigin, startTestProxy, siteHandler, type TestOrigin } from '../helpers/harness.js';
import { openConnect } from '../helpers/https-support.js';
import { rawExchange } from '../helpers/proxy-client.js';

const ROBOTS = 'User-agent: ExampleBot\nDisallow: /private/\n\nUser-agent: *\nAllow: /\n';
const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/** A credentials file: alice (her own identity) and vx (identity vendor-x), bcrypt cost 4. */
function writeCredentials(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'robots-proxy-escapes-')), 'users');
  writeFileSync(file, `alice:${bcrypt.hashSync('alice-pw', 4)}\nvx:${bcrypt.hashSync('vx-pw', 4)}:vendor-x\n`, { mode: 0o600 });
  return file;
}

/** One absolute-form GET through the proxy; `agent` false for a new connection. */
function send(proxy: Proxy, url: string, headers: http.OutgoingHttpHeaders, agent: http.Agent | false = false): Promise<{ status: number; decision: string | undefined; port: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxy.proxyAddress.port, path: url, headers, agent }, (res) => {
      const port = res.socket.localPort ?? 0;
      res.resume().on('end', () => resolve({ status: res.statusCode ?? 0, decision: res.headers['x-robots-proxy-decision'] as string | undefined, port }));
    });
    req.on('error', reject).end();
  });
}

describe('a binding range bound to ExampleBot (onMismatch: deny)', () => {
  let proxy: Proxy;
  let origin: TestOrigin;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: ROBOTS }));
    proxy = await startTestProxy({
      access: { clients: [{ range: '127.0.0.1/32', identity: 'vendor-x', binding: true }], credentialsFile: writeCredentials() },
      identities: { 'vendor-x': { tokens: ['ExampleBot'], onMismatch: 'deny' } },
    });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('refuses every User-Agent that names no bound token, and only those', async () => {
    const host = new URL(origin.url).host;
    const exchange = (userAgentLines: string) =>
      rawExchange(proxy.proxyAddress.port, `GET ${origin.url}/open HTTP/1.1\r\nHost: ${host}\r\n${userAgentLines}Connection: close\r\n\r\n`);
    const cases: Array<[string, string]> = [
      ['', 'deny; reason=identity-mismatch'],
      ['User-Agent: *\r\n', 'deny; reason=identity-mismatch'],
      ['User-Agent: ExampleBot2/1.0\r\n', 'deny; reason=identity-mismatch'],
      ['User-Agent: Mozilla/5.0 Chrome/120\r\nUser-Agent: ExampleBot/1.0\r\n', 'deny; reason=identity-mismatch'],
      ['User-Agent: examplebot/1.0\r\n', 'allow; reason=no-matching-rule'],
      ['User-Agent: Mozilla/5.0 (compatible; EXAMPLEBOT/2.1)\r\n', 'allow; reason=no-matching-rule'],
    ];
    for (const [lines, decision] of cases) {
      const answer = await exchange(lines);
      assert.match(answer, new RegExp(`^HTTP/1\\.1 ${decision.startsWith('deny') ? 403 : 200} `), JSON.stringify(lines));
      assert.match(answer, new RegExp(`\r\nx-robots-proxy-decision: ${decision.replace(/[;=]/g, '\\$&')}\r\n`, 'i'), JSON.stringify(lines));
    }
    assert.equal(origin.hits.filter((h) => h.url === '/open').length, 2, 'only the two User-Agents naming the bound token reached the origin');
  });

  it('on one keep-alive connection, its own credentials then another identity\'s: the second request is refused (identity-mismatch), nothing upstream', async () => {
    // The proxy remembers the credentials verified on a connection; what differs from them must
    // take the full check, the range's binding included.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const own = await send(proxy, `${origin.url}/ka-1`, { 'user-agent': 'ExampleBot/1.0', 'proxy-authorization': basic('vx', 'vx-pw') }, agent);
      assert.equal(own.status, 200);
      const borrowed = await send(proxy, `${origin.url}/ka-2`, { 'user-agent': 'ExampleBot/1.0', 'proxy-authorization': basic('alice', 'alice-pw') }, agent);
      assert.deepEqual([borrowed.status, borrowed.decision], [403, 'deny; reason=identity-mismatch']);
      const again = await send(proxy, `${origin.url}/ka-3`, { 'user-agent': 'Chrome/120', 'proxy-authorization': basic('vx', 'vx-pw') }, agent);
      assert.deepEqual([again.status, again.decision], [403, 'deny; reason=identity-mismatch'], 'its own credentials with a browser User-Agent');
      assert.equal(new Set([own.port, borrowed.port, again.port]).size, 1, 'one connection');
    } finally {
      agent.destroy();
    }
    assert.deepEqual(origin.hits.filter((h) => h.url.startsWith('/ka-')).map((h) => h.url), ['/ka-1']);
  });
});

describe('report mode (shadow) with identities and a tunnel-mode CONNECT', () => {
  let proxy: Proxy;
  let origin: TestOrigin;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: ROBOTS }));
    proxy = await startTestProxy({
      enforcement: 'report',
      https: { mode: 'tunnel' },
      access: { clients: [{ range: '127.0.0.1/32', identity: 'vendor-x' }] },
      identities: { 'vendor-x': { tokens: ['ExampleBot'], onMismatch: 'deny' } },
      policy: { rules: [{ name: 'no-tunnels', method: 'CONNECT', action: 'deny' }] },
    });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('still refuses a bound identity\'s mismatching User-Agent (identity-mismatch protects the rules, not the site)', async () => {
    const r = await send(proxy, `${origin.url}/shadow-ua`, { 'user-agent': 'Mozilla/5.0 Chrome/120' });
    assert.deepEqual([r.status, r.decision], [403, 'deny; reason=identity-mismatch']);
    const own = await send(proxy, `${origin.url}/private/shadow`, { 'user-agent': 'ExampleBot/1.0' });
    assert.deepEqual([own.status, own.decision], [200, 'allow; reason=report-only; would-deny=rule-disallow']);
    assert.deepEqual(origin.hits.filter((h) => h.url.includes('shadow')).map((h) => h.url), ['/private/shadow']);
  });

  it('forwards a CONNECT a deny rule matches, naming the rule and the refusal it would have been, and counts it', async () => {
    const answer = await openConnect(proxy.proxyAddress.port, `127.0.0.1:${new URL(origin.url).port}`, { 'user-agent': 'ExampleBot/1.0' });
    answer.socket.destroy();
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['x-robots-proxy-decision'], 'allow; reason=report-only; rule=no-tunnels; would-deny=operator-policy');
    const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    assert.match(metrics, /robots_proxy_would_deny_total\{reason="operator-policy"\} 1\b/);
  });
});
