/**
 * Forwards allowed requests upstream through one undici `Pool` per origin
 * (keep-alive, bounded by an LRU of origins) and streams the response back.
 * Upgrade requests (WebSocket) go through http-proxy instead; see upgrade.ts.
 */
import { rootCertificates } from 'node:tls';
import type { Readable } from 'node:stream';
import type { LookupFunction } from 'node:net';
import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { LRUCache } from 'lru-cache';

/** Options of {@link UpstreamForwarder}. Durations in ms. */
export interface ForwarderOptions {
  /** Time to open the TCP (and TLS) connection, ms. */
  connectTimeoutMs: number;
  /** Longest wait for response headers, and longest silence in the body, ms. */
  timeoutMs: number;
  /** Extra PEM CA certificates trusted for upstream TLS, besides the system ones. */
  extraCaPems?: string[];
  /** DNS lookup used for every connection (the private-network guard). */
  lookup?: LookupFunction;
  /** Origins with an open pool at once (LRU; the least recently used pool is closed). @default 1000 */
  maxOrigins?: number;
  /** Connections per origin pool. @default 64 */
  connectionsPerOrigin?: number;
}

/** One request to send upstream. Headers must already be forwardable (no hop-by-hop fields). */
export interface UpstreamRequest {
  /** `scheme://host[:port]`. */
  origin: string;
  method: string;
  /** Path plus query, origin-form. */
  path: string;
  headers: Record<string, string | string[]>;
  /** The request body, or null when there is none. */
  body: Readable | null;
  /** Aborts the upstream exchange (client gone). */
  signal: AbortSignal;
  /** Called when undici is about to write the request on a connection (after any connect). */
  onSent?: () => void;
}

/** The upstream response head and its body stream. */
export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: Readable;
}

/** Error codes that mean the upstream did not answer in time (answered 504). */
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);

/** True when an upstream error code is a timeout. */
export function isTimeoutCode(code: string | undefined): boolean {
  return code !== undefined && TIMEOUT_CODES.has(code);
}

/** The stable code of an upstream failure (`ECONNREFUSED`, `UND_ERR_HEADERS_TIMEOUT`, `CERT_HAS_EXPIRED`, ...). */
export function upstreamErrorCode(err: unknown): string {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  if (e && typeof e.cause?.code === 'string') return e.cause.code;
  if (e && typeof e.code === 'string') return e.code;
  if (err instanceof undiciErrors.RequestAbortedError) return 'UND_ERR_ABORTED';
  return 'UPSTREAM_ERROR';
}

/** Request option carrying the "sent" callback through undici to {@link reportWhenSent}. */
const ON_SENT = Symbol('robots-proxy.onSent');

/**
 * An undici interceptor that calls the request's `ON_SENT` callback when the
 * client hands the request to a connection (`onConnect` / `onRequestStart`,
 * right before the head is written), so pacing can count from that moment.
 */
function reportWhenSent(dispatch: Dispatcher['dispatch']): Dispatcher['dispatch'] {
  return (options, handler) => {
    const onSent = (options as unknown as Record<symbol, (() => void) | undefined>)[ON_SENT];
    if (onSent === undefined) return dispatch(options, handler);
    let isReported = false;
    const report = (): void => {
      if (isReported) return;
      isReported = true;
      onSent();
    };
    const wrapped = new Proxy(handler, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (typeof value !== 'function') return value;
        if (property === 'onConnect' || property === 'onRequestStart') {
          return (...args: unknown[]) => {
            report();
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return (value as (...a: unknown[]) => unknown).bind(target);
      },
    });
    return dispatch(options, wrapped);
  };
}

/** Owns the per-origin pools. Lifecycle: `close()` on shutdown. */
export class UpstreamForwarder {
  private readonly pools: LRUCache<string, Pool>;
  private readonly dispatchers = new WeakMap<Pool, Dispatcher>();
  private readonly ca: string[] | undefined;

  constructor(private readonly options: ForwarderOptions) {
    this.ca = options.extraCaPems && options.extraCaPems.length > 0 ? [...rootCertificates, ...options.extraCaPems] : undefined;
    this.pools = new LRUCache<string, Pool>({
      max: options.maxOrigins ?? 1000,
      dispose: (pool) => void pool.close().catch(() => undefined),
    });
  }

  private dispatcherFor(origin: string): Dispatcher {
    const pool = this.poolFor(origin);
    let dispatcher = this.dispatchers.get(pool);
    if (dispatcher === undefined) {
      dispatcher = pool.compose(reportWhenSent);
      this.dispatchers.set(pool, dispatcher);
    }
    return dispatcher;
  }

  private poolFor(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, {
        connections: this.options.connectionsPerOrigin ?? 64,
        pipelining: 1,
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
        connect: {
          timeout: this.options.connectTimeoutMs,
          ...(this.ca ? { ca: this.ca } : {}),
          ...(this.options.lookup ? { lookup: this.options.lookup } : {}),
        },
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /**
   * Sends one request upstream. Resolves when the response head arrives.
   * @throws the undici / socket error (use {@link upstreamErrorCode}); an
   *   aborted signal rejects with `UND_ERR_ABORTED`.
   */
  async forward(request: UpstreamRequest): Promise<UpstreamResponse> {
    const dispatcher = this.dispatcherFor(request.origin);
    const options = {
      origin: request.origin,
      method: request.method as 'GET',
      path: request.path,
      headers: request.headers,
      body: request.body,
      signal: request.signal,
      ...(request.onSent ? { [ON_SENT]: request.onSent } : {}),
    };
    const response = await dispatcher.request(options);
    return { status: response.statusCode, headers: response.headers as Record<string, string | string[]>, body: response.body };
  }

  /** Pools open now. */
  get openPools(): number {
    return this.pools.size;
  }

  /** Closes every pool (in-flight requests are aborted). */
  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.destroy().catch(() => undefined)));
  }
}
