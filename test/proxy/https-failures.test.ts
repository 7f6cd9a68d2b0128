/**
 * HTTPS interception failure behaviour (issue #4, "Failure behaviour"): a
 * client that rejects the proxy certificate, a client that sends bytes that
 * are neither TLS nor HTTP into the tunnel, a handshake that never starts or
 * never ends. Each gives a log line with its reason, an answer where one can
 * still be sent, a closed socket, and a proxy that still serves the next
 * request. (Plain HTTP inside a tunnel is served: see tunnel-http.test.ts.)
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ProxyAgent, request } from 'undici';
import { captureLogs, siteHandler, startTestProxy, type LogCapture } from '../helpers/harness.js';
import { createTestPki, leafCounters, openConnect, readToEnd, runCurl, startClientTls, startTlsOrigin, waitFor, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';

const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const HANDSHAKE_TIMEOUT_MS = 1000;

describe('HTTPS interception failures', () => {
  let origin: TlsOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;
  let dispatcher: ProxyAgent;
  let probe = 0;

  const warnings = (event: string): Array<Record<string, unknown>> => logs.lines.filter((l) => l['event'] === event && l['level'] === 40);

  /** A fresh request through a trusting client: proves the proxy is still healthy. */
  async function assertHealthy(): Promise<void> {
    probe += 1;
    const r = await request(`https://localhost:${origin.port}/page/probe-${probe}`, { dispatcher, headers: { 'user-agent': BOT_UA } });
    assert.equal(r.statusCode, 200);
    assert.equal(await r.body.text(), `page /page/probe-${probe}\n`);
  }

  before(async () => {
    const pki = await createTestPki();
    origin = await startTlsOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private/\n' }), { cert: pki.certPem, key: pki.keyPem });
    logs = captureLogs();
    proxy = await startTestProxy({ upstream: { caFile: writeTempFile('upstream-ca.pem', pki.caPem) } }, { logger: logs.logger, handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS });
    // A new connection per request, so every probe goes through a fresh CONNECT and handshake.
    dispatcher = new ProxyAgent({ uri: proxy.proxyUrl, requestTls: { ca: proxy.ca!.certPem }, pipelining: 0 });
  });

  after(async () => {
    await dispatcher?.close();
    await proxy?.close();
    await origin?.close();
  });

  it('a client that rejects the certificate with an alert (curl without the CA): tls-client-error, still healthy', async () => {
    const before = warnings('tls-client-error').length;
    const r = await runCurl(['--proxy', proxy.proxyUrl, '-A', BOT_UA, `https://localhost:${origin.port}/page/curl-rejects`]);
    assert.equal(r.exitCode, 60, r.stderr);
    await waitFor(() => warnings('tls-client-error').length > before, 'a tls-client-error line');
    const line = warnings('tls-client-error').at(-1)!;
    assert.match(String(line['error']), /UNKNOWN_CA|ALERT/);
    assert.equal(line['origin'], `https://localhost:${origin.port}`);
    assert.ok(!origin.hits.includes('/page/curl-rejects'));
    await assertHealthy();
  });

  it('a client that rejects the certificate after the handshake (node tls without the CA): tls-client-error, still healthy', async () => {
    const before = warnings('tls-client-error').length;
    const tunnel = await openConnect(proxy.proxyAddress.port, `localhost:${origin.port}`);
    assert.equal(tunnel.status, 200);
    await assert.rejects(startClientTls(tunnel.socket, { servername: 'localhost' }), { code: 'SELF_SIGNED_CERT_IN_CHAIN' });
    await waitFor(() => warnings('tls-client-error').length > before, 'a tls-client-error line');
    assert.match(String(warnings('tls-client-error').at(-1)!['error']), /^CLOSED_(DURING_HANDSHAKE|BEFORE_FIRST_REQUEST)$/);
    await assertHealthy();
    // A tunnel that carried requests and then closed is not reported as a rejection.
    assert.equal(warnings('tls-client-error').length, before + 1);
  });

  it('a flood of clients that abort the TLS handshake writes a bounded number of tls-client-error lines', async () => {
    const before = warnings('tls-client-error').length;
    // 25 clients that do not trust the proxy CA, all within one log interval (10 s).
    for (let i = 0; i < 25; i += 1) {
      const tunnel = await openConnect(proxy.proxyAddress.port, `localhost:${origin.port}`);
      assert.equal(tunnel.status, 200);
      await assert.rejects(startClientTls(tunnel.socket, { servername: 'localhost' }));
      tunnel.socket.destroy();
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    const flood = warnings('tls-client-error').slice(before);
    // One line per kind of failure per interval (the earlier tests already logged each kind once).
    assert.ok(flood.length <= 2, `${flood.length} lines for 25 aborted handshakes`);
    await assertHealthy();
  });

  it('a client that sends neither TLS nor HTTP into the tunnel gets 400 and a closed socket, and no certificate is signed', async () => {
    const before = warnings('tunnel-client-error').length;
    const signedBefore = (await leafCounters(proxy.adminUrl)).issued;
    const tunnel = await openConnect(proxy.proxyAddress.port, `127.0.0.1:${origin.port}`);
    assert.equal(tunnel.status, 200);
    const answer = readToEnd(tunnel.socket, tunnel.head);
    tunnel.socket.write(Buffer.from([0x00, 0x01, 0x02, 0xff, 0x0d, 0x0a, 0x0d, 0x0a]));
    const text = await answer;
    assert.match(text, /^HTTP\/1\.1 400 /);
    assert.match(text, /malformed request: HPE_/);
    await waitFor(() => warnings('tunnel-client-error').length > before, 'a tunnel-client-error line');
    assert.equal(warnings('tunnel-client-error').at(-1)!['origin'], `http://127.0.0.1:${origin.port}`);
    assert.equal((await leafCounters(proxy.adminUrl)).issued, signedBefore, 'bytes that are not TLS never cost a signature');
    await assertHealthy();
  });

  it('a client that resets a tunnel in the middle of a request head is not logged as answered 400', async () => {
    const tunnel = await openConnect(proxy.proxyAddress.port, `127.0.0.1:${origin.port}`);
    assert.equal(tunnel.status, 200);
    const closed = new Promise<void>((resolve) => tunnel.socket.once('close', () => resolve()));
    tunnel.socket.write('GET /page HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Ag', () => setTimeout(() => tunnel.socket.resetAndDestroy(), 50));
    await closed;
    // The proxy's tracking (clientError) runs on the reset; give it a turn, then check what it said.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const claimed = warnings('tunnel-client-error').filter((l) => l['error'] === 'ECONNRESET');
    assert.deepEqual(claimed, [], 'nothing was answered to a reset connection');
    await assertHealthy();
  });

  it('a handshake that never starts is closed after the handshake timeout', async () => {
    const before = warnings('tls-handshake-timeout').length;
    const tunnel = await openConnect(proxy.proxyAddress.port, `localhost:${origin.port}`);
    assert.equal(tunnel.status, 200);
    const openedAt = performance.now();
    // Sends nothing; the proxy must close the socket on its own.
    const text = await readToEnd(tunnel.socket, tunnel.head, 15_000);
    const heldMs = performance.now() - openedAt;
    assert.equal(text, '');
    assert.ok(heldMs >= HANDSHAKE_TIMEOUT_MS - 50, `closed after ${heldMs.toFixed(0)} ms, before the timeout`);
    assert.equal(warnings('tls-handshake-timeout').length, before + 1);
    assert.equal(warnings('tls-handshake-timeout').at(-1)!['started'], false);
    await assertHealthy();
  });

  it('a handshake that starts and stalls is closed after the handshake timeout', async () => {
    const before = warnings('tls-handshake-timeout').length;
    const tunnel = await openConnect(proxy.proxyAddress.port, `localhost:${origin.port}`);
    assert.equal(tunnel.status, 200);
    const answer = readToEnd(tunnel.socket, tunnel.head, 15_000);
    // The first five bytes of a TLS record header (handshake, TLS 1.0, length 512), then silence.
    tunnel.socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00]));
    await answer;
    assert.equal(warnings('tls-handshake-timeout').length, before + 1);
    assert.equal(warnings('tls-handshake-timeout').at(-1)!['started'], true);
    assert.equal(warnings('tls-client-error').filter((l) => String(l['error']).includes('ECONNRESET')).length, 0);
    await assertHealthy();
  });

  it('a flood of tunnels that never start a handshake writes a bounded number of tls-handshake-timeout lines, each closed in time', async () => {
    const before = warnings('tls-handshake-timeout').length;
    // 20 silent tunnels within one log interval (10 s); the earlier test already logged this kind once.
    const tunnels = await Promise.all(Array.from({ length: 20 }, () => openConnect(proxy.proxyAddress.port, `localhost:${origin.port}`)));
    const texts = await Promise.all(tunnels.map((t) => { assert.equal(t.status, 200); return readToEnd(t.socket, t.head, 15_000); }));
    assert.deepEqual(new Set(texts), new Set(['']));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const flood = warnings('tls-handshake-timeout').slice(before);
    assert.ok(flood.length <= 1, `${flood.length} lines for 20 silent tunnels`);
    await assertHealthy();
  });
});
