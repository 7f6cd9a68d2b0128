/**
 * Forwards allowed requests upstream through one undici `Pool` per origin
 * (keep-alive, bounded by an LRU of origins) and relays the response straight
 * into the client's `ServerResponse` with a dispatch handler: no intermediate
 * body stream, backpressure through the parser's pause and resume. The handler
 * is undici's raw one (`onHeaders(status, rawHeaders)`): the response head
 * arrives as the origin's raw fields and no header object is built for it
 * (issue 11). Upgrade requests (WebSocket) go through http-proxy instead; see
 * upgrade.ts.
 */
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { SecureContext } from 'node:tls';
import { Pool, buildConnector, type Dispatcher } from 'undici';
import { LRUCache } from 'lru-cache';
import { systemClock, type Clock } from '../clock.js';
import { HoldList, type HeldSlot } from '../pacing/hold-list.js';
import { upstreamConnector } from '../upstream-connector.js';
import { startFinalHeadDeadline, type FinalHeadDeadline } from './final-head-deadline.js';

/** Options of {@link UpstreamForwarder}. Durations in ms. */
export interface ForwarderOptions {
  /** Time to open the TCP (and TLS) connection, ms. */
  connectTimeoutMs: number;
  /** Longest wait for response headers, and longest silence in the body, ms. */
  timeoutMs: number;
  /** TLS trust for https upstreams (system CAs plus `upstream.caFile`), built once; undefined: Node's defaults. */
  secureContext?: SecureContext;
  /**
   * Builds the connector of each origin's pool from its connect options
   * (timeout, TLS trust): the target guard's, which judges the address every
   * connection uses. @default undici's `buildConnector`
   */
  createConnector?: (options: buildConnector.BuildOptions) => buildConnector.connector;
  /** Origins with an open pool at once (LRU; the least recently used pool is closed). @default 1000 */
  maxOrigins?: number;
  /** Connections per origin pool. @default 64 */
  connectionsPerOrigin?: number;
  /**
   * Longest time the client may leave response bytes unread, ms: a write that waits for the
   * client's socket to drain (TCP backpressure) this long, or a response end not flushed in this
   * time, closes the client connection and abandons the upstream exchange (`CLIENT_WRITE_TIMEOUT`).
   * 0: no bound. @default 0
   */
  responseWriteTimeoutMs?: number;
  /** Time and timers of the write bound. @default systemClock */
  clock?: Clock;
  /**
   * Keeps the place of `res`'s client connection in the connection caps while an exchange runs on
   * after that client left (see `ResponseRelay.clientClosed`); returns its release, called once
   * when the exchange settles. The connection guard's `holdPlace` (connection-guard.ts). @default none
   */
  holdClientPlace?: (res: ServerResponse) => () => void;
}

/** Error code of a relay cut because the client did not read the response in time. */
export const CLIENT_WRITE_TIMEOUT = 'CLIENT_WRITE_TIMEOUT';

/** One request to send upstream. Headers must already be forwardable (no hop-by-hop fields; headers.ts). */
export interface UpstreamRequest {
  /** `scheme://host[:port]`. */
  origin: string;
  method: string;
  /** Path plus query, origin-form. */
  path: string;
  /** A flat array `[name, value, ...]` (as {@link upstreamRequestFields} makes it), or an object by name. */
  headers: string[] | Record<string, string | string[]>;
  /** The request body, or null when there is none. */
  body: Readable | null;
}

/** Callbacks of {@link UpstreamForwarder.relay}. */
export interface RelayHooks {
  /** undici hands the request to a connection now (right before the head is written). */
  onSent(): void;
  /**
   * The final response head arrived: write it to the client. `rawHeaders` is undici's raw head,
   * `[name, value, name, value, ...]` as the origin wrote it (`Buffer`s; every field, hop-by-hop
   * ones included, in the origin's order and spelling: `forwardableResponseFields` in headers.ts
   * makes the fields to relay). The body follows into the same response. Called with the first
   * body byte, or at the end of a response without a body; never when the origin fails before
   * either.
   */
  onResponseHead(status: number, rawHeaders: readonly Buffer[]): void;
  /**
   * The upstream response ended (the origin's part is over); the last bytes may still be on
   * their way to the client, and the relay settles once they are flushed. Optional.
   */
  onUpstreamEnd?(): void;
  /**
   * The exchange is over (exactly once, after `onUpstreamEnd` when the upstream response ended):
   * how it ended. Called from the relay's event handlers (undici's dispatch callbacks, the
   * response's events) or, when the dispatch throws, from within {@link UpstreamForwarder.relay}:
   * it must not throw. A callback, not a promise: no promise, no resolve functions and no
   * microtask per request (issue 11).
   */
  onSettled(outcome: RelayOutcome): void;
}

