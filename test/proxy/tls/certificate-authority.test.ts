import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { webcrypto, X509Certificate as NodeX509Certificate } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getCaPaths, loadOrCreateCa, type CaLogger, type CaMaterial } from '../../../src/proxy/tls/certificate-authority.js';
import { x509 } from '../../../src/proxy/tls/x509-support.js';

const NOW_MS = Date.UTC(2025, 0, 31, 12, 0, 0);
const DAY_MS = 24 * 60 * 60 * 1000;
const CERTIFICATE_ERROR = { code: 'ERR_CERTIFICATE' };

function recordingLogger(): CaLogger & { lines: Array<{ level: string; fields: object; message: string }> } {
  const lines: Array<{ level: string; fields: object; message: string }> = [];
  return {
    lines,
    info: (fields, message) => lines.push({ level: 'info', fields, message }),
    warn: (fields, message) => lines.push({ level: 'warn', fields, message }),
  };
}

describe('loadOrCreateCa', () => {
  let root: string;
  let stateDir: string;
  let first: CaMaterial;
  let firstLogger: ReturnType<typeof recordingLogger>;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'robots-proxy-ca-'));
    stateDir = join(root, 'state', 'nested');
    firstLogger = recordingLogger();
    first = await loadOrCreateCa({ stateDir, nowMs: NOW_MS, logger: firstLogger });
  });

  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('generates an ECDSA P-256 CA with CA:TRUE, keyCertSign and a ten-year validity', async () => {
    assert.equal(first.created, true);
    assert.equal(first.source, 'generated');
    assert.equal(first.certPath, getCaPaths(stateDir).certPath);
    const cert = new x509.X509Certificate(first.certPem);
    const basic = cert.getExtension(x509.BasicConstraintsExtension);
    assert.equal(basic?.ca, true);
    assert.equal(basic?.critical, true);
    const usage = cert.getExtension(x509.KeyUsagesExtension);
    assert.equal(usage?.critical, true);
    assert.equal(usage?.usages, x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
    assert.ok(cert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId);
    assert.equal(cert.notBefore.getTime(), NOW_MS - DAY_MS);
    assert.ok(cert.notAfter.getTime() - NOW_MS >= 3649 * DAY_MS);
    assert.match(cert.subject, /^CN=robots-proxy CA \(.+ 2025-01-31\), O=robots-proxy$/);
    assert.equal(await cert.isSelfSigned(), true);
    const nodeCert = new NodeX509Certificate(first.certPem);
    assert.equal(nodeCert.ca, true);
    assert.equal(nodeCert.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    assert.equal(first.sha256Fingerprint, nodeCert.fingerprint256);
  });

  it('writes the key 0600, the certificate 0644 and the directories 0700, leaving no temporary files', async () => {
    const paths = getCaPaths(stateDir);
    assert.equal((await stat(paths.keyPath)).mode & 0o777, 0o600);
    assert.equal((await stat(paths.certPath)).mode & 0o777, 0o644);
    assert.equal((await stat(paths.dir)).mode & 0o777, 0o700);
    assert.equal((await stat(stateDir)).mode & 0o777, 0o700);
    assert.deepEqual((await readdir(stateDir)).sort(), ['ca']);
    assert.equal(await readFile(paths.certPath, 'utf8'), first.certPem);
    assert.equal(await readFile(paths.keyPath, 'utf8'), first.keyPem);
  });

  it('logs where the CA is, and never the key', () => {
    const info = firstLogger.lines.find((line) => line.level === 'info');
    assert.equal((info?.fields as { certPath?: string }).certPath, first.certPath);
    assert.doesNotMatch(JSON.stringify(firstLogger.lines), /PRIVATE KEY/);
  });

  it('reuses the stored CA on the next call', async () => {
    const again = await loadOrCreateCa({ stateDir, nowMs: NOW_MS + DAY_MS });
    assert.equal(again.created, false);
    assert.equal(again.source, 'state-dir');
    assert.equal(again.certPem, first.certPem);
    assert.equal(again.keyPem, first.keyPem);
  });

  it('agrees on one CA when several callers start together on an empty state directory', async () => {
    const racedDir = join(root, 'raced');
    const results = await Promise.all(Array.from({ length: 5 }, () => loadOrCreateCa({ stateDir: racedDir, nowMs: NOW_MS })));
    assert.equal(results.filter((r) => r.created).length, 1);
    assert.equal(new Set(results.map((r) => r.certPem)).size, 1);
    assert.equal(new Set(results.map((r) => r.keyPem)).size, 1);
    assert.deepEqual(await readdir(racedDir), ['ca']);
  });

  it('loads a configured certificate and key without touching the state directory', async () => {
    const otherState = join(root, 'unused-state');
    const configured = await loadOrCreateCa({ stateDir: otherState, caCertPath: first.certPath, caKeyPath: first.keyPath, nowMs: NOW_MS });
    assert.equal(configured.source, 'configured');
    assert.equal(configured.created, false);
    assert.equal(configured.certPem, first.certPem);
    await assert.rejects(stat(otherState), { code: 'ENOENT' });
  });

  it('rejects a configured key that does not belong to the certificate', async () => {
    const other = await loadOrCreateCa({ stateDir: join(root, 'other'), nowMs: NOW_MS });
    await assert.rejects(
      loadOrCreateCa({ stateDir, caCertPath: first.certPath, caKeyPath: other.keyPath, nowMs: NOW_MS }),
      CERTIFICATE_ERROR,
    );
  });

  it('rejects a configured certificate that is not a CA', async () => {
    const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      name: 'CN=not a ca',
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      notBefore: new Date(NOW_MS - DAY_MS),
      notAfter: new Date(NOW_MS + DAY_MS),
      extensions: [new x509.BasicConstraintsExtension(false, undefined, true)],
    });
    const certPath = join(root, 'leaf.pem');
    const keyPath = join(root, 'leaf-key.pem');
    await writeFile(certPath, cert.toString('pem'));
    const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
    await writeFile(keyPath, x509.PemConverter.encode(pkcs8, 'PRIVATE KEY'), { mode: 0o600 });
    await assert.rejects(loadOrCreateCa({ stateDir, caCertPath: certPath, caKeyPath: keyPath, nowMs: NOW_MS }), CERTIFICATE_ERROR);
  });

  it('rejects a missing file, a half configuration and an expired CA', async () => {
    const missing = join(root, 'missing.pem');
    await assert.rejects(loadOrCreateCa({ stateDir, caCertPath: missing, caKeyPath: first.keyPath }), CERTIFICATE_ERROR);
    await assert.rejects(loadOrCreateCa({ stateDir, caCertPath: first.certPath }), CERTIFICATE_ERROR);
    await assert.rejects(loadOrCreateCa({ stateDir, nowMs: NOW_MS + 3651 * DAY_MS }), CERTIFICATE_ERROR);
  });

  it('refuses a state directory whose key is gone, and does not overwrite the certificate', async () => {
    const brokenDir = join(root, 'broken');
    const broken = await loadOrCreateCa({ stateDir: brokenDir, nowMs: NOW_MS });
    await unlink(broken.keyPath);
    await assert.rejects(loadOrCreateCa({ stateDir: brokenDir, nowMs: NOW_MS }), CERTIFICATE_ERROR);
    assert.equal(await readFile(broken.certPath, 'utf8'), broken.certPem);
  });

  it('warns when a configured key file is readable by others', async () => {
    const looseKey = join(root, 'loose-key.pem');
    await writeFile(looseKey, first.keyPem, { mode: 0o644 });
    const logger = recordingLogger();
    await loadOrCreateCa({ stateDir, caCertPath: first.certPath, caKeyPath: looseKey, nowMs: NOW_MS, logger });
    const warning = logger.lines.find((line) => line.level === 'warn');
    assert.equal((warning?.fields as { keyPath?: string }).keyPath, looseKey);
  });
});
