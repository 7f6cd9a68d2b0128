/**
 * The values the pacer hands out: slots, refusals and statistics
 * (DESIGN.md "Pacing semantics").
 */

/** What the caller learned from upstream when it releases a slot. */
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

/** Options of one `Pacer.acquire` call. */
export interface AcquireOptions {
  /** Aborting it while the request waits takes it out of the queue (`aborted`). */
  signal?: AbortSignal;
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
 *   `limit` says which bound was hit: `max-queue` (the origin already had `maxQueue` waiting)
 *   or `max-wait` (the expected wait exceeded `maxWaitMs`).
 * - `aborted`: the caller's signal aborted before a slot was granted; nothing may be sent upstream.
 * - `closed`: the pacer was closed.
 */
export type Refusal =
  | {
      reason: 'queue-full';
      limit: 'max-queue' | 'max-wait';
      /** Whole seconds (>= 1): the expected wait, rounded up. */
      retryAfterSeconds: number;
      /** Requests waiting at the origin when this one was refused. */
      queueLength: number;
      /** This request's delay, ms. */
      delayMs: number;
      /** The estimate the refusal was based on, ms (a lower bound: response times are unknown). */
      expectedWaitMs: number;
    }
  | { reason: 'aborted' }
  | { reason: 'closed' };

/** The result of `Pacer.acquire`: a slot, or the reason there is none. */
export type AcquireOutcome = { granted: true; slot: Slot } | { granted: false; refusal: Refusal };

/** One origin's pacing figures. */
export interface OriginPacingStats {
  origin: string;
  /** Requests waiting. */
  queued: number;
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
