/**
 * The per-origin scheduler: every request waits here for a start slot, so an
 * origin sees a polite crawler however many connections a bot opens
 * (DESIGN.md "Pacing semantics"; crawl-delay is an extension, RFC 9309 §2.2.4).
 * Timers only through the injected {@link Clock}; no network.
 *
 * Waiting is meant to be nearly free (issue 11): a waiting request is one
 * record in its origin's {@link FairQueue} (O(1) in and out, an abort too) and
 * its abort listener; the record is the listener, so nothing is allocated per
 * wake-up. Through {@link Pacer.acquireFor} the caller's own record is told
 * its answer by a method call ({@link SlotTaker}): no promise, no closure; the
 * answers decided in one event-loop turn are delivered together from one
 * microtask. {@link Pacer.acquire} is the same with a promise per waiter. An origin has at most one timer (the next start it
 * waits for, or when its state may be dropped), kept when a new waiter needs
 * no earlier wake-up; the slot hold bound is one timer per pacer (`hold-list.ts`).
 */
import type { Clock } from '../clock.js';
import { createOriginTiming, earliestStartMs, recordEnd, recordStart, timingEndMs, type OriginTiming } from './origin-timing.js';
import { checkRequestLimits, resolvePacingOptions, type PacingOptions, type ResolvedPacingOptions } from './pacing-options.js';
import { applyOverloadAnswer, applyRelease, createOverloadState, overloadHoldUntilMs, type OverloadState } from './overload.js';
import { FairQueue } from './fair-queue.js';
import { HoldList } from './hold-list.js';
import { GrantedSlot, PromiseTaker, Waiter, type OriginState, type SlotHost } from './pacer-records.js';
import type { AcquireOptions, AcquireOutcome, OriginPacingStats, PacingStats, Refusal, ReleaseOutcome, Slot, SlotTaker } from './types.js';

const NO_RESOLVE = (): void => undefined;
/**
 * The resolve function of the promise being built (see {@link capture}); avoids a closure per
 * waiter. Reset as soon as the waiter takes it ({@link takeCaptured}): left set, it would keep the
 * last queued request's promise, its outcome and slot, and through the slot's hold callback the
 * whole request, alive after the request ended.
 */
let capturedResolve: (outcome: AcquireOutcome) => void = NO_RESOLVE;
function capture(resolve: (outcome: AcquireOutcome) => void): void {
  capturedResolve = resolve;
}
function takeCaptured(): (outcome: AcquireOutcome) => void {
  const resolve = capturedResolve;
  capturedResolve = NO_RESOLVE;
  return resolve;
}

/** A settled promise: `.then` on it queues the pacer's delivery microtask ({@link Pacer.#settle}). */
const SETTLED: Promise<void> = Promise.resolve();
const CLOSED: AcquireOutcome = Object.freeze({ granted: false, refusal: Object.freeze({ reason: 'closed' }) }) as AcquireOutcome;
const ABORTED: AcquireOutcome = Object.freeze({ granted: false, refusal: Object.freeze({ reason: 'aborted' }) }) as AcquireOutcome;

/**
 * Dispatch latency, ms, that {@link Slot.markSent} ignores. A gap the origin sees is
 * never shorter than the delay minus this (plus the network's own jitter).
 */
export const SEND_LATENCY_TOLERANCE_MS = 1;

