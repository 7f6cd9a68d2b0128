/**
 * Test helpers for the robots cache tests: origins on 127.0.0.1:0 that count
 * their hits, a clock the test moves, and a throwaway test CA with a server
 * certificate for 127.0.0.1 and localhost.
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { once } from 'node:events';
import { webcrypto } from 'node:crypto';
import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../src/clock.js';

x509.cryptoProvider.set(webcrypto);

/** A running origin: its `scheme://127.0.0.1:port`, the paths it was asked for, and a closer. */
export interface TestOrigin {
  readonly origin: string;
  readonly port: number;
  /** Request paths in arrival order. */
  readonly hits: string[];
  /** User-Agent, Accept and Accept-Encoding of the requests, in arrival order. */
  readonly requestHeaders: http.IncomingHttpHeaders[];
  close(): Promise<void>;
}

/** Starts an http (or, with `tls`, https) server on 127.0.0.1:0 that records each request before `handler` runs. */
export async function startOrigin(
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
  tls?: { cert: string; key: string },
): Promise<TestOrigin> {
  const hits: string[] = [];
  const requestHeaders: http.IncomingHttpHeaders[] = [];
  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    hits.push(req.url ?? '');
    requestHeaders.push(req.headers);
    handler(req, res);
  };
  const server = tls === undefined ? http.createServer(listener) : https.createServer(tls, listener);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`,
    port,
    hits,
    requestHeaders,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** A port on 127.0.0.1 that was just free and is now closed (connections are refused). */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  server.close();
  await once(server, 'close');
  return port;
}

/** A clock whose time only moves when told; its timers are real (the fetch timeout still works). */
export function manualClock(startMs: number): Clock & { advance(ms: number): void } {
  let nowMs = startMs;
  return {
    nowMs: () => nowMs,
    setTimer: (fn, delayMs) => setTimeout(fn, delayMs),
    clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
    advance: (ms) => {
      nowMs += ms;
    },
  };
}

/** A test CA and a server certificate it signed for 127.0.0.1 and localhost (PEM). */
export interface TestPki {
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
}

const ECDSA = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/**
 * Makes a fresh ECDSA P-256 test CA and a server certificate, valid from an hour ago for a day (the server certificate
 * until `leafNotAfter` when given), for 127.0.0.1, localhost and any `dnsNames` (e.g. `*.e2e.test`).
 */
export async function createTestPki(options: { leafNotAfter?: Date; dnsNames?: readonly string[] } = {}): Promise<TestPki> {
  const notBefore = new Date(Date.now() - 3_600_000);
  const notAfter = new Date(Date.now() + 86_400_000);
  const caKeys = await webcrypto.subtle.generateKey(ECDSA, true, ['sign', 'verify']);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=robots-proxy cache test CA',
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: ECDSA,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const leafKeys = await webcrypto.subtle.generateKey(ECDSA, true, ['sign', 'verify']);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
    subject: 'CN=localhost',
    issuer: ca.subject,
    // An expired server certificate when asked (the CA stays valid), e.g. from two hours ago to one.
    notBefore: options.leafNotAfter !== undefined && options.leafNotAfter < notBefore ? new Date(options.leafNotAfter.getTime() - 3_600_000) : notBefore,
    notAfter: options.leafNotAfter ?? notAfter,
    publicKey: leafKeys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: ECDSA,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: 'ip', value: '127.0.0.1' },
        { type: 'dns', value: 'localhost' },
        ...(options.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(ca),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END PRIVATE KEY-----\n`;
  return { caPem: ca.toString('pem'), certPem: leaf.toString('pem'), keyPem };
}
