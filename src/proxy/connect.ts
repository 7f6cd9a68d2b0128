/**
 * CONNECT handling (`https.mode`). Every CONNECT is checked first, with what
 * can be known before any byte of the tunnel: the target parses as
 * `host:port` (else 400), it is not this proxy (400, forwarding loop), it
 * declares no content (a transfer coding other than chunked: 501; `chunked` or a
 * `Content-Length` over 0: 400), the
 * mode allows tunnels (`deny`: 403), and the host passes the private-network
 * guard (403). Only then:
 * - `intercept`: 500 while the proxy's CA has expired (nothing can be signed),
 *   400 for a host no certificate can name (`*.example.com`, a
 *   label over 63 characters); else 200, then TLS with a leaf certificate
 *   signed for the host (or plain HTTP, as the client's first bytes say):
 *   tunnel-intercept.ts;
 * - `tunnel`: decide on the origin's `/` for the agent (`http://host` for
 *   port 80, else `https://host:port`, or `http://host:port` when that port
 *   answers TLS with plain HTTP: relayedTunnelScheme), pace the CONNECT per
 *   origin, then relay bytes (paths are not checked) until either side closes
 *   or the tunnel is idle for `https.idleTimeout`.
 */
import type { IncomingMessage } from 'node:http';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { HttpsMode } from '../config/index.js';
import { decideWithoutRobots } from '../policy/decide.js';
import { transferCodingRefusal, unimplementedCodingsOf } from './transfer-coding.js';
import type { Decision } from '../policy/decision.js';
import type { Identity } from '../policy/identity.js';
import { CancelSignal } from '../pacing/index.js';
import type { AccessEntry } from '../audit/access-entry.js';
import type { LeafCertificateIssuer } from './tls/leaf-certificates.js';
import { isLeafHost } from './tls/leaf-host.js';
import { identityOf, type RequestPipeline } from './pipeline.js';
import { DECISION_HEADER, decisionHeaderValue, renderProxyResponse } from './responses.js';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id.js';
import { writeRawResponse } from './raw-response.js';
import { targetsOwnListener } from './loop-guard.js';
import type { UpgradeRelay } from './upgrade.js';
import type { TargetGuard } from './target-guard.js';
import { guardSocketRequest } from './error-boundary.js';
import { ownAnswerEntry } from './own-answer.js';
import { parseConnectTarget, relayedTunnelScheme, tunnelOrigin, type TunnelTarget } from './tunnel-target.js';
import { TunnelRequestServer } from './tunnel-requests.js';
import { TunnelInterceptor } from './tunnel-intercept.js';
import { LogThrottle } from '../audit/log-throttle.js';

export { parseConnectTarget, type TunnelTarget } from './tunnel-target.js';

/**
 * The field by which a CONNECT declares content (`Transfer-Encoding: chunked`, `Content-Length: 5`,
 * at most 40 characters of its value), or undefined when it declares none (no field, or a
 * `Content-Length` of zeros). Pure.
 */
function contentFramingOf(req: Pick<IncomingMessage, 'headers'>): string | undefined {
  const codings = req.headers['transfer-encoding'];
  if (codings !== undefined) return `Transfer-Encoding: ${codings.slice(0, 40)}`;
  const length = req.headers['content-length'];
  if (length !== undefined && !/^0+$/.test(length)) return `Content-Length: ${length.slice(0, 40)}`;
  return undefined;
}

/**
 * True when a decision on a relayed tunnel's https origin failed because that port speaks plain
 * HTTP: its robots.txt fetch got an HTTP answer to the TLS ClientHello, which OpenSSL reports as
 * `ERR_SSL_WRONG_VERSION_NUMBER` (`HT` read as a record version). A port that resets or closes
 * instead cannot be told apart from an https origin that is down, and keeps its 503. Pure.
 */
function speaksPlainHttp(decision: Decision): boolean {
  return decision.reason === 'robots-unreachable' && decision.snapshot?.error === 'ERR_SSL_WRONG_VERSION_NUMBER';
}