/** How a relay ended. */
export interface RelayOutcome {
  /** Upstream status, or undefined when no response head arrived. */
  status: number | undefined;
  /** Body bytes written to the client. */
  bytesSent: number;
  /** Error code when the exchange failed (`ECONNREFUSED`, `UND_ERR_HEADERS_TIMEOUT`, ...); undefined on success. */
  error: string | undefined;
  /** True when the client went away first (the upstream exchange was aborted). */
  clientAborted: boolean;
  /** True when the upstream response had ended (whatever happened to its delivery to the client). */
  upstreamEnded: boolean;
}

/**
 * Relays an origin's `103 Early Hints` (RFC 8297) to the client before the final response: its
 * `Link` fields only (what the status is defined for; the others may be hop-by-hop), through Node's
 * `writeEarlyHints`. RFC 9110 §15.2: a proxy forwards a 1xx unless the client's connection is
 * HTTP/1.0 (or earlier), which cannot parse one: then, and when there is no `Link` field, nothing
 * is sent. Once the final head is out (never, as the relay holds it until the first body byte),
 * or for a `Link` value Node refuses (`ERR_INVALID_ARG_VALUE`), the hints are dropped: the final
 * response is the answer either way. Never throws.
 * @param rawHeaders undici's raw fields of the 103, `[name, value, ...]` as `Buffer`s.
 */
function relayEarlyHints(res: ServerResponse, rawHeaders: readonly Buffer[]): void {
  if (res.headersSent || res.req.httpVersionMajor < 1 || (res.req.httpVersionMajor === 1 && res.req.httpVersionMinor === 0)) return;
  const links: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] as Buffer).toString('latin1').toLowerCase() === 'link') links.push((rawHeaders[i + 1] as Buffer).toString('latin1'));
  }
  if (links.length === 0) return;
  try {
    res.writeEarlyHints({ link: links });
  } catch {
    // A Link value Node's validation refuses: not relayed.
  }
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
  return 'UPSTREAM_ERROR';
}

/**
 * The relays waiting for the client to take their bytes, under one write bound: a FIFO list with
 * one timer (`hold-list.ts`), not a timer per relay. Every response waits here once, for its tail
 * to be flushed (issue 11: a `setTimeout` and a `clearTimeout` per request before).
 */
type WriteDeadlines = HoldList<ResponseRelay>;

/**
 * Relays one upstream response into a ServerResponse, with undici's raw dispatch handler API
 * (`onConnect`, `onHeaders`, `onData`, `onComplete`, `onError`): undici hands it the raw head and
 * calls it without the wrapper, controller object and parsed header object its newer
 * `onResponseStart` API costs per request (issue 11).
 */
/** What the caller of {@link UpstreamForwarder.relay} may tell a relay. */
export interface RelayControl {
  /**
   * The response's `close` was emitted: a client that left before the response finished aborts
   * the upstream exchange. Idempotent; nothing once the relay settled. Never throws.
   */
  clientClosed(): void;
}

class ResponseRelay implements Dispatcher.DispatchHandler, HeldSlot, RelayControl {
  /** undici's abort of this exchange, once it has a connection (undefined: not started). */
  private abortUpstream: ((err?: Error) => void) | undefined = undefined;
  /** undici's resume of a paused response. */
  private resumeUpstream: (() => void) | undefined = undefined;
  private status: number | undefined;
  /** The final response head's raw fields, until the first body byte or the end hands them to `hooks.onResponseHead`. */
  private pendingHead: readonly Buffer[] | undefined = undefined;
  private bytesSent = 0;
  private clientAborted = false;
  private upstreamEnded = false;
  private writeTimedOut = false;
  private settled = false;
  /** When undici handed the request to a connection, ms (the clock's). */
  private sentAtMs = 0;
  /** The bound on the wait for the final head, armed at the first 1xx (final-head-deadline.ts). */
  private finalHeadDeadline: FinalHeadDeadline | undefined = undefined;
  /** When the current wait for the client began, ms (the write deadline list's clock). */
  startedAtMs = 0;
  holdPrev: HeldSlot | undefined = undefined;
  holdNext: HeldSlot | undefined = undefined;
  /** True while a write deadline runs for this relay. */
  isHeld = false;

