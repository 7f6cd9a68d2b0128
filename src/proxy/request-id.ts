/**
 * Request ids: every response the proxy sends (its own and passed-on ones) and
 * every access log line carries one, so a bot's operator can quote it when
 * appealing a refusal and the proxy's operator can find the line.
 *
 * An id is `<prefix>-<counter>`: a random prefix drawn once per process (48
 * bits, so ids stay unique across restarts and instances) and a base-36
 * counter, e.g. `3f9a1c2b7e4d-1k`. Cheap: no randomness per request. Nothing
 * the client sends becomes the id; the client's own `X-Request-Id` is logged
 * beside it. Extension, not in RFC 9309.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Response header that carries the request id. Namespaced: an upstream's or client's `X-Request-Id` is never overwritten. */
export const REQUEST_ID_HEADER = 'x-robots-proxy-request-id';

/** The client's own request id header, logged as `clientRequestId` (never used as ours). */
const CLIENT_REQUEST_ID_HEADER = 'x-request-id';

/** Character codes of base-36 digits. */
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const DIGIT_A = 0x61;
const DIGIT_Z = 0x7a;

/**
 * Makes an id generator.
 * @param prefix the per-process part; by default 12 random hex digits.
 * @returns a function giving `<prefix>-<counter in base 36>`, the counter starting at 1.
 */
export function createRequestIdGenerator(prefix: string = randomBytes(6).toString('hex')): () => string {
  // The id's character codes, the counter's base-36 digits last, counted up in place: one
  // `String.fromCharCode` per id, which writes a flat string (never a rope: the id is a response
  // header's value, which Node checks with a regular expression, flat-string.ts) at a fraction
  // of `[prefix, counter.toString(36)].join('-')`'s cost (issue 11).
  const codes: number[] = [];
  for (let i = 0; i < prefix.length; i++) codes.push(prefix.charCodeAt(i));
  codes.push(0x2d); // '-'
  const firstDigit = codes.length;
  codes.push(DIGIT_0);
  return () => {
    let i = codes.length - 1;
    for (;;) {
      const code = codes[i] as number;
      if (code === DIGIT_Z) {
        codes[i] = DIGIT_0; // carry into the next digit up
        if (i === firstDigit) {
          codes.splice(firstDigit, 0, DIGIT_0 + 1);
          break;
        }
        i--;
        continue;
      }
      codes[i] = code === DIGIT_9 ? DIGIT_A : code + 1;
      break;
    }
    return String.fromCharCode.apply(undefined, codes);
  };
}

/** This process's generator. */
export const nextRequestId: () => string = createRequestIdGenerator();

/**
 * Where a request's id is kept: a symbol-keyed property of the request itself. A property
 * rather than a WeakMap entry: every request would otherwise add an ephemeron, which the
 * garbage collector processes specially in every scavenge (issue 11).
 */
const REQUEST_ID = Symbol('robots-proxy.requestId');

/**
 * The request id of `req`, drawn on first use: every module that answers or
 * audits the same request (listener, pipeline, CONNECT, upgrade) gets the same
 * id without passing it around. Never throws.
 */
export function requestIdOf(req: IncomingMessage): string {
  const holder = req as IncomingMessage & { [REQUEST_ID]?: string };
  let id = holder[REQUEST_ID];
  if (id === undefined) {
    id = nextRequestId();
    holder[REQUEST_ID] = id;
  }
  return id;
}

/** The client's own `X-Request-Id` (first value), or null. A value the client controls: the access log caps it. */
export function clientRequestIdOf(req: IncomingMessage): string | null {
  const value = req.headers[CLIENT_REQUEST_ID_HEADER];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? null : first;
}
