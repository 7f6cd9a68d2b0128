/**
 * A proxy CA that expires while the proxy runs (an operator's `https.caCert` with a short life):
 * once it has, no leaf can be signed, so a CONNECT to intercept is answered with the reason
 * before its 200 (not a 200 and then a reset the client cannot explain), and the log says so
 * once per interval, not once per CONNECT. Real CA files, a real TLS origin, real clients.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync } from 'node:fs';
import { captureLogs, siteHandler, startTestProxy, type LogCapture } from '../helpers/harness.js';
import { createTestPki, openConnect, readToEnd, runCurl, startTlsOrigin, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';
import { generateCa } from '../../src/proxy/tls/certificate-authority.js';

/** CA life from the proxy's start: long enough to start and sign once, short enough to wait out. */
const CA_LIFE_MS = 4000;

/** A CA (the proxy's own kind) valid until `notAfter`, written as PEM files (the key 0600). */
async function writeShortLivedCa(notAfter: Date): Promise<{ certPath: string; keyPath: string; certPem: string }> {
  const { certPem, keyPem } = await generateCa(Date.now(), notAfter.getTime());
  const certPath = writeTempFile('ca.pem', certPem);
  const keyPath = writeTempFile('ca-key.pem', keyPem);
  chmodSync(keyPath, 0o600);
  return { certPath, keyPath, certPem };
}

describe('a proxy CA that expires while the proxy runs', () => {
  let origin: TlsOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;
  let ca: { certPath: string; keyPath: string; certPem: string };
  let notAfterMs: number;

  before(async () => {
    const pki = await createTestPki();
    origin = await startTlsOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private/\n' }), { cert: pki.certPem, key: pki.keyPem });
    // Whole seconds: X.509 times have no fraction.
    notAfterMs = Math.ceil((Date.now() + CA_LIFE_MS) / 1000) * 1000;
    ca = await writeShortLivedCa(new Date(notAfterMs));
    logs = captureLogs();
    proxy = await startTestProxy({ https: { caCert: ca.certPath, caKey: ca.keyPath }, upstream: { caFile: writeTempFile('upstream-ca.pem', pki.caPem) } }, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('after its notAfter, a CONNECT gets 500 naming the expired CA, before any 200; one log line for many', async () => {
    const caFile = writeTempFile('proxy-ca.pem', ca.certPem);
    // Before: the CA signs and curl, trusting it, gets its page (checked only while the CA has a
    // second left, so a slow start on a loaded machine does not turn this into a race).
    if (notAfterMs - Date.now() > 1000) {
      const early = await runCurl(['--proxy', proxy.proxyUrl, '--cacert', caFile, '-A', 'ExampleBot/1.0', `https://localhost:${origin.port}/page/early`]);
      if (Date.now() < notAfterMs) assert.equal(early.status, 200, early.stderr);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, notAfterMs - Date.now()) + 300));
    for (let i = 0; i < 3; i++) {
      const answer = await openConnect(proxy.proxyAddress.port, `127.0.0.1:${origin.port}`, { 'user-agent': 'ExampleBot/1.0' });
      const body = await readToEnd(answer.socket, answer.head);
      assert.equal(answer.status, 500, body);
      assert.equal(answer.headers['x-robots-proxy-decision'], 'deny; reason=internal-error');
      assert.ok(body.includes(ca.certPath), body);
      assert.match(body, /expired/);
    }
    const curl = await runCurl(['--proxy', proxy.proxyUrl, '--cacert', caFile, '-A', 'ExampleBot/1.0', `https://localhost:${origin.port}/page/late`]);
    assert.equal(curl.exitCode, 56, `curl: CONNECT answered with an error, not a TLS failure (${curl.stderr})`);
    assert.ok(!origin.hits.includes('/page/late'));
    const expired = logs.lines.filter((l) => l['event'] === 'tls-ca-expired');
    assert.equal(expired.length, 1, JSON.stringify(logs.lines.filter((l) => l['level'] === 40)));
    assert.equal(expired[0]?.['certPath'], ca.certPath);
    // A reload now says it has expired, not that it "expires" with 0 days left.
    proxy.reload({ ...proxy.currentConfig(), log: { ...proxy.currentConfig().log, level: 'info' } });
    const atReload = logs.lines.filter((l) => l['event'] === 'tls-ca-expiring');
    assert.equal(atReload.at(-1)?.['daysLeft'], 0);
    assert.match(String(atReload.at(-1)?.['msg']), /^TLS interception CA \S+ expired \S+: every CONNECT to intercept is refused 500; replace it/);
  });
});

describe('a proxy CA that expires within 30 days is warned about at start and at each reload (tls-ca-expiring)', () => {
  const DAY_MS = 86_400_000;
  const expiringIn = async (days: number): Promise<{ ca: { certPath: string; keyPath: string }; notAfterMs: number; proxy: Awaited<ReturnType<typeof startTestProxy>>; logs: LogCapture }> => {
    const notAfterMs = Math.ceil((Date.now() + days * DAY_MS) / 1000) * 1000;
    const ca = await writeShortLivedCa(new Date(notAfterMs));
    const logs = captureLogs();
    const proxy = await startTestProxy({ https: { caCert: ca.certPath, caKey: ca.keyPath }, log: { level: 'info' } }, { logger: logs.logger });
    return { ca, notAfterMs, proxy, logs };
  };
  const warnings = (logs: LogCapture): Array<Record<string, unknown>> => logs.lines.filter((l) => l['event'] === 'tls-ca-expiring');

  it('a CA with 9.5 days left: one warn line at start naming the file, its notAfter and the days left; one more at a reload', async () => {
    const { ca, notAfterMs, proxy, logs } = await expiringIn(9.5);
    try {
      const atStart = warnings(logs);
      assert.equal(atStart.length, 1, JSON.stringify(logs.lines.filter((l) => l['level'] === 40)));
      const line = atStart[0]!;
      assert.equal(line['level'], 40);
      assert.equal(line['certPath'], ca.certPath);
      assert.equal(line['notAfter'], new Date(notAfterMs).toISOString());
      assert.equal(line['daysLeft'], 9, 'whole days left, rounded down');
      assert.ok(String(line['msg']).includes(ca.certPath) && String(line['msg']).includes(new Date(notAfterMs).toISOString()), String(line['msg']));
      const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
      assert.match(metrics, new RegExp(`^robots_proxy_tls_ca_not_after_seconds ${notAfterMs / 1000}$`, 'm'), 'the CA\'s notAfter on /metrics, seconds since the epoch');
      proxy.reload(proxy.currentConfig());
      assert.equal(warnings(logs).length, 2, 'a reload warns again: the CA in use is kept until a restart');
    } finally {
      await proxy.close();
    }
  });

  it('a CA with 40 days left: no warning, at start or at a reload', async () => {
    const { proxy, logs } = await expiringIn(40);
    try {
      proxy.reload(proxy.currentConfig());
      assert.deepEqual(warnings(logs), []);
      assert.equal(logs.lines.filter((l) => l['event'] === 'tls-ca-ready').length, 1, 'the CA was loaded (the check ran)');
    } finally {
      await proxy.close();
    }
  });
});
