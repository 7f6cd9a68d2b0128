/**
 * HTTPS interception end to end (issue #4, "Modes": intercept): real clients
 * (curl, undici ProxyAgent, node https over a hand-made CONNECT) talk TLS to
 * the proxy, which trusts the test origin through `upstream.caFile` and feeds
 * every inner request through the pipeline.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ProxyAgent, request } from 'undici';
import { captureLogs, siteHandler, startTestProxy, type LogCapture } from '../helpers/harness.js';
import {
  agentGet,
  createTestPki,
  openConnect,
  readToEnd,
  runCurl,
  startClientTls,
  startTlsOrigin,
  TunnelAgent,
  waitFor,
  writeTempFile,
  type TlsOrigin,
} from '../helpers/https-support.js';

const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const DISALLOW_LINE = /disallow: \/private\/ +\(line 2\)/;

describe('HTTPS interception', () => {
  let origin: TlsOrigin;
  let untrusted: TlsOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let proxyCaPem: string;
  let proxyCaPath: string;
  let logs: LogCapture;

  before(async () => {
    const [pki, otherPki] = await Promise.all([createTestPki(), createTestPki()]);
    const handler = siteHandler({ robots: 'User-agent: *\nDisallow: /private/\n' });
    origin = await startTlsOrigin(handler, { cert: pki.certPem, key: pki.keyPem });
    // Same names (127.0.0.1, localhost), but signed by a CA the proxy does not trust.
    untrusted = await startTlsOrigin(handler, { cert: otherPki.certPem, key: otherPki.keyPem });
    logs = captureLogs();
    proxy = await startTestProxy({ upstream: { caFile: writeTempFile('upstream-ca.pem', pki.caPem) } }, { logger: logs.logger });
    assert.ok(proxy.ca, 'intercept mode has a CA');
    proxyCaPem = proxy.ca.certPem;
    proxyCaPath = proxy.ca.certPath;
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
    await untrusted?.close();
  });

  for (const host of ['127.0.0.1', 'localhost']) {
    it(`curl through the proxy to https://${host}: allowed page passes, /private/ gets 403 with the rule`, async () => {
      const base = `https://${host}:${origin.port}`;
      const common = ['--proxy', proxy.proxyUrl, '--cacert', proxyCaPath, '-A', BOT_UA];

      const allowed = await runCurl([...common, `${base}/page/1?q=1`]);
      assert.equal(allowed.exitCode, 0, allowed.stderr);
      assert.equal(allowed.status, 200);
      assert.equal(allowed.body, 'page /page/1?q=1\n');
      assert.equal(allowed.headers['x-robots-proxy-decision'], 'allow; reason=no-matching-rule');

      const denied = await runCurl([...common, `${base}/private/secret`]);
      assert.equal(denied.exitCode, 0, denied.stderr);
      assert.equal(denied.status, 403);
      assert.equal(denied.headers['x-robots-proxy-decision'], 'deny; reason=rule-disallow');
      assert.match(denied.body, DISALLOW_LINE);
      assert.match(denied.body, new RegExp(`${base.replace(/\./g, '\\.')}/robots\\.txt`));

      assert.ok(origin.hits.includes('/page/1?q=1'));
      assert.ok(!origin.hits.some((h) => h.startsWith('/private/')), `origin saw ${origin.hits.join(' ')}`);
    });
  }

  it('reads paths inside the tunnel as paths: //x is not a host, and //private/ is still disallowed', async () => {
    const common = ['--path-as-is', '--proxy', proxy.proxyUrl, '--cacert', proxyCaPath, '-A', BOT_UA];
    const base = `https://127.0.0.1:${origin.port}`;
    const allowed = await runCurl([...common, `${base}//page/double`]);
    assert.equal(allowed.status, 200, allowed.body);
    assert.ok(origin.hits.includes('//page/double'));
    const denied = await runCurl([...common, `${base}//private/x`]);
    assert.equal(denied.status, 403, denied.body);
    assert.equal(denied.headers['x-robots-proxy-decision'], 'deny; reason=rule-disallow');
    assert.ok(!origin.hits.some((h) => h.includes('private')), `origin saw ${origin.hits.join(' ')}`);
  });

  it('curl refuses the proxy certificate when it does not trust the proxy CA (the test is not vacuous)', async () => {
    const r = await runCurl(['--proxy', proxy.proxyUrl, '-A', BOT_UA, `https://localhost:${origin.port}/page/untrusted`]);
    assert.equal(r.exitCode, 60, `curl exit ${r.exitCode}: ${r.stderr}`);
    assert.ok(!origin.hits.includes('/page/untrusted'));
  });

  it('undici ProxyAgent trusting the proxy CA: allowed and disallowed', async () => {
    const dispatcher = new ProxyAgent({ uri: proxy.proxyUrl, requestTls: { ca: proxyCaPem } });
    try {
      const ok = await request(`https://127.0.0.1:${origin.port}/page/undici`, { dispatcher, headers: { 'user-agent': BOT_UA } });
      assert.equal(ok.statusCode, 200);
      assert.equal(await ok.body.text(), 'page /page/undici\n');
      assert.equal(ok.headers['x-robots-proxy-decision'], 'allow; reason=no-matching-rule');

      const no = await request(`https://localhost:${origin.port}/private/undici`, { dispatcher, headers: { 'user-agent': BOT_UA } });
      assert.equal(no.statusCode, 403);
      assert.equal(no.headers['x-robots-proxy-decision'], 'deny; reason=rule-disallow');
      assert.match(await no.body.text(), DISALLOW_LINE);
      assert.ok(!origin.hits.includes('/private/undici'));
    } finally {
      await dispatcher.close();
    }
  });

  it('one keep-alive tunnel carries an allowed and then a disallowed request', async () => {
    const agent = new TunnelAgent(proxy.proxyAddress.port, proxyCaPem);
    try {
      const first = await agentGet(agent, `https://localhost:${origin.port}/page/keep-alive`, { 'user-agent': BOT_UA });
      const second = await agentGet(agent, `https://localhost:${origin.port}/private/keep-alive`, { 'user-agent': BOT_UA });
      assert.equal(first.status, 200);
      assert.equal(first.body, 'page /page/keep-alive\n');
      assert.equal(second.status, 403);
      assert.equal(second.headers['x-robots-proxy-decision'], 'deny; reason=rule-disallow');
      assert.match(second.body, DISALLOW_LINE);
      assert.equal(agent.tunnels, 1, 'one CONNECT for both requests');
      assert.equal(second.reusedSocket, true);
      assert.equal(second.socket, first.socket, 'both answers came on the same TLS socket');
    } finally {
      agent.destroy();
    }
  });

  it('answers 421 when the Host header disagrees with the CONNECT target (ALPN: http/1.1 only)', async () => {
    const tunnel = await openConnect(proxy.proxyAddress.port, `localhost:${origin.port}`);
    assert.equal(tunnel.status, 200);
    const tlsSocket = await startClientTls(tunnel.socket, { ca: proxyCaPem, servername: 'localhost', alpnProtocols: ['h2', 'http/1.1'] });
    assert.equal(tlsSocket.alpnProtocol, 'http/1.1', 'the proxy offers only HTTP/1.1');
    const answer = readToEnd(tlsSocket);
    tlsSocket.write(`GET /page/misdirected HTTP/1.1\r\nhost: other.example:${origin.port}\r\nuser-agent: ${BOT_UA}\r\nconnection: close\r\n\r\n`);
    const text = await answer;
    assert.match(text, /^HTTP\/1\.1 421 /);
    assert.match(text, /\r\nx-robots-proxy-decision: deny; reason=misdirected\r\n/i);
    assert.ok(!origin.hits.includes('/page/misdirected'));
  });

  it('curl --http1.0 (ALPN http/1.0 only) through the tunnel gets its page, not a no_application_protocol alert', async () => {
    const base = `https://localhost:${origin.port}`;
    const r = await runCurl(['--http1.0', '--proxy', proxy.proxyUrl, '--cacert', proxyCaPath, '-A', BOT_UA, `${base}/page/http10`]);
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.status, 200);
    assert.equal(r.body, 'page /page/http10\n');
  });

  for (const offered of [['http/1.0'], ['http/1.1'], ['http/1.0', 'http/1.1']]) {
    it(`a client offering ALPN ${offered.join(', ')} gets the HTTP/1 version it offered${offered.length > 1 ? ' (1.1 preferred)' : ''}`, async () => {
      const tunnel = await openConnect(proxy.proxyAddress.port, `localhost:${origin.port}`);
      assert.equal(tunnel.status, 200);
      const tlsSocket = await startClientTls(tunnel.socket, { ca: proxyCaPem, servername: 'localhost', alpnProtocols: offered });
      assert.equal(tlsSocket.alpnProtocol, offered.includes('http/1.1') ? 'http/1.1' : 'http/1.0');
      tlsSocket.destroy();
    });
  }

  it('a client offering only h2: the handshake fails and the log says plainly that HTTP/2 is not supported', async () => {
    const tunnel = await openConnect(proxy.proxyAddress.port, `localhost:${origin.port}`);
    assert.equal(tunnel.status, 200);
    await assert.rejects(startClientTls(tunnel.socket, { ca: proxyCaPem, servername: 'localhost', alpnProtocols: ['h2'] }), /no.application.protocol|NO_APPLICATION_PROTOCOL/i);
    const said = (l: Record<string, unknown>): boolean => l['event'] === 'tls-client-error' && /HTTP\/2 is not supported/.test(String(l['msg']));
    await waitFor(() => logs.lines.some(said), 'a tls-client-error line saying HTTP/2 is not supported');
    const line = logs.lines.find(said)!;
    assert.equal(line['error'], 'ALPN_HTTP2_ONLY');
  });

  it('answers 502 upstream-error when the upstream certificate is not trusted', async () => {
    const dispatcher = new ProxyAgent({ uri: proxy.proxyUrl, requestTls: { ca: proxyCaPem } });
    try {
      const r = await request(`https://127.0.0.1:${untrusted.port}/page/1`, { dispatcher, headers: { 'user-agent': BOT_UA } });
      const body = await r.body.text();
      assert.equal(r.statusCode, 502, body);
      assert.match(String(r.headers['x-robots-proxy-decision']), /; reason=upstream-error$/);
      // The explanation names the certificate failure OpenSSL reported.
      assert.match(body, /error: +[A-Z_]*(CERT|VERIFY|ISSUER)[A-Z_]*\n/);
      // It names the failing origin and the setting that trusts a private CA.
      const base = `https://127.0.0.1:${untrusted.port}`;
      assert.ok(body.startsWith(`The TLS certificate of ${base} is not trusted (`), body);
      assert.match(body, /trust it with upstream\.caFile/);
      assert.match(body, new RegExp(`^detail: +fetching ${base.replaceAll('.', '\\.')}/robots\\.txt: `, 'm'));
      // Nothing changes before robots.txt is fetched again: Retry-After says when.
      assert.match(String(r.headers['retry-after']), /^[1-9]\d*$/);
      assert.match(body, /^retried: +\d{4}-/m);
      // The admin API shows the failed robots.txt fetch.
      const view = (await (await fetch(`${proxy.adminUrl}/robots?origin=${encodeURIComponent(base)}`)).json()) as { lastFailure: { state: string; error: string } | null };
      assert.equal(view.lastFailure?.state, 'unreachable');
      assert.match(view.lastFailure?.error ?? '', /CERT|VERIFY|ISSUER/);
      assert.deepEqual(untrusted.hits, [], 'no request reached the untrusted origin');
    } finally {
      await dispatcher.close();
    }
  });
});
