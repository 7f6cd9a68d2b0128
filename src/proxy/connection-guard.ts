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
 * bounds every phase in which a connection has no request in progress (from
 * accept to a complete request head, from the end of a response to the next
 * head) itself, so every idle phase has the same, exact bound.
 *
 * Caps are checked when a connection is accepted, before Node's HTTP parser
 * sees it, so a refused connection never reaches the pipeline. CONNECT and
 * Upgrade sockets stay counted until they close (a tunnel is a connection).
 */
import type http from 'node:http';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionLimitName, LimitEvent } from '../audit/limit-events.js';
import { systemClock, type Clock } from '../clock.js';
import { HoldList } from '../pacing/hold-list.js';
import { MAX_ANSWERED_REFUSALS } from './connection-limits.js';
import type { ConnectionPolicy, TrackedConnection } from './connection-drain.js';
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
  /** The idle list's clock (timers and now). @default systemClock */
  clock?: Clock;
}

/** Figures of the guard, for metrics. */
export interface ConnectionStats {
  /** Admitted connections open now. */
  open: number;
  /** Distinct client addresses among them. */
  clients: number;
}

/**
 * The client address a per-client cap counts: the peer address, with an IPv4-mapped IPv6
 * address (`::ffff:1.2.3.4`) written as IPv4 so a dual-stack listener counts one client once.
 * Pure; never throws.
 */
