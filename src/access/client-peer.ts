/**
 * The client of a connection (DESIGN.md: the network peer that connects to the proxy): its
 * address and port, read from the socket once per connection and kept on it (issue 11).
 *
 * Node's `socket.remoteAddress` and `remotePort` are getters that call `Socket._getpeername`,
 * which reads `socket._handle` (another getter: a keyed load of a symbol on a socket, which
 * V8 finds megamorphic since every kind of socket in the process passes there) twice: ~520
 * instructions per read under callgrind, and a proxied request read them four times (its access
 * entry's address and port, admission's client ranges, the pacer's fairness key). A TCP
 * connection's peer never changes, so the first answer is kept in a symbol-keyed property of the
 * socket (no WeakMap: an ephemeron per connection would cost every scavenge, see request-id.ts)
 * and shared by every request on it. Extension, not in RFC 9309.
 */

/** A client connection's peer, as an access entry names it. Shared by the requests of one connection: never changed. */
export interface ClientPeer {
  /** The peer's address (`127.0.0.1`, `::1`, ...); '' when the socket could not tell (already closed). */
  readonly address: string;
  /** The peer's port; 0 when unknown. */
  readonly port: number;
}

/** The socket's property holding its {@link ClientPeer}. */
const CLIENT_PEER = Symbol('robots-proxy.clientPeer');

/** What {@link clientPeerOf} reads from a socket (a `net.Socket`, a `TLSSocket`, or any duplex that says). */
interface PeerSocket {
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
  [CLIENT_PEER]?: ClientPeer;
}

/** The peer of a socket that cannot tell (no socket, or one closed before its address was read). */
const UNKNOWN_PEER: ClientPeer = { address: '', port: 0 };

/**
 * The peer of the connection `socket`: read from the socket on first use and kept on it; an
 * answer without an address (a socket closed before it was asked: `{ address: '', port: 0 }`)
 * is not kept, so a later call asks again, as the getters would. Never throws.
 * @param socket a request's `req.socket` (undefined or null: the unknown peer).
 */
export function clientPeerOf(socket: object | null | undefined): ClientPeer {
  if (socket == null) return UNKNOWN_PEER;
  const holder = socket as PeerSocket;
  const known = holder[CLIENT_PEER];
  if (known !== undefined) return known;
  const address = holder.remoteAddress;
  if (address === undefined) return UNKNOWN_PEER;
  const peer: ClientPeer = { address, port: holder.remotePort ?? 0 };
  holder[CLIENT_PEER] = peer;
  return peer;
}
