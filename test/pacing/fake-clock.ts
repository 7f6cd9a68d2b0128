/**
 * A manual clock for pacing tests: time moves only when the test advances it,
 * and due timers fire in order (due time, then creation order), each at its
 * own instant, with promise callbacks flushed in between so code reacting to
 * a grant runs at the time of the grant.
 */
import type { Clock } from '../../src/clock.js';

interface FakeTimer {
  dueMs: number;
  id: number;
  fn: () => void;
}

/** Lets every pending promise callback run (one macrotask turn). */
export function flushMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class FakeClock implements Clock {
  #now: number;
  #nextId = 1;
  readonly #timers = new Map<number, FakeTimer>();
  /**
   * Simulates timers that wake early: a timer longer than `earlyMs` fires
   * `earlyMs` before it is due (a shorter one fires on time, so re-arming makes progress).
   */
  earlyMs = 0;

  constructor(startMs = 1_700_000_000_000) {
    this.#now = startMs;
  }

  nowMs(): number {
    return this.#now;
  }

  setTimer(fn: () => void, delayMs: number): unknown {
    const d = Math.max(0, delayMs);
    const id = this.#nextId++;
    this.#timers.set(id, { dueMs: this.#now + (d > this.earlyMs ? d - this.earlyMs : d), id, fn });
    return id;
  }

  clearTimer(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Timers set and not yet fired or cleared. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing every timer due on the way at its due time. */
  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.#now + ms);
  }

  /** Moves time forward to `targetMs` (ms since the epoch), firing due timers in order. */
  async advanceTo(targetMs: number): Promise<void> {
    await flushMicrotasks();
    for (;;) {
      let next: FakeTimer | undefined;
      for (const t of this.#timers.values()) {
        if (t.dueMs <= targetMs && (!next || t.dueMs < next.dueMs || (t.dueMs === next.dueMs && t.id < next.id))) next = t;
      }
      if (!next) break;
      this.#timers.delete(next.id);
      this.#now = Math.max(this.#now, next.dueMs);
      next.fn();
      await flushMicrotasks();
    }
    this.#now = Math.max(this.#now, targetMs);
    await flushMicrotasks();
  }
}
