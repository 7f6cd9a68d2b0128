/**
 * The client connections of one HTTP server, seen from a drain: which ones
 * carry a request now, which are idle, which left HTTP (CONNECT tunnels,
 * Upgrades). Lets a stop close idle keep-alive connections at once and busy
 * ones right after their response, without cutting a response short.
 * Extension, not in RFC 9309.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * The responses started on one connection and not yet closed: more than one only with
 * pipelining, so the one in progress is a field, and a Set exists only for the others (no
 * Set insert and delete per request, issue 11).
 */
class OpenResponses {
  #current: http.ServerResponse | undefined;
  #more: Set<http.ServerResponse> | undefined;
  /** How many there are. */
  size = 0;

  add(res: http.ServerResponse): void {
    if (this.#current === undefined) this.#current = res;
    else (this.#more ??= new Set()).add(res);
    this.size += 1;
  }

  /** Forgets `res`; one not held is ignored. */
  delete(res: http.ServerResponse): void {
    if (this.#current === res) this.#current = undefined;
    else if (!this.#more?.delete(res)) return;
    this.size -= 1;
  }

  /** Calls `fn` with each one. */
  forEach(fn: (res: http.ServerResponse) => void): void {
    if (this.#current !== undefined) fn(this.#current);
    this.#more?.forEach((res) => fn(res));
  }
}

/** What the tracker knows of one HTTP connection. */
interface TrackedConnection {
  /** Responses started on it and not yet closed. */
  readonly responses: OpenResponses;
  /** Listener of each of its responses' `close` (`this` is the response), made once per connection. */
  readonly onResponseClose: (this: http.ServerResponse) => void;
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
  readonly #detached = new Set<Duplex>();
  #isDraining = false;

  constructor(server: http.Server) {
    server.on('connection', (socket: Duplex) => this.#onConnection(socket));
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => this.#onRequest(req, res));
  }

  /**
   * Records that `socket` left HTTP (the server's `connect` or `upgrade` handler took it):
   * a drain does not treat it as an idle connection; {@link ConnectionTracker.closeAll} closes it.
   * (No `connect` listener of our own: a server without one must keep refusing CONNECT.)
   */
  detach(socket: Duplex): void {
    if (!this.#connections.delete(socket)) return;
    this.#detached.add(socket);
  }

  /** HTTP requests whose response has not finished, over all connections. */
  get activeRequests(): number {
    let count = 0;
    for (const connection of this.#connections.values()) count += connection.responses.size;
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
      if (connection.responses.size === 0) {
        socket.destroy();
        continue;
      }
      connection.responses.forEach((res) => {
        if (!res.headersSent) res.shouldKeepAlive = false;
      });
    }
  }

  /** Destroys every connection, detached ones included. */
  closeAll(): void {
    for (const socket of [...this.#connections.keys(), ...this.#detached]) socket.destroy();
    this.#connections.clear();
    this.#detached.clear();
  }

  #onConnection(socket: Duplex): void {
    if (this.#isDraining) {
      socket.destroy();
      return;
    }
    const responses = new OpenResponses();
    const tracker = this;
    this.#connections.set(socket, {
      responses,
      onResponseClose(this: http.ServerResponse): void {
        responses.delete(this);
        // A response that went out with keep-alive before the drain: its connection ends now.
        if (tracker.#isDraining && responses.size === 0) endSoon(socket);
      },
    });
    socket.once('close', () => {
      this.#connections.delete(socket);
      this.#detached.delete(socket);
    });
  }

  #onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const socket = req.socket as Duplex;
    const connection = this.#connections.get(socket);
    if (!connection) return;
    connection.responses.add(res);
    if (this.#isDraining) res.shouldKeepAlive = false;
    res.once('close', connection.onResponseClose);
  }
}
