/**
 * An origin's answer to an Upgrade request that does not switch protocols (a 400, 403, 426 ...),
 * made fit for http-proxy's relay of it. http-proxy writes the answer's `headers` as the head and
 * pipes the answer (its body as Node decoded it: no chunk framing left) to the client's socket,
 * which it ends with the body: so the head must announce the framing the piped bytes have. A
 * chunked answer is chunked again on its way (its last chunk included), the hop-by-hop fields go
 * (RFC 9110 §7.6.1), and the answer says `Connection: close`: the client's connection ends with it
 * (RFC 9112 §9.6), since the upgrade request left it in no state to carry another.
 */
import type { IncomingMessage } from 'node:http';
import { Readable, Transform, type Writable } from 'node:stream';
import { forwardableHeaders } from './headers.js';

/** Re-frames decoded body bytes as HTTP/1.1 chunks (RFC 9112 §7.1), with the last chunk at the end. */
class ChunkFramer extends Transform {
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null, data?: Buffer) => void): void {
    if (chunk.length === 0) return callback();
    callback(null, Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`, 'latin1'), chunk, CRLF]));
  }
  override _flush(callback: (err?: Error | null, data?: Buffer) => void): void {
    callback(null, LAST_CHUNK);
  }
}

const CRLF = Buffer.from('\r\n', 'latin1');
const LAST_CHUNK = Buffer.from('0\r\n\r\n', 'latin1');

/**
 * Rewrites `res` (the origin's non-101 answer, before http-proxy's `response` listener runs) for
 * http-proxy's relay: its `headers` become the forwardable ones with this proxy's `Via` hop
 * (`protocolVersion pseudonym`), `Connection: close`, and `Transfer-Encoding: chunked` when the
 * origin chunked it (its `pipe` then frames the chunks). A body with a `Content-Length` keeps it;
 * one with neither is delimited by the close. Never throws.
 */
export function frameRefusalForRelay(res: IncomingMessage, protocolVersion: string, pseudonym: string): void {
  const wasChunked = res.headers['transfer-encoding'] !== undefined;
  const headers = forwardableHeaders(res.headers, protocolVersion, pseudonym, true);
  headers['connection'] = 'close';
  if (wasChunked) {
    // A length next to a transfer coding is not the body's (RFC 9112 §6.3 item 3).
    delete headers['content-length'];
    headers['transfer-encoding'] = 'chunked';
    const pipe = Readable.prototype.pipe;
    // Own property: only this answer's pipe frames; http-proxy calls `res.pipe(socket)` once.
    res.pipe = function pipeFramed<T extends NodeJS.WritableStream>(this: IncomingMessage, destination: T, options?: { end?: boolean }): T {
      (pipe.call(this, new ChunkFramer()) as unknown as Readable).pipe(destination as unknown as Writable, options);
      return destination;
    };
  }
  res.headers = headers;
}
