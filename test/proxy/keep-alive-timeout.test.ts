/**
 * The `Keep-Alive: timeout` the proxy advertises is `clients.idleTimeout`, for
 * plain proxy requests and inside intercepted HTTPS tunnels alike; curl through
 * a real proxy to real origins on loopback.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { siteHandler, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { createTestPki, runCurl, startTlsOrigin, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';

describe('Keep-Alive: timeout matches clients.idleTimeout', () => {
  let plain: TestOrigin;
  let tls: TlsOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    const pki = await createTestPki();
    const handler = siteHandler({});
    plain = await startOrigin(handler);
    tls = await startTlsOrigin(handler, { cert: pki.certPem, key: pki.keyPem });
    proxy = await startTestProxy({ clients: { idleTimeout: '7s' }, upstream: { caFile: writeTempFile('keep-alive-ca.pem', pki.caPem) } });
  });
  after(async () => {
    await proxy?.close();
    await plain?.close();
    await tls?.close();
  });

  it('plain HTTP through the proxy', async () => {
    const r = await runCurl(['--proxy', proxy.proxyUrl, '-A', 'ExampleBot/1.0', `${plain.url}/page`]);
    assert.equal(r.status, 200, r.stderr);
    assert.equal(r.headers['keep-alive'], 'timeout=7');
  });

  it('inside an intercepted HTTPS tunnel', async () => {
    const r = await runCurl(['--proxy', proxy.proxyUrl, '--cacert', proxy.ca!.certPath, '-A', 'ExampleBot/1.0', `https://127.0.0.1:${tls.port}/page`]);
    assert.equal(r.status, 200, r.stderr);
    assert.equal(r.headers['keep-alive'], 'timeout=7');
  });
});
