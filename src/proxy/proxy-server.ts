/**
 * The proxy listener: absolute-form HTTP requests go through the
 * {@link RequestPipeline}; CONNECT goes to the {@link ConnectHandler};
 * `Upgrade` requests (WebSocket) are decided like any other request and then
 * relayed by http-proxy. Anything else gets 400 with an explanation; a request
 * in a transfer coding other than chunked gets 501 (transfer-coding.ts).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { decideWithoutRobots } from '../policy/decide.js';
import type { Decision } from '../policy/decision.js';
import type { AccessEntry } from '../audit/access-entry.js';
import type { Clock } from '../clock.js';
import { hasVisitedProxy } from './headers.js';
import { targetsOwnListener } from './loop-guard.js';
import { guardSocketRequest, RequestBoundary } from './error-boundary.js';
import { answerClientError, refuseRequest } from './own-answer.js';
import { missingHostDetail, parseProxyTarget, type TargetUrl } from './proxy-target.js';
import { connectionPortOf } from './canonical-target.js';
import { ConnectionTracker } from './connection-drain.js';
import { acceptWithStableSocketOptions } from './socket-accept.js';
import { framingRefusalOf } from './request-content.js';
import type { RequestPipeline } from './pipeline.js';
import type { ConnectHandler } from './connect.js';
import type { UpgradeRelay } from './upgrade.js';
import type { ConnectionGuard } from './connection-guard.js';

/** Bounds of the listener. */
export interface ProxyServerLimits {
  /** Longest time to receive a request's headers, ms. @default 30000 */
  headersTimeoutMs?: number;
  /** Idle keep-alive connections are closed after this, ms; a `connections` guard replaces it with its idle timeout. @default 5000 */
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
  /** Where the error boundaries log internal errors. */
  logger: Pick<Logger, 'error'>;
  viaPseudonym: string;
  onFinished: (entry: AccessEntry) => void;
  limits?: ProxyServerLimits;
  /** Connection caps and the client idle timeout; it also takes over `keepAliveTimeout` (its own idle bound, the same advertised timeout). Absent: no caps. */
  connections?: ConnectionGuard;
}

export { parseProxyTarget } from './proxy-target.js';

/** The proxy's HTTP listener (lifecycle: `listen`, `close`). */
export class ProxyServer {
  readonly server: http.Server;
  /** The client connections, for a drain. */
  readonly drainTracker: ConnectionTracker;
  private ownAddresses: Array<{ host: string; port: number }> = [];
  private isDraining = false;
  private closed: Promise<void> | undefined;
  /** The error boundary of the listener's requests. */
  private readonly boundary: RequestBoundary;