  /** The relay's own `close` listener on the response, when the caller does not watch it (see {@link UpstreamForwarder.relay}). */
  private closeListener: (() => void) | undefined = undefined;
  /** The `drain` listener, while a write waits for the client (made on first need: most responses never wait). */
  private drainListener: (() => void) | undefined = undefined;
  /** The `finish` listener, while the response's tail waits to be flushed (made on first need). */
  private flushListener: (() => void) | undefined = undefined;
  /** The forwarder's `holdClientPlace`, set by {@link UpstreamForwarder.relay} when configured. */
  holdClientPlace: ((res: ServerResponse) => () => void) | undefined = undefined;
  /** Releases the client connection's place held while the exchange outlives its client. */
  private releasePlace: (() => void) | undefined = undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly hooks: RelayHooks,
    /** The write bound's list, or undefined when there is no bound. */
    private readonly writeDeadlines: WriteDeadlines | undefined,
    private readonly clock: Clock,
    callerWatchesClose: boolean,
    /** `upstream.timeout`, ms: the longest wait for the final head, 1xx heads included. */
    private readonly timeoutMs: number,
  ) {
    if (callerWatchesClose) return;
    // `close` is emitted once: `on`, not `once` (no wrapper per request).
    this.closeListener = () => this.clientClosed();
    res.on('close', this.closeListener);
  }

  /**
   * The client's response closed (its `close` event): unless it had finished, the client went
   * away, and the upstream exchange is aborted (or, when it is over already, the relay settles).
   * Idempotent; nothing once settled.
   */
  clientClosed(): void {
    if (this.res.writableFinished || this.settled || this.writeTimedOut || this.clientAborted) return;
    this.clientAborted = true;
    // Upstream done (or never started): nothing will call back; settle now.
    if (this.upstreamEnded || this.abortUpstream === undefined) return this.finish(undefined);
    // Sent and not yet answered: the origin is working on it whether or not the client waits, so the
    // exchange (and the start slot the pipeline releases when it settles) lasts until the origin's
    // head (onHeaders aborts it there) or the upstream timeout. Aborted at once, a client that
    // leaves right after each request would keep any number of requests in the origin's hands
    // past maxConcurrency, or overlap a slow origin under a crawl-delay (DESIGN.md, Pacing
    // semantics: only one request in flight). Closing the upstream connection does not stop the
    // origin's work (upstream-abandoned requests run on in most servers).
    // A request whose body the client did not finish is no request the origin can serve: aborted at once.
    // Its upstream socket outlives the client's, so the client's place in the connection caps
    // (each place budgets a client socket and its upstream socket) is kept until then.
    if (this.status === undefined && this.res.req.complete) {
      this.releasePlace = this.holdClientPlace?.(this.res);
      return;
    }
    this.abortUpstream(new Error('client closed the connection'));
  }

  private onDrain(): void {
    this.drainListener = undefined;
    this.clearWriteTimer();
    this.resumeUpstream?.();
  }

  /** The client has the write bound (`responseWriteTimeoutMs`) to take the bytes waiting for it. */
  private armWriteTimer(): void {
    if (this.writeDeadlines === undefined || this.isHeld) return;
    this.startedAtMs = this.clock.nowMs();
    this.writeDeadlines.add(this);
  }

  private clearWriteTimer(): void {
    this.writeDeadlines?.remove(this);
  }

  /** The write bound passed (called by the deadline list, which has already let go of this relay). */
  onWriteTimeout(): void {
    if (this.settled) return;
    this.writeTimedOut = true;
    // Headers are out: a close is the only answer left. The origin's exchange is abandoned too.
    this.res.destroy();
    if (this.upstreamEnded || this.abortUpstream === undefined) return this.finish(CLIENT_WRITE_TIMEOUT);
    this.abortUpstream(Object.assign(new Error('the client did not read the response in time'), { code: CLIENT_WRITE_TIMEOUT }));
  }

  private finish(error: string | undefined): void {
    if (this.settled) return;
    this.settled = true;
    this.clearWriteTimer();
    this.finalHeadDeadline?.cancel();
    // Only the listeners this relay added (a removal that finds nothing still costs a call per event, issue 11).
    if (this.closeListener !== undefined) this.res.off('close', this.closeListener);
    if (this.drainListener !== undefined) this.res.off('drain', this.drainListener);
    if (this.flushListener !== undefined) this.res.off('finish', this.flushListener);
    this.closeListener = this.drainListener = this.flushListener = undefined;
    this.releasePlace?.();
    this.releasePlace = undefined;
    this.hooks.onSettled({ status: this.status, bytesSent: this.bytesSent, error, clientAborted: this.clientAborted, upstreamEnded: this.upstreamEnded });
  }

  /** undici hands the request to a connection (`abort` ends the exchange with an error). */
  onConnect(abort: (err?: Error) => void): void {
    this.abortUpstream = abort;
    this.sentAtMs = this.clock.nowMs();
    if (this.clientAborted) return abort(new Error('client closed the connection'));
    this.hooks.onSent();
  }

  /**
   * A response head: `rawHeaders` as the origin wrote them, `Buffer`s (views of the bytes read,
   * never reused by undici). Returns true: the body may flow.
   */
  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) {
      // undici restarts its headers timeout at each 1xx: this bounds the wait for the final head.
      this.finalHeadDeadline ??= startFinalHeadDeadline(this.sentAtMs, this.clock.nowMs(), this.timeoutMs, (error) => this.abortUpstream?.(error));
      // Other 1xx (102, 104...) are dropped: RFC 9110 §15.2 lets a client ignore them. A 100 never gets here (upstream-continue.ts).
      if (statusCode === 103) relayEarlyHints(this.res, rawHeaders);
      return true;
    }
    this.finalHeadDeadline?.cancel();
    this.status = statusCode;
    // The client left while the origin was working (clientClosed): the origin has answered; now the exchange ends.
    if (this.clientAborted) {
      (this.abortUpstream as (err?: Error) => void)(new Error('client closed the connection'));
      return false;
    }
    this.resumeUpstream = resume;
    // Handed to the hook with the first body byte or the end: Node puts a head on the wire only
    // then anyway, and an origin that fails before either (a malformed first chunk, a reset) leaves
    // the response unwritten, so the client gets the proxy's 502 instead of a close without a byte.
    this.pendingHead = rawHeaders;
    // A 204 or 304 has no body whatever its fields say (RFC 9112 §6.3 item 1), and a 304 may carry
    // the representation's Content-Length (RFC 9110 §8.6). undici takes a Content-Length on them as
    // a body owed and fails the exchange (`UND_ERR_RES_CONTENT_LENGTH_MISMATCH`) once the head is
    // read: the response is complete with its head, so it ends here (undici's failure that follows
    // is ignored, see onError; without a Content-Length undici's own onComplete follows, a no-op).
    if (statusCode === 204 || statusCode === 304) this.onComplete();
    return true;
  }

  /** Hands the held response head to the hook (once). */
  private writeHead(): void {
    const headers = this.pendingHead;
    if (headers === undefined) return;
    this.pendingHead = undefined;
    this.hooks.onResponseHead(this.status as number, headers);
  }

  /** A body chunk: written to the client; false (pause the origin's response) while the client's socket is full. */
  onData(chunk: Buffer): boolean {
    if (this.pendingHead !== undefined) this.writeHead();
    this.bytesSent += chunk.length;
    if (this.res.write(chunk)) return true;
    if (this.drainListener === undefined) {
      this.drainListener = () => this.onDrain();
      this.res.once('drain', this.drainListener);
    }
    this.armWriteTimer();
    return false;
  }

  /** The response ended (trailers are not relayed). */
  onComplete(): void {
    if (this.upstreamEnded) return; // a 204/304 already ended at its head (onHeaders)
    if (this.pendingHead !== undefined) this.writeHead();
    this.upstreamEnded = true;
    this.hooks.onUpstreamEnd?.();
    this.res.end();
    // Nothing left buffered in the process on a live socket (the last write went to the kernel at
    // once, as nearly always): flushed as far as Node can tell, and 'finish' follows on the next
    // tick with no I/O in between. Settled now: no 'finish' listener and no write deadline per
    // response (issue 11). A socket already destroyed takes the old way: its 'close' tells the abort.
    const socket = this.res.socket;
    if (this.res.writableFinished || (socket !== null && !socket.destroyed && this.res.writableLength === 0)) return this.finish(undefined);
    // The tail is still buffered for the client: settle when it is flushed, or at the write timeout.
    // `finish` is emitted once and finish() removes the listener: `on`, not `once` (no wrapper per request).
    this.flushListener = () => this.finish(undefined);
    this.res.on('finish', this.flushListener);
    this.armWriteTimer();
  }

  /** The exchange failed (upstream error, timeout, or an abort of ours). */
  onError(error: Error): void {
    // The origin's part was over (a 204/304 ended at its head): a failure of its connection after
    // that is not this exchange's; the client's own ending (close, write timeout) settles it.
    if (this.upstreamEnded && !this.clientAborted && !this.writeTimedOut) return;
    this.finish(this.writeTimedOut ? CLIENT_WRITE_TIMEOUT : this.clientAborted ? 'CLIENT_ABORTED' : upstreamErrorCode(error));
  }
}

