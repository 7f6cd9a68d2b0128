/**
 * The HTTP server inside CONNECT tunnels, intercepted TLS and plain HTTP
 * alike. It never listens: each tunnel hands it its socket with a
 * {@link TunnelSession}. Every request and every Upgrade is bound to the
 * tunnel's origin ({@link resolveTunnelRequest}: 400 for what cannot be
 * parsed, 421 for another origin; a request in a transfer coding other than
 * chunked is 501, see transfer-coding.ts), then goes through the same pipeline
 * (or Upgrade relay) as an absolute-form request to that origin.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { decideWithoutRobots } from '../policy/decide.js';
import type { Decision } from '../policy/decision.js';
import { guardSocketRequest, RequestBoundary, type BoundaryDeps } from './error-boundary.js';
import { hasVisitedProxy } from './headers.js';
import { answerClientError, refuseRequest, type RequestVia } from './own-answer.js';
import type { RequestPipeline } from './pipeline.js';
import { missingHostDetail } from './proxy-target.js';
import { isTunnelRefusal, resolveTunnelRequest, tunnelOrigin, type TunnelScheme, type TunnelTarget } from './tunnel-target.js';
import { ConnectionTracker } from './connection-drain.js';
import { framingRefusalOf } from './request-content.js';
import type { UpgradeRelay } from './upgrade.js';
import type { AdmittedClient } from '../access/access-control.js';
import type { TargetUrl } from './canonical-target.js';

/** One tunnel as the server inside it sees it. */
export interface TunnelSession {
  target: TunnelTarget;
  /** `https`: TLS was terminated by the proxy; `http`: the client speaks plain HTTP in the tunnel. */
  scheme: TunnelScheme;
  /** Request heads (well-formed or not) received so far. */
  requests: number;
  /** Called when a request head arrives (well-formed or not). */
  onRequestHead?: () => void;
  /** The CONNECT's admission: its identity (and credentials) cover every request in the tunnel. */
  admitted?: AdmittedClient;
}

/** Collaborators of {@link TunnelRequestServer}. */
export interface TunnelRequestDeps extends BoundaryDeps {
  pipeline: RequestPipeline;
  upgrade: UpgradeRelay;
  logger: Pick<Logger, 'warn' | 'error'>;
  /** `Via` pseudonym of this instance (a request that already passed through it is a loop). */
  viaPseudonym: string;
  /** A tunnel's connection with no request in progress is closed after this, ms; advertised as `Keep-Alive: timeout`. @default 5000 */
  keepAliveTimeoutMs?: number;
}

function viaOf(session: TunnelSession | undefined): 'https-intercepted' | 'http-tunnelled' {
  return session?.scheme === 'http' ? 'http-tunnelled' : 'https-intercepted';
}

/** Parses and routes the requests inside tunnels (lifecycle: none of its own; sockets belong to the tunnels). */
export class TunnelRequestServer {
  private readonly server: http.Server;
  private readonly sessions = new WeakMap<object, TunnelSession>();
  /** The tunnels' connections, for a drain. */
  private readonly drainTracker: ConnectionTracker;
  /** The error boundary of the requests of each kind of tunnel. */
  private readonly boundaries: Record<'https-intercepted' | 'http-tunnelled', RequestBoundary>;

