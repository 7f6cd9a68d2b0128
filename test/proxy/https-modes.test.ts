/**
 * `https.mode: tunnel` and `deny` end to end (issue #4, "Modes"): in tunnel
 * mode the CONNECT is decided on the origin's "/" and the bytes are relayed
 * untouched (the client sees the origin's own certificate); in deny mode every
 * CONNECT gets 403.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { captureLogs, siteHandler, startTestProxy, type LogCapture } from '../helpers/harness.js';
import { createTestPki, openConnect, readToEnd, runCurl, startTlsOrigin, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';

const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';

describe('HTTPS tunnel and deny modes', () => {
  let blocked: TlsOrigin;
  let open: TlsOrigin;
  let originCaPath: string;
  let tunnelProxy: Awaited<ReturnType<typeof startTestProxy>>;
  let denyProxy: Awaited<ReturnType<typeof startTestProxy>>;
  let tunnelLogs: LogCapture;

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
  });

  after(async () => {
    await tunnelProxy?.close();
    await denyProxy?.close();
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
});