/** Collaborators of {@link ConnectHandler}. */
export interface ConnectDeps {
  mode: HttpsMode;
  /** Signs leaf certificates; required in `intercept` mode. */
  issuer: LeafCertificateIssuer | undefined;
  pipeline: RequestPipeline;
  upgrade: UpgradeRelay;
  clock: Clock;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  onFinished: (entry: AccessEntry) => void;
  /** Opens tunnel-mode connections; the target guard judges the address and port each one uses. */
  guard: Pick<TargetGuard, 'connect'>;
  /** `Via` pseudonym of this instance (loops through tunnels). */
  viaPseudonym: string;
  /** A tunnel with no byte in either direction for this long is closed, ms (`https.idleTimeout`). */
  idleTimeoutMs: number;
  /** Time to open the upstream TCP connection in tunnel mode, ms (`upstream.connectTimeout`). */
  connectTimeoutMs: number;
  /**
   * An intercepted tunnel with no request in progress is closed after this, ms, and the
   * `Keep-Alive: timeout` of its responses says so (`clients.idleTimeout`, as outside tunnels).
   * @default 5000
   */
  keepAliveTimeoutMs?: number;
  /** Time allowed for the client's TLS handshake (intercept mode), ms. @default 10000 */
  handshakeTimeoutMs?: number;
}

/** Handles CONNECT requests in the configured `https.mode`; owns the tunnels (lifecycle: `close()`). */
export class ConnectHandler {
  private readonly interceptor: TunnelInterceptor | undefined;
  /** The HTTP server inside intercepted tunnels (intercept mode only). */
  private readonly requests: TunnelRequestServer | undefined;
  private readonly relayed = new Set<Duplex>();
  private ownAddresses: Array<{ host: string; port: number }> = [];
  /** `https.idleTimeout` and `upstream.connectTimeout` in force, ms (a reload changes them for tunnels opened afterwards). */
  private idleTimeoutMs: number;
  private connectTimeoutMs: number;
  /** At most one `tls-ca-expired` line per 10 s. */
  private readonly caExpiredLog = new LogThrottle({ nowMs: () => performance.now() });

  constructor(private readonly deps: ConnectDeps) {
    this.idleTimeoutMs = deps.idleTimeoutMs;
    this.connectTimeoutMs = deps.connectTimeoutMs;
    if (deps.mode === 'intercept' && deps.issuer) {
      const requests = new TunnelRequestServer(deps);
      this.requests = requests;
      this.interceptor = new TunnelInterceptor({
        issuer: deps.issuer,
        requests,
        logger: deps.logger,
        handshakeTimeoutMs: deps.handshakeTimeoutMs ?? 10_000,
        idleTimeoutMs: deps.idleTimeoutMs,
      });
    }
  }

  /** Tells the handler where the proxy listens, so CONNECTs back into it are refused. */
  setOwnAddresses(addresses: Array<{ host: string; port: number }>): void {
    this.ownAddresses = addresses;
  }

