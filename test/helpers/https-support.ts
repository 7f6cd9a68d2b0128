/**
 * Helpers for the HTTPS end-to-end tests (issue #4): PEM files on disk,
 * HTTPS origins in a child process, CONNECT tunnels opened by hand, and curl.
 * The test PKI (a CA and a server certificate for 127.0.0.1 and localhost)
 * comes from test/cache/support.ts.
 */
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import type { TestPki } from '../cache/support.js';
import { firstLine, stop, stopAfterFailedStart, track, type RemoteHit } from './processes.js';

export { createTestPki, startOrigin as startTlsOrigin, type TestPki, type TestOrigin as TlsOrigin } from '../cache/support.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Writes `text` to `<fresh temp dir>/<name>` and returns the path. */
export function writeTempFile(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'robots-proxy-https-')), name);
  writeFileSync(path, text);
  return path;
}

/** HTTPS origins running in a child process. */
export interface HttpsOriginsProcess {
  ports: Record<string, number>;
  /** `https://127.0.0.1:<port>` of origin `name`. */
  urlOf(name: string): string;
  /** Hits recorded by origin `name` (fetched over HTTPS, trusting the test CA). */
  hits(name: string): Promise<RemoteHit[]>;
  close(): Promise<void>;
}

/** Starts the HTTPS origins of `specs` (see origins-process.ts) presenting `pki`'s server certificate. */
export async function startHttpsOriginsProcess(
  specs: Record<string, { robots?: string; robotsStatus?: number; pageDelayMs?: number }>,
  pki: TestPki,
): Promise<HttpsOriginsProcess> {
  const script = join(root, 'test/helpers/origins-process.ts');
  const child = track(
    spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify(specs), JSON.stringify({ certPem: pki.certPem, keyPem: pki.keyPem })], {
      cwd: root,
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  const ports = await stopAfterFailedStart(child, async () => JSON.parse(await firstLine(child, 'https origins')) as Record<string, number>);
  const dispatcher = new Agent({ connect: { ca: pki.caPem } });
  return {
    ports,
    urlOf: (name) => `https://127.0.0.1:${ports[name]}`,
    hits: async (name) => (await (await request(`https://127.0.0.1:${ports[name]}/__hits`, { dispatcher })).body.json()) as RemoteHit[],
    close: async () => {
      await dispatcher.close();
      await stop(child);
    },
  };
}

/** The proxy's answer to a CONNECT, and the raw socket (a tunnel when the status is 200). */
export interface ConnectAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  socket: net.Socket;
  /** Bytes that arrived after the answer's head (for a refusal: its body, or part of it). */
  head: Buffer;
}

/** Sends `CONNECT <authority>` to the proxy on 127.0.0.1:`proxyPort`; resolves with its answer, whatever the status. */
export function openConnect(proxyPort: number, authority: string, headers: http.OutgoingHttpHeaders = {}): Promise<ConnectAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxyPort, method: 'CONNECT', path: authority, headers: { host: authority, ...headers }, agent: false });
    req.once('connect', (res: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
      resolve({ status: res.statusCode ?? 0, headers: res.headers, socket, head });
    });
    req.once('error', reject);
    req.end();
  });
}

/**
 * Starts TLS as a client over `socket` (a CONNECT tunnel), offering
 * `alpnProtocols` (default `http/1.1` only). Resolves once the
 * handshake is done and the certificate accepted; rejects with the TLS error
 * (e.g. `UNABLE_TO_VERIFY_LEAF_SIGNATURE` when `ca` does not trust it).
 */
export function startClientTls(socket: net.Socket, options: { ca?: string; servername?: string; alpnProtocols?: string[] }): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const tlsSocket = tls.connect({
      socket,
      ...(options.ca ? { ca: options.ca } : {}),
      ...(options.servername ? { servername: options.servername } : {}),
      ALPNProtocols: options.alpnProtocols ?? ['http/1.1'],
    });
    tlsSocket.once('secureConnect', () => resolve(tlsSocket));
    tlsSocket.once('error', (err) => {
      tlsSocket.destroy();
      reject(err);
    });
  });
}

