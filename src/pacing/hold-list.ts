/**
 * The slot hold bound (`maxSlotHoldMs`) for every slot of one pacer with one
 * timer: slots are held for the same bound, so they expire in the order they
 * were granted, and a FIFO list of held slots needs only one timer, armed for
 * its oldest slot. A release unlinks its slot (O(1)) and touches no timer; a
 * timer that wakes for a slot released meanwhile re-arms for the new oldest
 * one, or stops when none is held. So a busy origin costs one timer per hold
 * bound, not one per request. The forwarder keeps its client write bound
 * (`clients.responseWriteTimeout`) the same way. Extension, not in RFC 9309.
 */
import type { Clock } from '../clock.js';

/** What the list needs of a held slot; the link fields belong to the list. */
export interface HeldSlot {
  /** When the slot was granted, ms since the epoch (the clock's). */
  readonly startedAtMs: number;
  /** @internal */
  holdPrev: HeldSlot | undefined;
  /** @internal */
  holdNext: HeldSlot | undefined;
  /** @internal true while in a hold list */
  isHeld: boolean;
}

export class HoldList<T extends HeldSlot> {
  readonly #clock: Clock;
  readonly #holdMs: number;
  readonly #onExpired: (slot: T) => void;
  #head: HeldSlot | undefined;
  #tail: HeldSlot | undefined;
  #timer: unknown;
  #timerDueMs = Infinity;
  /** True while expired slots are handed out (their handlers may add slots: the timer is armed after). */
  #isExpiring = false;
  readonly #onTimer = (): void => this.#expire();

  /**
   * @param holdMs how long a slot may be held, ms (> 0).
   * @param onExpired called once for each slot still held `holdMs` after its start, after it
   *   left the list, in grant order.
   */
  constructor(clock: Clock, holdMs: number, onExpired: (slot: T) => void) {
    this.#clock = clock;
    this.#holdMs = holdMs;
    this.#onExpired = onExpired;
  }

  /**
   * Starts holding `slot`. Slots must be added in the order of their `startedAtMs` (a
   * monotonic clock gives that); one added out of order expires no earlier than it should,
   * but possibly later, when the slots before it have.
   */
  add(slot: T): void {
    slot.isHeld = true;
    slot.holdPrev = this.#tail;
    slot.holdNext = undefined;
    if (this.#tail) this.#tail.holdNext = slot;
    else this.#head = slot;
    this.#tail = slot;
    if (this.#timerDueMs === Infinity && !this.#isExpiring) this.#arm(slot.startedAtMs + this.#holdMs);
  }

  /** True when no slot is held. */
  get isEmpty(): boolean {
    return this.#head === undefined;
  }

  /** Stops holding `slot` (released by its holder). O(1); a slot not held is ignored. */
  remove(slot: T): void {
    if (!slot.isHeld) return;
    slot.isHeld = false;
    if (slot.holdPrev) slot.holdPrev.holdNext = slot.holdNext;
    else this.#head = slot.holdNext;
    if (slot.holdNext) slot.holdNext.holdPrev = slot.holdPrev;
    else this.#tail = slot.holdPrev;
    slot.holdPrev = undefined;
    slot.holdNext = undefined;
  }

  /** Forgets every slot and clears the timer (the pacer closes). */
  clear(): void {
    for (let slot = this.#head; slot; ) {
      const next = slot.holdNext;
      slot.isHeld = false;
      slot.holdPrev = undefined;
      slot.holdNext = undefined;
      slot = next;
    }
    this.#head = undefined;
    this.#tail = undefined;
    if (this.#timerDueMs !== Infinity) this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#timerDueMs = Infinity;
  }

  #arm(dueMs: number): void {
    this.#timerDueMs = dueMs;
    this.#timer = this.#clock.setTimer(this.#onTimer, dueMs - this.#clock.nowMs());
  }

  #expire(): void {
    this.#timer = undefined;
    this.#timerDueMs = Infinity;
    const nowMs = this.#clock.nowMs();
    this.#isExpiring = true;
    try {
      // The clock decides: a timer that woke early finds nothing due and re-arms.
      for (let slot = this.#head; slot && slot.startedAtMs + this.#holdMs <= nowMs; slot = this.#head) {
        this.remove(slot as T);
        this.#onExpired(slot as T);
      }
    } finally {
      this.#isExpiring = false;
    }
    // A handler may have cleared the list (the pacer closed) or added slots.
    if (this.#head && this.#timerDueMs === Infinity) this.#arm(this.#head.startedAtMs + this.#holdMs);
  }
}