  /** Handles one CONNECT request. Never throws: failures are answered 500 by the error boundary. */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // The listener drops its own error listener from a CONNECT socket.
    socket.on('error', () => socket.destroy());
    guardSocketRequest(this.deps, { where: 'connect', via: 'connect' }, req, socket, () => this.dispatch(req, socket, head));
  }

  /** Admission, then the checks that need no TLS, cheapest first; then the mode's handling. */
  private async dispatch(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const startedAtMs = this.deps.clock.nowMs();
    const target = parseConnectTarget(req.url);
    // Intercepted tunnels are read as https until their first bytes say otherwise; relayed ones by their port.
    const origin = typeof target === 'string' ? '' : tunnelOrigin(target, this.deps.mode === 'tunnel' ? relayedTunnelScheme(target) : 'https');
    // Who may use the proxy, before anything else: the credentials given here cover the whole tunnel.
    const admitted = await this.deps.pipeline.admit(req, { origin });
    if (!admitted.isAdmitted) return this.refuse(req, socket, admitted.refusal, startedAtMs);
    if (typeof target === 'string') return this.refuse(req, socket, decideWithoutRobots('bad-request', { detail: target }), startedAtMs);
    if (targetsOwnListener(target.hostname, target.port, this.ownAddresses)) {
      return this.refuse(req, socket, decideWithoutRobots('bad-request', { origin, detail: 'the target is this proxy itself (forwarding loop)' }), startedAtMs);
    }
    // RFC 9112 §6.1: a request with a transfer coding the server does not implement gets 501. A
    // CONNECT has no content (RFC 9110 §9.3.6), so the bytes after its head would go into the
    // tunnel, where a hop that framed them by the field would not expect them.
    const codings = unimplementedCodingsOf(req.headers['transfer-encoding']);
    if (codings !== undefined) return this.refuse(req, socket, transferCodingRefusal(new URL(`${origin}/`), codings), startedAtMs);
    // Likewise any other framing of content (RFC 9110 §9.3.6: a CONNECT has none): `chunked`, or a
    // length over 0. The bytes after the head are the tunnel's here, but a hop that framed them by
    // the field would read them as a body. `Content-Length: 0`, which some clients send, declares none.
    const framing = contentFramingOf(req);
    if (framing !== undefined) {
      const detail = `a CONNECT has no content (RFC 9110 §9.3.6), but this one declares ${framing}; send neither Transfer-Encoding nor a Content-Length over 0`;
      return this.refuse(req, socket, decideWithoutRobots('bad-request', { origin, detail }), startedAtMs);
    }
    if (this.deps.mode === 'deny') return this.refuse(req, socket, decideWithoutRobots('tunnel-denied', { origin, detail: 'https.mode is deny' }), startedAtMs);
    if (this.deps.mode === 'tunnel') return this.tunnel(req, socket, head, target, startedAtMs, admitted.identity);
    const expiredCa = this.deps.issuer?.expiredCaDetail();
    if (expiredCa !== undefined) {
      this.warnCaExpired();
      return this.refuse(req, socket, decideWithoutRobots('internal-error', { origin, detail: expiredCa }), startedAtMs);
    }
    if (!isLeafHost(target.hostname)) {
      const detail = `no certificate can be issued for "${target.hostname.slice(0, 300)}": not a host name (labels of 1-63 letters, digits, - or _; no wildcard) or an IP address`;
      return this.refuse(req, socket, decideWithoutRobots('bad-request', { origin, detail }), startedAtMs);
    }
    const refused = await this.deps.pipeline.checkTarget(new URL(`${origin}/`), req.headers['user-agent']);
    if (refused) return this.refuse(req, socket, refused, startedAtMs);
    if (!this.interceptor || socket.destroyed) return void socket.destroy();
    this.interceptor.open(socket, head, target, requestIdOf(req), admitted.client);
  }

  /** Logs `tls-ca-expired` at error, at most once per interval (every CONNECT to intercept meets it). */
  private warnCaExpired(): void {
    const suppressed = this.caExpiredLog.admit('ca');
    if (suppressed === undefined || !this.deps.issuer) return;
    const { certPath, notAfterMs } = this.deps.issuer.caValidity;
    this.deps.logger.error(
      { event: 'tls-ca-expired', certPath, notAfter: new Date(notAfterMs).toISOString(), suppressed },
      'the TLS interception CA has expired: CONNECTs to intercept are answered 500 until it is replaced',
    );
  }

  /** Answers a CONNECT with the proxy's own response and audits it. */
  refuse(req: IncomingMessage, socket: Duplex, decision: Decision, startedAtMs = this.deps.clock.nowMs()): void {
    const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: this.deps.clock.nowMs(), requestId: requestIdOf(req) });
    writeRawResponse(socket, rendered);
    this.audit(req, decision, startedAtMs, rendered.status);
  }

  private audit(req: IncomingMessage, decision: Decision, startedAtMs: number, status: number): void {
    this.deps.onFinished(ownAnswerEntry(req, decision, { startedAtMs, nowMs: this.deps.clock.nowMs(), status, via: 'connect', url: (req.url ?? '').slice(0, 1024) }));
  }

  /** `tunnel` mode: decide on `/`, pace the CONNECT, then relay bytes until a side closes or the tunnel idles. */
  private async tunnel(req: IncomingMessage, socket: Duplex, head: Buffer, target: TunnelTarget, startedAtMs: number, identity: Identity | null): Promise<void> {
    let origin = tunnelOrigin(target, relayedTunnelScheme(target));
    let { decision: decided, policyRequest } = await this.deps.pipeline.decideFor(new URL(`${origin}/`), req.headers['user-agent'], identity, 'CONNECT');
    if (speaksPlainHttp(decided)) {
      // The port answered a ClientHello with plain HTTP: what goes through this tunnel is http, so the
      // http origin's robots.txt is the one that applies (a client tunnelling http://host:8080 URLs).
      origin = tunnelOrigin(target, 'http');
      ({ decision: decided, policyRequest } = await this.deps.pipeline.decideFor(new URL(`${origin}/`), req.headers['user-agent'], identity, 'CONNECT'));
    }
    const decision: Decision = { ...decided, detail: 'tunnel mode: only the origin\'s "/" was checked; paths inside the tunnel are not' };
    if (decision.verdict === 'deny' || decision.reason === 'upstream-error') return this.refuse(req, socket, decision, startedAtMs);
    const abort = new CancelSignal();
    socket.once('close', () => abort.abort());
    const waited = await this.deps.pipeline.waitForSlot(decision, policyRequest, identityOf(req, decision), abort);
    if ('refusal' in waited) {
      // queue-full (429) or proxy-shutting-down (503); a client that left gets nothing.
      if (waited.refusal !== 'aborted') return this.refuse(req, socket, decision, startedAtMs);
      return void socket.destroy();
    }
    const { slot } = waited;
    if (socket.destroyed) return void slot.release();
    const upstream = this.deps.guard.connect(target.hostname, target.port);
    upstream.setTimeout(this.connectTimeoutMs, () => {
      if (upstream.connecting) upstream.destroy(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' }));
    });
    let isEstablished = false;
    let isReleased = false;
    // Exactly once, however the attempt ends (connected, failed, or the client left meanwhile).
    const release = (): void => {
      if (!isReleased) slot.release();
      isReleased = true;
    };
    upstream.once('close', release);
    upstream.once('connect', () => {
      isEstablished = true;
      release();
      upstream.setTimeout(0);
      socket.write(`HTTP/1.1 200 Connection Established\r\n${DECISION_HEADER}: ${decisionHeaderValue(decision)}\r\n${REQUEST_ID_HEADER}: ${requestIdOf(req)}\r\n\r\n`);
      if (head.length > 0) upstream.write(head);
      socket.pipe(upstream).pipe(socket);
      this.closeWhenIdle(socket as net.Socket, upstream, origin);
      this.audit(req, decision, startedAtMs, 200);
    });
    upstream.once('error', (err: NodeJS.ErrnoException) => {
      if (isEstablished) return void socket.destroy();
      release();
      const code = err.code ?? 'UPSTREAM_ERROR';
      const failed: Decision = { ...decision, reason: 'upstream-error', upstream: { error: code, timedOut: code === 'ETIMEDOUT' } };
      this.refuse(req, socket, failed, startedAtMs);
    });
    socket.once('close', () => upstream.destroy());
  }

  /**
   * Closes a relayed tunnel after `idleTimeoutMs` without a byte either way.
   * The client socket carries both directions (read one way, written the
   * other), so its inactivity timer sees all traffic.
   */
  private closeWhenIdle(socket: net.Socket, upstream: net.Socket, origin: string): void {
    this.relayed.add(socket);
    socket.once('close', () => this.relayed.delete(socket));
    const idleTimeoutMs = this.idleTimeoutMs;
    socket.setTimeout(idleTimeoutMs, () => {
      this.deps.logger.info({ event: 'tunnel-idle-timeout', origin, idleTimeoutMs }, 'closed a CONNECT tunnel that carried no byte for the idle timeout');
      socket.destroy();
      upstream.destroy();
    });
  }

  /** Applies a reloaded `https.idleTimeout` and `upstream.connectTimeout` (ms) to the tunnels opened from now on. */
  setTimeouts(timeouts: { idleTimeoutMs: number; connectTimeoutMs: number }): void {
    this.idleTimeoutMs = timeouts.idleTimeoutMs;
    this.connectTimeoutMs = timeouts.connectTimeoutMs;
    this.interceptor?.setIdleTimeoutMs(timeouts.idleTimeoutMs);
  }

  /** Requests in progress inside intercepted tunnels. */
  get activeRequests(): number {
    return this.requests?.activeRequests ?? 0;
  }

  /**
   * Starts a drain of the intercepted tunnels: one with no request in progress is closed now, a
   * busy one right after its response (`Connection: close`); one whose TLS handshake (or first
   * plain-HTTP bytes) comes from now on is closed at once. Relayed tunnels (`tunnel` mode) and
   * upgraded streams carry no request the proxy can see: they stay open until `close()`.
   */
  beginDrain(): void {
    this.interceptor?.beginDrain();
    this.requests?.beginDrain();
  }

  /** Closes every tunnel, intercepted and relayed. */
  close(): void {
    this.requests?.closeAll();
    this.interceptor?.close();
    for (const socket of this.relayed) socket.destroy();
    this.relayed.clear();
  }
}
