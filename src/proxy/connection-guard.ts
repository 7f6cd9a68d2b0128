/**
 * Bounds on the proxy listener's client connections: a global cap, a cap per
 * client address, and one idle timeout for every moment a connection carries
 * no request. Extension, not in RFC 9309.
 *
 * Why one idle timer of our own: Node bounds an idle connection with two
 * different mechanisms. After a response, `keepAliveTimeout` (a socket
 * inactivity timer, 5 s). Before the first request, only `headersTimeout`
 * (30 s), which Node checks by sweeping every `connectionsCheckingInterval`
 * (30 s): a connection that never sends a byte lives 30 to 60 s (the 49 s
 * seen in issue 7), and one that trickles header bytes as long. This guard
 * arms its own timer whenever a connection has no request in progress (from
 * accept to a complete request head, from the end of a response to the next
 * head), so every idle phase has the same, exact bound.
 *
 * Caps are checked when a connection is accepted, before Node's HTTP parser
 * sees it, so a refused connection never reaches the pipeline. CONNECT and
 * Upgrade sockets stay counted until they close (a tunnel is a connection).
 */
import type http from 'node:http';
import type net from 'node:net';
import type { ConnectionLimitName, LimitEvent } from '../audit/limit-events.js';
import { MAX_ANSWERED_REFUSALS } from './connection-limits.js';
import { nextRequestId, REQUEST_ID_HEADER } from './request-id.js';

/** Options of {@link ConnectionGuard}. */
export interface ConnectionGuardOptions {
  /** Connections open at once (integer >= 1); one more is answered 503 and closed. */
  maxConnections: number;
  /** Connections open at once from one client address (integer >= 1); one more is answered 429 and closed. */
  maxConnectionsPerClient: number;
  /** Longest time a connection may have no request in progress, ms (> 0). */
  idleTimeoutMs: number;
  /** Told of every limit hit (refusal, idle close); counts and logs them. */
  onLimit?: (event: LimitEvent) => void;
  /** How long a refused connection may take to read its answer before it is closed, ms. @default 1000 */
  refusalLingerMs?: number;
}

/** Figures of the guard, for metrics. */
export interface ConnectionStats {
  /** Admitted connections open now. */
  open: number;
  /** Distinct client addresses among them. */
  clients: number;
}

/** One admitted connection. */
interface ConnectionState {
  readonly client: string;
  /** Requests whose response has not ended yet. */
  activeRequests: number;
  /** True once the socket left HTTP (CONNECT, Upgrade): its own handler bounds it from then on. */
  isHandedOff: boolean;
  /**
   * The connection's one idle timer, made at accept and re-armed (`refresh()`) at the start of
   * every idle phase; it may fire during a request, which it then ignores. Undefined once
   * cleared (closed, handed off): it is not re-armed then.
   */
  idleTimer: NodeJS.Timeout | undefined;
  /** `socket.bytesRead` when the idle phase began: more by the timeout means a partial request head. */
  bytesReadAtIdle: number;
  /** Listener of each response's `close`, made once per connection: a response ended, maybe the connection is idle again. */
  readonly onResponseClose: () => void;
}

/**
 * The client address a per-client cap counts: the peer address, with an IPv4-mapped IPv6
 * address (`::ffff:1.2.3.4`) written as IPv4 so a dual-stack listener counts one client once.
 * Pure; never throws.
 */
export function clientKeyOf(remoteAddress: string | undefined): string {
  const address = remoteAddress ?? '';
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address) ? address.slice(7) : address;
}

/**
 * The raw answer to a refused connection: status, Retry-After, Connection: close, and a
 * request id (header and last body line) the client can quote; no request was read, so
 * the shared renderer's Decision does not apply.
 */
function refusalResponse(status: 503 | 429 | 408, retryAfterSeconds: number | undefined, text: string, requestId: string): string {
  const reason = status === 503 ? 'Service Unavailable' : status === 429 ? 'Too Many Requests' : 'Request Timeout';
  const body = `${text}request id: ${requestId}\ntime: ${new Date().toISOString()}\n`;
  const head = [
    `HTTP/1.1 ${status} ${reason}`,
    'content-type: text/plain; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'cache-control: no-store',
    `${REQUEST_ID_HEADER}: ${requestId}`,
    ...(retryAfterSeconds !== undefined ? [`retry-after: ${retryAfterSeconds}`] : []),
    'connection: close',
  ];
  return `${head.join('\r\n')}\r\n\r\n${body}`;
}

