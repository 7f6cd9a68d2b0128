/**
 * `https.mode: tunnel` and `deny` end to end (issue #4, "Modes"): in tunnel
 * mode the CONNECT is decided on the origin's "/" and the bytes are relayed
 * untouched (the client sees the origin's own certificate) and a tunnel idle
 * for `https.idleTimeout` is closed; in deny mode every CONNECT gets 403.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { captureLogs, siteHandler, startTestProxy, type LogCapture } from '../helpers/harness.js';
import { createTestPki, openConnect, readToEnd, runCurl, startClientTls, startTlsOrigin, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';

const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const IDLE_TIMEOUT_MS = 1000;

describe('HTTPS tunnel and deny modes', () => {
  let blocked: TlsOrigin;
  let open: TlsOrigin;
  let originCaPath: string;
  let tunnelProxy: Awaited<ReturnType<typeof startTestProxy>>;
  let denyProxy: Awaited<ReturnType<typeof startTestProxy>>;
  let idleProxy: Awaited<ReturnType<typeof startTestProxy>>;
  let tunnelLogs: LogCapture;
  let idleLogs: LogCapture;
  let originCaPem: string;

  before(async () => {
    const pki = await createTestPki();
    const tls = { cert: pki.certPem, key: pki.keyPem };
    blocked = await startTlsOrigin(siteHandler({ robots: 'User-agent: ExampleBot\nDisallow: /\n' }), tls);
    open = await startTlsOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private/\n' }), tls);
    originCaPath = writeTempFile('origin-ca.pem', pki.caPem);
    tunnelLogs = captureLogs();
    const upstream = { caFile: originCaPath };
    tunnelProxy = await startTestProxy({ https: { mode: 'tunnel' }, upstream }, { logger: tunnelLogs.logger });
    denyProxy = await startTestProxy({ https: { mode: 'deny' }, upstream });
    idleLogs = captureLogs();
    idleProxy = await startTestProxy({ https: { mode: 'tunnel', idleTimeout: `${IDLE_TIMEOUT_MS}ms` }, upstream }, { logger: idleLogs.logger });
    originCaPem = pki.caPem;
  });

  after(async () => {
    await tunnelProxy?.close();
    await denyProxy?.close();
    await idleProxy?.close();
    await blocked?.close();
    await open?.close();
  });

  it('tunnel: 403 to a CONNECT whose origin disallows "/" for the agent, before any byte is relayed', async () => {
    const answer = await openConnect(tunnelProxy.proxyAddress.port, `127.0.0.1:${blocked.port}`, { 'user-agent': BOT_UA });
    assert.equal(answer.status, 403);
    assert.equal(answer.headers['x-robots-proxy-decision'], 'deny; reason=rule-disallow');
    const body = await readToEnd(answer.socket, answer.head);
    assert.match(body, /disallow: \/ +\(line 2\)/);
    assert.deepEqual(blocked.hits, ['/robots.txt'], 'only robots.txt was fetched');

    const viaCurl = await runCurl(['--proxy', tunnelProxy.proxyUrl, '--cacert', originCaPath, '-A', BOT_UA, `https://localhost:${blocked.port}/page/1`]);
    assert.equal(viaCurl.exitCode, 56, `curl: CONNECT refused (${viaCurl.stderr})`);
    assert.ok(!blocked.hits.includes('/page/1'));
  });

  it('tunnel: an allowed origin gets a plain tunnel; curl trusting only the origin CA works', async () => {
    const r = await runCurl(['--proxy', tunnelProxy.proxyUrl, '--cacert', originCaPath, '-A', BOT_UA, `https://localhost:${open.port}/page/tunnel`]);
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.status, 200);
    assert.equal(r.body, 'page /page/tunnel\n');
    assert.equal(r.headers['x-robots-proxy-decision'], undefined, 'not intercepted: the origin answered directly');
    // Paths inside a tunnel are not checked: /private/ reaches the origin (and the log says so).
    const privateHit = await runCurl(['--proxy', tunnelProxy.proxyUrl, '--cacert', originCaPath, '-A', BOT_UA, `https://localhost:${open.port}/private/tunnel`]);
    assert.equal(privateHit.status, 200);
    assert.ok(open.hits.includes('/private/tunnel'));
    const connects = tunnelLogs.lines.filter((l) => l['via'] === 'connect' && l['url'] === `localhost:${open.port}`);
    assert.equal(connects.length, 2);
    for (const line of connects) {
      assert.equal(line['method'], 'CONNECT');
      assert.equal(line['status'], 200);
      const decision = line['decision'] as Record<string, unknown>;
      assert.equal(decision['verdict'], 'allow');
      assert.equal(decision['path'], '/');
      assert.match(String(decision['detail']), /tunnel mode/);
    }
  });

  it('tunnel: a CONNECT to port 80 (a client tunnelling http:// URLs) is decided on the http origin\'s robots.txt, not refused 503', async (t) => {
    // Port 80 itself: the scheme is read from it. A loopback address of its own, so no other test's listener is in the way.
    const hits: string[] = [];
    const plain = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url === '/robots.txt' ? 'User-agent: *\nDisallow: /private/\n' : `page ${req.url}\n`);
    });
    const listening = await new Promise<boolean>((resolve) => {
      plain.once('error', () => resolve(false));
      plain.listen(80, '127.28.0.80', () => resolve(true));
    });
    if (!listening) return void t.skip('cannot listen on 127.28.0.80:80 (needs root, or the address is taken)');
    try {
      const answer = await openConnect(tunnelProxy.proxyAddress.port, '127.28.0.80:80', { 'user-agent': BOT_UA });
      assert.equal(answer.status, 200, answer.head.toString());
      assert.equal(answer.headers['x-robots-proxy-decision'], 'allow; reason=no-matching-rule');
      answer.socket.write(`GET /page/plain HTTP/1.1\r\nHost: 127.28.0.80\r\nUser-Agent: ${BOT_UA}\r\nConnection: close\r\n\r\n`);
      const relayedText = await readToEnd(answer.socket, answer.head);
      assert.match(relayedText, /^HTTP\/1\.1 200 [^]*page \/page\/plain\n/);
      assert.deepEqual(hits, ['/robots.txt', '/page/plain'], 'robots.txt over plain HTTP, then the page through the tunnel');
      const line = tunnelLogs.lines.filter((l) => l['via'] === 'connect' && l['url'] === '127.28.0.80:80').at(-1);
      assert.equal((line?.['decision'] as Record<string, unknown> | undefined)?.['origin'], 'http://127.28.0.80');
    } finally {
      plain.closeAllConnections();
      plain.close();
    }
  });

  it('tunnel: a CONNECT to a port that speaks plain HTTP (not 80) is decided on that http origin\'s robots.txt, not refused 503', async () => {
    const hits: string[] = [];
    const plain = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url === '/robots.txt' ? 'User-agent: ExampleBot\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n' : `page ${req.url}\n`);
    });
    plain.listen(0, '127.0.0.1');
    await once(plain, 'listening');
    const port = (plain.address() as AddressInfo).port;
    try {
      // The http origin's rules apply: ExampleBot is refused "/", another agent gets its tunnel.
      const refused = await openConnect(tunnelProxy.proxyAddress.port, `127.0.0.1:${port}`, { 'user-agent': BOT_UA });
      assert.equal(refused.status, 403, refused.head.toString());
      assert.equal(refused.headers['x-robots-proxy-decision'], 'deny; reason=rule-disallow');
      assert.match(await readToEnd(refused.socket, refused.head), new RegExp(`robots\\.txt: +http://127\\.0\\.0\\.1:${port}/robots\\.txt`));
      const answer = await openConnect(tunnelProxy.proxyAddress.port, `127.0.0.1:${port}`, { 'user-agent': 'OtherBot/1.0' });
      assert.equal(answer.status, 200, answer.head.toString());
      answer.socket.write(`GET /page/plain HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
      assert.match(await readToEnd(answer.socket, answer.head), /^HTTP\/1\.1 200 [^]*page \/page\/plain\n/);
      assert.equal(hits.filter((h) => h === '/robots.txt').length, 1, 'the http robots.txt once, cached for the second CONNECT');
      const line = tunnelLogs.lines.filter((l) => l['via'] === 'connect' && l['url'] === `127.0.0.1:${port}` && l['status'] === 200).at(-1);
      assert.equal((line?.['decision'] as Record<string, unknown> | undefined)?.['origin'], `http://127.0.0.1:${port}`);
    } finally {
      plain.closeAllConnections();
      plain.close();
    }
  });

  it('deny: 403 tunnel-denied to every CONNECT, allowed origin included', async () => {
    assert.equal(denyProxy.ca, undefined, 'no CA without interception');
    for (const origin of [open, blocked]) {
      const hitsBefore = origin.hits.length;
      const answer = await openConnect(denyProxy.proxyAddress.port, `127.0.0.1:${origin.port}`, { 'user-agent': BOT_UA });
      assert.equal(answer.status, 403);
      assert.equal(answer.headers['x-robots-proxy-decision'], 'deny; reason=tunnel-denied');
      assert.match(await readToEnd(answer.socket, answer.head), /https\.mode: deny/);
      assert.equal(origin.hits.length, hitsBefore, 'nothing reached the origin');
    }
    const viaCurl = await runCurl(['--proxy', denyProxy.proxyUrl, '--cacert', originCaPath, `https://localhost:${open.port}/page/deny`]);
    assert.equal(viaCurl.exitCode, 56, viaCurl.stderr);
  });

  it('tunnel: a tunnel that carries no byte for https.idleTimeout is closed, and logged', async () => {
    const answer = await openConnect(idleProxy.proxyAddress.port, `localhost:${open.port}`, { 'user-agent': BOT_UA });
    assert.equal(answer.status, 200);
    const openedAt = performance.now();
    const text = await readToEnd(answer.socket, answer.head, 15_000);
    const heldMs = performance.now() - openedAt;
    assert.equal(text, '');
    assert.ok(heldMs >= IDLE_TIMEOUT_MS - 50, `closed after ${heldMs.toFixed(0)} ms, before the idle timeout`);
    const line = idleLogs.lines.filter((l) => l['event'] === 'tunnel-idle-timeout').at(-1);
    assert.ok(line, 'a tunnel-idle-timeout line');
    assert.equal(line['origin'], `https://localhost:${open.port}`);
  });

  it('tunnel: a tunnel in use outlives the idle timeout (activity resets it)', async () => {
    const answer = await openConnect(idleProxy.proxyAddress.port, `localhost:${open.port}`, { 'user-agent': BOT_UA });
    assert.equal(answer.status, 200);
    const tlsSocket = await startClientTls(answer.socket, { ca: originCaPem, servername: 'localhost' });
    let closed = false;
    tlsSocket.once('close', () => (closed = true));
    let received = '';
    tlsSocket.on('data', (d: Buffer) => (received += d.toString()));
    // Over 2.5 idle timeouts in all, never silent for more than half of one.
    for (let i = 0; i < 6; i++) {
      tlsSocket.write(`GET /page/busy-${i} HTTP/1.1\r\nhost: localhost:${open.port}\r\nuser-agent: ${BOT_UA}\r\n\r\n`);
      await new Promise((resolve) => setTimeout(resolve, IDLE_TIMEOUT_MS / 2));
      assert.ok(received.includes(`page /page/busy-${i}`), `answer ${i} arrived`);
      assert.equal(closed, false, `still open after request ${i}`);
    }
    tlsSocket.destroy();
  });
});