  constructor(private readonly deps: TunnelRequestDeps) {
    // Host is checked in bind(), so that the 400 is the proxy's own answer with its access line.
    this.server = http.createServer({ keepAliveTimeout: deps.keepAliveTimeoutMs ?? 5000, requireHostHeader: false });
    // Before the request listener: a drain must see each response before anything is written to it.
    this.drainTracker = new ConnectionTracker(this.server);
    // One boundary per `via`, for all requests: nothing allocated per request for it (issue 11).
    const onRequest = (req: IncomingMessage, res: ServerResponse): Promise<void> | void => this.onRequest(req, res);
    this.boundaries = {
      'https-intercepted': new RequestBoundary(deps, { where: 'tunnel-request', via: 'https-intercepted' }, onRequest),
      'http-tunnelled': new RequestBoundary(deps, { where: 'tunnel-request', via: 'http-tunnelled' }, onRequest),
    };
    this.server.on('request', (req: IncomingMessage, res: ServerResponse) => this.boundaries[viaOf(this.sessions.get(req.socket))].run(req, res));
    // An Expect other than 100-continue is decided like any request (see ProxyServer), not Node's bare 417.
    this.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => this.boundaries[viaOf(this.sessions.get(req.socket))].run(req, res));
    // Expect: 100-continue: the 100 only once the request is allowed (see ProxyServer).
    this.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => this.boundaries[viaOf(this.sessions.get(req.socket))].run(req, res));
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.drainTracker.detach(socket);
      // The server drops its own error listener from an upgraded socket.
      socket.on('error', () => socket.destroy());
      const via = viaOf(this.sessions.get(socket));
      guardSocketRequest(deps, { where: 'tunnel-upgrade', via }, req, socket, () => this.onUpgrade(req, socket, head));
    });
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
      const session = this.sessions.get(socket);
      this.noteRequestHead(session);
      // A connection the client reset or closed (ECONNRESET) can be answered nothing: not a malformed request.
      if (socket.destroyed || !socket.writable) return void socket.destroy();
      deps.logger.warn(
        { event: 'tunnel-client-error', origin: session ? tunnelOrigin(session.target, session.scheme) : null, error: err.code ?? 'unparsable' },
        'malformed request inside a CONNECT tunnel: answered 400',
      );
      answerClientError(deps, socket, err, viaOf(session));
    });
  }

  /** Serves the HTTP requests that arrive on `socket`, a tunnel described by `session`. */
  serve(socket: Duplex, session: TunnelSession): void {
    this.sessions.set(socket, session);
    this.server.emit('connection', socket);
  }

  /** Requests in progress inside tunnels. */
  get activeRequests(): number {
    return this.drainTracker.activeRequests;
  }

  /** Starts a drain of the tunnels' connections (see {@link ConnectionTracker}). */
  beginDrain(): void {
    this.drainTracker.beginDrain();
  }

  /** Closes every tunnel connection, upgraded ones included. */
  closeAll(): void {
    this.drainTracker.closeAll();
  }

  private noteRequestHead(session: TunnelSession | undefined): void {
    if (!session) return;
    session.requests += 1;
    session.onRequestHead?.();
  }

  /** The request's absolute URL on the tunnel's origin, or the refusal (400 unparsable or a loop, 421 another origin). */
  private bind(req: IncomingMessage, session: TunnelSession): TargetUrl | Decision {
    const origin = tunnelOrigin(session.target, session.scheme);
    if (hasVisitedProxy(req.headers, this.deps.viaPseudonym)) {
      return decideWithoutRobots('bad-request', { origin, detail: 'the request already passed through this proxy (forwarding loop)' });
    }
    const noHost = missingHostDetail(req.httpVersion, req.headers.host);
    if (noHost !== undefined) return decideWithoutRobots('bad-request', { origin, detail: noHost });
    const bound = resolveTunnelRequest(session.target, session.scheme, req.url, req.headers.host);
    if (!isTunnelRefusal(bound)) return bound;
    return decideWithoutRobots(bound.reason, { origin, detail: bound.detail });
  }

  /** Not `async`, and the pipeline's promise is not returned: it never rejects (see {@link RequestPipeline.handle}). */
  private onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> | void {
    const session = this.sessions.get(req.socket);
    if (!session) return void res.destroy();
    this.noteRequestHead(session);
    const via = viaOf(session);
    const bound = this.bind(req, session);
    if (isRefusal(bound)) return refuseRequest(this.deps, req, res, bound, via);
    // A transfer coding other than chunked (501), or content on a GET, HEAD, DELETE or TRACE (400): request-content.ts.
    const framing = framingRefusalOf(req, bound);
    if (framing !== undefined) return refuseRequest(this.deps, req, res, framing, via);
    const boundary = this.boundaries[via];
    void this.deps.pipeline.handle(session.admitted ? { req, res, target: bound, via, tunnel: session.admitted, boundary } : { req, res, target: bound, via, boundary });
  }

  private async onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const session = this.sessions.get(socket);
    if (!session) return void socket.destroy();
    this.noteRequestHead(session);
    const via = viaOf(session);
    const bound = this.bind(req, session);
    if (isRefusal(bound)) return this.deps.upgrade.refuse(req, socket, bound, { via });
    await this.deps.upgrade.relay(req, socket, head, bound, via, session.admitted);
  }
}

/** True when `TunnelRequestServer.bind`'s answer is a refusal (a Decision has a `verdict`; the URL's parts have none). */
function isRefusal(bound: TargetUrl | Decision): bound is Decision {
  return 'verdict' in bound;
}
