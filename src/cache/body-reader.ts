/**
 * Reads a robots.txt response body up to a byte limit and stops there
 * (RFC 9309 §2.5: parse at least 500 KiB; the rest is never read), decoding
 * `Content-Encoding` (RFC 9110 §8.4) on the way so the limit counts decoded
 * bytes: a gzip or brotli bomb costs at most the limit plus one zlib chunk.
 */
import { pipeline, type Readable, type Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/** The `Accept-Encoding` the fetcher sends: the codings {@link createDecoders} can undo. */
export const ACCEPTED_ENCODINGS = 'gzip, deflate, br';

/**
 * The decoders for a `Content-Encoding` value, in the order to apply them
 * (the reverse of the listed order, RFC 9110 §8.4). `identity` is skipped,
 * `x-gzip` is gzip (RFC 9110 §8.4.1.3). `deflate` must be zlib-wrapped as
 * RFC 9110 §8.4.1.2 says; raw deflate fails to decode.
 * @param contentEncoding the field value(s) as received, or undefined.
 * @returns the decoders (empty for none), or `undefined` when a coding is unknown.
 */
export function createDecoders(contentEncoding: string | string[] | undefined): Transform[] | undefined {
  const text = Array.isArray(contentEncoding) ? contentEncoding.join(',') : (contentEncoding ?? '');
  const codings = text
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  const decoders: Transform[] = [];
  for (const coding of codings.reverse()) {
    if (coding === 'gzip' || coding === 'x-gzip') decoders.push(createGunzip());
    else if (coding === 'deflate') decoders.push(createInflate());
    else if (coding === 'br') decoders.push(createBrotliDecompress());
    else return undefined;
  }
  return decoders;
}

/**
 * Reads at most `limitBytes` decoded bytes from `body`, then destroys the
 * streams, which makes undici close the connection instead of draining the
 * rest. Callers pass their limit plus one to learn whether the body was longer.
 * @param body the response body (undici `BodyReadable`).
 * @param decoders from {@link createDecoders}; piped after `body`.
 * @returns the bytes read, at most `limitBytes` of them.
 * @throws the stream's error: a socket error, an abort (its `reason`), or a
 *   zlib error (`Z_DATA_ERROR`, `Z_BUF_ERROR`, `ERR_BROTLI_...`) for a corrupt body.
 */
export async function readBodyUpTo(body: Readable, decoders: readonly Transform[], limitBytes: number): Promise<Buffer> {
  const decoded = decoders.length === 0 ? body : chain(body, decoders);
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of decoded) {
      const bytes = chunk as Buffer;
      const room = limitBytes - total;
      if (bytes.length >= room) {
        chunks.push(bytes.subarray(0, room));
        total += room;
        break;
      }
      chunks.push(bytes);
      total += bytes.length;
    }
  } finally {
    decoded.destroy();
    body.destroy();
  }
  return Buffer.concat(chunks, total);
}

/** `body | decoders[0] | decoders[1] ...`; an error or early destroy anywhere tears down all of them. */
function chain(body: Readable, decoders: readonly Transform[]): Readable {
  // pipeline's array overload is typed as returning a WritableStream; the last stream is a Transform.
  return pipeline([body, ...decoders], () => {
    // Errors reach the reader through the last stream; nothing to do here.
  }) as unknown as Readable;
}
