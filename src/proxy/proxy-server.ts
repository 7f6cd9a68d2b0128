/**
 * The proxy listener: absolute-form HTTP requests go through the
 * {@link RequestPipeline}; CONNECT goes to the {@link ConnectHandler};
 * `Upgrade` requests (WebSocket) are decided like any other request and then
 * relayed by http-proxy. Anything else gets 400 with an explanation.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { decideWithoutRobots } from '../policy/decide.js';
import type { Decision } from '../policy/decision.js';
import type { AccessEntry } from '../audit/access-entry.js';
import type { Clock } from '../clock.js';
import { hasVisitedProxy } from './headers.js';
import { targetsOwnListener } from './loop-guard.js';
import { renderProxyResponse } from './responses.js';
import type { RequestPipeline } from './pipeline.js';
import type { ConnectHandler } from './connect.js';
import type { UpgradeRelay } from './upgrade.js';

/** Bounds of the listener. */
export interface ProxyServerLimits {
  /** Longest time to receive a request's headers, ms. @default 30000 */
  headersTimeoutMs?: number;
  /** Idle keep-alive connections are closed after this, ms. @default 5000 */
  keepAliveTimeoutMs?: number;
  /** Largest request head, bytes (Node's --max-http-header-size). @default 16384 */
  maxHeaderBytes?: number;
}

/** Collaborators of {@link ProxyServer}. */
export interface ProxyServerDeps {
  pipeline: RequestPipeline;
  connect: ConnectHandler;
  upgrade: UpgradeRelay;
  clock: Clock;
  viaPseudonym: string;
  onFinished: (entry: AccessEntry) => void;
  limits?: ProxyServerLimits;
}

/**
 * Parses the request target of a proxy request: an absolute-form `http://` or
 * `https://` URL with a host (RFC 9112 §3.2.2). Returns a reason string when it
 * is not one.
 */
export function parseProxyTarget(rawTarget: string | undefined): URL | string {
  if (rawTarget === undefined || rawTarget.length === 0) return 'the request has no target';
  if (rawTarget.startsWith('/')) {
    return `this is a forward proxy: send absolute-form requests (GET http://host/path) through it, not "${rawTarget.slice(0, 100)}"`;
  }
  let url: URL;
  try {
    url = new URL(rawTarget);
  } catch {
    return `the target "${rawTarget.slice(0, 200)}" is not an absolute URL`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `the scheme "${url.protocol}" is not proxied (only http and https)`;
  if (url.hostname.length === 0) return 'the target has no host';
  // `example.com.` is `example.com`: one origin, one robots.txt, one queue (else a trailing dot
  // would buy a second pacing queue).
  if (url.hostname.endsWith('.') && url.hostname.length > 1) url.hostname = url.hostname.slice(0, -1);
  if (url.username || url.password) return 'the target must not carry user information';
  return url;
}

/** The proxy's HTTP listener (lifecycle: `listen`, `close`). */
export class ProxyServer {
  readonly server: http.Server;
  private ownAddresses: Array<{ host: string; port: number }> = [];

  constructor(private readonly deps: ProxyServerDeps) {
    const limits = deps.limits ?? {};
    this.server = http.createServer({
      maxHeaderSize: limits.maxHeaderBytes ?? 16384,
      headersTimeout: limits.headersTimeoutMs ?? 30_000,
      requestTimeout: 0,
      keepAliveTimeout: limits.keepAliveTimeoutMs ?? 5000,
    });
    this.server.on('request', (req, res) => void this.onRequest(req, res));
    this.server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => deps.connect.handle(req, socket, head));
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.onUpgrade(req, socket, head));
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
      if (!socket.writable) return socket.destroy();
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const body = `malformed request: ${err.code ?? err.message}\n`;
      socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: text/plain\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
    });
  }

  /** Starts listening; resolves with the bound address. */
  async listen(host: string, port: number): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const address = this.server.address() as AddressInfo;
    this.ownAddresses = [{ host: address.address, port: address.port }, ...this.ownAddresses];
    this.deps.connect.setOwnAddresses(this.ownAddresses);
    return address;
  }

  /**
   * Adds another listener of this process (the admin API) to the addresses a
   * request may not target, so the proxy cannot be used to reach it.
   */
  protectAddress(address: AddressInfo): void {
    this.ownAddresses = [...this.ownAddresses, { host: address.address, port: address.port }];
    this.deps.connect.setOwnAddresses(this.ownAddresses);
  }

  /** True when the target is this proxy's own listener or the request already passed through it. */
  private isLoop(req: IncomingMessage, target: URL): boolean {
    if (hasVisitedProxy(req.headers, this.deps.viaPseudonym)) return true;
    const port = Number(target.port || (target.protocol === 'https:' ? 443 : 80));
    return targetsOwnListener(target.hostname, port, this.ownAddresses);
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = parseProxyTarget(req.url);
    if (typeof target === 'string') return this.refuse(req, res, decideWithoutRobots('bad-request', { detail: target }));
    if (this.isLoop(req, target)) {
      return this.refuse(req, res, decideWithoutRobots('bad-request', { origin: target.origin, detail: 'the target is this proxy itself (forwarding loop)' }));
    }
    await this.deps.pipeline.handle({ req, res, target, via: 'http' });
  }

  private async onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const target = parseProxyTarget(req.url);
    if (typeof target === 'string' || this.isLoop(req, target)) {
      const detail = typeof target === 'string' ? target : 'forwarding loop';
      return this.deps.upgrade.refuse(req, socket, decideWithoutRobots('bad-request', { detail }));
    }
    await this.deps.upgrade.relay(req, socket, head, target);
  }

  /** Answers a request the pipeline never saw (400, loop), and audits it. */
  private refuse(req: IncomingMessage, res: ServerResponse, decision: Decision): void {
    const startedAtMs = this.deps.clock.nowMs();
    const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: startedAtMs });
    res.writeHead(rendered.status, { ...rendered.headers, connection: 'close' });
    res.end(rendered.body);
    req.resume();
    this.deps.onFinished({
      startedAtMs,
      client: { address: req.socket.remoteAddress ?? '', port: req.socket.remotePort ?? 0 },
      request: { method: req.method ?? '', url: (req.url ?? '').slice(0, 2048), userAgent: req.headers['user-agent'] ?? null, via: 'http' },
      decision,
      productTokens: decision.agentTokens,
      timings: { queueWaitMs: null, upstreamMs: null, durationMs: 0 },
      response: { status: rendered.status, upstreamStatus: null, bytesSent: Buffer.byteLength(rendered.body), bytesReceived: 0, clientAborted: false },
      error: null,
    });
  }

  /** Stops accepting, closes idle connections, then all. */
  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
      setTimeout(() => this.server.closeAllConnections(), 1000).unref();
    });
  }
}
