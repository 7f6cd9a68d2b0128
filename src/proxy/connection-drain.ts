/**
 * The client connections of one HTTP server: which ones carry a request now,
 * which are idle, which left HTTP (CONNECT tunnels, Upgrades). One record per
 * connection, the only per-connection bookkeeping of the listener: a drain
 * reads it (close idle keep-alive connections at once and busy ones right
 * after their response, without cutting a response short), and so does an
 * optional {@link ConnectionPolicy} (the {@link ConnectionGuard}'s caps and
 * idle timeout), which is told of each phase instead of keeping a second map,
 * second listeners and a timer per connection (issue 11: with `Connection:
 * close` every request pays them). Extension, not in RFC 9309.
 */
import type http from 'node:http';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { HeldSlot } from '../pacing/hold-list.js';

/**
 * What the tracker knows of one HTTP connection. The responses started on it and not yet
 * closed are more than one only with pipelining, so the one in progress is a field, and a Set
 * exists only for the others (no Set insert and delete per request, issue 11). The policy's
 * fields (client key, idle list links) live here too: one object per connection.
 */
export class TrackedConnection implements HeldSlot {
  readonly socket: Duplex;
  /** The key the policy counts this connection under (the client address); '' without a policy. */
  client = '';
  /** Responses started and not yet closed. */
  activeRequests = 0;
  /** True once the socket left HTTP (CONNECT, Upgrade): see {@link ConnectionTracker.detach}. */
  isDetached = false;
  /** When the current idle phase began, ms (the policy's clock); the idle list's order. */
  startedAtMs = 0;
  /** `socket.bytesRead` when the idle phase began: more by the idle timeout means a partial request head. */
  bytesReadAtIdle = 0;
  holdPrev: HeldSlot | undefined = undefined;
  holdNext: HeldSlot | undefined = undefined;
  /** True while the policy's idle list holds it. */
  isHeld = false;
  #current: http.ServerResponse | undefined = undefined;
  #more: Set<http.ServerResponse> | undefined = undefined;
  /** Listener of each of its responses' `close` (`this` is the response), made once per connection. */
  readonly onResponseClose: (this: http.ServerResponse) => void;

