/**
 * Node's accept path, with the accepted socket's options in one stable shape (issue 11, the cost
 * of a connection under `Connection: close`).
 *
 * Node 20's `net.Server` accepts a connection in `onconnection` (lib/net.js), which calls
 * `new net.Socket({ handle, allowHalfOpen, pauseOnCreate, readable, writable, readableHighWaterMark,
 * writableHighWaterMark })`; the constructor clones that object (`{ ...options }`) and adds
 * `emitClose`, `autoDestroy` and `decodeStrings` to the clone. On Node 20's V8 (11.3) a property
 * added to a spread clone makes a new hidden class (map) every time, so every accepted socket
 * allocates maps and descriptor arrays, and every inline cache that reads those options (`Duplex`,
 * `ReadableState`, `WritableState`) sees a map it has never seen and goes megamorphic: the
 * constructor cost ~78,000 of the ~485,000 main-thread instructions of a close request (valgrind;
 * bench/PROFILE.md, "A connection under `Connection: close`, counted"). Passing the three options
 * in the object itself makes the constructor's stores plain writes to existing properties of one map.
 *
 * The replacement does what Node's `onconnection` does on its common path (same options and
 * values, `TCP_NODELAY` as the server asks, the server's connection count, `socket.server`, the
 * `connection` event, the `net.server.socket` diagnostics channel) and hands every other case to
 * Node's own function unchanged: an accept error, the `maxConnections` drop (and its `drop` event),
 * a server with TCP keep-alive on, a `blockList`. Only on Node 20 ({@link STABLE_ACCEPT_APPLIES}).
 * Extension, not in RFC 9309.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import net from 'node:net';

/** Node's `net.server.socket` channel, published for every accepted socket as Node does. */
const serverSocketChannel = diagnosticsChannel.channel('net.server.socket');

/** The internals of `net.Server` the accept path reads and writes (Node 20, lib/net.js). */
interface ServerInternals {
  _handle: { onconnection?: (this: unknown, err: number, clientHandle: unknown) => void } | null;
  _connections: number;
  allowHalfOpen: boolean;
  pauseOnConnect: boolean;
  noDelay: boolean;
  keepAlive: boolean;
  highWaterMark: number | undefined;
  /** Not on Node 20; should a build have it, Node's accept applies it. */
  blockList?: unknown;
}

/** The accepted socket's link to its server, which Node's `Socket._destroy` decrements the count through. */
interface SocketInternals {
  server: net.Server;
  _server: net.Server;
}

/** Node's own accept function, recognised by name; set on the handle at each `listen`. */
const NODE_ACCEPT_NAME = 'onconnection';

/**
 * True on Node 20, whose `onconnection` this replacement mirrors (checked against 20.20's lib/net.js)
 * and whose V8 makes the maps; on other majors Node's own accept stays (later ones add checks, e.g.
 * `net.Server`'s `blockList`, that this copy does not have).
 */
export const STABLE_ACCEPT_APPLIES = Number(process.versions.node.split('.')[0]) === 20;

/**
 * Installs the stable-options accept on `server` (now if it listens, and at every `listening`).
 * A server whose handle does not carry Node's own `onconnection` (another Node, a cluster
 * worker's shared handle, someone else's replacement) is left as it is.
 * @returns nothing; never throws.
 */
export function acceptWithStableSocketOptions(server: net.Server): void {
  if (!STABLE_ACCEPT_APPLIES) return;
  const install = (): void => {
    const internals = server as unknown as ServerInternals;
    const handle = internals._handle;
    const nodeAccept = handle?.onconnection;
    if (handle == null || typeof nodeAccept !== 'function' || nodeAccept.name !== NODE_ACCEPT_NAME) return;
    handle.onconnection = function onconnectionStable(this: unknown, err: number, clientHandle: unknown): void {
      if (err || internals.keepAlive || internals.blockList !== undefined || (server.maxConnections && internals._connections >= server.maxConnections)) {
        nodeAccept.call(this, err, clientHandle);
        return;
      }
      const socket = new net.Socket({
        handle: clientHandle,
        allowHalfOpen: internals.allowHalfOpen,
        pauseOnCreate: internals.pauseOnConnect,
        readable: true,
        writable: true,
        readableHighWaterMark: internals.highWaterMark,
        writableHighWaterMark: internals.highWaterMark,
        // The values the constructor sets itself; present here, its stores keep the options' map.
        emitClose: false,
        autoDestroy: true,
        decodeStrings: false,
      } as net.SocketConstructorOpts);
      if (internals.noDelay) socket.setNoDelay(true);
      internals._connections += 1;
      (socket as unknown as SocketInternals).server = server;
      (socket as unknown as SocketInternals)._server = server;
      server.emit('connection', socket);
      if (serverSocketChannel.hasSubscribers) serverSocketChannel.publish({ socket });
    };
  };
  if (server.listening) install();
  server.on('listening', install);
}
