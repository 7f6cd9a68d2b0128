/**
 * Fetches the robots.txt of one origin with undici and maps the outcome to a
 * robots snapshot (RFC 9309 §2.3.1): 2xx parsed, redirects followed, 4xx
 * unavailable, 429/5xx/network unreachable. Network outcomes are values; the
 * only throw is for an origin that is not an http(s) URL.
 */
import { rootCertificates } from 'node:tls';
import { Agent, buildConnector, request, type Dispatcher } from 'undici';
import { systemClock, type Clock } from '../clock.js';
import { InvalidTargetError } from '../errors.js';
import type { SnapshotInfo } from '../policy/decision.js';
import type { RobotsSnapshot } from '../policy/snapshot.js';
import { DEFAULT_MAX_CRAWL_DELAY_SECONDS, DEFAULT_MAX_ROBOTS_BYTES, parseRobotsTxt } from '../robots/index.js';
import { ACCEPTED_ENCODINGS, createDecoders, namesNoCoding, readBodyUpTo } from './body-reader.js';
import { upstreamConnector } from '../upstream-connector.js';
import { freshLifetimeMs, unreachableRetryMs } from './expiry.js';

/** Options of {@link RobotsFetcher}. Defaults match `robots.*` in config/default.yaml. */
export interface RobotsFetcherOptions {
  /** `User-Agent` sent with every robots.txt request (`robots.userAgent`). */
  userAgent: string;
  /** Longest lifetime of a 2xx/4xx snapshot, ms (RFC 9309 §2.4). @default 86_400_000 (24 h) */
  ttlMs?: number;
  /** Floor for `Cache-Control` lifetimes, ms; at most `ttlMs`. @default 60_000 */
  minTtlMs?: number;
  /** Retry delay after the first unreachable fetch, ms; doubles per consecutive failure. @default 60_000 */
  errorRetryMs?: number;
  /** Ceiling of that doubling, ms. @default 1_800_000 (30 min) */
  errorRetryMaxMs?: number;
  /**
   * Cap on the wait a 429/503's `Retry-After` asks for before robots.txt is fetched again, ms
   * (`pacing.maxRetryAfter`). @default 600_000 (10 min)
   */
  retryAfterCapMs?: number;
  /** Crawl-delay ceiling handed to the parser, ms (`pacing.maxCrawlDelay`). @default 86_400_000 (24 h) */
  maxCrawlDelayMs?: number;
  /** Decoded body bytes parsed; the rest is not read (RFC 9309 §2.5 asks for at least 500 KiB). @default 512_000 */
  maxBytes?: number;
  /** Redirects followed, to any host and scheme; one more -> unavailable (RFC 9309 §2.3.1.2). @default 5 */
  maxRedirects?: number;
  /** Time for the whole fetch (connects, redirects, headers and body), ms; exceeded -> unreachable `timeout`. @default 10_000 */
  timeoutMs?: number;
  /**
   * Extra PEM CA certificates trusted for https origins besides Node's bundled
   * roots (`tls.rootCertificates`). Ignored when `dispatcher` is given.
   */
  ca?: string[];
  /** Dispatcher to send requests with, e.g. the proxy's own `Agent` (it decides TLS trust and connect rules). Not closed by {@link RobotsFetcher.close}. */
  dispatcher?: Dispatcher;
  /** Source of `fetchedAtMs`/`expiresAtMs` and of the timeout timer. @default systemClock */
  clock?: Clock;
}

/** What the robots cache knows about an origin when it asks for a fetch. */
export interface FetchContext {
  /** Unreachable fetches in a row before this one; sets the retry backoff. @default 0 */
  consecutiveFailures: number;
}