/** Reads `socket` until it ends or closes (at most `timeoutMs`, then rejects); resolves with the text. */
export function readToEnd(socket: net.Socket, initial: Buffer = Buffer.alloc(0), timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [initial];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`socket still open after ${timeoutMs} ms; read so far: ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`));
    }, timeoutMs);
    const done = (): void => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.once('end', done);
    socket.once('close', done);
    socket.once('error', () => undefined);
  });
}

/**
 * A keep-alive `https.Agent` whose connections are CONNECT tunnels through the
 * proxy on 127.0.0.1:`proxyPort`, with TLS trusting only `ca` (the proxy's CA).
 * `tunnels` counts the CONNECTs it opened.
 */
export class TunnelAgent extends https.Agent {
  tunnels = 0;

  constructor(
    private readonly proxyPort: number,
    private readonly ca: string,
  ) {
    super({ keepAlive: true, maxSockets: 1 });
  }

  override createConnection(options: https.RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
    this.tunnels += 1;
    const authority = `${options.host ?? 'localhost'}:${options.port ?? 443}`;
    void openConnect(this.proxyPort, authority)
      .then(({ status, socket }) => {
        if (status !== 200) {
          socket.destroy();
          throw new Error(`CONNECT ${authority} answered ${status}`);
        }
        return startClientTls(socket, { ca: this.ca, ...(options.servername ? { servername: options.servername } : {}) });
      })
      .then(
        (tlsSocket) => callback?.(null, tlsSocket),
        (err: Error) => callback?.(err, undefined as unknown as Duplex),
      );
    return undefined;
  }
}

/** Sends one GET with `agent`; resolves with status, headers, body and the socket it came on. */
export function agentGet(
  agent: https.Agent,
  url: string,
  headers: http.OutgoingHttpHeaders = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string; socket: net.Socket; reusedSocket: boolean }> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { agent, headers }, (res) => {
      const socket = res.socket as net.Socket;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, socket, reusedSocket: req.reusedSocket }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** What curl printed: exit code, status, last response's headers (lower-case names) and body. */
export interface CurlResult {
  exitCode: number;
  status: number;
  headers: Record<string, string>;
  body: string;
  stderr: string;
}

const CURL = '/usr/bin/curl';
const MARK = '\n@@curl-write-out@@\n';

/** Runs `/usr/bin/curl -sS <args>` (never touching a network other than what `args` name). */
export function runCurl(args: string[]): Promise<CurlResult> {
  return new Promise((resolve) => {
    const writeOut = `${MARK}%{http_code}\n%{header_json}`;
    execFile(CURL, ['-sS', '--max-time', '20', '-w', writeOut, ...args], { env: { PATH: process.env.PATH ?? '' } }, (err, stdout, stderr) => {
      const at = stdout.lastIndexOf(MARK);
      const body = at < 0 ? stdout : stdout.slice(0, at);
      const [statusLine = '0', ...json] = (at < 0 ? '' : stdout.slice(at + MARK.length)).split('\n');
      const headers: Record<string, string> = {};
      try {
        for (const [name, values] of Object.entries(JSON.parse(json.join('\n') || '{}') as Record<string, string[]>)) headers[name.toLowerCase()] = values.join(', ');
      } catch {
        // Old curl or no response: no headers.
      }
      const exitCode = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ exitCode, status: Number(statusLine), headers, body, stderr });
    });
  });
}

/** Polls `predicate` every 20 ms until it is true; rejects after `timeoutMs`. */
export async function waitFor(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Leaf certificates signed, and leaf cache lookups answered, since start: read from the admin API's /metrics at `adminUrl`. */
export async function leafCounters(adminUrl: string): Promise<{ issued: number; cacheHits: number }> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const read = (name: string): number => Number(new RegExp(`^robots_proxy_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { issued: read('tls_leaf_certificates_issued_total'), cacheHits: read('tls_leaf_certificate_cache_hits_total') };
}
