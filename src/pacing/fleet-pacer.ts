/**
 * A fleet's pacer (issue 10): the local {@link Pacer} first (this instance's
 * queue: its order, fairness between identities, queue bounds), then the
 * fleet-wide slot from a {@link SlotStore} (Redis): while a delay is in force
 * one request in flight per origin for the whole fleet, starts spaced on the
 * store's clock; `maxConcurrency` fleet-wide otherwise; an upstream 429/503
 * (a page's, or the origin's robots.txt's: {@link FleetPacer.applyOverload})
 * pauses the origin for every instance.
 *
 * Fairness between identities is per instance: each instance's queue serves
 * its identities round-robin, and the instances take fleet-wide slots in the
 * order their requests reach Redis (an identity whose requests arrive at
 * every instance gets a turn in each). The overload recovery (concurrency 1,
 * then one more per success) is per instance; the pause itself is fleet-wide.
 *
 * While the store does not answer, `onUnavailable` decides: `local` paces on
 * this instance alone with every delay multiplied by `fleetSize` (and
 * `maxConcurrency` divided by it), so the fleet together stays within the
 * site's rate; `deny` refuses with `fleet-unavailable` (503). Extension, not in RFC 9309.
 */
import type { Clock } from '../clock.js';
import type { SlotLease, SlotStore } from '../state/types.js';
import type { Pacer } from './pacer.js';
import { checkRequestLimits, type PacingOptions } from './pacing-options.js';
import type { AcquireOptions, AcquireOutcome, OriginPacingStats, PacingStats, ReleaseOutcome, RequestPacer, Slot, SlotTaker } from './types.js';

/** Options of a {@link FleetPacer}. */
export interface FleetPacerOptions {
  /** The fleet's slots and pauses. */
  slots: SlotStore;
  /** Instances in the fleet (`state.fleetSize`), integer >= 1. */
  fleetSize: number;
  /** `state.redis.onUnavailable`. */
  onUnavailable: 'local' | 'deny';
  /** The pacing options in force (the local pacer's), for `maxConcurrency`, `maxWaitMs` and the model. */
  pacing: PacingOptions;
  clock: Clock;
  /** Called for each request paced while the store is unavailable (`local`: paced alone; `deny`: refused). */
  onFallback?: (kind: 'local' | 'deny') => void;
}

/** `Retry-After` of a `fleet-unavailable` refusal, seconds: about a reconnect or two. */
export const FLEET_UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

const ABORTED: AcquireOutcome = Object.freeze({ granted: false, refusal: Object.freeze({ reason: 'aborted' }) }) as AcquireOutcome;
const CLOSED: AcquireOutcome = Object.freeze({ granted: false, refusal: Object.freeze({ reason: 'closed' }) }) as AcquireOutcome;
const DENIED: AcquireOutcome = Object.freeze({
  granted: false,
  refusal: Object.freeze({ reason: 'fleet-unavailable', retryAfterSeconds: FLEET_UNAVAILABLE_RETRY_AFTER_SECONDS }),
}) as AcquireOutcome;

/** A request's wait for a release notice at its origin. */
interface FleetWait {
  /** A notice arrived since the latest reservation attempt. */
  isNotified: boolean;
  /** Ends the current wait, if one runs. */
  wake: (() => void) | undefined;
}

/** A granted fleet slot: the local slot and the fleet's lease, released together. */
class FleetSlot implements Slot {
  readonly origin: string;
  readonly delayMs: number;
  readonly startedAtMs: number;
  readonly waitedMs: number;
  #sentAtMs: number | undefined;
  #isLeaseReleased = false;

  constructor(
    readonly local: Slot,
    readonly lease: SlotLease,
    readonly pacer: FleetPacer,
    startedAtMs: number,
    waitedMs: number,
  ) {
    this.origin = local.origin;
    this.delayMs = local.delayMs;
    this.startedAtMs = startedAtMs;
    this.waitedMs = waitedMs;
  }

  markSent(): void {
    this.#sentAtMs ??= this.pacer.nowMs();
    this.local.markSent();
  }

  release(outcome?: ReleaseOutcome): void {
    this.local.release(outcome);
    this.releaseLease(outcome);
  }