/** A fetched snapshot with the body it was parsed from. */
export interface FetchedRobots {
  snapshot: RobotsSnapshot;
  /** The body bytes parsed (at most `maxBytes`), or null when the outcome had none (not 2xx). */
  body: Buffer | null;
  /**
   * The `Retry-After` field value (RFC 9110 §10.2.3) of a 429 or 503 answer, as received (the
   * first, when repeated); undefined for every other outcome or when absent. The snapshot's expiry
   * already counts it; the caller pauses the origin's pages with it (RFC 9309 §2.3.1.4, DESIGN.md
   * "Pacing semantics").
   */
  retryAfter: string | undefined;
}

/** Statuses followed as redirects (RFC 9110 §15.4; RFC 9309 §2.3.1.2). */
const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/** Body bytes of a redirect or error response read to keep the connection reusable. */
const DISCARD_LIMIT_BYTES = 64 * 1024;

/** undici error codes that have a plainer name in snapshots. */
const ERROR_CODE_NAMES: Readonly<Record<string, string>> = {
  UND_ERR_CONNECT_TIMEOUT: 'ETIMEDOUT',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  UND_ERR_SOCKET: 'ECONNRESET',
};

/** The outcome of the request chain, before it becomes a snapshot. */
type Outcome =
  | { state: 'ok'; status: number; headers: Dispatcher.ResponseData['headers']; body: Buffer }
  | { state: 'unavailable'; status: number; headers: Dispatcher.ResponseData['headers']; error: string | undefined }
  | { state: 'unreachable'; status: number | undefined; error: string | undefined; retryAfter?: string | undefined };

/**
 * Creates an undici `Agent` whose TLS connections trust Node's bundled root
 * CAs plus `ca` (PEM strings; each may hold several certificates). A
 * certificate that does not verify, or is for another name, fails the
 * connection with its OpenSSL code (e.g. `UNABLE_TO_VERIFY_LEAF_SIGNATURE`).
 * @param connectTimeoutMs TCP + TLS connect timeout, ms. @default 10_000
 */
export function createRobotsAgent(options: { ca?: string[]; connectTimeoutMs?: number } = {}): Agent {
  const ca = options.ca !== undefined && options.ca.length > 0 ? [...rootCertificates, ...options.ca] : undefined;
  // A reset fails the body in flight, whatever its framing: a cut robots.txt is never parsed (upstream-resets.ts).
  return new Agent({ connect: upstreamConnector(buildConnector({ timeout: options.connectTimeoutMs ?? 10_000, ...(ca === undefined ? {} : { ca }) })) });
}

function resolveFetcherOptions(options: RobotsFetcherOptions, clock: Clock): Required<Omit<RobotsFetcherOptions, 'ca' | 'dispatcher'>> {
  return {
    userAgent: options.userAgent,
    ttlMs: options.ttlMs ?? 86_400_000,
    minTtlMs: Math.min(options.minTtlMs ?? 60_000, options.ttlMs ?? 86_400_000),
    errorRetryMs: options.errorRetryMs ?? 60_000,
    errorRetryMaxMs: options.errorRetryMaxMs ?? 1_800_000,
    retryAfterCapMs: options.retryAfterCapMs ?? 600_000,
    maxCrawlDelayMs: options.maxCrawlDelayMs ?? DEFAULT_MAX_CRAWL_DELAY_SECONDS * 1000,
    maxBytes: options.maxBytes ?? DEFAULT_MAX_ROBOTS_BYTES,
    maxRedirects: options.maxRedirects ?? 5,
    timeoutMs: options.timeoutMs ?? 10_000,
    clock,
  };
}

