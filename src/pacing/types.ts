/**
 * The values the pacer hands out: slots, refusals and statistics
 * (DESIGN.md "Pacing semantics").
 */
import type { PacingOptions } from './pacing-options.js';

/** What the caller learned from upstream when it releases a slot (or, for `applyOverload`, from the origin's robots.txt). */
export interface ReleaseOutcome {
  /** The upstream response status; omit when no response arrived (error, timeout, client gone). */
  status?: number;
  /** The upstream `Retry-After` field value (RFC 9110 §10.2.3), if any; read on 429 and 503 only. */
  retryAfter?: string | null;
}

/** Permission to send one request upstream now. Release it exactly once, when the exchange ends. */
export interface Slot {
  /** The origin the slot is for. */
  readonly origin: string;
  /** The delay the request was paced with, ms. */
  readonly delayMs: number;
  /** When the request was allowed to start, ms since the epoch (the pacer's clock). */
  readonly startedAtMs: number;
  /** How long the request waited in the queue, ms (0 when it started at once). */
  readonly waitedMs: number;
  /**
   * Records that the request was actually written upstream now. When it is the
   * origin's latest start, the start is moved to now, so the next start is
   * spaced from the moment the request really left (dispatch latency cannot
   * shrink the gap the origin sees). Never moves a start earlier; never throws.
   */
  markSent(): void;
  /**
   * Ends the request: frees its concurrency, records its end (the `end-to-start` model measures
   * from here) and applies an overload answer (429/503: pause; other status: recovery step).
   * Later calls, and calls after `close()`, do nothing; except that after the pacer released the
   * slot itself (`maxSlotHoldMs`), the first call still applies its overload answer, so a late
   * 429/503 still pauses the origin. Never throws.
   */
  release(outcome?: ReleaseOutcome): void;
}

/** An abort listener object (`handleEvent` is called with no useful argument). */
export interface AbortListener {
  handleEvent(): void;
}

/**
 * What `acquire` needs of an abort signal: a standard `AbortSignal` fits, and so does the much
 * cheaper {@link CancelSignal} (see `cancel-signal.ts`), which the proxy uses.
 */
export interface AbortSignalLike {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: AbortListener): void;
  removeEventListener(type: 'abort', listener: AbortListener): void;
}

/** Options of one `Pacer.acquire` call. */
export interface AcquireOptions {
  /**
   * Who is asking, as the caller names clients (any string; compared exactly): the origin's
   * queue serves identities round-robin, each identity's requests in arrival order, and
   * `maxQueuePerIdentity` bounds each identity's waiting requests per origin.
   */
  identity: string;
  /** Aborting it while the request waits takes it out of the queue (`aborted`). */
  signal?: AbortSignalLike;
  /** Per-origin override of `maxConcurrency` (integer >= 1). */
  maxConcurrency?: number;
  /**
   * Called once when the pacer releases the granted slot itself because it was held for
   * `maxSlotHoldMs` (the holder may log it and carry on; its own `release` is then a no-op but
   * for the overload answer). `heldMs`: time since the slot was granted.
   */
  onHoldExceeded?: (heldMs: number) => void;
  /**
   * Recomputes `delayMs` and `maxConcurrency` when `Pacer.reconfigure` runs while this request
   * waits (the operator's minimums may have changed); a result out of bounds (or a throw) keeps
   * the previous values.
   */
  limits?: () => RequestLimits;
}

/** A request's delay (ms, >= 0) and its per-origin concurrency override (integer >= 1), as the caller computes them. */
export interface RequestLimits {
  delayMs: number;
  maxConcurrency?: number;
}

/**
 * Why `acquire` gave no slot.
 * - `queue-full`: answer 429 with `Retry-After: retryAfterSeconds` (DESIGN.md status table).
 *   `limit` says which bound was hit: `max-queue-per-identity` (the request's identity already
 *   had `maxQueuePerIdentity` waiting at the origin), `max-queue` (the origin already had
 *   `maxQueue` waiting) or `max-wait` (the expected wait exceeded `maxWaitMs`); when several
 *   were hit, the first in that order.
 * - `aborted`: the caller's signal aborted before a slot was granted; nothing may be sent upstream.
 * - `closed`: the pacer was closed.
 * - `fleet-unavailable`: a fleet's Redis does not answer and the operator chose `deny` (issue 10).
 */
