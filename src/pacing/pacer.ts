/**
 * The per-origin scheduler: every request waits here for a start slot, so an
 * origin sees a polite crawler however many connections a bot opens
 * (DESIGN.md "Pacing semantics"; crawl-delay is an extension, RFC 9309 §2.2.4).
 * Timers only through the injected {@link Clock}; no network.
 */
import type { Clock } from '../clock.js';
import {
  createOriginTiming,
  earliestStartMs,
  recordEnd,
  recordStart,
  timingEndMs,
  type OriginTiming,
} from './origin-timing.js';
import { checkRequestLimits, resolvePacingOptions, type PacingOptions, type ResolvedPacingOptions } from './pacing-options.js';
import { applyRelease, createOverloadState, overloadHoldUntilMs, type OverloadState } from './overload.js';
import type { AcquireOptions, AcquireOutcome, OriginPacingStats, PacingStats, ReleaseOutcome, RequestLimits, Slot } from './types.js';

interface Waiter {
  /** This request's delay, ms; recomputed by `reconfigure` through `limits`. */
  delayMs: number;
  /** The caller's per-origin override, or undefined: the pacer's `maxConcurrency` applies. */
  maxConcurrencyOverride: number | undefined;
  /** The override, else the pacer's `maxConcurrency` (kept in step by `reconfigure`). */
  maxConcurrency: number;
  readonly limits: (() => RequestLimits) | undefined;
  readonly enqueuedAtMs: number;
  readonly signal: AbortSignal | undefined;
  readonly onHoldExceeded: ((heldMs: number) => void) | undefined;
  readonly resolve: (outcome: AcquireOutcome) => void;
  onAbort: (() => void) | undefined;
}

interface OriginState {
  readonly origin: string;
  readonly timing: OriginTiming;
  readonly overload: OverloadState;
  /** Waiting requests, FIFO. */
  readonly queue: Waiter[];
  /** Sum of the delays of `queue`, ms (for the wait estimate). */
  queuedDelayMs: number;
  inFlight: number;
  /** In-flight requests that started with a delay > 0; such a request runs alone. */
  inFlightDelayed: number;
  /** Largest delay of any request started or queued here, ms: how long timing must be remembered. */
  maxDelaySeenMs: number;
  /** Largest `maxConcurrency` asked for here: the cap at which overload recovery is complete. */
  maxConcurrencySeen: number;
  /** Starts so far; a slot's sequence number tells which overload episode it belongs to. */
  startSeq: number;
  timer: unknown;
  hasTimer: boolean;
}

/**
 * Dispatch latency, ms, that {@link Slot.markSent} ignores. A gap the origin sees is
 * never shorter than the delay minus this (plus the network's own jitter).
 */
export const SEND_LATENCY_TOLERANCE_MS = 1;

/**
 * Per-origin request pacing with a lifecycle: create one per proxy, `close()` on shutdown.
 *
 * - Queues are per origin and FIFO: a request never starts before an earlier one to its origin.
 * - A request with a delay > 0 runs alone: it starts when nothing is in flight to its origin and
 *   its own delay has passed by the model's measure, and nothing else starts until it is released.
 * - A request with delay 0 starts when at most `maxConcurrency - 1` others (all undelayed) are in flight.
 * - An upstream 429/503 (reported through {@link Slot.release}) pauses the origin; see `overload.ts`.
 * - A slot held for `maxSlotHoldMs` is released by the pacer (its holder is told): no holder, slow
 *   or stalled, keeps an origin's queue waiting longer. Spacing still counts from its start.
 * - An origin's state is dropped once it is idle and no longer constrains a start: its pause,
 *   `idleRetentionMs` and the largest delay seen there have passed since its last start or end,
 *   and so has its overload recovery memory (see `idleRetentionMs` for the one inexact case).
 *
 * Known limits: the wait estimate cannot know response times, so it is a lower bound (`maxQueue`
 * bounds the rest). Time is `clock.nowMs()`; a wall clock stepped forward shortens one gap.
 */
