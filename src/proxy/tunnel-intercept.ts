/**
 * Intercepted CONNECT tunnels (`https.mode: intercept`), once the CONNECT has
 * passed every check that can be made before TLS (see connect.ts). The proxy
 * answers 200 and reads the first bytes the client sends:
 * - a TLS handshake record: sign a leaf certificate for the CONNECT host
 *   (only now, so refused and plain-text tunnels cost no signature), terminate
 *   TLS, and serve the requests inside as origin `https://host:port`;
 * - anything else: the client speaks plain HTTP through the tunnel (undici's
 *   `ProxyAgent`, `curl -p` for `http://` URLs); serve it as origin
 *   `http://host:port`.
 * Either way every request inside goes to the {@link TunnelRequestServer}.
 */
import type net from 'node:net';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { guardConnection } from './error-boundary.js';
import type { LeafCertificateIssuer } from './tls/leaf-certificates.js';
import { alpnRefusalOf, chooseTunnelProtocol, type AlpnRefusal } from './tls/tunnel-alpn.js';
import { tunnelOrigin, type TunnelTarget } from './tunnel-target.js';
import type { TunnelRequestServer, TunnelSession } from './tunnel-requests.js';
import type { AdmittedClient } from '../access/access-control.js';
import { REQUEST_ID_HEADER } from './request-id.js';
import { LogThrottle } from '../audit/log-throttle.js';

/** Collaborators of {@link TunnelInterceptor}. */
export interface InterceptDeps {
  issuer: LeafCertificateIssuer;
  requests: TunnelRequestServer;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /**
   * Time from the 200 answer to a complete TLS handshake, or (plain HTTP) to
   * the first complete request head, ms.
   */
  handshakeTimeoutMs: number;
  /** A tunnel with no byte in either direction for this long is closed, ms (`https.idleTimeout`). */
  idleTimeoutMs: number;
}

/** First byte of a TLS handshake record (RFC 8446 §5.1, ContentType handshake). */
const TLS_HANDSHAKE_RECORD = 0x16;

/**
 * One intercepted tunnel. `state`: `handshake` from the 200 until the TLS
 * handshake completes (or, plain HTTP, the first request head arrives), then
 * `open`; `failed` after a TLS error, `closed-by-proxy` after a timeout. Log
 * lines depend on it, so each failure is reported once.
 */
interface InterceptedTunnel {
  session: TunnelSession;
  raw: Duplex;
  tls: tls.TLSSocket | undefined;
  state: 'handshake' | 'open' | 'failed' | 'closed-by-proxy';
  /** From the 200 answer to the end of the client's handshake (or first request head). */
  timer: NodeJS.Timeout | undefined;
  /** Set when the client's ALPN offer had no HTTP/1 protocol: why the handshake fails. */
  alpnRefusal?: AlpnRefusal;
}

/** Owns intercepted tunnels (lifecycle: `close()`). */
export class TunnelInterceptor {
  private readonly sockets = new Set<Duplex>();
  private isClosing = false;
  /** `https.idleTimeout` in force, ms (a reload changes it for tunnels opened afterwards). */
  private idleTimeoutMs: number;
  /** At most one `tls-client-error` line per error per 10 s: any client can abort handshakes in a loop. */
  private readonly clientErrorLog = new LogThrottle({ nowMs: () => performance.now() });
  /** At most one `tls-handshake-timeout` line per kind per 10 s: any client can open tunnels and go silent. */
  private readonly handshakeTimeoutLog = new LogThrottle({ nowMs: () => performance.now() });

  constructor(private readonly deps: InterceptDeps) {
    this.idleTimeoutMs = deps.idleTimeoutMs;
  }

  /** Applies a reloaded `https.idleTimeout` (ms) to the tunnels opened from now on. */
  setIdleTimeoutMs(idleTimeoutMs: number): void {
    this.idleTimeoutMs = idleTimeoutMs;
  }

