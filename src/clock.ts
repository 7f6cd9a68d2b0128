/**
 * The source of time for edge modules. Pure modules never read the clock: they
 * take `nowMs` as an argument. Edge modules receive a `Clock` through their
 * constructor so tests can hand them a fake one.
 */
export interface Clock {
  /** Wall-clock time in milliseconds since the Unix epoch. */
  nowMs(): number;
  /** Calls `fn` after `delayMs` milliseconds; returns a handle for {@link Clock.clearTimer}. */
  setTimer(fn: () => void, delayMs: number): unknown;
  /** Cancels a timer made by {@link Clock.setTimer}; a handle already fired or cleared is ignored. */
  clearTimer(handle: unknown): void;
}

/** The real clock: `performance.timeOrigin + performance.now()` and Node timers (unref'd, so they never keep the process alive). */
export const systemClock: Clock = {
  // Monotonic (immune to wall-clock jumps) yet on the epoch scale, with sub-millisecond precision.
  nowMs: () => performance.timeOrigin + performance.now(),
  setTimer: (fn, delayMs) => {
    const t = setTimeout(fn, Math.max(0, delayMs));
    t.unref();
    return t;
  },
  clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