  constructor(private readonly deps: ProxyServerDeps) {
    const limits = deps.limits ?? {};
    this.server = http.createServer({
      maxHeaderSize: limits.maxHeaderBytes ?? 16384,
      headersTimeout: limits.headersTimeoutMs ?? 30_000,
      requestTimeout: 0,
      keepAliveTimeout: limits.keepAliveTimeoutMs ?? 5000,
      // Checked in onRequest/onUpgrade, so that the 400 is the proxy's own answer with its access line.
      requireHostHeader: false,
    });
    // Node 20 makes new hidden classes for every accepted socket; this accept gives its options one shape.
    acceptWithStableSocketOptions(this.server);
    // Before the request listener: a drain must see each response before anything is written to it.
    // The guard is the tracker's policy: one record, one close listener per connection for both.
    this.drainTracker = new ConnectionTracker(this.server, deps.connections);
    // Every handler runs inside an error boundary: a bug answers 500 (or closes) that one request.
    // One boundary for all requests: nothing allocated per request for it (issue 11).
    this.boundary = new RequestBoundary(deps, { where: 'proxy-request', via: 'http' }, (req: IncomingMessage, res: ServerResponse) => this.onRequest(req, res));
    this.server.on('request', (req: IncomingMessage, res: ServerResponse) => this.boundary.run(req, res));
    // An Expect other than 100-continue: decided and forwarded like any request (the Expect is not
    // forwarded; RFC 9110 §10.1.1 allows ignoring it), instead of Node's bare 417 without an access line.
    this.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => this.boundary.run(req, res));
    // Expect: 100-continue: the 100 is sent only once the request is allowed and about to go upstream
    // (the pipeline's sendUpstream), so a refused request's body is never invited (RFC 9110 §10.1.1).
    this.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => this.boundary.run(req, res));
    this.server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.drainTracker.detach(socket);
      // A CONNECT on a keep-alive connection that was busy when the drain began.
      if (this.isDraining) {
        socket.on('error', () => socket.destroy());
        return this.deps.connect.refuse(req, socket, shuttingDown());
      }
      deps.connect.handle(req, socket, head);
    });
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.drainTracker.detach(socket);
      // The server drops its own error listener from an upgraded socket.
      socket.on('error', () => socket.destroy());
      if (this.isDraining) return this.deps.upgrade.refuse(req, socket, shuttingDown(), { via: 'http' });
      guardSocketRequest(deps, { where: 'proxy-upgrade', via: 'http' }, req, socket, () => this.onUpgrade(req, socket, head));
    });
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => answerClientError(deps, socket, err, 'http'));
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
  private isLoop(req: IncomingMessage, target: TargetUrl): boolean {
    if (hasVisitedProxy(req.headers, this.deps.viaPseudonym)) return true;
    return targetsOwnListener(target.hostname, connectionPortOf(target), this.ownAddresses);
  }

  /**
   * Not `async` (one promise and one microtask fewer per request, issue 11); the pipeline never
   * rejects (it reports a bug to the boundary itself), so its promise is not returned: the boundary
   * attaches no rejection handler to it.
   */
  private onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> | void {
    const noHost = missingHostDetail(req.httpVersion, req.headers.host);
    if (noHost !== undefined) return refuseRequest(this.deps, req, res, decideWithoutRobots('bad-request', { detail: noHost }), 'http');
    const target = parseProxyTarget(req.url);
    if (typeof target === 'string') return refuseRequest(this.deps, req, res, decideWithoutRobots('bad-request', { detail: target }), 'http');
    if (this.isLoop(req, target)) {
      const decision = decideWithoutRobots('bad-request', { origin: target.origin, detail: 'the target is this proxy itself (forwarding loop)' });
      return refuseRequest(this.deps, req, res, decision, 'http');
    }
    // A transfer coding other than chunked (501), or content on a GET, HEAD, DELETE or TRACE (400): request-content.ts.
    const framing = framingRefusalOf(req, target);
    if (framing !== undefined) return refuseRequest(this.deps, req, res, framing, 'http');
    void this.deps.pipeline.handle({ req, res, target, via: 'http', boundary: this.boundary });
  }

  private async onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const target = parseProxyTarget(req.url);
    const noHost = missingHostDetail(req.httpVersion, req.headers.host);
    if (noHost !== undefined || typeof target === 'string' || this.isLoop(req, target)) {
      const detail = noHost ?? (typeof target === 'string' ? target : 'forwarding loop');
      return this.deps.upgrade.refuse(req, socket, decideWithoutRobots('bad-request', { detail }), { via: 'http' });
    }
    await this.deps.upgrade.relay(req, socket, head, target, 'http');
  }

  /**
   * Starts a drain: stops accepting connections, closes idle ones, and marks every response
   * still to be written `Connection: close` (see {@link ConnectionTracker}). A CONNECT or
   * Upgrade that arrives on a connection already open is answered 503 `proxy-shutting-down`.
   * Requests already in progress go on. Idempotent.
   */
  beginDrain(): void {
    if (this.isDraining) return;
    this.isDraining = true;
    void this.stopListening();
    this.drainTracker.beginDrain();
  }

  /** Stops accepting and closes every connection now, tunnels included; in-flight responses are cut. */
  async close(): Promise<void> {
    this.isDraining = true;
    const closed = this.stopListening();
    this.drainTracker.closeAll();
    this.server.closeAllConnections();
    await closed;
  }

  private stopListening(): Promise<void> {
    this.closed ??= new Promise<void>((resolve) => {
      if (!this.server.listening) return resolve();
      this.server.close(() => resolve());
    });
    return this.closed;
  }
}

/** The decision for a CONNECT or Upgrade that arrives during a drain. */
function shuttingDown(): Decision {
  return decideWithoutRobots('proxy-shutting-down', { detail: 'the proxy is shutting down: it takes no new requests' });
}
