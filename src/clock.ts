import { performance } from 'node:perf_hooks';

/**
 * The source of time for edge modules. Pure modules never read the clock: they
 * take `nowMs` as an argument. Edge modules receive a `Clock` through their
 * constructor so tests can hand them a fake one.
 */
export interface Clock {
  /** Time in milliseconds on the epoch scale (fractional, monotonic for the system clock). */
  nowMs(): number;
  /**
   * Calls `fn` after `delayMs` milliseconds, never earlier; returns a handle for {@link Clock.clearTimer}.
   * Any delay is accepted: a negative or NaN one counts as 0, `Infinity` never fires.
   */
  setTimer(fn: () => void, delayMs: number): unknown;
  /** Cancels a timer made by {@link Clock.setTimer}; a handle already fired or cleared is ignored. */
  clearTimer(handle: unknown): void;
}

/**
 * The longest delay one Node timer can wait, ms (2^31 - 1, about 24.8 days).
 * Node fires a longer `setTimeout` after 1 ms instead (with a
 * TimeoutOverflowWarning), so longer waits are chained out of timers this long.
 */
export const MAX_TIMEOUT_MS = 2_147_483_647;

/** `performance.timeOrigin`, read once (a branded getter, about 10 ns per read; this clock is read about ten times per request). */
const TIME_ORIGIN_MS = performance.timeOrigin;

/**
 * Monotonic (immune to wall-clock jumps) yet on the epoch scale, with sub-millisecond precision.
 * `performance` is node:perf_hooks' (the same object): the global one is a getter on `globalThis`,
 * run on every read (about 15 ns of ~70 per call, issue 11).
 */
function monotonicNowMs(): number {
  return TIME_ORIGIN_MS + performance.now();
}

/**
 * How much earlier than due a timer is armed, ms. Node timers fire about a
 * millisecond late (their granularity is 1 ms and the event loop adds its own
 * lag); pacing at 50 ms would lose 2% of its rate to that. The timer wakes
 * this much early and the rest is waited out with `setImmediate`, which
 * yields to I/O between checks.
 */
const EARLY_WAKE_MS = 1.5;

/** The timer primitives {@link createSystemClock} builds on (Node's globals by default; tests pass recorders). */
export interface TimerPrimitives {
  nowMs(): number;
  setTimeout(fn: () => void, delayMs: number): { unref(): unknown };
  clearTimeout(handle: unknown): void;
  setImmediate(fn: () => void): unknown;
  clearImmediate(handle: unknown): void;
}

const NODE_TIMERS: TimerPrimitives = {
  nowMs: monotonicNowMs,
  setTimeout: (fn, delayMs) => setTimeout(fn, delayMs),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  setImmediate: (fn) => setImmediate(fn),
  clearImmediate: (handle) => clearImmediate(handle as NodeJS.Immediate),
};

interface SystemTimer {
  timeout: unknown;
  immediate: unknown;
}

/**
 * A clock on real timers: `nowMs` from `timers`, and `setTimer` that never
 * fires early, whatever the delay. A delay longer than {@link MAX_TIMEOUT_MS}
 * is waited out as a chain of timers of at most that length (each wake checks
 * the clock and re-arms), so no timer overflows and nothing spins. Timers are
 * unref'd: they never keep the process alive.
 * @param timers the primitives; Node's own by default.
 */
export function createSystemClock(timers: TimerPrimitives = NODE_TIMERS): Clock {
  return {
    nowMs: () => timers.nowMs(),
    setTimer: (fn, delayMs) => {
      const waitMs = delayMs > 0 ? delayMs : 0; // NaN and negatives: at once
      const dueMs = timers.nowMs() + waitMs;
      const timer: SystemTimer = { timeout: undefined, immediate: undefined };
      const arm = (ms: number): void => {
        const isChunk = ms > MAX_TIMEOUT_MS;
        const timeout = timers.setTimeout(() => check(isChunk), isChunk ? MAX_TIMEOUT_MS : ms);
        timeout.unref();
        timer.timeout = timeout;
      };
      function check(afterChunk = false): void {
        timer.timeout = undefined;
        timer.immediate = undefined;
        const remainingMs = dueMs - timers.nowMs();
        if (remainingMs <= 0) {
          fn();
          return;
        }
        // One link of a chained long wait ended: sleep again for the rest.
        if (afterChunk && remainingMs > EARLY_WAKE_MS) return arm(remainingMs - EARLY_WAKE_MS);
        // Ref'd on purpose: an unref'd immediate does not stop the loop from blocking in poll.
        timer.immediate = timers.setImmediate(check);
      }
      arm(Math.max(0, waitMs - EARLY_WAKE_MS));
      return timer;
    },
    clearTimer: (handle) => {
      const timer = handle as SystemTimer | undefined;
      if (!timer) return;
      if (timer.timeout !== undefined) timers.clearTimeout(timer.timeout);
      if (timer.immediate !== undefined) timers.clearImmediate(timer.immediate);
      timer.timeout = undefined;
      timer.immediate = undefined;
    },
  };
}

/** The real clock: {@link monotonicNowMs} and Node timers (unref'd, so they never keep the process alive). */
export const systemClock: Clock = createSystemClock();
