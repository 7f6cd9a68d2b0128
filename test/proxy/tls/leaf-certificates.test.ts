import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createNetServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tls from 'node:tls';
import type { Clock } from '../../../src/clock.js';
import { loadOrCreateCa, type CaMaterial } from '../../../src/proxy/tls/certificate-authority.js';
import { LeafCertificateIssuer } from '../../../src/proxy/tls/leaf-certificates.js';
import { x509 } from '../../../src/proxy/tls/x509-support.js';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
const CERTIFICATE_ERROR = { code: 'ERR_CERTIFICATE' };

/** A clock that only moves when the test says so. */
function fakeClock(startMs: number): Clock & { advance(ms: number): void; set(ms: number): void } {
  let nowMs = startMs;
  return {
    nowMs: () => nowMs,
    setTimer: () => undefined,
    clearTimer: () => undefined,
    advance: (ms) => {
      nowMs += ms;
    },
    set: (ms) => {
      nowMs = ms;
    },
  };
}

/** A TLS server on 127.0.0.1:0 that writes "hello" and closes; it records the codes of failed handshakes. */
async function startServer(options: tls.TlsOptions): Promise<{ server: tls.Server; port: number; handshakeErrorCodes: string[] }> {
  const handshakeErrorCodes: string[] = [];
  const server = tls.createServer(options, (socket) => socket.end('hello'));
  server.on('tlsClientError', (error: NodeJS.ErrnoException) => handshakeErrorCodes.push(error.code ?? 'none'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port, handshakeErrorCodes };
}

/**
 * A TCP server on 127.0.0.1:0 that terminates TLS on each socket with one
 * fixed secure context, as the CONNECT handler will for a client without SNI.
 */
async function startFixedContextServer(secureContext: tls.SecureContext): Promise<{ server: Server; port: number }> {
  const server = createNetServer((raw) => {
    const socket = new tls.TLSSocket(raw, { isServer: true, secureContext });
    socket.on('error', () => raw.destroy());
    socket.on('secure', () => socket.end('hello'));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port };
}

interface Handshake {
  readonly isAuthorized: boolean;
  readonly body: string;
  readonly peer: tls.DetailedPeerCertificate;
}

/** Connects, verifies (rejectUnauthorized stays on) and reads the body; rejects with the TLS error otherwise. */
async function handshake(options: tls.ConnectionOptions): Promise<Handshake> {
  const socket = tls.connect({ host: '127.0.0.1', ...options });
  try {
    await once(socket, 'secureConnect');
    const peer = socket.getPeerCertificate(true);
    let body = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      body += chunk;
    });
    await once(socket, 'end');
    return { isAuthorized: socket.authorized, body, peer };
  } finally {
    socket.destroy();
  }
}

