/**
 * One rule for upstream connections, the forwarder's pools (proxy/) and the robots.txt fetch
 * (cache/) alike: an unsolicited `100 Continue` before a response is read past, and the final
 * response that follows it is the answer.
 *
 * RFC 9110 §15.2: "A client MUST be able to parse one or more 1xx responses received prior to a
 * final response, even if the client does not expect one. A user agent MAY ignore unexpected 1xx
 * responses." (§15.2.1: a server may send 100 without an `Expect` for compatibility with RFC 2068
 * clients.) undici 7 passes every other 1xx to its handler (`onHeaders` with a status under 200)
 * but destroys the connection at a 100 (`onHeadersComplete` in client-h1.js: "bad response"), so
 * the exchange failed and the client got the proxy's 502. The proxy never sends `Expect` upstream
 * (it answers the client's own 100-continue itself, headers.ts), so a 100 from upstream is never
 * an answer the proxy waits for: dropping it is what §15.2 allows, and the final response goes on.
 *
 * How: undici reads a connection with `socket.read()` and writes each request head as one string
 * starting with its request line (`METHOD target HTTP/1.1\r\n`); the pools send one request at a
 * time on a connection (`pipelining: 1`), so a request head is written only once the previous
 * response has ended, and the next bytes read start the new response. Between the head's write
 * and the first byte of a response other than a 100, `read()` drops whole `HTTP/1.x 100` heads
 * (several in a row too) and holds back a partial one until the rest arrives. Once a response
 * other than a 100 starts, reads are passed through untouched until the next request head (a body
 * that happens to start like a 100 is never touched). A 100 head longer than
 * {@link MAX_INTERIM_HEAD_BYTES} is handed to undici as it is (which fails the exchange, as before).
 */
import type { Socket } from 'node:net';
import type { buildConnector } from 'undici';

/** Longest `100 Continue` head that is read past, bytes: undici's own head bound (`maxHeaderSize`, 16 KiB). */
export const MAX_INTERIM_HEAD_BYTES = 16 * 1024;

/** A request line as undici writes it (RFC 9112 §3: method SP request-target SP HTTP-version CRLF). */
const REQUEST_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ [^ \r\n]+ HTTP\/1\.1\r\n/;

/** `HTTP/1.1 100` (or 1.0): the status line's start, the byte after it is a space or CR. */
const PREFIXES = [Buffer.from('HTTP/1.1 100', 'latin1'), Buffer.from('HTTP/1.0 100', 'latin1')];
const PREFIX_BYTES = 12;
const SP = 0x20;
const CR = 0x0d;
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');

/** What the start of `bytes` is: a `100` status line, possibly one (too short to tell), or neither. */
function continueAt(bytes: Buffer): 'continue' | 'maybe' | 'other' {
  for (const prefix of PREFIXES) {
    const compared = Math.min(bytes.length, PREFIX_BYTES);
    if (bytes.compare(prefix, 0, compared, 0, compared) !== 0) continue;
    if (bytes.length <= PREFIX_BYTES) return 'maybe';
    const next = bytes[PREFIX_BYTES];
    return next === SP || next === CR ? 'continue' : 'other';
  }
  return 'other';
}

/**
 * Makes `socket` read past unsolicited `100 Continue` heads at the start of each response (see the
 * module comment). One own `read` and `write` per connection (call it once per socket); per
 * request one anchored regex test of the head, per read one flag test once the response started.
 */
export function skipUnsolicitedContinue(socket: Socket): void {
  const read = socket.read;
  const write = socket.write;
  /** True from a request head's write until the first byte of a response other than a 100. */
  let isAtResponseStart = false;
  /** The start of a possible 100 head, held until it is whole. */
  let held: Buffer | undefined;
  socket.write = function writeNotingRequests(this: Socket, chunk: unknown, ...rest: unknown[]): boolean {
    if (typeof chunk === 'string' && REQUEST_LINE.test(chunk)) isAtResponseStart = true;
    return (write as (chunk: unknown, ...rest: unknown[]) => boolean).call(this, chunk, ...rest);
  } as Socket['write'];
  socket.read = function readPastContinue(this: Socket, size?: number): Buffer | null {
    const chunk = read.call(this, size) as Buffer | null;
    if (!isAtResponseStart || chunk === null) return chunk;
    let bytes = held === undefined ? chunk : Buffer.concat([held, chunk]);
    held = undefined;
    for (;;) {
      const kind = continueAt(bytes);
      if (kind === 'other') {
        isAtResponseStart = false;
        return bytes.length > 0 ? bytes : null;
      }
      const end = kind === 'continue' ? bytes.indexOf(HEAD_END) : -1;
      if ((end < 0 ? bytes.length : end) > MAX_INTERIM_HEAD_BYTES) {
        isAtResponseStart = false;
        return bytes;
      }
      if (end < 0) {
        held = bytes;
        return null; // the rest of the head comes with the next 'readable'
      }
      bytes = bytes.subarray(end + HEAD_END.length);
      if (bytes.length === 0) return null; // all read; the final response comes with the next 'readable'
    }
  };
}

/**
 * An undici connector whose connections follow {@link skipUnsolicitedContinue}. A connect that
 * fails hands no socket (`callback(err, null)`): passed on as it is.
 */
export function skipsUnsolicitedContinue(connector: buildConnector.connector): buildConnector.connector {
  return (options, callback) =>
    connector(options, (err, socket) => {
      if (socket !== null && socket !== undefined) skipUnsolicitedContinue(socket as Socket);
      (callback as (e: Error | null, s: unknown) => void)(err, socket);
    });
}
