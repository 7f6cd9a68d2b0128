/**
 * CONNECT handling (`https.mode`):
 * - `intercept`: answer 200, terminate TLS with a leaf certificate signed by
 *   the proxy's CA, and feed every inner request through the same pipeline as
 *   plain HTTP, as a request to origin `https://host:port`;
 * - `tunnel`: decide at CONNECT time on the origin's `/` for the agent, pace
 *   CONNECTs per origin, then relay bytes (paths are not checked);
 * - `deny`: 403 to every CONNECT.
 */
import http, { type IncomingMessage } from 'node:http';
import net, { type LookupFunction } from 'node:net';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { HttpsMode } from '../config/index.js';
import { decideWithoutRobots } from '../policy/decide.js';
import type { Decision } from '../policy/decision.js';
import type { AccessEntry } from '../audit/access-entry.js';
import type { LeafCertificateIssuer } from './tls/leaf-certificates.js';
import type { RequestPipeline } from './pipeline.js';
import { renderProxyResponse } from './responses.js';
import { writeRawResponse } from './raw-response.js';
import { targetsOwnListener } from './loop-guard.js';
import type { UpgradeRelay } from './upgrade.js';

/** Collaborators of {@link ConnectHandler}. */
export interface ConnectDeps {
  mode: HttpsMode;
  /** Signs leaf certificates; required in `intercept` mode. */
  issuer: LeafCertificateIssuer | undefined;
  pipeline: RequestPipeline;
  upgrade: UpgradeRelay;
  clock: Clock;
  logger: Pick<Logger, 'info' | 'warn' | 'debug'>;
  onFinished: (entry: AccessEntry) => void;
  /** DNS lookup for tunnel-mode connections (the private-network guard). */
  lookup: LookupFunction;
  /** Time allowed for the client's TLS handshake, ms. @default 10000 */
  handshakeTimeoutMs?: number;
  /** Idle time after which an intercepted tunnel is closed, ms. @default 60000 */
  idleTimeoutMs?: number;
}

/** The CONNECT target of an intercepted TLS connection. */
interface TunnelTarget {
  /** `host:port` as the client asked, host lower-cased. */
  authority: string;
  hostname: string;
  port: number;
}

/** Parses a CONNECT request target (authority-form, RFC 9112 §3.2.3): `host:port`. */
export function parseConnectTarget(raw: string | undefined): TunnelTarget | string {
  if (!raw || raw.includes('/') || raw.includes('@')) return `CONNECT needs host:port, got "${(raw ?? '').slice(0, 100)}"`;
  let url: URL;
  try {
    url = new URL(`https://${raw}`);
  } catch {
    return `"${raw.slice(0, 100)}" is not a valid host:port`;
  }
  const port = url.port === '' ? (/:443$/.test(raw) ? 443 : NaN) : Number(url.port);
  if (!Number.isInteger(port) || port <= 0) return `CONNECT target "${raw.slice(0, 100)}" has no port`;
  const hostname = url.hostname.endsWith('.') && url.hostname.length > 1 ? url.hostname.slice(0, -1) : url.hostname;
  return { authority: `${hostname}:${port}`, hostname, port };
}

/** Normalised `host:port` of a Host header, with `defaultPort` filled in. */
function hostHeaderAuthority(host: string | undefined, defaultPort: number): string | undefined {
  if (!host) return undefined;
  try {
    const url = new URL(`https://${host}`);
    return `${url.hostname}:${url.port === '' ? defaultPort : url.port}`;
  } catch {
    return undefined;
  }
}

/**
 * One intercepted tunnel. `state`: `handshake` until the client's TLS handshake
 * completes, then `open`; `refused` when the client spoke plain text,
 * `failed` after a TLS error, `closed-by-proxy` after a timeout. Log lines
 * depend on it, so each failure is reported once.
 */
interface InterceptedTunnel {
  target: TunnelTarget;
  raw: Duplex;
  tls: tls.TLSSocket | undefined;
  state: 'handshake' | 'open' | 'refused' | 'failed' | 'closed-by-proxy';
  /** Handshake timer: from the 200 answer to the end of the client's handshake. */
  timer: NodeJS.Timeout | undefined;
}

function originOf(t: TunnelTarget): string {
  return t.port === 443 ? `https://${t.hostname}` : `https://${t.hostname}:${t.port}`;
}