describe('LeafCertificateIssuer over real TLS', () => {
  let stateDir: string;
  let ca: CaMaterial;
  let issuer: LeafCertificateIssuer;
  let sniServer: Awaited<ReturnType<typeof startServer>>;
  const servers: Server[] = [];

  before(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'robots-proxy-leaf-'));
    ca = await loadOrCreateCa({ stateDir });
    issuer = new LeafCertificateIssuer(ca);
    sniServer = await startServer({ SNICallback: issuer.createSniCallback() });
    servers.push(sniServer.server);
  });

  after(async () => {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    await rm(stateDir, { recursive: true, force: true });
  });

  for (const servername of ['localhost', 'example.test']) {
    it(`serves a certificate for SNI ${servername} that a client trusting the CA verifies`, async () => {
      const result = await handshake({ port: sniServer.port, servername, ca: ca.certPem });
      assert.equal(result.isAuthorized, true);
      assert.equal(result.body, 'hello');
      assert.equal(result.peer.subject.CN, servername);
      assert.equal(result.peer.subjectaltname, `DNS:${servername}`);
      assert.equal(result.peer.issuerCertificate.fingerprint256, ca.sha256Fingerprint);
    });
  }

  it('issues short-lived serverAuth leaves backdated one hour, with the CA key identifier', async () => {
    const result = await handshake({ port: sniServer.port, servername: 'dates.test', ca: ca.certPem });
    const leaf = new x509.X509Certificate(result.peer.raw);
    const validMs = leaf.notAfter.getTime() - leaf.notBefore.getTime();
    assert.ok(Math.abs(validMs - (7 * DAY_MS + HOUR_MS)) <= 2000, `validity ${validMs} ms`);
    assert.deepEqual([...(leaf.getExtension(x509.ExtendedKeyUsageExtension)?.usages ?? [])], [x509.ExtendedKeyUsage.serverAuth]);
    assert.equal(leaf.getExtension(x509.BasicConstraintsExtension)?.ca, false);
    const caKeyId = new x509.X509Certificate(ca.certPem).getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
    assert.equal(leaf.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId, caKeyId);
  });

  it('answers a client without SNI for an IP address with an iPAddress SAN that verifies', async () => {
    const ipServer = await startFixedContextServer(await issuer.getSecureContext('127.0.0.1'));
    servers.push(ipServer.server);
    const result = await handshake({ port: ipServer.port, ca: ca.certPem });
    assert.equal(result.isAuthorized, true);
    assert.equal(result.peer.subjectaltname, 'IP Address:127.0.0.1');
  });

  it('gives an IPv6 host an iPAddress SAN that the default identity check accepts', async () => {
    const ipv6Server = await startFixedContextServer(await issuer.getSecureContext('[::1]'));
    servers.push(ipv6Server.server);
    const result = await handshake({
      port: ipv6Server.port,
      ca: ca.certPem,
      checkServerIdentity: (_host, cert) => tls.checkServerIdentity('::1', cert),
    });
    assert.equal(result.isAuthorized, true);
    assert.equal(result.peer.subjectaltname, 'IP Address:0:0:0:0:0:0:0:1');
  });

  it('fails verification for a client that does not trust the CA', async () => {
    await assert.rejects(handshake({ port: sniServer.port, servername: 'localhost' }), (error: NodeJS.ErrnoException) => {
      assert.ok(['SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY'].includes(error.code ?? ''), error.code);
      return true;
    });
  });

  it('fails verification when the certificate is for another host', async () => {
    const otherServer = await startFixedContextServer(await issuer.getSecureContext('a.test'));
    servers.push(otherServer.server);
    await assert.rejects(handshake({ port: otherServer.port, servername: 'b.test', ca: ca.certPem }), { code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
  });

  it('aborts only the handshake whose SNI is not a valid host', async () => {
    const before = sniServer.handshakeErrorCodes.length;
    await assert.rejects(handshake({ port: sniServer.port, servername: 'bad_host!', ca: ca.certPem }));
    assert.deepEqual(sniServer.handshakeErrorCodes.slice(before), ['ERR_CERTIFICATE']);
    const result = await handshake({ port: sniServer.port, servername: 'localhost', ca: ca.certPem });
    assert.equal(result.isAuthorized, true);
  });
});