  /**
   * Answers 200 on `socket` (a CONNECT that passed its checks) and serves the
   * tunnel: TLS or plain HTTP, as the first bytes say. `head`: bytes that came
   * after the CONNECT head; `requestId`: the CONNECT's, sent in the 200. Never throws.
   */
  open(socket: Duplex, head: Buffer, target: TunnelTarget, requestId: string, admitted?: AdmittedClient): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.write(`HTTP/1.1 200 Connection Established\r\n${REQUEST_ID_HEADER}: ${requestId}\r\n\r\n`);
    const tunnel: InterceptedTunnel = { session: { target, scheme: 'https', requests: 0, ...(admitted ? { admitted } : {}) }, raw: socket, tls: undefined, state: 'handshake', timer: undefined };
    // From the 200, not from the first byte: a client that opens a tunnel and never sends
    // anything must not hold the socket forever.
    tunnel.timer = setTimeout(() => this.onHandshakeTimeout(tunnel), this.deps.handshakeTimeoutMs);
    tunnel.timer.unref();
    socket.once('close', () => clearTimeout(tunnel.timer));
    if (head.length > 0) socket.unshift(head);
    socket.once('data', (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      guardConnection(this.deps.logger, 'tunnel-open', socket, () =>
        first[0] === TLS_HANDSHAKE_RECORD ? this.startTls(tunnel) : this.startPlainHttp(tunnel),
      );
    });
  }

  /** The client did not finish its TLS handshake (or never sent a byte, or no request head) in time: close the tunnel. */
  private onHandshakeTimeout(tunnel: InterceptedTunnel): void {
    if (tunnel.state === 'handshake') {
      const started = tunnel.tls !== undefined || tunnel.session.scheme === 'http';
      // One line per kind (scheme, whether the client sent anything) per interval, with the count of those not written.
      const suppressed = this.handshakeTimeoutLog.admit(`${tunnel.session.scheme}:${started}`);
      if (suppressed !== undefined) {
        this.deps.logger.warn(
          { event: 'tls-handshake-timeout', origin: tunnelOrigin(tunnel.session.target, tunnel.session.scheme), started, suppressed },
          tunnel.session.scheme === 'http' ? 'no complete request head in the plain-HTTP tunnel in time' : 'TLS handshake with the client timed out',
        );
      }
    }
    tunnel.state = 'closed-by-proxy';
    (tunnel.tls ?? tunnel.raw).destroy();
    tunnel.raw.destroy();
  }

  /** Closes the tunnel after `idleTimeoutMs` without a byte either way. */
  private closeWhenIdle(tunnel: InterceptedTunnel, socket: Duplex & Pick<net.Socket, 'setTimeout'>): void {
    socket.setTimeout(this.idleTimeoutMs, () => {
      tunnel.state = 'closed-by-proxy';
      socket.destroy();
      tunnel.raw.destroy();
    });
  }

  /** Plain HTTP inside the tunnel: the requests are for `http://host:port` of the CONNECT. */
  private startPlainHttp(tunnel: InterceptedTunnel): void {
    const socket = tunnel.raw as net.Socket;
    if (socket.destroyed) return;
    tunnel.session.scheme = 'http';
    // The handshake timer now bounds the wait for the first complete request head
    // (the server inside tunnels never listens, so Node's headersTimeout does not run).
    tunnel.session.onRequestHead = () => {
      if (tunnel.state !== 'handshake') return;
      clearTimeout(tunnel.timer);
      tunnel.state = 'open';
    };
    this.closeWhenIdle(tunnel, socket);
    this.deps.requests.serve(socket, tunnel.session);
    socket.resume();
  }

  /** TLS inside the tunnel: sign (first use of the host only), terminate, serve `https://host:port`. */
  private async startTls(tunnel: InterceptedTunnel): Promise<void> {
    const { issuer, logger } = this.deps;
    const { target } = tunnel.session;
    const origin = tunnelOrigin(target, 'https');
    let secureContext: tls.SecureContext;
    try {
      secureContext = await issuer.getSecureContext(target.hostname);
    } catch (err) {
      logger.warn({ event: 'tls-leaf-error', host: target.hostname, error: (err as Error).message }, 'could not sign a certificate for the CONNECT host');
      tunnel.state = 'failed';
      return void tunnel.raw.destroy();
    }
    if (tunnel.raw.destroyed || tunnel.state !== 'handshake') return;
    const tlsSocket = new tls.TLSSocket(tunnel.raw as net.Socket, {
      isServer: true,
      secureContext,
      SNICallback: issuer.createSniCallback(),
      // HTTP/1.1, or HTTP/1.0 when that is all the client offers; HTTP/2 only is refused, saying so (tunnel-alpn.ts).
      ALPNCallback: ({ protocols }) => {
        const chosen = chooseTunnelProtocol(protocols);
        if (chosen === undefined) tunnel.alpnRefusal = alpnRefusalOf(protocols);
        return chosen;
      },
    });
    tunnel.tls = tlsSocket;
    tlsSocket.once('secure', () => {
      clearTimeout(tunnel.timer);
      tunnel.state = 'open';
      this.closeWhenIdle(tunnel, tlsSocket);
      this.deps.requests.serve(tlsSocket, tunnel.session);
    });
    tlsSocket.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(tunnel.timer);
      if (tunnel.alpnRefusal !== undefined && tunnel.state === 'handshake') {
        this.warnClientError(origin, tunnel.alpnRefusal.code, tunnel.alpnRefusal.message);
        tunnel.state = 'failed';
      } else if (tunnel.state === 'handshake' || tunnel.state === 'open') {
        const rejected = /ALERT|UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN/i.test(err.code ?? err.message);
        this.warnClientError(origin, err.code ?? err.message, rejected ? 'the client rejected the proxy certificate: trust the proxy CA (robots-proxy ca)' : 'TLS error with the client');
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
      this.warnClientError(origin, 'CLOSED_DURING_HANDSHAKE', 'the client closed the connection during the TLS handshake: it may not trust the proxy CA (robots-proxy ca)');
      tlsSocket.destroy();
    });
    tlsSocket.once('close', () => {
      clearTimeout(tunnel.timer);
      // The same rejection seen a little later, when the client's Finished got out before it
      // closed: a tunnel the client closes before its first request (mitmproxy reports this too).
      if (tunnel.state === 'open' && tunnel.session.requests === 0 && !this.isClosing) {
        this.warnClientError(
          origin,
          'CLOSED_BEFORE_FIRST_REQUEST',
          'the client closed the tunnel after the TLS handshake without sending a request: it may not trust the proxy CA (robots-proxy ca)',
        );
      }
      tunnel.raw.destroy();
    });
  }

  /**
   * Logs a `tls-client-error` at warn, at most once per error per interval; the line says how
   * many of that error were not logged since the previous one (`suppressed`).
   */
  private warnClientError(origin: string, error: string, message: string): void {
    const suppressed = this.clientErrorLog.admit(error.slice(0, 128));
    if (suppressed === undefined) return;
    this.deps.logger.warn({ event: 'tls-client-error', origin, error, suppressed }, message);
  }

  /** A drain began: the tunnels the drain closes are not reported as client TLS failures. */
  beginDrain(): void {
    this.isClosing = true;
  }

  /** Closes every intercepted tunnel. */
  close(): void {
    this.isClosing = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }
}