/** Owns the per-origin pools. Lifecycle: `close()` on shutdown. */
export class UpstreamForwarder {
  private readonly pools: LRUCache<string, Pool>;
  private timeoutMs: number;
  private connectTimeoutMs: number;
  private responseWriteTimeoutMs: number;
  private readonly clock: Clock;
  /** The write bound in force; relays under an earlier one keep theirs. */
  private writeDeadlines: WriteDeadlines | undefined;

  constructor(private readonly options: ForwarderOptions) {
    this.timeoutMs = options.timeoutMs;
    this.connectTimeoutMs = options.connectTimeoutMs;
    this.responseWriteTimeoutMs = options.responseWriteTimeoutMs ?? 0;
    this.clock = options.clock ?? systemClock;
    this.writeDeadlines = this.writeDeadlinesFor(this.responseWriteTimeoutMs);
    this.pools = new LRUCache<string, Pool>({
      max: options.maxOrigins ?? 1000,
      dispose: (pool) => void pool.close().catch(() => undefined),
    });
  }

  private writeDeadlinesFor(timeoutMs: number): WriteDeadlines | undefined {
    return timeoutMs > 0 ? new HoldList<ResponseRelay>(this.clock, timeoutMs, (relay) => relay.onWriteTimeout()) : undefined;
  }

