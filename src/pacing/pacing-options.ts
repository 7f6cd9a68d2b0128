/**
 * Options of the per-origin pacer and their defaults (DESIGN.md "Pacing
 * semantics"; crawl-delay is an extension, RFC 9309 §2.2.4).
 */

/**
 * How a request's delay spaces it from earlier requests to the same origin.
 * In every model a request with a delay > 0 runs alone: it starts only when
 * nothing else is in flight to its origin, and nothing starts while it is in
 * flight (a slow origin is never overlapped).
 * - `start-to-start`: start >= previous start + delay.
 * - `end-to-start`: start >= previous end (release) + delay.
 * - `window`: a sliding window; see {@link windowLimitFor}.
 */
export type PacingModel = 'start-to-start' | 'end-to-start' | 'window';

/** Options of a `Pacer`. Durations in milliseconds. */
export interface PacingOptions {
  /** Timing model. @default 'start-to-start' */
  model?: PacingModel;
  /** Requests in flight per origin when the request has no delay; integer >= 1. Overridable per call. */
  maxConcurrency: number;
  /** A request whose expected wait exceeds this is refused at once, ms (>= 0). */
  maxWaitMs: number;
  /** Waiting requests per origin (not counting those in flight); integer >= 0. 0: never queue. */
  maxQueue: number;
  /**
   * Waiting requests per identity per origin; integer >= 0 (in effect at most `maxQueue`).
   * One identity cannot fill an origin's queue and lock the others out with `max-queue`
   * refusals. Extension, not in RFC 9309. @default 100
   */
  maxQueuePerIdentity?: number;
  /** Window length of the `window` model, ms (> 0). @default 1000 */
  windowMs?: number;
  /** Upper bound of a pause taken from an upstream `Retry-After`, ms (>= 0). @default 600000 (10 min) */
  retryAfterCapMs?: number;
  /** Ceiling of the first backoff pause when a 429/503 has no valid `Retry-After`, ms (> 0). @default 1000 */
  backoffBaseMs?: number;
  /** Largest backoff ceiling, ms (>= backoffBaseMs). @default 60000 */
  backoffCapMs?: number;
  /**
   * How long an idle origin's timing is remembered after its last start or end, ms (>= 0).
   * Spacing is exact for every delay up to this value, whichever agents made the earlier
   * requests; a longer delay is still exact against earlier requests that had a delay at
   * least as long (its own agent's among them), as the state is kept for the longest delay
   * seen at the origin too. Bounds memory: one small record per origin active this recently.
   * @default 60000
   */
  idleRetentionMs?: number;
  /**
   * Longest time one granted slot is held, ms (> 0), or 0 for no bound. Past it the pacer
   * releases the slot itself (the holder is told through `onHoldExceeded`): a slow client or a
   * long transfer cannot keep an origin's queue waiting for longer. @default 0
   */
  maxSlotHoldMs?: number;
  /** Source of numbers in [0, 1) for backoff jitter; inject for tests. @default Math.random */
  random?: () => number;
}

/** {@link PacingOptions} with every default filled in and checked. */
export type ResolvedPacingOptions = Required<PacingOptions>;

/** {@link PacingOptions.maxQueuePerIdentity} when not given. */
export const DEFAULT_MAX_QUEUE_PER_IDENTITY = 100;

/** The most start times the `window` model remembers per origin; it also caps starts per window. */
export const MAX_WINDOW_STARTS = 1000;

/**
 * Fills in defaults and checks bounds.
 * @throws RangeError naming the option when a value is out of bounds or not a number
 *   (a programming error: configuration is validated before it gets here).
 */
export function resolvePacingOptions(options: PacingOptions): ResolvedPacingOptions {
  const resolved: ResolvedPacingOptions = {
    model: options.model ?? 'start-to-start',
    maxConcurrency: options.maxConcurrency,
    maxWaitMs: options.maxWaitMs,
    maxQueue: options.maxQueue,
    maxQueuePerIdentity: options.maxQueuePerIdentity ?? DEFAULT_MAX_QUEUE_PER_IDENTITY,
    windowMs: options.windowMs ?? 1000,
    retryAfterCapMs: options.retryAfterCapMs ?? 600_000,
    backoffBaseMs: options.backoffBaseMs ?? 1000,
    backoffCapMs: options.backoffCapMs ?? 60_000,
    idleRetentionMs: options.idleRetentionMs ?? 60_000,
    maxSlotHoldMs: options.maxSlotHoldMs ?? 0,
    random: options.random ?? Math.random,
  };
  if (!['start-to-start', 'end-to-start', 'window'].includes(resolved.model)) {
    throw new RangeError(`pacing option model: unknown model ${String(resolved.model)}`);
  }
  requireInteger('maxConcurrency', resolved.maxConcurrency, 1);
  requireInteger('maxQueue', resolved.maxQueue, 0);
  requireInteger('maxQueuePerIdentity', resolved.maxQueuePerIdentity, 0);
  requireAtLeast('maxWaitMs', resolved.maxWaitMs, 0);
  requireAtLeast('retryAfterCapMs', resolved.retryAfterCapMs, 0);
  requireAtLeast('idleRetentionMs', resolved.idleRetentionMs, 0);
  requireAtLeast('maxSlotHoldMs', resolved.maxSlotHoldMs, 0);
  requirePositive('windowMs', resolved.windowMs);
  requirePositive('backoffBaseMs', resolved.backoffBaseMs);
  requireAtLeast('backoffCapMs', resolved.backoffCapMs, resolved.backoffBaseMs);
  return resolved;
}

/**
 * Checks a per-request delay or concurrency override.
 * @throws RangeError when `delayMs` is not a finite number >= 0, or `maxConcurrency`
 *   (when given) is not an integer >= 1.
 */
export function checkRequestLimits(delayMs: number, maxConcurrency: number | undefined): void {
  requireAtLeast('delayMs', delayMs, 0);
  if (maxConcurrency !== undefined) requireInteger('maxConcurrency', maxConcurrency, 1);
}

/**
 * The `window` model's limit for a request with delay `delayMs` > 0: at most
 * `starts` request starts to the origin within any `lengthMs` (a sliding
 * window, stricter than fixed windows, which allow twice the burst across a
 * boundary). The window is `max(windowMs, delayMs)` and
 * `starts = floor(window / delayMs)`, capped at {@link MAX_WINDOW_STARTS}, so
 * the average rate never exceeds one start per delay; a delay of at least
 * `windowMs` gives one start per delay, as start-to-start does.
 * Extension, not in RFC 9309.
 */
export function windowLimitFor(delayMs: number, windowMs: number): { starts: number; lengthMs: number } {
  const lengthMs = Math.max(windowMs, delayMs);
  const starts = Math.min(MAX_WINDOW_STARTS, Math.max(1, Math.floor(lengthMs / delayMs)));
  return { starts, lengthMs };
}

function requireAtLeast(name: string, value: number, min: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new RangeError(`pacing option ${name}: expected a finite number >= ${min}, got ${String(value)}`);
  }
}

function requirePositive(name: string, value: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`pacing option ${name}: expected a finite number > 0, got ${String(value)}`);
  }
}

function requireInteger(name: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min) {
    throw new RangeError(`pacing option ${name}: expected an integer >= ${min}, got ${String(value)}`);
  }
}