  constructor(socket: Duplex, tracker: ConnectionTracker) {
    this.socket = socket;
    const connection = this;
    this.onResponseClose = function (this: http.ServerResponse): void {
      if (connection.#delete(this)) tracker.responseClosed(connection);
    };
  }

  /** Counts `res` as in progress. */
  add(res: http.ServerResponse): void {
    if (this.#current === undefined) this.#current = res;
    else (this.#more ??= new Set()).add(res);
    this.activeRequests += 1;
  }

  /** Forgets `res`; false when it was not held. */
  #delete(res: http.ServerResponse): boolean {
    if (this.#current === res) this.#current = undefined;
    else if (!this.#more?.delete(res)) return false;
    this.activeRequests -= 1;
    return true;
  }

  /** Calls `fn` with each response in progress. */
  forEachResponse(fn: (res: http.ServerResponse) => void): void {
    if (this.#current !== undefined) fn(this.#current);
    this.#more?.forEach((res) => fn(res));
  }
}

/**
 * A policy over the tracked connections (the {@link ConnectionGuard}): it admits or refuses each
 * accepted socket and is told when a connection becomes idle, busy, leaves HTTP or closes. The
 * tracker calls it; it keeps no per-connection state of its own beyond the record's fields.
 */
export interface ConnectionPolicy {
  /**
   * Called once, when the tracker attaches to `server`: server-level settings and listeners.
   * `connectionOf` finds the record of a socket the tracker holds (HTTP or detached).
   */
  install(server: http.Server, connectionOf: (socket: Duplex) => TrackedConnection | undefined): void;
  /**
   * A socket was accepted, before Node's HTTP parser sees it.
   * @returns the key to count it under, or undefined when refused (the policy has answered or closed it).
   */
  admit(socket: net.Socket): string | undefined;
  /** `connection` (admitted under `connection.client`) has no request in progress: just accepted, or its last response closed. */
  idle(connection: TrackedConnection): void;
  /** A request began on `connection`, which had none in progress. */
  busy(connection: TrackedConnection): void;
  /** `connection` left HTTP (CONNECT, Upgrade): it still counts, but is not idle any more. */
  detached(connection: TrackedConnection): void;
  /** `connection` closed. */
  closed(connection: TrackedConnection): void;
  /**
   * The keep-alive timeout every response advertises (`Keep-Alive: timeout=`, whole seconds of
   * it), ms, when the policy bounds idle connections itself and has turned Node's own keep-alive
   * timer off (`server.keepAliveTimeout` 0 in {@link ConnectionPolicy.install}: Node then neither
   * arms a timer per response nor advertises one, so the tracker sets each response's value).
   * Undefined: Node's own timer and header, as the server is configured.
   */
  readonly advertisedKeepAliveMs?: number;
}

/** Ends a socket after what is written has been flushed (`destroySoon` on net and TLS sockets). */
function endSoon(socket: Duplex): void {
  const s = socket as Duplex & { destroySoon?: () => void };
  if (typeof s.destroySoon === 'function') s.destroySoon();
  else s.end();
}

/**
 * Tracks the connections of `server`; attach it before the server's own
 * `request` listener, so a response is marked before anything is written to it.
 * It takes the place of Node's `connection` listener, and calls it only for a
 * socket it keeps (admitted by the policy, not during a drain).
 *
 * During a drain (after {@link ConnectionTracker.beginDrain}):
 * - a connection with no request in progress (idle keep-alive, or open and silent) is closed at once;
 * - a response whose head is not written yet gets `Connection: close` (RFC 9112 §9.6) and its
 *   connection ends after it; a response already streaming ends its connection once it is done;
 * - a connection opened during the drain (an intercepted tunnel whose TLS handshake ends
 *   after the drain began) is closed at once;
 * - detached sockets (CONNECT, Upgrade; see {@link ConnectionTracker.detach}) are left alone
 *   until {@link ConnectionTracker.closeAll}.
 */
export class ConnectionTracker {
  readonly #connections = new Map<Duplex, TrackedConnection>();
  readonly #detached = new Map<Duplex, TrackedConnection>();
  readonly #policy: ConnectionPolicy | undefined;
  #isDraining = false;
  /** The one `close` listener of every tracked socket (`this` is the socket): no closure per connection. */
  readonly #onSocketClose: (this: Duplex) => void;

  /**
   * @param policy told of every connection's phases (caps, idle timeout); absent: every socket is kept.
   * @throws Error when `server` has no `connection` listener (not an `http.Server`).
   */
  constructor(server: http.Server, policy?: ConnectionPolicy) {
    this.#policy = policy;
    const tracker = this;
    this.#onSocketClose = function (this: Duplex): void {
      tracker.#forget(this);
    };
    const httpListeners = server.listeners('connection') as Array<(socket: Duplex) => void>;
    if (httpListeners.length === 0) throw new Error('ConnectionTracker: the server has no connection listener (is it an http.Server?)');
    server.removeAllListeners('connection');
    server.on('connection', (socket: Duplex) => {
      if (!this.#onConnection(socket)) return;
      for (const listener of httpListeners) listener.call(server, socket);
    });
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => this.#onRequest(req, res));
    policy?.install(server, (socket) => this.#connections.get(socket) ?? this.#detached.get(socket));
  }

  /**
   * Records that `socket` left HTTP (the server's `connect` or `upgrade` handler took it):
   * a drain does not treat it as an idle connection; {@link ConnectionTracker.closeAll} closes it;
   * the policy still counts it until it closes. (No `connect` listener of our own: a server
   * without one must keep refusing CONNECT.)
   */
  detach(socket: Duplex): void {
    const connection = this.#connections.get(socket);
    if (connection === undefined) return;
    this.#connections.delete(socket);
    this.#detached.set(socket, connection);
    connection.isDetached = true;
    this.#policy?.detached(connection);
  }

  /** HTTP requests whose response has not finished, over all connections. */
  get activeRequests(): number {
    let count = 0;
    for (const connection of this.#connections.values()) count += connection.activeRequests;
    return count;
  }

  /** Open connections still speaking HTTP (idle ones included). */
  get httpConnections(): number {
    return this.#connections.size;
  }

  /** Open sockets that left HTTP: CONNECT tunnels and upgraded streams. */
  get detachedSockets(): number {
    return this.#detached.size;
  }

  /** Starts the drain (see the class comment). Idempotent. */
  beginDrain(): void {
    if (this.#isDraining) return;
    this.#isDraining = true;
    for (const [socket, connection] of this.#connections) {
      if (connection.activeRequests === 0) {
        socket.destroy();
        continue;
      }
      connection.forEachResponse((res) => {
        if (!res.headersSent) res.shouldKeepAlive = false;
      });
    }
  }

  /** Destroys every connection, detached ones included, and forgets them at once. */
  closeAll(): void {
    for (const socket of [...this.#connections.keys(), ...this.#detached.keys()]) {
      socket.destroy();
      this.#forget(socket);
    }
  }

  /**
   * A response of `connection` closed (its record has already let go of it). Called by the
   * record's response listener; not for other callers.
   * @internal
   */
  responseClosed(connection: TrackedConnection): void {
    const socket = connection.socket;
    if (connection.activeRequests > 0 || connection.isDetached || socket.destroyed) return;
    // The server is closing it (the response's `Connection: close`): Node ended it after the response
    // was handed to the kernel, and destroys it once the FIN is sent, whatever the client does. Not an
    // idle phase for the policy to bound (a list insert and removal per close request, issue 11).
    if (socket.writableEnded) return;
    // A response that went out with keep-alive before the drain: its connection ends now.
    if (this.#isDraining) endSoon(socket);
    else this.#policy?.idle(connection);
  }

  /** A socket was accepted: true when it is kept (Node's HTTP listener may have it). */
  #onConnection(socket: Duplex): boolean {
    if (this.#isDraining) {
      socket.destroy();
      return false;
    }
    const client = this.#policy === undefined ? '' : this.#policy.admit(socket as net.Socket);
    if (client === undefined) return false;
    const connection = new TrackedConnection(socket, this);
    connection.client = client;
    this.#connections.set(socket, connection);
    // `close` is emitted once: `on`, not `once` (no wrapper per socket).
    socket.on('close', this.#onSocketClose);
    this.#policy?.idle(connection);
    return true;
  }

  #onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const connection = this.#connections.get(req.socket as Duplex);
    if (connection === undefined) return;
    connection.add(res);
    if (this.#isDraining) res.shouldKeepAlive = false;
    // `close` is emitted once per response: `on`, not `once`.
    res.on('close', connection.onResponseClose);
    // Node copied its `keepAliveTimeout` (0: the policy's own bound replaces its timer) into the response
    // before this event; the header it writes from it must still name the real timeout.
    const advertised = this.#policy?.advertisedKeepAliveMs;
    if (advertised !== undefined) (res as http.ServerResponse & { _keepAliveTimeout: number })._keepAliveTimeout = advertised;
    if (connection.activeRequests === 1) this.#policy?.busy(connection);
  }

  #forget(socket: Duplex): void {
    const connection = this.#connections.get(socket) ?? this.#detached.get(socket);
    if (connection === undefined) return;
    this.#connections.delete(socket);
    this.#detached.delete(socket);
    this.#policy?.closed(connection);
  }
}