/**
 * Fetches `<origin>/robots.txt` and maps the outcome (RFC 9309 §2.3.1, DESIGN.md):
 *
 * | outcome | state | expiry |
 * |---|---|---|
 * | 2xx | `ok`: first `maxBytes` decoded bytes parsed, `truncated` when longer | Cache-Control, in [minTtl, ttl] |
 * | 301/302/303/307/308 | followed (relative `Location` resolved, any host, http<->https) | |
 * | more than `maxRedirects` redirects | `unavailable`, error `too-many-redirects` (§2.3.1.2) | Cache-Control, in [minTtl, ttl] |
 * | 4xx except 429 | `unavailable`: allow all (§2.3.1.3) | Cache-Control, in [minTtl, ttl] |
 * | 429, 5xx | `unreachable`: disallow all (§2.3.1.4); `error` undefined, `status` says it | errorRetry backoff; a 429/503's `Retry-After`, capped at `retryAfterCapMs`, when later |
 * | timeout, connection or TLS error | `unreachable`, error = code (`timeout`, `ECONNREFUSED`, `ETIMEDOUT`, cert code...) | errorRetry backoff |
 * | redirect without a usable http(s) `Location` | `unreachable`, error `bad-redirect` | errorRetry backoff |
 * | other 1xx/3xx | `unreachable`, error `unexpected-status` | errorRetry backoff |
 * | a registered `Content-Encoding` other than gzip/deflate/br (`compress`, `zstd`), or one that names no coding over a binary body; corrupt compressed body | `unreachable`, error `unsupported-content-encoding` / zlib code | errorRetry backoff |
 *
 * Sends `User-Agent`, `Accept: text/plain, *\/*` and `Accept-Encoding: gzip,
 * deflate, br`; compressed bodies are decoded as a stream and the byte limit
 * counts decoded bytes (raw deflate and empty bodies too; a `Content-Encoding` that names no
 * coding, e.g. `utf-8`, is a mislabel of a plain body and read as identity, unless the body
 * looks binary: see `createDecoders`). A body cut
 * short by an error is never parsed: a partial file could miss its disallow lines.
 */
export class RobotsFetcher {
  #options: Required<Omit<RobotsFetcherOptions, 'ca' | 'dispatcher'>>;
  #dispatcher: Dispatcher;
  readonly #ownedAgent: Agent | undefined;

  /** @throws nothing; options are not validated beyond defaults (config/schema.ts does that). */
  constructor(options: RobotsFetcherOptions) {
    this.#options = resolveFetcherOptions(options, options.clock ?? systemClock);
    this.#ownedAgent = options.dispatcher === undefined ? createRobotsAgent({ ...(options.ca ? { ca: options.ca } : {}) }) : undefined;
    this.#dispatcher = options.dispatcher ?? (this.#ownedAgent as Agent);
  }

  /**
   * Applies reloaded options to the fetches started from now on (one in flight keeps its own);
   * snapshots already cached keep the expiry they were given. `ca` is ignored (it is built into
   * the agent); `dispatcher`, when given, replaces the one in use (the caller closes the old one);
   * `clock` stays. Options not given take their defaults, as in the constructor.
   */
  reconfigure(options: RobotsFetcherOptions): void {
    this.#options = resolveFetcherOptions(options, this.#options.clock);
    if (options.dispatcher !== undefined) this.#dispatcher = options.dispatcher;
  }

  /**
   * Fetches the robots.txt of `origin` (`scheme://host[:port]`, http or https).
   * Bound to the instance, so it can be handed to `RobotsCache` as `fetch`.
   * @returns the snapshot; network outcomes are values, never rejections.
   * @throws {InvalidTargetError} when `origin` is not an absolute http(s) URL.
   */
  readonly fetch = async (origin: string, context: FetchContext = { consecutiveFailures: 0 }): Promise<RobotsSnapshot> =>
    (await this.fetchWithBody(origin, context)).snapshot;