  /** Gives the fleet lease back (once), with the real start and the pause an overload answer set locally. */
  releaseLease(outcome: ReleaseOutcome | undefined): void {
    if (this.#isLeaseReleased) return;
    this.#isLeaseReleased = true;
    this.pacer.releaseLease(this.lease, this.#sentAtMs, outcome);
  }
}

/** The pacer of a fleet instance; see the module comment. */
export class FleetPacer implements RequestPacer {
  readonly #local: Pacer;
  readonly #options: FleetPacerOptions;
  #pacing: PacingOptions;
  /** Wakes every request waiting for a fleet slot (on close). */
  readonly #wakers = new Set<() => void>();
  #isClosed = false;

  /** @param local this instance's pacer, owned by the fleet pacer from now on (closed with it). */
  constructor(local: Pacer, options: FleetPacerOptions) {
    this.#local = local;
    this.#options = options;
    this.#pacing = options.pacing;
  }

  /**
   * Waits for a local slot, then for the fleet's (see {@link Pacer.acquire} for the local part and
   * its refusals). A wait longer than `maxWaitMs` in all, the local queue's included, is refused `queue-full` (`max-wait`): at once
   * when the origin is paused past it or its next fleet-wide start is later (the start is then
   * not reserved), else once the wait has lasted that long.
   * While the store is unavailable: see the module comment. Never rejects but for bad limits.
   */
  async acquire(origin: string, delayMs: number, options: AcquireOptions): Promise<AcquireOutcome> {
    if (!this.#options.slots.isAvailable) return this.#fallback(origin, delayMs, options);
    const holder: { slot?: FleetSlot } = {};
    const onHoldExceeded = (heldMs: number): void => {
      // The local hold bound frees the fleet's lease too, so other instances do not wait on it.
      holder.slot?.releaseLease(undefined);
      options.onHoldExceeded?.(heldMs);
    };
    const enqueuedAtMs = this.nowMs();
    const local = await this.#local.acquire(origin, delayMs, { ...options, onHoldExceeded });
    if (!local.granted) return local;
    const outcome = await this.#enterFleet(local.slot, options, enqueuedAtMs);
    if (outcome === 'unavailable') {
      local.slot.release();
      return this.#fallback(origin, delayMs, options);
    }
    if (outcome.granted) holder.slot = outcome.slot as FleetSlot;
    else local.slot.release();
    return outcome;
  }

  /**
   * {@link FleetPacer.acquire} for a {@link SlotTaker} (see `Pacer.acquireFor`): the outcome when
   * known at once; else undefined, and the taker is told from the fleet wait's promise (a fleet
   * request waits on Redis round trips; the promise is not what it costs).
   * @throws RangeError when `delayMs` or `maxConcurrency` is out of bounds.
   */
  acquireFor(origin: string, delayMs: number, options: AcquireOptions, taker: SlotTaker): AcquireOutcome | undefined {
    checkRequestLimits(delayMs, options.maxConcurrency);
    const answer = this.acquire(origin, delayMs, options);
    if (!(answer instanceof Promise)) return answer;
    answer.then(
      (outcome) => taker.takeSlot(outcome),
      (error: unknown) => {
        // Bad limits were checked above: anything else is a bug, reported as uncaught.
        queueMicrotask(() => {
          throw error;
        });
      },
    );
    return undefined;
  }

  /**
   * See `Pacer.applyOverload`: pauses the origin here, and for the whole fleet through the store
   * (the instances that did not fetch the robots.txt find the pause when they reserve a slot). A
   * store that does not answer costs the fleet-wide part only (its warning, `fleet-state`); never throws.
   * @returns the pause's end, ms since the epoch (this instance's clock), or undefined when nothing was paused.
   */
  applyOverload(origin: string, answer: ReleaseOutcome): number | undefined {
    if (this.#isClosed) return undefined;
    const pausedUntilMs = this.#local.applyOverload(origin, answer);
    if (pausedUntilMs !== undefined) void this.#options.slots.pause(origin, pausedUntilMs - this.nowMs());
    return pausedUntilMs;
  }

  originStats(origin: string): OriginPacingStats | undefined {
    return this.#local.originStats(origin);
  }

  stats(): PacingStats {
    return this.#local.stats();
  }

  /** See `Pacer.reconfigure`; the fleet wait reads the new `maxWaitMs` and `maxConcurrency` from the next request on. */
  reconfigure(options: PacingOptions): void {
    this.#local.reconfigure(options);
    this.#pacing = options;
  }

  /** Closes the local pacer; requests waiting for a fleet slot resolve `closed`. Idempotent. */
  close(): void {
    if (this.#isClosed) return;
    this.#isClosed = true;
    this.#local.close();
    for (const wake of this.#wakers) wake();
  }

  /** @internal the clock's time, ms. */
  nowMs(): number {
    return this.#options.clock.nowMs();
  }

  /** @internal gives a lease back with what the request learned. */
  releaseLease(lease: SlotLease, sentAtMs: number | undefined, outcome: ReleaseOutcome | undefined): void {
    const nowMs = this.nowMs();
    let pauseMs = 0;
    if (outcome?.status === 429 || outcome?.status === 503) {
      // The local pacer has turned the answer into a pause (Retry-After or backoff): share it.
      const pausedUntilMs = this.#local.originStats(lease.origin)?.pausedUntilMs;
      if (pausedUntilMs !== undefined) pauseMs = Math.max(0, pausedUntilMs - nowMs);
    }
    this.#options.slots.release(lease, { sentAgoMs: sentAtMs === undefined ? undefined : nowMs - sentAtMs, pauseMs });
  }

  /** Reserves the fleet slot for a request holding `local`; waits on release notices and pause ends, not by polling. */
  async #enterFleet(local: Slot, options: AcquireOptions, enqueuedAtMs: number): Promise<AcquireOutcome | 'unavailable'> {
    // Listening before the first reservation: a release announced between a "busy" answer and the wait is not missed.
    const wait: FleetWait = { isNotified: false, wake: undefined };
    const unsubscribe = this.#options.slots.onFree(local.origin, () => {
      wait.isNotified = true;
      wait.wake?.();
    });
    try {
      return await this.#reserveLoop(local, options, enqueuedAtMs, wait);
    } finally {
      unsubscribe();
    }
  }

  async #reserveLoop(local: Slot, options: AcquireOptions, enqueuedAtMs: number, wait: FleetWait): Promise<AcquireOutcome | 'unavailable'> {
    const { slots, clock } = this.#options;
    const origin = local.origin;
    // maxWait bounds the whole wait, the local queue's included: the local pacer's estimate knows
    // nothing of the other instances' requests, so the fleet part must not start a fresh maxWait.
    const deadlineMs = enqueuedAtMs + this.#pacing.maxWaitMs;
    for (;;) {
      if (this.#isClosed) return CLOSED;
      if (options.signal?.aborted) return ABORTED;
      wait.isNotified = false;
      let reservation;
      try {
        reservation = await slots.reserve({
          origin,
          delayMs: local.delayMs,
          maxConcurrency: options.maxConcurrency ?? this.#pacing.maxConcurrency,
          isEndToStart: this.#pacing.model === 'end-to-start',
          maxStartInMs: Math.max(0, deadlineMs - clock.nowMs()),
        });
      } catch {
        return 'unavailable';
      }
      if (reservation.granted) {
        if (reservation.startInMs > 0) await this.#sleep(reservation.startInMs, options, undefined);
        if (this.#isClosed || options.signal?.aborted) {
          slots.release(reservation.lease, { sentAgoMs: undefined, pauseMs: 0 });
          return this.#isClosed ? CLOSED : ABORTED;
        }
        const nowMs = clock.nowMs();
        return { granted: true, slot: new FleetSlot(local, reservation.lease, this, nowMs, nowMs - enqueuedAtMs) };
      }
      const remainingMs = deadlineMs - clock.nowMs();
      // Paused: the pause's end is the earliest start; later: the fleet's next start (past the
      // deadline). Busy: the slot may free at any moment (a release notice); `retryInMs` is only the
      // holder's lease end (`slotLease` ahead, 30 s by default, as long as the default maxWait), so
      // the request waits up to its deadline.
      const earliestStartInMs = reservation.why === 'busy' ? 0 : reservation.retryInMs;
      if (earliestStartInMs > remainingMs || remainingMs <= 0) {
        const stats = this.#local.originStats(origin);
        return {
          granted: false,
          refusal: {
            reason: 'queue-full',
            limit: 'max-wait',
            retryAfterSeconds: Math.max(1, Math.ceil(reservation.retryInMs / 1000)),
            queueLength: stats?.queued ?? 0,
            identityQueueLength: 0,
            delayMs: local.delayMs,
            expectedWaitMs: reservation.retryInMs,
          },
        };
      }
      // Paused: the pause's end is known. Busy: a release notice, or the earliest lease end.
      if (reservation.why === 'paused') await this.#sleep(reservation.retryInMs, options, undefined);
      else if (!wait.isNotified) await this.#sleep(Math.min(reservation.retryInMs, remainingMs), options, wait);
    }
  }

  /** Waits `ms`, or less: an abort, the pacer closing, or (with `wait`) a release notice. */
  #sleep(ms: number, options: AcquireOptions, wait: FleetWait | undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      const { clock } = this.#options;
      const abortListener = { handleEvent: () => done() };
      const timer = clock.setTimer(() => done(), Math.max(0, ms));
      const done = (): void => {
        clock.clearTimer(timer);
        if (wait) wait.wake = undefined;
        options.signal?.removeEventListener('abort', abortListener);
        this.#wakers.delete(done);
        resolve();
      };
      if (wait) wait.wake = done;
      options.signal?.addEventListener('abort', abortListener);
      this.#wakers.add(done);
    });
  }

  /** Pacing while the store is unavailable: alone with delays x fleetSize (`local`), or refused (`deny`). */
  #fallback(origin: string, delayMs: number, options: AcquireOptions): AcquireOutcome | Promise<AcquireOutcome> {
    const { fleetSize, onUnavailable, onFallback } = this.#options;
    onFallback?.(onUnavailable);
    if (onUnavailable === 'deny') return DENIED;
    const share = (maxConcurrency: number | undefined): number => Math.max(1, Math.floor((maxConcurrency ?? this.#pacing.maxConcurrency) / fleetSize));
    const limits = options.limits;
    return this.#local.acquire(origin, delayMs * fleetSize, {
      ...options,
      maxConcurrency: share(options.maxConcurrency),
      ...(limits
        ? {
            limits: () => {
              const next = limits();
              return { delayMs: next.delayMs * fleetSize, maxConcurrency: share(next.maxConcurrency) };
            },
          }
        : {}),
    });
  }
}