export type Refusal =
  | {
      reason: 'queue-full';
      limit: 'max-queue-per-identity' | 'max-queue' | 'max-wait';
      /** Whole seconds (>= 1): the expected wait, rounded up. */
      retryAfterSeconds: number;
      /** Requests waiting at the origin when this one was refused. */
      queueLength: number;
      /** Requests of this request's identity among them. */
      identityQueueLength: number;
      /** This request's delay, ms. */
      delayMs: number;
      /**
       * The estimate the refusal was based on, ms: the wait behind the requests that start before
       * this one in round-robin order (a lower bound in the start-to-start and end-to-start models:
       * response times, later arrivals and aborts are unknown; see `Pacer`).
       */
      expectedWaitMs: number;
    }
  | { reason: 'aborted' }
  | { reason: 'closed' }
  | {
      /** The fleet's shared state (Redis) is unreachable and `state.redis.onUnavailable` is `deny`: answer 503. */
      reason: 'fleet-unavailable';
      /** Whole seconds (>= 1) to suggest in `Retry-After`. */
      retryAfterSeconds: number;
    };

/** The result of `Pacer.acquire`: a slot, or the reason there is none. */
export type AcquireOutcome = { granted: true; slot: Slot } | { granted: false; refusal: Refusal };

/**
 * A request waiting for a start slot, told the pacer's answer by a method call (`Pacer.acquireFor`):
 * no promise, no closure and no microtask of its own per waiting request (issue 11). The caller's
 * own per-request record (the proxy's exchange) is the taker.
 */
export interface SlotTaker {
  /**
   * The answer for a request that had to wait: a granted slot (release it exactly once), or a
   * refusal (`aborted`: its signal aborted while it waited, or before a granted slot reached it;
   * `closed`). Called exactly once, never from inside `acquireFor`, and never from inside another
   * slot's `release`: the pacer delivers its answers from one microtask per event-loop turn, in
   * the order they were decided. Must not throw (a throw is reported as uncaught; the answers
   * after it are still delivered).
   */
  takeSlot(outcome: AcquireOutcome): void;
}

/** One origin's pacing figures. */
export interface OriginPacingStats {
  origin: string;
  /** Requests waiting. */
  queued: number;
  /** Identities with requests waiting (the round-robin's turns per round). */
  queuedIdentities: number;
  /** Requests started and not yet released. */
  inFlight: number;
  /** End of the current overload pause, ms since the epoch, or undefined when not paused. */
  pausedUntilMs: number | undefined;
  /** Latest start, ms since the epoch, or undefined. */
  lastStartMs: number | undefined;
  /** Concurrency cap while recovering from an overload pause, or undefined when recovered. */
  recoveryCap: number | undefined;
}

/** Figures over all origins the pacer holds state for. */
export interface PacingStats {
  /** Origins with state (busy, or still constrained by a delay or pause). */
  origins: number;
  queued: number;
  inFlight: number;
  /** Origins currently paused by an overload answer. */
  pausedOrigins: number;
  byOrigin: OriginPacingStats[];
}

/**
 * What the proxy needs of a pacer: the in-process {@link Pacer}, or a fleet's (`fleet-pacer.ts`),
 * which puts the fleet-wide slot behind the local one.
 */
export interface RequestPacer {
  /** See `Pacer.acquire`: the outcome itself when known at once, else a promise of it. */
  acquire(origin: string, delayMs: number, options: AcquireOptions): AcquireOutcome | Promise<AcquireOutcome>;
  /** See `Pacer.acquireFor`: the outcome itself when known at once, else undefined and `taker` is told later. */
  acquireFor(origin: string, delayMs: number, options: AcquireOptions, taker: SlotTaker): AcquireOutcome | undefined;
  /**
   * See `Pacer.applyOverload`: the origin's robots.txt answered 429/503, so its pages pause (a
   * fleet's pacer shares the pause with every instance).
   * @returns the pause's end, ms since the epoch, or undefined when nothing was paused. Never throws.
   */
  applyOverload(origin: string, answer: ReleaseOutcome): number | undefined;
  /** See `Pacer.originStats`. */
  originStats(origin: string): OriginPacingStats | undefined;
  /** See `Pacer.stats`. */
  stats(): PacingStats;
  /** See `Pacer.reconfigure`. */
  reconfigure(options: PacingOptions): void;
  /** See `Pacer.close`. */
  close(): void;
}
