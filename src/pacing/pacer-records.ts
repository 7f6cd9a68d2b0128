/**
 * The records the pacer keeps (pacer.ts): one origin's state, a waiting
 * request, a granted slot. Plain data with intrusive links, so queueing,
 * aborting and releasing allocate nothing beyond the record itself (issue 11).
 * No logic beyond forwarding to the pacer.
 */
import type { OriginTiming } from './origin-timing.js';
import type { OverloadState } from './overload.js';
import type { FairQueue, QueueEntry } from './fair-queue.js';
import type { HeldSlot, HoldList } from './hold-list.js';
import type { AbortSignalLike, AcquireOutcome, ReleaseOutcome, RequestLimits, Slot, SlotTaker } from './types.js';

/** One origin's pacing state. */
export interface OriginState {
  readonly origin: string;
  readonly timing: OriginTiming;
  readonly overload: OverloadState;
  /** Waiting requests: round-robin between identities, FIFO within one. */
  readonly queue: FairQueue<Waiter>;
  inFlight: number;
  /** In-flight requests that started with a delay > 0; such a request runs alone. */
  inFlightDelayed: number;
  /** Largest delay of any request started or queued here, ms: how long timing must be remembered. */
  maxDelaySeenMs: number;
  /** Largest `maxConcurrency` asked for here: the cap at which overload recovery is complete. */
  maxConcurrencySeen: number;
  /** Starts so far; a slot's sequence number tells which overload episode it belongs to. */
  startSeq: number;
  /** The origin's one timer (next start, or when to drop the state), or undefined. */
  timer: unknown;
  /** When `timer` fires, ms since the epoch; Infinity when none is armed. */
  timerDueMs: number;
  /** The timer's callback, made once per origin. */
  readonly onTimer: () => void;
}

/**
 * A waiting request: its queue record, its abort listener (`handleEvent`), and, once answered,
 * its entry in the pacer's delivery list (`outcome`, `nextAnswered`) until its taker is told.
 */
export class Waiter implements QueueEntry {
  owner: QueueEntry['owner'] = undefined;
  prev: QueueEntry | undefined = undefined;
  next: QueueEntry | undefined = undefined;
  /** The answer decided for it, waiting for delivery; undefined before. */
  outcome: AcquireOutcome | undefined = undefined;
  /** The next waiter in the pacer's delivery list. */
  nextAnswered: Waiter | undefined = undefined;

  constructor(
    /** Told the answer (`takeSlot`), once, from the pacer's delivery microtask. */
    readonly taker: SlotTaker,
    readonly state: OriginState,
    /** This request's delay, ms; recomputed by `reconfigure` through `limits`. */
    public delayMs: number,
    /** The caller's per-origin override, or undefined: the pacer's `maxConcurrency` applies. */
    public maxConcurrencyOverride: number | undefined,
    /** The override, else the pacer's `maxConcurrency` (kept in step by `reconfigure`). */
    public maxConcurrency: number,
    readonly limits: (() => RequestLimits) | undefined,
    readonly enqueuedAtMs: number,
    readonly signal: AbortSignalLike | undefined,
    readonly onHoldExceeded: ((heldMs: number) => void) | undefined,
    readonly onAbort: (waiter: Waiter) => void,
  ) {}

  /** The signal aborted (EventListener object: no closure per waiter). */
  handleEvent(): void {
    this.onAbort(this);
  }
}

/** The taker of a request that waits through `Pacer.acquire`: settles its promise. */
export class PromiseTaker implements SlotTaker {
  constructor(readonly resolve: (outcome: AcquireOutcome) => void) {}

  takeSlot(outcome: AcquireOutcome): void {
    this.resolve(outcome);
  }
}

/** What a granted slot calls back into its pacer. */
export interface SlotHost {
  release(slot: GrantedSlot, outcome: ReleaseOutcome | undefined): void;
  markSent(slot: GrantedSlot): void;
}

/**
 * A granted slot; its methods live on the prototype (no closures per request). It is also its own
 * grant (`{ granted: true, slot }`: `granted` is true and `slot` is the slot itself), so a grant
 * allocates no outcome object besides the slot (issue 11).
 */
export class GrantedSlot implements Slot, HeldSlot {
  /** Always true: the slot read as its grant ({@link AcquireOutcome}). */
  readonly granted = true as const;
  /** The slot itself: the slot read as its grant ({@link AcquireOutcome}). */
  readonly slot: GrantedSlot = this;
  /** Released by its holder or by the hold bound. */
  isReleased = false;
  /** Released by the hold bound: the holder's own release may still report an overload answer. */
  isReclaimed = false;
  holdPrev: HeldSlot | undefined = undefined;
  holdNext: HeldSlot | undefined = undefined;
  isHeld = false;
  readonly origin: string;

  constructor(
    readonly host: SlotHost,
    /** The hold list the slot is in (the one in force when it was granted), if any. */
    readonly holds: HoldList<GrantedSlot> | undefined,
    readonly state: OriginState,
    readonly seq: number,
    readonly delayMs: number,
    readonly startedAtMs: number,
    readonly waitedMs: number,
    readonly onHoldExceeded: ((heldMs: number) => void) | undefined,
  ) {
    this.origin = state.origin;
  }

  markSent(): void {
    this.host.markSent(this);
  }

  release(outcome?: ReleaseOutcome): void {
    this.host.release(this, outcome);
  }
}
