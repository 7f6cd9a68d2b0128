/**
 * The source of time for edge modules. Pure modules never read the clock: they
 * take `nowMs` as an argument. Edge modules receive a `Clock` through their
 * constructor so tests can hand them a fake one.
 */
export interface Clock {
  /** Time in milliseconds on the epoch scale (fractional, monotonic for the system clock). */
  nowMs(): number;
  /** Calls `fn` after `delayMs` milliseconds, never earlier; returns a handle for {@link Clock.clearTimer}. */
  setTimer(fn: () => void, delayMs: number): unknown;
  /** Cancels a timer made by {@link Clock.setTimer}; a handle already fired or cleared is ignored. */
  clearTimer(handle: unknown): void;
}

/** Monotonic (immune to wall-clock jumps) yet on the epoch scale, with sub-millisecond precision. */
function monotonicNowMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * How much earlier than due a timer is armed, ms. Node timers fire about a
 * millisecond late (their granularity is 1 ms and the event loop adds its own
 * lag); pacing at 50 ms would lose 2% of its rate to that. The timer wakes
 * this much early and the rest is waited out with `setImmediate`, which
 * yields to I/O between checks.
 */
const EARLY_WAKE_MS = 1.5;

interface SystemTimer {
  timeout: NodeJS.Timeout | undefined;
  immediate: NodeJS.Immediate | undefined;
}

/** The real clock: {@link monotonicNowMs} and Node timers (unref'd, so they never keep the process alive). */
export const systemClock: Clock = {
  nowMs: monotonicNowMs,
  setTimer: (fn, delayMs) => {
    const dueMs = monotonicNowMs() + Math.max(0, delayMs);
    const timer: SystemTimer = { timeout: undefined, immediate: undefined };
    const check = (): void => {
      timer.timeout = undefined;
      if (monotonicNowMs() >= dueMs) {
        timer.immediate = undefined;
        fn();
        return;
      }
      // Ref'd on purpose: an unref'd immediate does not stop the loop from blocking in poll.
      timer.immediate = setImmediate(check);
    };
    timer.timeout = setTimeout(check, Math.max(0, delayMs - EARLY_WAKE_MS));
    timer.timeout.unref();
    return timer;
  },
  clearTimer: (handle) => {
    const timer = handle as SystemTimer | undefined;
    if (!timer) return;
    if (timer.timeout) clearTimeout(timer.timeout);
    if (timer.immediate) clearImmediate(timer.immediate);
    timer.timeout = undefined;
    timer.immediate = undefined;
  },
};
