/**
 * Reads a robots.txt response body up to a byte limit and stops there
 * (RFC 9309 §2.5: parse at least 500 KiB; the rest is never read), decoding
 * `Content-Encoding` (RFC 9110 §8.4) on the way so the limit counts decoded
 * bytes: a gzip or brotli bomb costs at most the limit plus one zlib chunk.
 */
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate, createInflateRaw } from 'node:zlib';

/** The `Accept-Encoding` the fetcher sends: the codings {@link createDecoders} can undo. */
export const ACCEPTED_ENCODINGS = 'gzip, deflate, br';

/**
 * The decoders for a `Content-Encoding` value, in the order to apply them
 * (the reverse of the listed order, RFC 9110 §8.4). `identity` is skipped,
 * `x-gzip` is gzip (RFC 9110 §8.4.1.3). `deflate` is zlib-wrapped as
 * RFC 9110 §8.4.1.2 says, or raw deflate as some servers send it (told by
 * its first two bytes, as browsers, curl and undici's fetch do). An empty
 * body decodes to nothing whatever its coding, as in those clients: servers
 * label empty bodies too, and zero bytes are not a corrupt stream.
 *
 * A name that is no content coding at all (not in {@link REGISTERED_CODINGS}: `utf-8`, `none`,
 * `text`, `binary`, as misconfigured servers send) is a mislabel of a plain body and is skipped,
 * as browsers and undici's fetch skip it ({@link namesNoCoding} tells the caller, which may
 * judge the body: a binary one under such a name was compressed after all); only a registered
 * coding this reader cannot undo (`compress`, `zstd`, `aes128gcm`, ...) makes the body unreadable.
 * @param contentEncoding the field value(s) as received, or undefined.
 * @returns the decoders (empty for none), or `undefined` when a registered coding is not supported.
 */
export function createDecoders(contentEncoding: string | string[] | undefined): Transform[] | undefined {
  const text = Array.isArray(contentEncoding) ? contentEncoding.join(',') : (contentEncoding ?? '');
  const codings = text
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity' && REGISTERED_CODINGS.has(coding));
  const decoders: Transform[] = [];
  for (const coding of codings.reverse()) {
    if (coding === 'gzip' || coding === 'x-gzip') decoders.push(new LazyDecoder(() => createGunzip()));
    else if (coding === 'deflate') decoders.push(new LazyDecoder((first) => (isZlibWrapped(first) ? createInflate() : createInflateRaw())));
    else if (coding === 'br') decoders.push(new LazyDecoder(() => createBrotliDecompress()));
    else return undefined;
  }
  return decoders;
}

/**
 * True when a `Content-Encoding` value holds a name that is no content coding (not in
 * {@link REGISTERED_CODINGS}), which {@link createDecoders} skips as a mislabel. Pure.
 */
export function namesNoCoding(contentEncoding: string | string[] | undefined): boolean {
  const text = Array.isArray(contentEncoding) ? contentEncoding.join(',') : (contentEncoding ?? '');
  return text.split(',').some((coding) => {
    const name = coding.trim().toLowerCase();
    return name !== '' && !REGISTERED_CODINGS.has(name);
  });
}

/**
 * The content codings of IANA's HTTP Content Coding Registry (RFC 9110 §16.6.1), as of 2026:
 * what a server may mean by `Content-Encoding`. Any other name is not a coding.
 */
const REGISTERED_CODINGS: ReadonlySet<string> = new Set([
  'aes128gcm',
  'br',
  'compress',
  'dcb',
  'dcz',
  'deflate',
  'exi',
  'gzip',
  'identity',
  'pack200-gzip',
  'x-compress',
  'x-gzip',
  'zstd',
]);

/**
 * True when `first` (a deflate body's first bytes) begins with a zlib header (RFC 1950 §2.2):
 * compression method 8, a window of at most 32 KiB, and `CMF * 256 + FLG` a multiple of 31.
 * Raw deflate (RFC 1951) data passes this check by chance for 1 start in 31 * 16 at most, and
 * a zlib stream always passes it. A one-byte first chunk is judged by its CMF byte alone.
 */
export function isZlibWrapped(first: Buffer): boolean {
  const cmf = first[0] ?? 0;
  if ((cmf & 0x0f) !== 8 || cmf >> 4 > 7) return false;
  return first.length < 2 || (cmf * 256 + first[1]!) % 31 === 0;
}

/**
 * A decoder made on the first non-empty chunk, from those bytes (`create(first)`), then fed the
 * whole body; a body of no bytes ends with no output and no decoder at all. The decoder's
 * output is passed on with backpressure (it is paused while this stream's reader is full), its
 * errors become this stream's, and destroying this stream destroys it.
 */
class LazyDecoder extends Transform {
  readonly #create: (first: Buffer) => Transform;
  #decoder: Transform | undefined;
  /** The decoder has ended (a decoder may end before its input does, e.g. gunzip at trailing bytes). */
  #isDecoderEnded = false;
  /** The callback of the chunk the decoder is working on, or of `_flush`. */
  #waiting: TransformCallback | undefined;

  constructor(create: (first: Buffer) => Transform) {
    super();
    this.#create = create;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.#isDecoderEnded || (this.#decoder === undefined && chunk.length === 0)) return callback();
    this.#waiting = callback;
    (this.#decoder ??= this.#start(chunk)).write(chunk, () => this.#proceed());
  }

  override _read(size: number): void {
    this.#decoder?.resume();
    super._read(size);
  }

  override _flush(callback: TransformCallback): void {
    if (this.#decoder === undefined || this.#isDecoderEnded) return callback();
    this.#waiting = callback;
    this.#decoder.end();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#decoder?.destroy();
    callback(error);
  }

  /** Makes the decoder for a body that starts with `first`, wired to this stream. */
  #start(first: Buffer): Transform {
    const decoder = this.#create(first);
    decoder.on('data', (decoded: Buffer) => {
      if (!this.push(decoded)) decoder.pause();
    });
    decoder.on('end', () => {
      this.#isDecoderEnded = true;
      this.#proceed();
    });
    decoder.on('error', (error) => this.destroy(error));
    return decoder;
  }

  /** Calls the waiting callback once: its chunk is decoded, or the decoder ended. */
  #proceed(): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.();
  }
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