/**
 * Admits, counts and times out the connections of one `http.Server` (lifecycle: {@link attach}
 * once, before the server listens; sockets are released as they close).
 *
 * A refused connection is answered at once, before its request is read: `503` for the global
 * cap, `429` for the per-client cap, each with `Retry-After` (the idle timeout, in seconds: an
 * idle connection frees its place within it) and `Connection: close`, then closed once the
 * client has read it (at most `refusalLingerMs`). When {@link MAX_ANSWERED_REFUSALS} refusals
 * are already waiting, it is closed without an answer. Every refusal is reported (`onLimit`).
 * An idle connection is closed without an answer (RFC 9112 §9.6 allows it), or with `408` when
 * part of a request head had arrived.
 */
export class ConnectionGuard {
  readonly #options: ConnectionGuardOptions;
  readonly #connections = new Map<net.Socket, ConnectionState>();
  readonly #perClient = new Map<string, number>();
  #answeringRefusals = 0;

  /** @throws RangeError when a cap is not an integer >= 1 or the idle timeout is not > 0. */
  constructor(options: ConnectionGuardOptions) {
    for (const name of ['maxConnections', 'maxConnectionsPerClient'] as const) {
      if (!Number.isInteger(options[name]) || options[name] < 1) throw new RangeError(`${name} must be an integer >= 1, got ${options[name]}`);
    }
    if (!(options.idleTimeoutMs > 0)) throw new RangeError(`idleTimeoutMs must be > 0, got ${options.idleTimeoutMs}`);
    this.#options = options;
  }

  /** The caps in force. */
  get limits(): { maxConnections: number; maxConnectionsPerClient: number; idleTimeoutMs: number } {
    const { maxConnections, maxConnectionsPerClient, idleTimeoutMs } = this.#options;
    return { maxConnections, maxConnectionsPerClient, idleTimeoutMs };
  }

