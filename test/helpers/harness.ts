/**
 * Test harness: real origin servers on loopback ports (each port is its own
 * origin) and a real proxy started from a validated config on port 0.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { validateConfig } from '../../src/config/index.js';
import { startProxy, type RunningProxy, type StartOptions } from '../../src/main.js';

/** One hit recorded by an origin. */
export interface Hit {
  method: string;
  url: string;
  atMs: number;
  headers: http.IncomingHttpHeaders;
}

/** A loopback origin that records every request. */
export interface TestOrigin {
  server: http.Server;
  port: number;
  /** `http://127.0.0.1:<port>` */
  url: string;
  hits: Hit[];
  /** Hits whose path is /robots.txt. */
  robotsHits(): number;
  close(): Promise<void>;
}

/** Starts an origin on 127.0.0.1:0 with the given handler; every request is recorded first. */
export async function startOrigin(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<TestOrigin> {
  const hits: Hit[] = [];
  const server = http.createServer((req, res) => {
    hits.push({ method: req.method ?? '', url: req.url ?? '', atMs: performance.now(), headers: req.headers });
    handler(req, res);
  });
  server.keepAliveTimeout = 30_000; // undici reuses connections only while > 2 s of the hint remain
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    hits,
    robotsHits: () => hits.filter((h) => h.url === '/robots.txt').length,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A site: robots.txt body (or a status) and pages answered after `pageDelayMs`. */
export function siteHandler(options: { robots?: string; robotsStatus?: number; pageDelayMs?: number }) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    if (req.url === '/robots.txt') {
      res.writeHead(options.robotsStatus ?? 200, { 'content-type': 'text/plain' });
      res.end(options.robots ?? '');
      return;
    }
    const answer = (): void => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`page ${req.url}\n`);
    };
    if (options.pageDelayMs) setTimeout(answer, options.pageDelayMs);
    else answer();
  };
}

/**
 * A site that allows everything and answers `/slow/<ms>/...` after <ms> ms
 * (any other page at once) with the body `body of <path>`: requests in flight
 * for as long as a test needs.
 */
export function slowPagesSite(req: IncomingMessage, res: ServerResponse): void {
  if (req.url === '/robots.txt') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('User-agent: *\nAllow: /\n');
    return;
  }
  const delayMs = Number(/^\/slow\/(\d+)\//.exec(req.url ?? '')?.[1] ?? 0);
  setTimeout(() => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`body of ${req.url}\n`);
  }, delayMs);
}

/** Captured JSON log lines. */
export interface LogCapture {
  lines: Array<Record<string, unknown>>;
  logger: pino.Logger;
}

/** A pino logger writing into memory. */
export function captureLogs(): LogCapture {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line));
      cb();
    },
  });
  return { lines, logger: pino({ level: 'info' }, stream) };
}

/**
 * Starts a proxy on 127.0.0.1:0 (admin on :0) from a config object shaped like
 * the YAML (e.g. `{ pacing: { maxWait: '5s' } }`); private networks allowed,
 * since every test origin is on loopback; state in a fresh temp dir.
 */
export async function startTestProxy(config: Record<string, unknown> = {}, options: StartOptions = {}): Promise<RunningProxy & { proxyUrl: string; adminUrl: string }> {
  const upstream = { allowPrivateNetworks: true, ...((config['upstream'] as object) ?? {}) };
  const validated = validateConfig({
    listen: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    log: { level: 'silent' },
    stateDir: mkdtempSync(join(tmpdir(), 'robots-proxy-state-')),
    ...config,
    upstream,
  });
  const running = await startProxy(validated, options);
  return {
    ...running,
    proxyUrl: `http://127.0.0.1:${running.proxyAddress.port}`,
    adminUrl: running.adminAddress ? `http://127.0.0.1:${running.adminAddress.port}` : '',
  };
}

/** Sends one request through the proxy (absolute-form) with a keep-alive agent; resolves with status, headers, body. */
export function proxyGet(
  proxyPort: number,
  url: string,
  options: { agent?: http.Agent; headers?: http.OutgoingHttpHeaders; method?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: proxyPort, method: options.method ?? 'GET', path: url, headers: options.headers, agent: options.agent },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}
