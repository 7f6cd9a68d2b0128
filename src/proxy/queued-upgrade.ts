/**
 * The client socket of an Upgrade while the request waits for its start slot. Node's HTTP server
 * hands an upgraded socket over paused and half-open (its connections allow half-open), so a client
 * that leaves (its FIN) raises neither `close` nor `end` until the socket is read: such an upgrade
 * stayed queued and was sent upstream in its turn, though DESIGN.md (Pacing semantics) says a client
 * that disconnects while queued leaves the queue and nothing is sent upstream. The socket is read
 * while queued; what arrives is kept (at most `maxBytes`, then reading pauses) and put back before
 * the relay, so the stream after a 101 starts with it, in order.
 */
import type { Duplex } from 'node:stream';

/** Longest part of a queued upgrade's stream kept while it waits, bytes (a client sends nothing before its 101). */
const MAX_KEPT_BYTES = 64 * 1024;

/**
 * Starts reading `socket` while its upgrade is queued; `onLeft` is called if the client ends its
 * side meanwhile. Returns the stop: it stops reading, pauses the socket and puts back the bytes
 * read (`unshift`), to be called before the socket is relayed. Never throws.
 */
export function watchQueuedUpgrade(socket: Duplex, onLeft: () => void, maxBytes = MAX_KEPT_BYTES): () => void {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  const onData = (chunk: Buffer): void => {
    kept.push(chunk);
    keptBytes += chunk.length;
    if (keptBytes >= maxBytes) socket.pause();
  };
  socket.on('data', onData);
  socket.once('end', onLeft);
  return () => {
    socket.off('data', onData);
    socket.off('end', onLeft);
    socket.pause();
    if (kept.length > 0) socket.unshift(kept.length === 1 ? (kept[0] as Buffer) : Buffer.concat(kept));
  };
}