export function clientKeyOf(remoteAddress: string | undefined): string {
  const address = remoteAddress ?? '';
  // Most addresses are plain IPv4: no regular expression for them (once per connection).
  if (address.charCodeAt(0) !== 58 /* ':' */) return address;
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
 * Admits, counts and times out the connections of one `http.Server`: the {@link ConnectionPolicy}
 * of its {@link ConnectionTracker} (`new ConnectionTracker(server, guard)`, before the server
 * listens), which holds the one record per connection and tells the guard of each phase.
 *
 * A refused connection is answered at once, before its request is read: `503` for the global
 * cap, `429` for the per-client cap, each with `Retry-After` (the idle timeout, in seconds: an
 * idle connection frees its place within it) and `Connection: close`, then closed once the
 * client has read it (at most `refusalLingerMs`). When {@link MAX_ANSWERED_REFUSALS} refusals
 * are already waiting, it is closed without an answer. Every refusal is reported (`onLimit`).
 * An idle connection is closed without an answer (RFC 9112 §9.6 allows it), or with `408` when
 * part of a request head had arrived.
 *
 * The idle timeout is one list for every connection (`hold-list.ts`, one timer): every idle
 * phase lasts the same `idleTimeoutMs`, so they expire in the order they began; a connection
 * enters the list when it becomes idle and leaves it when a request begins, in O(1), with no
 * timer of its own (issue 11: a `setTimeout` and a `clearTimeout` per connection before).
 */
export class ConnectionGuard implements ConnectionPolicy {
  readonly #options: ConnectionGuardOptions;
  readonly #clock: Clock;
  readonly #perClient = new Map<string, number>();
  /** Idle connections, oldest idle phase first. */
  readonly #idle: HoldList<TrackedConnection>;
  /** Admitted connections open now (detached ones included). */
  #open = 0;
  #answeringRefusals = 0;
  #isInstalled = false;

  /** @throws RangeError when a cap is not an integer >= 1 or the idle timeout is not > 0. */
  constructor(options: ConnectionGuardOptions) {
    for (const name of ['maxConnections', 'maxConnectionsPerClient'] as const) {
      if (!Number.isInteger(options[name]) || options[name] < 1) throw new RangeError(`${name} must be an integer >= 1, got ${options[name]}`);
    }
    if (!(options.idleTimeoutMs > 0)) throw new RangeError(`idleTimeoutMs must be > 0, got ${options.idleTimeoutMs}`);
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#idle = new HoldList<TrackedConnection>(this.#clock, options.idleTimeoutMs, (connection) => this.#closeIdle(connection));
  }

  /** The caps in force. */
  get limits(): { maxConnections: number; maxConnectionsPerClient: number; idleTimeoutMs: number } {
    const { maxConnections, maxConnectionsPerClient, idleTimeoutMs } = this.#options;
    return { maxConnections, maxConnectionsPerClient, idleTimeoutMs };
  }

  /** Connections open now. Never throws. */
  stats(): ConnectionStats {
    return { open: this.#open, clients: this.#perClient.size };
  }

  /**
   * The `Keep-Alive: timeout` every response advertises, ms: the idle timeout (see
   * {@link ConnectionPolicy.advertisedKeepAliveMs}; the tracker writes it into each response).
   */
  get advertisedKeepAliveMs(): number {
    return this.#options.idleTimeoutMs;
  }

  /**
   * Called by the tracker: turns Node's keep-alive timer off (`keepAliveTimeout` 0: this guard's
   * idle list bounds the same phase, and Node's timer cost a `Timeout`, a bound function and a
   * timer list insert and removal per response, issue 11; the tracker still has every response
   * advertise the idle timeout, {@link ConnectionGuard.advertisedKeepAliveMs}) and sets a hard
   * `maxConnections` backstop (admitted plus refusals being answered).
   * @throws Error when the guard is already installed on a server (it bounds one).
   */
  install(server: http.Server, connectionOf: (socket: Duplex) => TrackedConnection | undefined): void {
    if (this.#isInstalled) throw new Error('ConnectionGuard.install: the guard already bounds a server');
    this.#isInstalled = true;
    // Should Node time a socket out itself all the same (`server.timeout` set): one handler, one
    // count. With a listener here Node no longer destroys the socket itself; #closeIdle does.
    server.on('timeout', (socket: net.Socket) => {
      const connection = connectionOf(socket);
      if (connection !== undefined) this.#closeIdle(connection);
    });
    server.keepAliveTimeout = 0;
    // The backstop: past it Node closes a socket before any listener sees it (counted here too).
    server.maxConnections = this.#options.maxConnections + MAX_ANSWERED_REFUSALS;
    server.on('drop', (data?: { remoteAddress?: string }) => {
      const client = clientKeyOf(data?.remoteAddress);
      const openFromClient = this.#perClient.get(client) ?? 0;
      this.#options.onLimit?.({ kind: 'connection-refused', limit: 'max-connections', client, cap: this.#options.maxConnections, open: this.#open, openFromClient, answered: false });
    });
  }

  /** Counts `socket` under its client address, or refuses it (answered here). */
  admit(socket: net.Socket): string | undefined {
    const address = socket.remoteAddress;
    if (address === undefined) {
      // Closed before it was accepted: nothing to count or answer.
      socket.destroy();
      return undefined;
    }
    const client = clientKeyOf(address);
    const openFromClient = this.#perClient.get(client) ?? 0;
    if (this.#open >= this.#options.maxConnections) {
      this.#refuse(socket, 'max-connections', client, openFromClient);
      return undefined;
    }
    if (openFromClient >= this.#options.maxConnectionsPerClient) {
      this.#refuse(socket, 'max-connections-per-client', client, openFromClient);
      return undefined;
    }
    this.#open += 1;
    this.#perClient.set(client, openFromClient + 1);
    return client;
  }

  /** An idle phase begins: the connection is closed if it is still idle `idleTimeoutMs` from now. */
  idle(connection: TrackedConnection): void {
    this.#idle.remove(connection);
    connection.startedAtMs = this.#clock.nowMs();
    connection.bytesReadAtIdle = (connection.socket as net.Socket).bytesRead;
    this.#idle.add(connection);
  }

  /** A request began: the connection is not idle. */
  busy(connection: TrackedConnection): void {
    this.#idle.remove(connection);
  }

  /** The socket left HTTP: its own handler bounds it from now on; it still counts. */
  detached(connection: TrackedConnection): void {
    this.#idle.remove(connection);
  }

  /**
   * Keeps one place in both caps for `remoteAddress`'s client after its connection closed, while
   * an exchange of that connection runs on (forwarder.ts: a client that leaves before the origin's
   * head leaves the upstream request running until that head or `upstream.timeout`). Each place
   * budgets a client socket and its upstream socket (connection-limits.ts,
   * DESCRIPTORS_PER_CONNECTION); without it, a client that opened, sent and left again and again
   * kept any number of upstream sockets open under `clients.maxConnections` (40 under a cap of 4,
   * review30), bounded only by origins x `pacing.maxConcurrency`. A hold may take the count past
   * a cap; new connections are refused until holds end. Returns the release (idempotent).
   * Never throws.
   */
  holdPlace(remoteAddress: string | undefined): () => void {
    if (remoteAddress === undefined) return () => undefined;
    const client = clientKeyOf(remoteAddress);
    this.#open += 1;
    this.#perClient.set(client, (this.#perClient.get(client) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#open -= 1;
      const left = (this.#perClient.get(client) ?? 1) - 1;
      if (left > 0) this.#perClient.set(client, left);
      else this.#perClient.delete(client);
    };
  }

  /** The socket closed: it no longer counts. */
  closed(connection: TrackedConnection): void {
    this.#idle.remove(connection);
    this.#open -= 1;
    const left = (this.#perClient.get(connection.client) ?? 1) - 1;
    if (left > 0) this.#perClient.set(connection.client, left);
    else this.#perClient.delete(connection.client);
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
    this.#options.onLimit?.({ kind: 'connection-refused', limit, client, cap, open: this.#open, openFromClient, answered, ...(requestId !== undefined ? { requestId } : {}) });
  }

  /** Closes the connection if it is still idle: 408 when part of a request head arrived, else a plain close. */
  #closeIdle(connection: TrackedConnection): void {
    const socket = connection.socket as net.Socket;
    if (connection.activeRequests > 0 || connection.isDetached || socket.destroyed) return;
    // Node's keep-alive timeout can get here first: the list must not fire for it again.
    this.#idle.remove(connection);
    const partialRequest = socket.bytesRead > connection.bytesReadAtIdle;
    const requestId = partialRequest && socket.writable ? nextRequestId() : undefined;
    if (requestId !== undefined) {
      // No more parsing: a request completed now would be answered on a closing socket.
      socket.pause();
      const body = `robots-proxy: the request head did not arrive within clients.idleTimeout (${this.#options.idleTimeoutMs} ms)\n`;
      socket.end(refusalResponse(408, undefined, body, requestId), () => socket.destroy());
    } else {
      socket.destroy();
    }
    this.#options.onLimit?.({ kind: 'client-idle-timeout', client: connection.client, partialRequest, ...(requestId !== undefined ? { requestId } : {}) });
  }
}