export class Pacer {
  #options: ResolvedPacingOptions;
  readonly #clock: Clock;
  readonly #origins = new Map<string, OriginState>();
  /** Hold timers of granted slots (`maxSlotHoldMs`), cleared on release and on close. */
  readonly #holdTimers = new Set<unknown>();
  #isClosed = false;

  /**
   * @param options see {@link PacingOptions}.
   * @param clock time and timers (`systemClock` in production, a fake in tests).
   * @throws RangeError when an option is out of bounds.
   */
  constructor(options: PacingOptions, clock: Clock) {
    this.#options = resolvePacingOptions(options);
    this.#clock = clock;
  }

  /**
   * Waits for a start slot at `origin`. Resolves at once with a refusal when the request would
   * have to wait and the queue already holds `maxQueue` requests, or its expected wait exceeds
   * `maxWaitMs` (`reason: 'queue-full'`, with `retryAfterSeconds`); when `signal` aborts while it
   * waits (`aborted`: it leaves the queue and never gets a slot); or when the pacer is closed
   * (`closed`). Never rejects for these. A granted slot must be released exactly once.
   *
   * @param origin `scheme://host[:port]`, already normalised; the queue key.
   * @param delayMs this request's delay, ms: the crawl-delay of the group that applied to its
   *   agent, raised to any operator minimum for the origin (the caller computes it). 0: no spacing.
   * @param options see {@link AcquireOptions} (abort signal, concurrency override, hold callback, limits).
   * @returns a promise of the outcome; it rejects with RangeError when `delayMs` is not a finite
   *   number >= 0 or `maxConcurrency` is not an integer >= 1.
   */
  acquire(origin: string, delayMs: number, options: AcquireOptions = {}): Promise<AcquireOutcome> {
    try {
      checkRequestLimits(delayMs, options.maxConcurrency);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#isClosed) return Promise.resolve({ granted: false, refusal: { reason: 'closed' } });
    if (options.signal?.aborted) return Promise.resolve({ granted: false, refusal: { reason: 'aborted' } });
    const maxConcurrency = options.maxConcurrency ?? this.#options.maxConcurrency;
    const state = this.#stateFor(origin);
    const nowMs = this.#clock.nowMs();
    if (state.queue.length === 0 && this.#canStart(state, delayMs, maxConcurrency, nowMs)) {
      this.#remember(state, delayMs, maxConcurrency);
      return Promise.resolve({ granted: true, slot: this.#start(state, delayMs, nowMs, nowMs, options.onHoldExceeded) });
    }
    const expectedWaitMs = this.#expectedWaitMs(state, delayMs, nowMs);
    const isQueueFull = state.queue.length >= this.#options.maxQueue;
    // Only an origin with state can refuse: a fresh one always starts at once above.
    if (isQueueFull || expectedWaitMs > this.#options.maxWaitMs) {
      return Promise.resolve({
        granted: false,
        refusal: {
          reason: 'queue-full',
          limit: isQueueFull ? 'max-queue' : 'max-wait',
          retryAfterSeconds: Math.max(1, Math.ceil(expectedWaitMs / 1000)),
          queueLength: state.queue.length,
          delayMs,
          expectedWaitMs,
        },
      });
    }
    return new Promise<AcquireOutcome>((resolve) => {
      const waiter: Waiter = {
        delayMs,
        maxConcurrencyOverride: options.maxConcurrency,
        maxConcurrency,
        limits: options.limits,
        enqueuedAtMs: nowMs,
        signal: options.signal,
        onHoldExceeded: options.onHoldExceeded,
        resolve,
        onAbort: undefined,
      };
      if (waiter.signal) {
        waiter.onAbort = () => this.#abandon(state, waiter);
        waiter.signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      state.queue.push(waiter);
      state.queuedDelayMs += delayMs;
      this.#remember(state, delayMs, maxConcurrency);
      this.#pump(state);
    });
  }

  /** Queue and in-flight figures of one origin, or undefined when the pacer holds no state for it. */
  originStats(origin: string): OriginPacingStats | undefined {
    const state = this.#origins.get(origin);
    return state ? this.#statsOf(state, this.#clock.nowMs()) : undefined;
  }

  /** Totals over all origins, and the figures of each origin with state (for metrics and admin). */
  stats(): PacingStats {
    const nowMs = this.#clock.nowMs();
    const origins = [...this.#origins.values()].map((state) => this.#statsOf(state, nowMs));
    return {
      origins: origins.length,
      queued: origins.reduce((sum, o) => sum + o.queued, 0),
      inFlight: origins.reduce((sum, o) => sum + o.inFlight, 0),
      pausedOrigins: origins.filter((o) => o.pausedUntilMs !== undefined).length,
      byOrigin: origins,
    };
  }

  /**
   * Swaps in new options (a configuration reload) without losing anything: every queue keeps its
   * waiters in order, every origin its timing, pause and overload state. Each waiter's delay and
   * concurrency are recomputed through the `limits` it was queued with, then every origin is
   * re-examined, so a raised `maxConcurrency` or a lowered delay starts requests now and a raised
   * delay holds them. A smaller `maxQueue` or `maxWaitMs` refuses only later arrivals. When the
   * model becomes `window`, an origin's latest start counts as its one remembered start, so the
   * switch cannot open a burst. Does nothing after `close()`.
   * @throws RangeError when an option is out of bounds (the running options are kept).
   */
  reconfigure(options: PacingOptions): void {
    const resolved = resolvePacingOptions(options);
    if (this.#isClosed) return;
    const toWindow = resolved.model === 'window' && this.#options.model !== 'window';
    this.#options = resolved;
    for (const state of this.#origins.values()) {
      if (toWindow && state.timing.recentStartsMs.length === 0 && state.timing.lastStartMs !== undefined) {
        state.timing.recentStartsMs.push(state.timing.lastStartMs);
      }
      for (const waiter of state.queue) this.#relimit(state, waiter);
      state.queuedDelayMs = state.queue.reduce((sum, w) => sum + w.delayMs, 0);
    }
    for (const state of [...this.#origins.values()]) this.#pump(state);
  }

  /**
   * Stops the pacer: every waiting request resolves with `closed`, every timer is cleared,
   * all state is dropped, and later `acquire` calls resolve with `closed`. Releasing a slot
   * granted earlier is harmless. Idempotent; never throws.
   */
  close(): void {
    if (this.#isClosed) return;
    this.#isClosed = true;
    for (const timer of this.#holdTimers) this.#clock.clearTimer(timer);
    this.#holdTimers.clear();
    for (const state of this.#origins.values()) {
      this.#clearTimer(state);
      for (const waiter of state.queue.splice(0)) this.#settle(waiter, { granted: false, refusal: { reason: 'closed' } });
    }
    this.#origins.clear();
  }

  #stateFor(origin: string): OriginState {
    let state = this.#origins.get(origin);
    if (!state) {
      state = {
        origin,
        timing: createOriginTiming(),
        overload: createOverloadState(),
        queue: [],
        queuedDelayMs: 0,
        inFlight: 0,
        inFlightDelayed: 0,
        maxDelaySeenMs: 0,
        maxConcurrencySeen: 1,
        startSeq: 0,
        timer: undefined,
        hasTimer: false,
      };
      this.#origins.set(origin, state);
    }
    return state;
  }

  #relimit(state: OriginState, waiter: Waiter): void {
    if (waiter.limits) {
      try {
        const limits = waiter.limits();
        checkRequestLimits(limits.delayMs, limits.maxConcurrency);
        waiter.delayMs = limits.delayMs;
        waiter.maxConcurrencyOverride = limits.maxConcurrency;
      } catch {
        // Keep the limits it was queued with.
      }
    }
    waiter.maxConcurrency = waiter.maxConcurrencyOverride ?? this.#options.maxConcurrency;
    this.#remember(state, waiter.delayMs, waiter.maxConcurrency);
  }

  #remember(state: OriginState, delayMs: number, maxConcurrency: number): void {
    state.maxDelaySeenMs = Math.max(state.maxDelaySeenMs, delayMs);
    state.maxConcurrencySeen = Math.max(state.maxConcurrencySeen, maxConcurrency);
  }

  #hasConcurrencyFor(state: OriginState, delayMs: number, maxConcurrency: number): boolean {
    if (delayMs > 0) return state.inFlight === 0;
    if (state.inFlightDelayed > 0) return false;
    return state.inFlight < Math.min(maxConcurrency, state.overload.recoveryCap ?? Infinity);
  }

  #canStart(state: OriginState, delayMs: number, maxConcurrency: number, nowMs: number): boolean {
    return this.#hasConcurrencyFor(state, delayMs, maxConcurrency) && earliestStartMs(state.timing, delayMs, this.#options) <= nowMs;
  }

  /** Head's remaining time-to-ready plus the delays of everyone after it, ending with this request's own. */
  #expectedWaitMs(state: OriginState, delayMs: number, nowMs: number): number {
    const head = state.queue[0];
    if (!head) return Math.max(0, earliestStartMs(state.timing, delayMs, this.#options) - nowMs);
    const headReadyMs = Math.max(0, earliestStartMs(state.timing, head.delayMs, this.#options) - nowMs);
    return headReadyMs + Math.max(0, state.queuedDelayMs - head.delayMs) + delayMs;
  }

  /** Starts every head that may start now, then arms one timer for the next event, if any. */
  #pump(state: OriginState): void {
    if (this.#isClosed) return;
    this.#clearTimer(state);
    for (let head = state.queue[0]; head; head = state.queue[0]) {
      if (!this.#hasConcurrencyFor(state, head.delayMs, head.maxConcurrency)) return; // a release pumps again
      const nowMs = this.#clock.nowMs();
      const readyMs = earliestStartMs(state.timing, head.delayMs, this.#options);
      // Timers may fire late or (rounded) early: the clock decides, and an early wake re-arms.
      if (readyMs > nowMs) return this.#armTimer(state, readyMs - nowMs);
      state.queue.shift();
      state.queuedDelayMs = state.queue.length === 0 ? 0 : state.queuedDelayMs - head.delayMs;
      this.#settle(head, { granted: true, slot: this.#start(state, head.delayMs, head.enqueuedAtMs, nowMs, head.onHoldExceeded) });
    }
    if (state.inFlight > 0) return;
    const forgetAtMs = Math.max(
      timingEndMs(state.timing, Math.max(state.maxDelaySeenMs, this.#options.idleRetentionMs), this.#options),
      overloadHoldUntilMs(state.overload),
    );
    const nowMs = this.#clock.nowMs();
    if (forgetAtMs <= nowMs) this.#origins.delete(state.origin);
    else this.#armTimer(state, forgetAtMs - nowMs);
  }

  #start(state: OriginState, delayMs: number, enqueuedAtMs: number, nowMs: number, onHoldExceeded: ((heldMs: number) => void) | undefined): Slot {
    state.inFlight += 1;
    if (delayMs > 0) state.inFlightDelayed += 1;
    state.startSeq += 1;
    recordStart(state.timing, nowMs, this.#options);
    const seq = state.startSeq;
    let isReleased = false;
    /** Released by the hold bound: the holder's own release may still report an overload answer. */
    let isReclaimed = false;
    let holdTimer: unknown;
    const free = (outcome: ReleaseOutcome | undefined): void => {
      isReleased = true;
      if (holdTimer !== undefined) {
        this.#clock.clearTimer(holdTimer);
        this.#holdTimers.delete(holdTimer);
      }
      const endMs = this.#clock.nowMs();
      state.inFlight -= 1;
      if (delayMs > 0) state.inFlightDelayed -= 1;
      recordEnd(state.timing, endMs);
      applyRelease(state.overload, state.timing, seq, state.startSeq, outcome, endMs, state.maxConcurrencySeen, this.#options);
      this.#pump(state);
    };
    if (this.#options.maxSlotHoldMs > 0) {
      holdTimer = this.#clock.setTimer(() => {
        this.#holdTimers.delete(holdTimer);
        holdTimer = undefined;
        if (isReleased || this.#isClosed) return;
        isReclaimed = true;
        free(undefined);
        onHoldExceeded?.(this.#clock.nowMs() - nowMs);
      }, this.#options.maxSlotHoldMs);
      this.#holdTimers.add(holdTimer);
    }
    return {
      origin: state.origin,
      delayMs,
      startedAtMs: nowMs,
      waitedMs: nowMs - enqueuedAtMs,
      markSent: () => {
        // Dispatch latency (connection reuse, event-loop lag) must not shrink the gap the
        // origin sees: the next start counts from when this request really left.
        if (isReleased || this.#isClosed || seq !== state.startSeq) return;
        // Ordinary dispatch latency (well under a millisecond) is left alone, so a steady
        // stream keeps its rate; a late dispatch (a new connection, a busy event loop) moves the start.
        const sentMs = this.#clock.nowMs() - SEND_LATENCY_TOLERANCE_MS;
        const last = state.timing.lastStartMs ?? sentMs;
        if (sentMs <= last) return;
        state.timing.lastStartMs = sentMs;
        const starts = state.timing.recentStartsMs;
        if (starts.length > 0 && starts[starts.length - 1] === last) starts[starts.length - 1] = sentMs;
      },
      release: (outcome?: ReleaseOutcome) => {
        if (this.#isClosed) return;
        if (isReclaimed) {
          // The slot was freed at the hold bound; the origin's answer still counts (a late 429/503 pauses it).
          isReclaimed = false;
          // An origin state dropped meanwhile (idle) is not revived: its successor must not be touched.
          if (outcome?.status === undefined || this.#origins.get(state.origin) !== state) return;
          applyRelease(state.overload, state.timing, seq, state.startSeq, outcome, this.#clock.nowMs(), state.maxConcurrencySeen, this.#options);
          this.#pump(state);
          return;
        }
        if (isReleased) return;
        free(outcome);
      },
    };
  }

  #abandon(state: OriginState, waiter: Waiter): void {
    const index = state.queue.indexOf(waiter);
    if (index < 0) return;
    state.queue.splice(index, 1);
    state.queuedDelayMs = state.queue.length === 0 ? 0 : state.queuedDelayMs - waiter.delayMs;
    this.#settle(waiter, { granted: false, refusal: { reason: 'aborted' } });
    this.#pump(state);
  }

  #settle(waiter: Waiter, outcome: AcquireOutcome): void {
    if (waiter.onAbort) waiter.signal?.removeEventListener('abort', waiter.onAbort);
    waiter.onAbort = undefined;
    waiter.resolve(outcome);
  }

  #armTimer(state: OriginState, delayMs: number): void {
    state.timer = this.#clock.setTimer(() => {
      state.hasTimer = false;
      this.#pump(state);
    }, delayMs);
    state.hasTimer = true;
  }

  #clearTimer(state: OriginState): void {
    if (state.hasTimer) this.#clock.clearTimer(state.timer);
    state.hasTimer = false;
    state.timer = undefined;
  }

  #statsOf(state: OriginState, nowMs: number): OriginPacingStats {
    return {
      origin: state.origin,
      queued: state.queue.length,
      inFlight: state.inFlight,
      pausedUntilMs: state.timing.pausedUntilMs > nowMs ? state.timing.pausedUntilMs : undefined,
      lastStartMs: state.timing.lastStartMs,
      recoveryCap: state.overload.recoveryCap,
    };
  }
}