/** Handles CONNECT requests in the configured `https.mode`; owns the intercepted tunnels (lifecycle: `close()`). */
export class ConnectHandler {
  private readonly inner: http.Server;
  private readonly targets = new WeakMap<object, TunnelTarget>();
  private readonly sockets = new Set<Duplex>();
  /** Intercepted TLS sockets that carried at least one request (or a malformed one). */
  private readonly usedTunnels = new WeakSet<object>();
  private isClosing = false;
  private ownAddresses: Array<{ host: string; port: number }> = [];

  constructor(private readonly deps: ConnectDeps) {
    // The server that parses HTTP inside intercepted tunnels; it never listens.
    this.inner = http.createServer({ keepAliveTimeout: 5000 });
    this.inner.on('request', (req, res) => void this.onInnerRequest(req, res));
    this.inner.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.usedTunnels.add(socket);
      const target = this.targets.get(req.socket);
      if (!target) return socket.destroy();
      void deps.upgrade.relay(req, socket, head, new URL(req.url ?? '/', originOf(target)));
    });
    this.inner.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
      this.usedTunnels.add(socket);
      deps.logger.warn({ event: 'tunnel-client-error', error: err.code ?? err.message }, 'malformed request inside a TLS tunnel');
      socket.destroy();
    });
  }

  /** Tells the handler where the proxy listens, so CONNECTs back into it are refused. */
  setOwnAddresses(addresses: Array<{ host: string; port: number }>): void {
    this.ownAddresses = addresses;
  }

  /** Handles one CONNECT request. Never throws. */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const target = parseConnectTarget(req.url);
    if (typeof target === 'string') return this.refuse(req, socket, decideWithoutRobots('bad-request', { detail: target }));
    if (targetsOwnListener(target.hostname, target.port, this.ownAddresses)) {
      return this.refuse(req, socket, decideWithoutRobots('bad-request', { origin: originOf(target), detail: 'the target is this proxy itself (forwarding loop)' }));
    }
    switch (this.deps.mode) {
      case 'deny':
        return this.refuse(req, socket, decideWithoutRobots('tunnel-denied', { origin: originOf(target), detail: 'https.mode is deny' }));
      case 'tunnel':
        return void this.tunnel(req, socket, head, target);
      case 'intercept':
        return void this.intercept(socket, head, target);
    }
  }

  /** Answers a CONNECT with the proxy's own response and audits it. */
  private refuse(req: IncomingMessage, socket: Duplex, decision: Decision, startedAtMs = this.deps.clock.nowMs()): void {
    const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: this.deps.clock.nowMs() });
    writeRawResponse(socket, rendered);
    this.audit(req, decision, startedAtMs, rendered.status, null);
  }

  private audit(req: IncomingMessage, decision: Decision, startedAtMs: number, status: number, error: string | null): void {
    this.deps.onFinished({
      startedAtMs,
      client: { address: req.socket.remoteAddress ?? '', port: req.socket.remotePort ?? 0 },
      request: { method: req.method === 'CONNECT' ? 'CONNECT' : (req.method ?? 'GET'), url: (req.url ?? '').slice(0, 1024), userAgent: req.headers['user-agent'] ?? null, via: req.method === 'CONNECT' ? 'connect' : 'https-intercepted' },
      decision,
      productTokens: decision.agentTokens,
      timings: { queueWaitMs: decision.pacing?.waitedMs ?? null, upstreamMs: null, durationMs: this.deps.clock.nowMs() - startedAtMs },
      response: { status, upstreamStatus: null, bytesSent: 0, bytesReceived: 0, clientAborted: false },
      error,
    });
  }

  /** `tunnel` mode: decide on `/`, pace the CONNECT, then relay bytes. */
  private async tunnel(req: IncomingMessage, socket: Duplex, head: Buffer, target: TunnelTarget): Promise<void> {
    const startedAtMs = this.deps.clock.nowMs();
    const { decision: decided } = await this.deps.pipeline.decideFor(new URL(`${originOf(target)}/`), req.headers['user-agent']);
    const decision: Decision = { ...decided, detail: 'tunnel mode: only the origin\'s "/" was checked; paths inside the tunnel are not' };
    if (decision.verdict === 'deny' || decision.reason === 'upstream-error') return this.refuse(req, socket, decision, startedAtMs);
    const abort = new AbortController();
    socket.once('close', () => abort.abort());
    const waited = await this.deps.pipeline.waitForSlot(decision, abort.signal);
    if ('refusal' in waited) {
      if (waited.refusal === 'queue-full') return this.refuse(req, socket, decision, startedAtMs);
      return void socket.destroy();
    }
    const outcome = waited;
    const upstream = net.connect({ host: target.hostname.replace(/^\[|\]$/g, ''), port: target.port, lookup: this.deps.lookup });
    upstream.once('connect', () => {
      outcome.slot.release();
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      socket.pipe(upstream).pipe(socket);
      this.audit(req, decision, startedAtMs, 200, null);
    });
    upstream.once('error', (err: NodeJS.ErrnoException) => {
      outcome.slot.release();
      if (upstream.readyState === 'opening' || !socket.writable) {
        const failed: Decision = { ...decision, reason: 'upstream-error', upstream: { error: err.code ?? 'UPSTREAM_ERROR' } };
        this.refuse(req, socket, failed, startedAtMs);
      }
      socket.destroy();
    });
    socket.once('close', () => upstream.destroy());
  }

  /** `intercept` mode: 200, then TLS with our own leaf certificate, then inner HTTP. */
  private async intercept(socket: Duplex, head: Buffer, target: TunnelTarget): Promise<void> {
    const issuer = this.deps.issuer;
    if (!issuer) return void socket.destroy();
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    let secureContext: tls.SecureContext;
    try {
      secureContext = await issuer.getSecureContext(target.hostname);
    } catch (err) {
      this.deps.logger.warn({ event: 'tls-leaf-error', host: target.hostname, error: (err as Error).message }, 'could not sign a certificate for the CONNECT host');
      const decision = decideWithoutRobots('upstream-error', { origin: originOf(target), detail: 'the proxy could not create a certificate for this host' });
      return writeRawResponse(socket, renderProxyResponse({ ...decision, upstream: { error: 'LEAF_CERTIFICATE_FAILED' } }, { accept: undefined, nowMs: this.deps.clock.nowMs() }));
    }
    if (socket.destroyed) return;
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    const tunnel: InterceptedTunnel = { target, raw: socket, tls: undefined, state: 'handshake', timer: undefined };
    // The handshake timeout runs from the 200, not from the first byte: a client that
    // opens a tunnel and never sends anything must not hold the socket forever.
    tunnel.timer = setTimeout(() => this.onHandshakeTimeout(tunnel), this.deps.handshakeTimeoutMs ?? 10_000);
    tunnel.timer.unref();
    socket.once('close', () => clearTimeout(tunnel.timer));
    if (head.length > 0) socket.unshift(head);
    socket.once('data', (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      // 0x16: a TLS handshake record. Anything else is a client speaking plain HTTP into the tunnel.
      if (first[0] !== 0x16) {
        tunnel.state = 'refused';
        this.deps.logger.warn({ event: 'tunnel-not-tls', origin: originOf(target) }, 'client sent plain text into a CONNECT tunnel (expected TLS)');
        const detail = 'this CONNECT tunnel expects TLS (the proxy intercepts HTTPS); send plain HTTP requests in absolute form instead';
        const decision = decideWithoutRobots('upstream-error', { origin: originOf(target), detail });
        // Read and drop the rest, so the client's FIN is seen and the socket closes (the timer bounds a client that never closes).
        socket.resume();
        return writeRawResponse(socket, renderProxyResponse({ ...decision, upstream: { error: 'TUNNEL_NOT_TLS' } }, { accept: undefined, nowMs: this.deps.clock.nowMs() }));
      }
      this.startTls(tunnel, secureContext);
    });
  }

  /** The client did not finish its TLS handshake (or never started one) in time: close the tunnel. */
  private onHandshakeTimeout(tunnel: InterceptedTunnel): void {
    if (tunnel.state === 'handshake') {
      this.deps.logger.warn(
        { event: 'tls-handshake-timeout', origin: originOf(tunnel.target), started: tunnel.tls !== undefined },
        'TLS handshake with the client timed out',
      );
    }
    tunnel.state = 'closed-by-proxy';
    (tunnel.tls ?? tunnel.raw).destroy();
    tunnel.raw.destroy();
  }

  private startTls(tunnel: InterceptedTunnel, secureContext: tls.SecureContext): void {
    const issuer = this.deps.issuer!;
    const { target, raw: socket } = tunnel;
    const origin = originOf(target);
    const tlsSocket = new tls.TLSSocket(socket as net.Socket, {
      isServer: true,
      secureContext,
      SNICallback: issuer.createSniCallback(),
      ALPNProtocols: ['http/1.1'],
    });
    tunnel.tls = tlsSocket;
    tlsSocket.once('secure', () => {
      clearTimeout(tunnel.timer);
      tunnel.state = 'open';
      this.targets.set(tlsSocket, target);
      tlsSocket.setTimeout(this.deps.idleTimeoutMs ?? 60_000, () => {
        tunnel.state = 'closed-by-proxy';
        tlsSocket.destroy();
      });
      this.inner.emit('connection', tlsSocket);
    });
    tlsSocket.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(tunnel.timer);
      if (tunnel.state === 'handshake' || tunnel.state === 'open') {
        const rejected = /ALERT|UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN/i.test(err.code ?? err.message);
        this.deps.logger.warn(
          { event: 'tls-client-error', origin, error: err.code ?? err.message },
          rejected ? 'the client rejected the proxy certificate: trust the proxy CA (robots-proxy ca)' : 'TLS error with the client',
        );
        tunnel.state = 'failed';
      }
      tlsSocket.destroy();
    });
    // The client went away mid-handshake. Node's tls (and undici) check the certificate only
    // once their side of the handshake is done and then close without an alert, so this is
    // how a client that does not trust the proxy CA usually looks. The socket would otherwise
    // stay half-open until the handshake timer fires.
    tlsSocket.once('end', () => {
      if (tunnel.state !== 'handshake') return;
      clearTimeout(tunnel.timer);
      tunnel.state = 'failed';
      this.deps.logger.warn(
        { event: 'tls-client-error', origin, error: 'CLOSED_DURING_HANDSHAKE' },
        'the client closed the connection during the TLS handshake: it may not trust the proxy CA (robots-proxy ca)',
      );
      tlsSocket.destroy();
    });
    tlsSocket.once('close', () => {
      clearTimeout(tunnel.timer);
      // The same rejection seen a little later, when the client's Finished got out before it
      // closed: a tunnel the client closes before its first request (mitmproxy reports this too).
      if (tunnel.state === 'open' && !this.usedTunnels.has(tlsSocket) && !this.isClosing) {
        this.deps.logger.warn(
          { event: 'tls-client-error', origin, error: 'CLOSED_BEFORE_FIRST_REQUEST' },
          'the client closed the tunnel after the TLS handshake without sending a request: it may not trust the proxy CA (robots-proxy ca)',
        );
      }
      socket.destroy();
    });
  }

  private async onInnerRequest(req: IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.usedTunnels.add(req.socket);
    const target = this.targets.get(req.socket);
    if (!target) return void res.destroy();
    const origin = originOf(target);
    const host = hostHeaderAuthority(req.headers.host, 443);
    if (host !== undefined && host !== target.authority) {
      const decision = decideWithoutRobots('misdirected', { origin, detail: `Host "${req.headers.host}" is not the tunnel's target ${target.authority}` });
      const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: this.deps.clock.nowMs() });
      res.writeHead(rendered.status, rendered.headers);
      res.end(rendered.body);
      req.resume();
      return this.audit(req, decision, this.deps.clock.nowMs(), rendered.status, null);
    }
    const raw = req.url ?? '/';
    let url: URL;
    try {
      // `origin + raw`, not `new URL(raw, origin)`: a path such as `//x/y` is a path here, not a host.
      url = new URL(raw.startsWith('/') ? origin + raw : raw);
    } catch {
      url = new URL('/', origin);
    }
    if (url.origin !== origin) {
      const decision = decideWithoutRobots('misdirected', { origin, detail: `request target ${raw.slice(0, 200)} is not on the tunnel's origin ${origin}` });
      const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: this.deps.clock.nowMs() });
      res.writeHead(rendered.status, rendered.headers);
      res.end(rendered.body);
      req.resume();
      return this.audit(req, decision, this.deps.clock.nowMs(), rendered.status, null);
    }
    await this.deps.pipeline.handle({ req, res, target: url, via: 'https-intercepted' });
  }

  /** Closes intercepted tunnels. */
  close(): void {
    this.isClosing = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }
}