/**
 * Per-origin request pacing with a lifecycle: create one per proxy, `close()` on shutdown.
 *
 * - Queues are per origin. Within an origin, identities (clients, as the caller names them)
 *   take turns round-robin, and each identity's requests start in arrival order (see
 *   `fair-queue.ts`): a request never starts before an earlier one of its identity to its
 *   origin, and a light client waits for about one start per other waiting identity.
 * - A request with a delay > 0 runs alone: it starts when nothing is in flight to its origin and
 *   its own delay has passed by the model's measure, and nothing else starts until it is released.
 * - A request with delay 0 starts when at most `maxConcurrency - 1` others (all undelayed) are in flight.
 * - The request whose turn it is blocks the ones after it (whoever they are): no one overtakes it.
 * - An upstream 429/503 (reported through {@link Slot.release}, or for the origin's robots.txt
 *   through {@link Pacer.applyOverload}) pauses the origin; see `overload.ts`.
 * - A slot held for `maxSlotHoldMs` is released by the pacer (its holder is told): no holder, slow
 *   or stalled, keeps an origin's queue waiting longer. Spacing still counts from its start.
 * - An origin's state is dropped once it is idle and no longer constrains a start: its pause,
 *   `idleRetentionMs` and the largest delay seen there have passed since its last start or end,
 *   and so has its overload recovery memory (see `idleRetentionMs` for the one inexact case).
 *
 * Known limits: the wait estimate (`maxWaitMs`, `Retry-After`) counts the requests that will
 * start before this one in round-robin order, each with its own delay, from the queue as it is
 * now; it cannot know response times, aborts ahead, or identities that start waiting later (a
 * new identity takes a turn in every later round), so in the start-to-start and end-to-start
 * models it is a lower bound; in the `window` model, which lets a window's starts come in a
 * burst, it is the average rate's wait and can exceed the actual one. `maxQueue` and
 * `maxQueuePerIdentity` bound the rest. Time is `clock.nowMs()`; a wall clock stepped forward
 * shortens one gap.
 */