  private poolFor(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, {
        connections: this.options.connectionsPerOrigin ?? 64,
        pipelining: 1,
        // A reset fails the response in flight, whatever its framing; an unsolicited 100 Continue
        // is read past (upstream-connector.ts).
        connect: upstreamConnector(
          (this.options.createConnector ?? buildConnector)({
            timeout: this.connectTimeoutMs,
            ...(this.options.secureContext ? { secureContext: this.options.secureContext } : {}),
          } as buildConnector.BuildOptions),
        ),
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /**
   * Sends one request upstream and relays the response into `res`
   * (`hooks.onResponseHead` writes the head). The end comes back through
   * `hooks.onSettled`, exactly once, never as a throw: failures are `error`
   * codes. When the client goes away, or leaves the response unread past
   * `responseWriteTimeoutMs` (`CLIENT_WRITE_TIMEOUT`), the upstream exchange is
   * aborted. Settles once the response is flushed to the client, after
   * `hooks.onUpstreamEnd`; when the dispatch itself throws, before this returns.
   * @param callerWatchesClose true when the caller already listens to `res`'s `close` and calls
   *   the returned {@link RelayControl.clientClosed} from there, for as long as the relay has not
   *   settled: the relay then adds no listener of its own (one `close` listener per response
   *   fewer, issue 11). @default false
   * @returns the relay's control (the caller's way to tell it the client's `close`).
   */
  relay(request: UpstreamRequest, res: ServerResponse, hooks: RelayHooks, callerWatchesClose = false): RelayControl {
    const handler = new ResponseRelay(res, hooks, this.writeDeadlines, this.clock, callerWatchesClose, this.timeoutMs);
    handler.holdClientPlace = this.options.holdClientPlace;
    try {
      this.poolFor(request.origin).dispatch(
        {
          origin: request.origin,
          method: request.method as Dispatcher.HttpMethod,
          path: request.path,
          headers: request.headers,
          body: request.body,
          // Per request, so a reloaded `upstream.timeout` applies at once, on pooled connections too.
          headersTimeout: this.timeoutMs,
          bodyTimeout: this.timeoutMs,
        },
        handler,
      );
    } catch (err) {
      handler.onError(err as Error);
    }
    return handler;
  }

  /**
   * Applies reloaded timeouts, ms. `timeoutMs` and `responseWriteTimeoutMs` hold for every
   * request sent from now on; a new `connectTimeoutMs` is built into new pools, so the open
   * pools are closed gracefully (their requests in flight finish) and replaced on next use.
   */
  setTimeouts(timeouts: { timeoutMs: number; connectTimeoutMs: number; responseWriteTimeoutMs: number }): void {
    this.timeoutMs = timeouts.timeoutMs;
    if (timeouts.responseWriteTimeoutMs !== this.responseWriteTimeoutMs) {
      // Relays already waiting keep the bound they started under; their list expires them.
      this.responseWriteTimeoutMs = timeouts.responseWriteTimeoutMs;
      this.writeDeadlines = this.writeDeadlinesFor(this.responseWriteTimeoutMs);
    }
    if (timeouts.connectTimeoutMs === this.connectTimeoutMs) return;
    this.connectTimeoutMs = timeouts.connectTimeoutMs;
    this.pools.clear(); // dispose: pool.close(), which lets requests in flight finish
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