describe('LeafCertificateIssuer cache', () => {
  let stateDir: string;
  let ca: CaMaterial;

  before(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'robots-proxy-leaf-cache-'));
    ca = await loadOrCreateCa({ stateDir });
  });

  after(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  it('signs once for 20 concurrent lookups of a new host, and normalises the host', async () => {
    const issuer = new LeafCertificateIssuer(ca);
    const contexts = await Promise.all(Array.from({ length: 20 }, () => issuer.getSecureContext('new.test')));
    assert.equal(new Set(contexts).size, 1);
    assert.deepEqual(issuer.getStats(), { issued: 1, cacheHits: 19, cacheMisses: 1, renewals: 0, failures: 0, cachedHosts: 1 });
    assert.equal(await issuer.getSecureContext('NEW.Test.'), contexts[0]);
    assert.equal(await issuer.getSecureContext('[0:0::1]'), await issuer.getSecureContext('::1'));
    assert.equal(issuer.getStats().issued, 2);
  });

  it('rejects hosts that are not DNS names or IP addresses, without caching them', async () => {
    const issuer = new LeafCertificateIssuer(ca);
    for (const host of ['', '*.example.test', 'a..b', 'a b', 'fe80::1%eth0', `${'a'.repeat(64)}.test`]) {
      await assert.rejects(issuer.getSecureContext(host), CERTIFICATE_ERROR, host);
    }
    assert.equal(issuer.getStats().cachedHosts, 0);
  });

  it('issues for a host too long for a CN, naming it by a critical SAN only', async () => {
    const issuer = new LeafCertificateIssuer(ca);
    const longHost = `${'a'.repeat(60)}.${'b'.repeat(60)}.test`;
    await issuer.getSecureContext(longHost);
    assert.equal(issuer.getStats().issued, 1);
  });

  it('re-signs a leaf close to its expiry and keeps it before that', async () => {
    const clock = fakeClock(Date.now());
    const issuer = new LeafCertificateIssuer(ca, { clock, leafValidityMs: 4 * DAY_MS, renewBeforeMs: DAY_MS });
    const firstContext = await issuer.getSecureContext('renew.test');
    clock.advance(3 * DAY_MS - 1);
    assert.equal(await issuer.getSecureContext('renew.test'), firstContext);
    clock.advance(1);
    const renewed = await issuer.getSecureContext('renew.test');
    assert.notEqual(renewed, firstContext);
    assert.equal(issuer.getStats().issued, 2);
    assert.equal(issuer.getStats().renewals, 1);
  });

  it('does not cache a failed signing', async () => {
    const clock = fakeClock(ca.notAfterMs + DAY_MS);
    const issuer = new LeafCertificateIssuer(ca, { clock });
    await assert.rejects(issuer.getSecureContext('late.test'), CERTIFICATE_ERROR);
    assert.equal(issuer.getStats().failures, 1);
    assert.equal(issuer.getStats().cachedHosts, 0);
    clock.set(Date.now());
    await issuer.getSecureContext('late.test');
    assert.equal(issuer.getStats().issued, 1);
  });

  it('evicts the least recently used host beyond maxEntries', async () => {
    const issuer = new LeafCertificateIssuer(ca, { maxEntries: 2 });
    for (const host of ['a.test', 'b.test', 'c.test', 'a.test']) {
      await issuer.getSecureContext(host);
    }
    assert.equal(issuer.getStats().issued, 4);
    assert.equal(issuer.getStats().cachedHosts, 2);
  });

  it('rejects out-of-range options', () => {
    assert.throws(() => new LeafCertificateIssuer(ca, { maxEntries: 0 }), RangeError);
    assert.throws(() => new LeafCertificateIssuer(ca, { leafValidityMs: 1000 }), RangeError);
    assert.throws(() => new LeafCertificateIssuer(ca, { leafValidityMs: DAY_MS, renewBeforeMs: DAY_MS }), RangeError);
  });
});

describe('LeafCertificateIssuer with an RSA CA', () => {
  it('signs leaves with a configured RSA CA that clients verify', async () => {
    const { webcrypto } = await import('node:crypto');
    const { writeFile } = await import('node:fs/promises');
    const dir = await mkdtemp(join(tmpdir(), 'robots-proxy-rsa-'));
    const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };
    const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      name: 'CN=test RSA CA',
      keys,
      signingAlgorithm: algorithm,
      notBefore: new Date(Date.now() - DAY_MS),
      notAfter: new Date(Date.now() + 30 * DAY_MS),
      extensions: [new x509.BasicConstraintsExtension(true, undefined, true)],
    });
    const certPath = join(dir, 'rsa-ca.pem');
    const keyPath = join(dir, 'rsa-ca-key.pem');
    await writeFile(certPath, cert.toString('pem'));
    await writeFile(keyPath, x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey), 'PRIVATE KEY'), { mode: 0o600 });
    const rsaCa = await loadOrCreateCa({ stateDir: dir, caCertPath: certPath, caKeyPath: keyPath });
    const issuer = new LeafCertificateIssuer(rsaCa);
    const { server, port } = await startServer({ SNICallback: issuer.createSniCallback() });
    try {
      const result = await handshake({ port, servername: 'rsa.test', ca: rsaCa.certPem });
      assert.equal(result.isAuthorized, true);
      assert.equal(result.peer.subjectaltname, 'DNS:rsa.test');
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await rm(dir, { recursive: true, force: true });
    }
  });
});