  /** Connections open now. Never throws. */
  stats(): ConnectionStats {
    return { open: this.#connections.size, clients: this.#perClient.size };
  }

  /**
   * Puts the guard in front of `server`'s HTTP handling: Node's own `connection` listener (which
   * attaches the HTTP parser) runs only for admitted sockets. Also sets `keepAliveTimeout` to the
   * idle timeout (so the `Keep-Alive: timeout` Node advertises is the real one) and a hard
   * `maxConnections` backstop (admitted plus refusals being answered).
   * @throws Error when `server` has no `connection` listener (not an `http.Server`).
   */
  attach(server: http.Server): void {
    const httpListeners = server.listeners('connection') as Array<(socket: net.Socket) => void>;
    if (httpListeners.length === 0) throw new Error('ConnectionGuard.attach: the server has no connection listener (is it an http.Server?)');
    server.removeAllListeners('connection');
    server.on('connection', (socket: net.Socket) => {
      if (!this.#admit(socket)) return;
      for (const listener of httpListeners) listener.call(server, socket);
    });
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => this.#onRequest(req.socket as net.Socket, res));
    server.on('connect', (req: http.IncomingMessage) => this.#onHandOff(req.socket as net.Socket));
    server.on('upgrade', (req: http.IncomingMessage) => this.#onHandOff(req.socket as net.Socket));
    // Node's keep-alive timer fires at the same time as ours: one handler, one count. With a
    // listener here Node no longer destroys the socket itself; #closeIdle does.
    server.on('timeout', (socket: net.Socket) => this.#closeIdle(socket));
    server.keepAliveTimeout = this.#options.idleTimeoutMs;
    // The backstop: past it Node closes a socket before any listener sees it (counted here too).
    server.maxConnections = this.#options.maxConnections + MAX_ANSWERED_REFUSALS;
    server.on('drop', (data?: { remoteAddress?: string }) => {
      const client = clientKeyOf(data?.remoteAddress);
      const openFromClient = this.#perClient.get(client) ?? 0;
      this.#options.onLimit?.({ kind: 'connection-refused', limit: 'max-connections', client, cap: this.#options.maxConnections, open: this.#connections.size, openFromClient, answered: false });
    });
  }

  #admit(socket: net.Socket): boolean {
    const client = clientKeyOf(socket.remoteAddress);
    if (socket.remoteAddress === undefined) {
      // Closed before it was accepted: nothing to count or answer.
      socket.destroy();
      return false;
    }
    const openFromClient = this.#perClient.get(client) ?? 0;
    if (this.#connections.size >= this.#options.maxConnections) {
      this.#refuse(socket, 'max-connections', client, openFromClient);
      return false;
    }
    if (openFromClient >= this.#options.maxConnectionsPerClient) {
      this.#refuse(socket, 'max-connections-per-client', client, openFromClient);
      return false;
    }
    const state: ConnectionState = {
      client,
      activeRequests: 0,
      isHandedOff: false,
      idleTimer: undefined,
      bytesReadAtIdle: 0,
      // 'close' comes after 'finish' for a completed response, and alone for an aborted one.
      onResponseClose: () => {
        state.activeRequests -= 1;
        if (state.activeRequests === 0 && !state.isHandedOff && !socket.destroyed) this.#armIdle(socket, state);
      },
    };
    this.#connections.set(socket, state);
    this.#perClient.set(client, openFromClient + 1);
    socket.once('close', () => this.#forget(socket, state));
    state.idleTimer = setTimeout(() => this.#closeIdle(socket), this.#options.idleTimeoutMs);
    state.idleTimer.unref();
    state.bytesReadAtIdle = socket.bytesRead;
    return true;
  }

  #forget(socket: net.Socket, state: ConnectionState): void {
    clearTimeout(state.idleTimer);
    state.idleTimer = undefined;
    this.#connections.delete(socket);
    const left = (this.#perClient.get(state.client) ?? 1) - 1;
    if (left > 0) this.#perClient.set(state.client, left);
    else this.#perClient.delete(state.client);
  }

  #refuse(socket: net.Socket, limit: ConnectionLimitName, client: string, openFromClient: number): void {
    // Node's HTTP layer never sees this socket: its errors (a reset while we answer) are ours to swallow.
    socket.on('error', () => socket.destroy());
    const answered = this.#answeringRefusals < MAX_ANSWERED_REFUSALS;
    const cap = limit === 'max-connections' ? this.#options.maxConnections : this.#options.maxConnectionsPerClient;
    const requestId = answered ? nextRequestId() : undefined;
    if (requestId !== undefined) {
      this.#answeringRefusals += 1;
      const retryAfterSeconds = Math.max(1, Math.ceil(this.#options.idleTimeoutMs / 1000));
      const body =
        limit === 'max-connections'
          ? `robots-proxy: too many connections (clients.maxConnections = ${cap}); retry after ${retryAfterSeconds} s\n`
          : `robots-proxy: too many connections from ${client} (clients.maxConnectionsPerClient = ${cap}); reuse or close idle connections, or retry after ${retryAfterSeconds} s\n`;
      socket.end(refusalResponse(limit === 'max-connections' ? 503 : 429, retryAfterSeconds, body, requestId));
      // Read and drop what the client sends, so our close is a FIN after the answer, not a reset that loses it.
      socket.resume();
      const timer = setTimeout(() => socket.destroy(), this.#options.refusalLingerMs ?? 1000);
      timer.unref();
      socket.once('close', () => {
        clearTimeout(timer);
        this.#answeringRefusals -= 1;
      });
    } else {
      socket.destroy();
    }
    this.#options.onLimit?.({ kind: 'connection-refused', limit, client, cap, open: this.#connections.size, openFromClient, answered, ...(requestId !== undefined ? { requestId } : {}) });
  }

  /**
   * An idle phase begins: the timer runs `idleTimeoutMs` from now. The same timer object each
   * time (`refresh()`: no allocation, no clear), unless it was cleared for good.
   */
  #armIdle(socket: net.Socket, state: ConnectionState): void {
    state.bytesReadAtIdle = socket.bytesRead;
    state.idleTimer?.refresh();
  }

  #onRequest(socket: net.Socket, res: http.ServerResponse): void {
    const state = this.#connections.get(socket);
    if (!state) return;
    // The idle timer keeps running: if it fires now, #closeIdle sees the request and does nothing;
    // the end of the response re-arms it (cheaper than a clear and a new timer per request).
    state.activeRequests += 1;
    res.once('close', state.onResponseClose);
  }

  #onHandOff(socket: net.Socket): void {
    const state = this.#connections.get(socket);
    if (!state) return;
    state.isHandedOff = true;
    clearTimeout(state.idleTimer);
    state.idleTimer = undefined;
  }

  /** Closes `socket` if it is still idle: 408 when part of a request head arrived, else a plain close. */
  #closeIdle(socket: net.Socket): void {
    const state = this.#connections.get(socket);
    if (!state || state.activeRequests > 0 || state.isHandedOff || socket.destroyed) return;
    // Node's keep-alive timeout can get here first: our timer must not fire for it again.
    clearTimeout(state.idleTimer);
    state.idleTimer = undefined;
    const partialRequest = socket.bytesRead > state.bytesReadAtIdle;
    const requestId = partialRequest && socket.writable ? nextRequestId() : undefined;
    if (requestId !== undefined) {
      // No more parsing: a request completed now would be answered on a closing socket.
      socket.pause();
      const body = `robots-proxy: the request head did not arrive within clients.idleTimeout (${this.#options.idleTimeoutMs} ms)\n`;
      socket.end(refusalResponse(408, undefined, body, requestId), () => socket.destroy());
    } else {
      socket.destroy();
    }
    this.#options.onLimit?.({ kind: 'client-idle-timeout', client: state.client, partialRequest, ...(requestId !== undefined ? { requestId } : {}) });
  }
}
