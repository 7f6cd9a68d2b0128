/**
 * One rule for upstream connections, the forwarder's pools (proxy/) and the robots.txt fetch
 * (cache/) alike: a TCP reset (`ECONNRESET`) fails the response in flight; it never ends it.
 *
 * A response without a Content-Length ends where its framing says: a chunked body at its last
 * chunk, a close-delimited one at the connection's close (RFC 9112 §6.3, items 4 and 8). A reset is
 * not a close: whatever the origin wrote after the bytes received is lost (the RST discards it),
 * so the body is cut. undici 7 reads it otherwise: on an `ECONNRESET` while a response without a
 * length runs on a connection that will not be kept alive (close-delimited, or chunked with
 * `Connection: close`), it finishes the parser as at a clean end (`onHttpSocketError` in
 * client-h1.js, "On Mac OS, we get an ECONNRESET even if there is a full body"): a cut
 * close-delimited body completes as if whole, and a cut chunked one fails with a parser error that
 * names no code. The connections made here hand undici the reset under another error, whose
 * `cause` is the reset: undici then fails the request with it, and the error's code as callers
 * read it (the cause's) stays `ECONNRESET`.
 */
import type { Socket } from 'node:net';
import type { buildConnector } from 'undici';

/** The code of a connection reset by the peer. */
export const RESET_CODE = 'ECONNRESET';

/** True when `err` is a connection reset (`ECONNRESET`). */
export function isReset(err: unknown): boolean {
  return (err as { code?: unknown } | null | undefined)?.code === RESET_CODE;
}

/**
 * The error undici is handed for a reset: code-less (so undici takes no length-less response as
 * ended by it), with the reset as its `cause` (`upstreamErrorCode` in forwarder.ts and the robots
 * fetcher's code reading both look there: `ECONNRESET`).
 */
export function resetFailure(reset: Error): Error {
  return new Error(`the upstream connection was reset (${RESET_CODE}): the response in flight is cut`, { cause: reset });
}

/**
 * Makes a reset of `socket` fail its response in flight: the socket's `destroy` (which Node's read
 * path calls with the `ECONNRESET`) hands undici {@link resetFailure} instead. One own method per
 * connection (call it once per socket); nothing per request or per read.
 */
export function failResponsesOnReset(socket: Socket): void {
  const destroy = socket.destroy;
  socket.destroy = function destroyOnReset(this: Socket, error?: Error): Socket {
    return destroy.call(this, error !== undefined && isReset(error) ? resetFailure(error) : error);
  };
}

/**
 * An undici connector whose connections follow {@link failResponsesOnReset}. A connect that fails
 * hands no socket (`callback(err, null)`): passed on as it is.
 */
export function resetsFailResponses(connector: buildConnector.connector): buildConnector.connector {
  return (options, callback) =>
    connector(options, (err, socket) => {
      if (socket !== null && socket !== undefined) failResponsesOnReset(socket as Socket);
      // undici's callback type is a union of the two shapes; either is passed on unchanged.
      (callback as (e: Error | null, s: unknown) => void)(err, socket);
    });
}