  /**
   * {@link RobotsFetcher.fetch}, also returning the body bytes that were parsed (at most
   * `maxBytes`; null for every outcome but 2xx), for the ledger's robots.txt history, and the
   * `Retry-After` of a 429/503 answer, for the origin's overload pause.
   * @throws {InvalidTargetError} when `origin` is not an absolute http(s) URL.
   */
  readonly fetchWithBody = async (origin: string, context: FetchContext = { consecutiveFailures: 0 }): Promise<FetchedRobots> => {
    const url = robotsUrlOf(origin);
    const { clock, timeoutMs } = this.#options;
    const controller = new AbortController();
    let isTimedOut = false;
    const timer = clock.setTimer(() => {
      isTimedOut = true;
      controller.abort(new Error(`robots.txt fetch exceeded ${timeoutMs} ms`));
    }, timeoutMs);
    let outcome: Outcome;
    try {
      outcome = await this.#follow(url, controller.signal);
    } catch (error) {
      outcome = { state: 'unreachable', status: undefined, error: isTimedOut ? 'timeout' : errorCodeOf(error) };
    } finally {
      clock.clearTimer(timer);
    }
    // Whole milliseconds: these times are shown (log, admin API, 403/503 bodies), where a fraction is noise.
    // Floored, never rounded up: a fetch time in the future would make Retry-After one second too long.
    const snapshot = this.#snapshotOf(url.href, outcome, Math.floor(clock.nowMs()), context.consecutiveFailures);
    const body = outcome.state === 'ok' ? outcome.body.subarray(0, this.#options.maxBytes) : null;
    return { snapshot, body, retryAfter: outcome.state === 'unreachable' ? outcome.retryAfter : undefined };
  };

  /** Closes the `Agent` this fetcher created; a `dispatcher` passed in is left open. */
  async close(): Promise<void> {
    await this.#ownedAgent?.close();
  }

  /** Requests `url`, following redirects; throws on network errors and aborts. */
  async #follow(url: URL, signal: AbortSignal): Promise<Outcome> {
    const headers = { 'user-agent': this.#options.userAgent, accept: 'text/plain, */*', 'accept-encoding': ACCEPTED_ENCODINGS };
    let current = url;
    for (let redirects = 0; ; redirects++) {
      const response = await request(current, { method: 'GET', headers, dispatcher: this.#dispatcher, signal });
      const status = response.statusCode;
      if (status >= 200 && status < 300) return this.#readOk(response);
      discard(response.body);
      if (REDIRECT_STATUSES.has(status)) {
        if (redirects >= this.#options.maxRedirects) {
          return { state: 'unavailable', status, headers: response.headers, error: 'too-many-redirects' };
        }
        const target = redirectTargetOf(current, response.headers.location);
        if (target === undefined) return { state: 'unreachable', status, error: 'bad-redirect' };
        current = target;
        continue;
      }
      if (status === 429 || status === 503) return { state: 'unreachable', status, error: undefined, retryAfter: firstValue(response.headers['retry-after']) };
      if (status >= 500) return { state: 'unreachable', status, error: undefined };
      if (status >= 400) return { state: 'unavailable', status, headers: response.headers, error: undefined };
      return { state: 'unreachable', status, error: 'unexpected-status' };
    }
  }

  /** Reads a 2xx body: at most `maxBytes + 1` decoded bytes (the extra one tells "longer"). */
  async #readOk(response: Dispatcher.ResponseData): Promise<Outcome> {
    const decoders = createDecoders(response.headers['content-encoding']);
    if (decoders === undefined) {
      discard(response.body);
      return { state: 'unreachable', status: response.statusCode, error: 'unsupported-content-encoding' };
    }
    const body = await readBodyUpTo(response.body, decoders, this.#options.maxBytes + 1);
    if (namesNoCoding(response.headers['content-encoding']) && looksBinary(body)) {
      // A name that is no coding over a binary body: compressed after all, in a way we cannot tell.
      return { state: 'unreachable', status: response.statusCode, error: 'unsupported-content-encoding' };
    }
    return { state: 'ok', status: response.statusCode, headers: response.headers, body };
  }

  #snapshotOf(url: string, outcome: Outcome, nowMs: number, consecutiveFailures: number): RobotsSnapshot {
    const { ttlMs, minTtlMs, errorRetryMs, errorRetryMaxMs, retryAfterCapMs, maxBytes, maxCrawlDelayMs } = this.#options;
    const base = { url, status: outcome.status, fetchedAtMs: nowMs, bytes: 0, truncated: false };
    if (outcome.state === 'unreachable') {
      const retry = { errorRetryMs, errorRetryMaxMs, retryAfterCapMs };
      const expiresAtMs = Math.round(nowMs + unreachableRetryMs(retry, consecutiveFailures, outcome.retryAfter, nowMs));
      return { info: { ...base, state: 'unreachable', error: outcome.error, expiresAtMs }, robots: null };
    }
    const lifetimeMs = freshLifetimeMs(outcome.headers['cache-control'], outcome.headers.age, { ttlMs, minTtlMs });
    const expiresAtMs = Math.round(nowMs + lifetimeMs);
    if (outcome.state === 'unavailable') {
      return { info: { ...base, state: 'unavailable', error: outcome.error, expiresAtMs }, robots: null };
    }
    const robots = parseRobotsTxt(outcome.body, { maxBytes, maxCrawlDelaySeconds: maxCrawlDelayMs / 1000 });
    const info: SnapshotInfo = {
      ...base,
      state: 'ok',
      error: undefined,
      expiresAtMs,
      bytes: robots.bytesParsed,
      truncated: robots.truncated,
    };
    return { info, robots };
  }
}

/**
 * `<origin>/robots.txt` (RFC 9309 §2.3: "/robots.txt" at the top level of the origin).
 * @throws {InvalidTargetError} when `origin` is not an absolute http(s) URL.
 */
export function robotsUrlOf(origin: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch (error) {
    throw new InvalidTargetError(`not an origin: ${JSON.stringify(origin)}`, { cause: error });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new InvalidTargetError(`not an http(s) origin: ${JSON.stringify(origin)}`);
  }
  return new URL('/robots.txt', parsed.origin);
}

/** An octet >= 0x80 of a field value read as latin1. */
const HIGH_OCTET = /[\x80-\xff]/g;

/**
 * The absolute http(s) URL a `Location` value points to, or undefined when there is none.
 * undici hands the field over as latin1 (one char per octet); octets >= 0x80 (a UTF-8 path or
 * host written raw, as servers do) are percent-encoded as those octets, so `/café` sent in UTF-8
 * is `/caf%C3%A9`, the path the server named, not `/caf%C3%83%C2%A9` (each octet re-encoded).
 * A `Location` repeated with one value is that value, as browsers read it; repeated with
 * different values it names no target.
 */
function redirectTargetOf(base: URL, location: string | string[] | undefined): URL | undefined {
  const value = singleLocation(location);
  if (value === undefined) return undefined;
  const octets = value.replace(HIGH_OCTET, (octet) => `%${octet.charCodeAt(0).toString(16).toUpperCase()}`);
  try {
    const target = new URL(octets, base);
    return target.protocol === 'http:' || target.protocol === 'https:' ? target : undefined;
  } catch {
    return undefined;
  }
}

/** The one non-empty value of a `Location` field (trimmed), received once or repeated alike; else undefined. */
function singleLocation(location: string | string[] | undefined): string | undefined {
  const values = (typeof location === 'string' ? [location] : (location ?? [])).map((value) => value.trim());
  const first = values[0];
  return first !== undefined && first !== '' && values.every((value) => value === first) ? first : undefined;
}

/** The parser's `looks-binary` verdict on the start of `body` (NUL or many control octets: compressed, an image). */
function looksBinary(body: Buffer): boolean {
  return parseRobotsTxt(body.subarray(0, 4096)).warnings.some((warning) => warning.code === 'looks-binary');
}

/** The first value of a header that may repeat. */
function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Reads a little of an unwanted body so the connection can be reused, then drops it; errors are irrelevant. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.dump({ limit: DISCARD_LIMIT_BYTES }).catch(() => undefined);
}

/** A stable code for a network failure: the error's (or its cause's) `code`, undici codes renamed. */
function errorCodeOf(error: unknown): string {
  const code = codeOf(error) ?? codeOf((error as { cause?: unknown } | undefined)?.cause);
  if (code === undefined) return 'fetch-failed';
  return ERROR_CODE_NAMES[code] ?? code;
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && code !== '' ? code : undefined;
}