export class Pacer {
  readonly #clock: Clock;
  readonly #origins = new Map<string, OriginState>();
  #options: ResolvedPacingOptions;
  /** Granted slots held under `maxSlotHoldMs`, or undefined when there is no bound. */
  #holds: HoldList<GrantedSlot> | undefined;
  /** Hold lists of earlier `maxSlotHoldMs` values (before a reconfiguration) still holding slots. */
  readonly #retiredHolds = new Set<HoldList<GrantedSlot>>();
  readonly #slotHost: SlotHost = {
    release: (slot, outcome) => this.#release(slot, outcome),
    markSent: (slot) => this.#markSent(slot),
  };
  readonly #onAbort = (waiter: Waiter): void => this.#abandon(waiter);
  /** The origin and clock reading of the request {@link Pacer.#enter} just found must wait. */
  #entered: OriginState | undefined = undefined;
  #enteredAtMs = 0;
  /** Answered waiters whose takers are not told yet (FIFO, linked through `nextAnswered`). */
  #answeredHead: Waiter | undefined = undefined;
  #answeredTail: Waiter | undefined = undefined;
  /** True while a delivery microtask is queued. */
  #isDeliveryQueued = false;
  readonly #deliver = (): void => this.#deliverAnswers();
  #isClosed = false;

  /**
   * @param options see {@link PacingOptions}.
   * @param clock time and timers (`systemClock` in production, a fake in tests).
   * @throws RangeError when an option is out of bounds.
   */
  constructor(options: PacingOptions, clock: Clock) {
    this.#options = resolvePacingOptions(options);
    this.#clock = clock;
    this.#holds = this.#holdListFor(this.#options.maxSlotHoldMs);
  }

  /**
   * Waits for a start slot at `origin`. Answers at once with a refusal when the request would
   * have to wait and the origin already holds `maxQueue` waiting requests, or `options.identity`
   * already holds `maxQueuePerIdentity` of them, or its expected wait exceeds `maxWaitMs`
   * (`reason: 'queue-full'`, with `retryAfterSeconds`); when `signal` aborts while it waits
   * (`aborted`: it leaves the queue and never gets a slot); or when the pacer is closed
   * (`closed`). Never rejects for these. A granted slot must be released exactly once.
   *
   * @param origin `scheme://host[:port]`, already normalised; the queue key.
   * @param delayMs this request's delay, ms: the crawl-delay of the group that applied to its
   *   agent, raised to any operator minimum for the origin (the caller computes it). 0: no spacing.
   * @param options see {@link AcquireOptions}: the identity (whose turn it waits for), abort
   *   signal, concurrency override, hold callback.
   * @returns the outcome itself when it is known at once (a free slot with no delay due is granted
   *   synchronously: no promise, no microtask hop, issue 11; a refusal likewise), else a promise of
   *   it (the request waits). The promise rejects with RangeError when `delayMs` is not a finite
   *   number >= 0 or `maxConcurrency` is not an integer >= 1. `await` takes either.
   */
  acquire(origin: string, delayMs: number, options: AcquireOptions): AcquireOutcome | Promise<AcquireOutcome> {
    try {
      checkRequestLimits(delayMs, options.maxConcurrency);
    } catch (error) {
      return Promise.reject(error);
    }
    const answered = this.#enter(origin, delayMs, options);
    if (answered !== undefined) return answered;
    const promise = new Promise<AcquireOutcome>(capture);
    this.#enqueue(delayMs, options, new PromiseTaker(takeCaptured()));
    return promise;
  }

  /**
   * {@link Pacer.acquire} without a promise: the same answers, told to `taker` (issue 11: a
   * waiting request is a record in a list, not a promise, its reactions and a microtask each).
   * A request that can start, or is refused, at once gets its outcome returned, and `taker` is
   * never called; a request that must wait gets undefined, and `taker.takeSlot` is called once
   * later with the slot or the refusal (`aborted`, `closed`), from the pacer's one delivery
   * microtask per event-loop turn, in the order the answers were decided (never from inside
   * this call, or from inside another slot's `release`). A slot granted to a request whose
   * `signal` aborted before the delivery is released by the pacer, and the taker is told
   * `aborted`: nothing is sent for a client that left.
   * @throws RangeError when `delayMs` is not a finite number >= 0 or `maxConcurrency` is not an integer >= 1.
   */
  acquireFor(origin: string, delayMs: number, options: AcquireOptions, taker: SlotTaker): AcquireOutcome | undefined {
    checkRequestLimits(delayMs, options.maxConcurrency);
    const answered = this.#enter(origin, delayMs, options);
    if (answered === undefined) this.#enqueue(delayMs, options, taker);
    return answered;
  }

  /**
   * The outcome of a request that is answered at once (a free slot, a refusal, closed, aborted),
   * else undefined: it must wait, at `#entered` since `#enteredAtMs` ({@link Pacer.#enqueue} queues it next).
   */
  #enter(origin: string, delayMs: number, options: AcquireOptions): AcquireOutcome | undefined {
    if (this.#isClosed) return CLOSED;
    if (options.signal?.aborted) return ABORTED;
    const maxConcurrency = options.maxConcurrency ?? this.#options.maxConcurrency;
    const state = this.#stateFor(origin);
    const nowMs = this.#clock.nowMs();
    if (state.queue.size === 0 && this.#canStart(state, delayMs, maxConcurrency, nowMs)) {
      this.#remember(state, delayMs, maxConcurrency);
      // The slot is its own grant: no outcome object per request.
      return this.#start(state, delayMs, nowMs, nowMs, options.onHoldExceeded);
    }
    // Only an origin with state can refuse: a fresh one always starts at once above.
    const refusal = this.#refusalFor(state, options.identity, delayMs, nowMs);
    if (refusal) return { granted: false, refusal };
    this.#entered = state;
    this.#enteredAtMs = nowMs;
    return undefined;
  }

  /** Queues the request {@link Pacer.#enter} just found must wait, told through `taker`. */
  #enqueue(delayMs: number, options: AcquireOptions, taker: SlotTaker): void {
    const state = this.#entered as OriginState;
    this.#entered = undefined;
    const signal = options.signal;
    const maxConcurrency = options.maxConcurrency ?? this.#options.maxConcurrency;
    const waiter = new Waiter(taker, state, delayMs, options.maxConcurrency, maxConcurrency, options.limits, this.#enteredAtMs, signal, options.onHoldExceeded, this.#onAbort);
    signal?.addEventListener('abort', waiter);
    state.queue.push(options.identity, waiter);
    this.#remember(state, delayMs, maxConcurrency);
    this.#pump(state);
  }

  /**
   * Applies an overload answer the origin gave outside a paced request: its robots.txt fetch
   * answered 429 or 503 (RFC 9309 §2.3.1.4 with RFC 6585 §4 / RFC 9110 §15.6.4; DESIGN.md "Pacing
   * semantics"). The origin is paused exactly as by a page's 429/503 (`overload.ts`): until its
   * `Retry-After` (delta-seconds or HTTP-date), capped at `retryAfterCapMs`, else for a full-jitter
   * backoff; then it recovers gradually. Requests already waiting wait for the pause too. Other
   * statuses, and a closed pacer, change nothing.
   * @param origin `scheme://host[:port]`, normalised as for {@link Pacer.acquire}.
   * @param answer the robots.txt answer's status (undefined: no answer) and `Retry-After` field value.
   * @returns the end of the origin's pause, ms since the epoch, when it is paused after this call
   *   by this answer (or by a longer pause it already had); undefined when nothing was paused. Never throws.
   */
  applyOverload(origin: string, answer: ReleaseOutcome): number | undefined {
    if (this.#isClosed || (answer.status !== 429 && answer.status !== 503)) return undefined;
    const state = this.#stateFor(origin);
    const nowMs = this.#clock.nowMs();
    applyOverloadAnswer(state.overload, state.timing, state.startSeq, answer, nowMs, this.#options);
    const pausedUntilMs = state.timing.pausedUntilMs;
    // Arms the origin's timer (its waiters wait for the pause) or, with nothing left to keep, drops the state.
    this.#pump(state, nowMs);
    return pausedUntilMs > nowMs ? pausedUntilMs : undefined;
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
   * waiters in their order and turns, every origin its timing, pause and overload state. Each
   * waiter's delay and concurrency are recomputed through the `limits` it was queued with, then
   * every origin is re-examined, so a raised `maxConcurrency` or a lowered delay starts requests
   * now and a raised delay holds them. A smaller `maxQueue`, `maxQueuePerIdentity` or `maxWaitMs`
   * refuses only later arrivals; a new `maxSlotHoldMs` bounds the slots granted from now on. When
   * the model becomes `window`, an origin's latest start counts as its one remembered start, so
   * the switch cannot open a burst. Does nothing after `close()`.
   * @throws RangeError when an option is out of bounds (the running options are kept).
   */
  reconfigure(options: PacingOptions): void {
    const resolved = resolvePacingOptions(options);
    if (this.#isClosed) return;
    const toWindow = resolved.model === 'window' && this.#options.model !== 'window';
    const isNewHoldBound = resolved.maxSlotHoldMs !== this.#options.maxSlotHoldMs;
    this.#options = resolved;
    if (isNewHoldBound) {
      // Slots granted so far keep the bound they were granted under; their list expires them.
      if (this.#holds && !this.#holds.isEmpty) this.#retiredHolds.add(this.#holds);
      else this.#holds?.clear();
      this.#holds = this.#holdListFor(resolved.maxSlotHoldMs);
    }
    for (const retired of this.#retiredHolds) {
      if (!retired.isEmpty) continue;
      retired.clear();
      this.#retiredHolds.delete(retired);
    }
    for (const state of this.#origins.values()) {
      if (toWindow && state.timing.recentStartsMs.length === 0 && state.timing.lastStartMs !== undefined) {
        state.timing.recentStartsMs.push(state.timing.lastStartMs);
      }
      state.queue.forEach((waiter) => this.#relimit(state, waiter));
      state.queue.recountDelays();
    }
    for (const state of [...this.#origins.values()]) this.#pump(state);
  }

  /**
   * Stops the pacer: every waiting request resolves with `closed`, every timer is cleared,
   * all state is dropped, and later `acquire` calls answer `closed`. Releasing a slot
   * granted earlier is harmless. Idempotent; never throws.
   */
  close(): void {
    if (this.#isClosed) return;
    this.#isClosed = true;
    this.#holds?.clear();
    for (const retired of this.#retiredHolds) retired.clear();
    this.#retiredHolds.clear();
    for (const state of this.#origins.values()) {
      this.#clearTimer(state);
      for (const waiter of state.queue.drain()) this.#settle(waiter, CLOSED);
    }
    this.#origins.clear();
  }

  #stateFor(origin: string): OriginState {
    let state = this.#origins.get(origin);
    if (!state) {
      const created: OriginState = {
        origin,
        timing: createOriginTiming(),
        overload: createOverloadState(),
        queue: new FairQueue<Waiter>(),
        inFlight: 0,
        inFlightDelayed: 0,
        maxDelaySeenMs: 0,
        maxConcurrencySeen: 1,
        startSeq: 0,
        timer: undefined,
        timerDueMs: Infinity,
        onTimer: () => {
          created.timer = undefined;
          created.timerDueMs = Infinity;
          this.#pump(created);
        },
      };
      state = created;
      this.#origins.set(origin, state);
    }
    return state;
  }

  #holdListFor(maxSlotHoldMs: number): HoldList<GrantedSlot> | undefined {
    return maxSlotHoldMs > 0 ? new HoldList(this.#clock, maxSlotHoldMs, (slot) => this.#reclaim(slot)) : undefined;
  }

  /** Recomputes a waiter's delay and concurrency (after a reconfiguration); its queue's sums are recounted by the caller. */
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
    if (delayMs > state.maxDelaySeenMs) state.maxDelaySeenMs = delayMs;
    if (maxConcurrency > state.maxConcurrencySeen) state.maxConcurrencySeen = maxConcurrency;
  }

  #hasConcurrencyFor(state: OriginState, delayMs: number, maxConcurrency: number): boolean {
    if (delayMs > 0) return state.inFlight === 0;
    if (state.inFlightDelayed > 0) return false;
    return state.inFlight < Math.min(maxConcurrency, state.overload.recoveryCap ?? Infinity);
  }

  #canStart(state: OriginState, delayMs: number, maxConcurrency: number, nowMs: number): boolean {
    return this.#hasConcurrencyFor(state, delayMs, maxConcurrency) && earliestStartMs(state.timing, delayMs, this.#options) <= nowMs;
  }

  /** The refusal for a request that would wait, or undefined when it may wait. */
  #refusalFor(state: OriginState, identity: string, delayMs: number, nowMs: number): Refusal | undefined {
    const queue = state.queue;
    const identityQueueLength = queue.sizeOf(identity);
    let limit: 'max-queue' | 'max-queue-per-identity' | 'max-wait' | undefined;
    if (identityQueueLength >= this.#options.maxQueuePerIdentity) limit = 'max-queue-per-identity';
    else if (queue.size >= this.#options.maxQueue) limit = 'max-queue';
    // Cheap first: with every waiting request ahead (an upper bound of the round-robin estimate) it fits.
    else if (this.#waitFromMs(state, queue.delaySumMs, delayMs, nowMs) <= this.#options.maxWaitMs) return undefined;
    const head = queue.peek();
    const expectedWaitMs = this.#waitFromMs(state, head ? queue.entriesAheadDelayMs(identity) : 0, delayMs, nowMs);
    if (limit === undefined) {
      if (expectedWaitMs <= this.#options.maxWaitMs) return undefined;
      limit = 'max-wait';
    }
    return {
      reason: 'queue-full',
      limit,
      retryAfterSeconds: Math.max(1, Math.ceil(expectedWaitMs / 1000)),
      queueLength: queue.size,
      identityQueueLength,
      delayMs,
      expectedWaitMs,
    };
  }

  /**
   * The wait of a request with delay `delayMs` behind requests whose delays sum to `aheadMs`
   * (the head's included): the head's remaining time-to-ready, then the delay of each one after
   * it, then this request's own.
   */
  #waitFromMs(state: OriginState, aheadMs: number, delayMs: number, nowMs: number): number {
    const head = state.queue.peek();
    if (!head) return Math.max(0, earliestStartMs(state.timing, delayMs, this.#options) - nowMs);
    const headReadyMs = Math.max(0, earliestStartMs(state.timing, head.delayMs, this.#options) - nowMs);
    return headReadyMs + Math.max(0, aheadMs - head.delayMs) + delayMs;
  }

  /**
   * Starts every head that may start now, then makes sure a timer wakes the origin for its next event, if any.
   * @param knownNowMs the clock read by the caller in this same synchronous step (a release's end), ms;
   *   else the clock is read here, once: nothing in a pump waits, so one reading serves every head (issue 11).
   */
  #pump(state: OriginState, knownNowMs?: number): void {
    if (this.#isClosed) return;
    const queue = state.queue;
    let nowMs = knownNowMs;
    for (let head = queue.peek(); head; head = queue.peek()) {
      if (!this.#hasConcurrencyFor(state, head.delayMs, head.maxConcurrency)) return; // a release pumps again
      nowMs ??= this.#clock.nowMs();
      const readyMs = earliestStartMs(state.timing, head.delayMs, this.#options);
      // Timers may fire late or (rounded) early: the clock decides, and an early wake re-arms.
      if (readyMs > nowMs) return this.#wakeAt(state, readyMs, nowMs);
      queue.shift();
      this.#settle(head, this.#start(state, head.delayMs, head.enqueuedAtMs, nowMs, head.onHoldExceeded));
    }
    if (state.inFlight > 0) return;
    const forgetAtMs = Math.max(
      timingEndMs(state.timing, Math.max(state.maxDelaySeenMs, this.#options.idleRetentionMs), this.#options),
      overloadHoldUntilMs(state.overload),
    );
    nowMs ??= this.#clock.nowMs();
    if (forgetAtMs > nowMs) return this.#wakeAt(state, forgetAtMs, nowMs);
    this.#clearTimer(state);
    this.#origins.delete(state.origin);
  }

  /**
   * Makes sure the origin is pumped at `dueMs` at the latest. A timer already due no later is
   * kept (an early wake pumps, finds nothing to do yet and re-arms), so new waiters and steady
   * traffic do not re-arm it.
   */
  #wakeAt(state: OriginState, dueMs: number, nowMs: number): void {
    if (state.timerDueMs <= dueMs) return;
    this.#clearTimer(state);
    state.timerDueMs = dueMs;
    state.timer = this.#clock.setTimer(state.onTimer, dueMs - nowMs);
  }

  #clearTimer(state: OriginState): void {
    if (state.timerDueMs !== Infinity) this.#clock.clearTimer(state.timer);
    state.timer = undefined;
    state.timerDueMs = Infinity;
  }

  /** Starts a request now: its slot, which is also its grant ({@link GrantedSlot}). */
  #start(state: OriginState, delayMs: number, enqueuedAtMs: number, nowMs: number, onHoldExceeded: ((heldMs: number) => void) | undefined): GrantedSlot {
    state.inFlight += 1;
    if (delayMs > 0) state.inFlightDelayed += 1;
    state.startSeq += 1;
    recordStart(state.timing, nowMs, this.#options);
    const slot = new GrantedSlot(this.#slotHost, this.#holds, state, state.startSeq, delayMs, nowMs, nowMs - enqueuedAtMs, onHoldExceeded);
    slot.holds?.add(slot);
    return slot;
  }

  /** Frees the slot's concurrency, records its end and its overload answer, and pumps its origin. */
  #free(slot: GrantedSlot, outcome: ReleaseOutcome | undefined): void {
    slot.isReleased = true;
    slot.holds?.remove(slot);
    const state = slot.state;
    const endMs = this.#clock.nowMs();
    state.inFlight -= 1;
    if (slot.delayMs > 0) state.inFlightDelayed -= 1;
    recordEnd(state.timing, endMs);
    applyRelease(state.overload, state.timing, slot.seq, state.startSeq, outcome, endMs, state.maxConcurrencySeen, this.#options);
    this.#pump(state, endMs);
  }

  #release(slot: GrantedSlot, outcome: ReleaseOutcome | undefined): void {
    if (this.#isClosed) return;
    const state = slot.state;
    if (slot.isReclaimed) {
      // The slot was freed at the hold bound; the origin's answer still counts (a late 429/503 pauses it).
      slot.isReclaimed = false;
      // An origin state dropped meanwhile (idle) is not revived: its successor must not be touched.
      if (outcome?.status === undefined || this.#origins.get(state.origin) !== state) return;
      applyRelease(state.overload, state.timing, slot.seq, state.startSeq, outcome, this.#clock.nowMs(), state.maxConcurrencySeen, this.#options);
      this.#pump(state);
      return;
    }
    if (slot.isReleased) return;
    this.#free(slot, outcome);
  }

  /** The hold bound passed for a slot its holder still holds: free it and tell the holder. */
  #reclaim(slot: GrantedSlot): void {
    if (slot.isReleased || this.#isClosed) return;
    slot.isReclaimed = true;
    this.#free(slot, undefined);
    const onHoldExceeded = slot.onHoldExceeded;
    if (!onHoldExceeded) return;
    try {
      onHoldExceeded(this.#clock.nowMs() - slot.startedAtMs);
    } catch (error) {
      // The holder's failure is its own: report it as uncaught, without stopping the other reclaims.
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  #markSent(slot: GrantedSlot): void {
    // Dispatch latency (connection reuse, event-loop lag) must not shrink the gap the
    // origin sees: the next start counts from when this request really left.
    const state = slot.state;
    if (slot.isReleased || this.#isClosed || slot.seq !== state.startSeq) return;
    // Ordinary dispatch latency (well under a millisecond) is left alone, so a steady
    // stream keeps its rate; a late dispatch (a new connection, a busy event loop) moves the start.
    const sentMs = this.#clock.nowMs() - SEND_LATENCY_TOLERANCE_MS;
    const last = state.timing.lastStartMs ?? sentMs;
    if (sentMs <= last) return;
    state.timing.lastStartMs = sentMs;
    const starts = state.timing.recentStartsMs;
    if (starts.length > 0 && starts[starts.length - 1] === last) starts[starts.length - 1] = sentMs;
  }

  #abandon(waiter: Waiter): void {
    const state = waiter.state;
    if (!state.queue.remove(waiter)) return;
    this.#settle(waiter, ABORTED);
    this.#pump(state);
  }

  /** Takes `waiter`'s abort listener off and queues its answer for delivery ({@link Pacer.#deliverAnswers}). */
  #settle(waiter: Waiter, outcome: AcquireOutcome): void {
    waiter.signal?.removeEventListener('abort', waiter);
    waiter.outcome = outcome;
    if (this.#answeredTail) this.#answeredTail.nextAnswered = waiter;
    else this.#answeredHead = waiter;
    this.#answeredTail = waiter;
    if (this.#isDeliveryQueued) return;
    this.#isDeliveryQueued = true;
    // A reaction on a settled promise, not queueMicrotask (Node wraps each in an AsyncResource and a bound function).
    void SETTLED.then(this.#deliver);
  }

  /**
   * Tells every answered waiter's taker its answer, in the order decided (answers decided
   * meanwhile, by a taker's own release or acquire, are told in this same run). A slot whose
   * request's signal aborted since the grant is released here and its taker told `aborted`.
   * One microtask per event-loop turn, however many waiters were answered (issue 11).
   */
  #deliverAnswers(): void {
    this.#isDeliveryQueued = false;
    for (let waiter = this.#answeredHead; waiter; waiter = this.#answeredHead) {
      this.#answeredHead = waiter.nextAnswered;
      if (this.#answeredHead === undefined) this.#answeredTail = undefined;
      waiter.nextAnswered = undefined;
      let outcome = waiter.outcome as AcquireOutcome;
      waiter.outcome = undefined;
      if (outcome.granted && waiter.signal?.aborted) {
        outcome.slot.release();
        outcome = ABORTED;
      }
      try {
        waiter.taker.takeSlot(outcome);
      } catch (error) {
        // The taker's failure is its own: report it as uncaught, and tell the others.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  #statsOf(state: OriginState, nowMs: number): OriginPacingStats {
    return {
      origin: state.origin,
      queued: state.queue.size,
      queuedIdentities: state.queue.identities,
      inFlight: state.inFlight,
      pausedUntilMs: state.timing.pausedUntilMs > nowMs ? state.timing.pausedUntilMs : undefined,
      lastStartMs: state.timing.lastStartMs,
      recoveryCap: state.overload.recoveryCap,
    };
  }
}
