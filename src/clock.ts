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

/** How long {@link measureTimeOriginMs} samples for a bracket of {@link CALIBRATION_WIDTH_MS}, ms of the monotonic clock. */
const CALIBRATION_BUDGET_MS = 25;
/** How wide the bracket around the origin {@link measureTimeOriginMs} settles for, ms. */
const CALIBRATION_WIDTH_MS = 0.02;
/** Past {@link CALIBRATION_BUDGET_MS}, the bracket it settles for, ms: the wall clock's own millisecond. */
const CALIBRATION_FALLBACK_WIDTH_MS = 1;
/** The most {@link measureTimeOriginMs} may take, ms of the monotonic clock, whatever it has then. */
const CALIBRATION_CAP_MS = 100;

/**
 * The epoch time, ms, at which `performance.now()` read 0, measured against the
 * wall clock (`Date.now()`).
 *
 * Node's own `performance.timeOrigin` comes from reading the two clocks once at
 * process start; a process preempted between the reads has it off by
 * milliseconds (2.7 ms seen on a loaded 2-core machine, 6 ms in the test
 * suite), and two instances of a fleet then log the same instant that far
 * apart. This polls `Date.now()` until its millisecond changes, reading the
 * monotonic clock between polls. The wall time was below the old millisecond's
 * end at the monotonic reading before the last unchanged poll (an upper bound
 * of the origin), and at least the new millisecond at the reading after the
 * changed poll (a lower bound). A sample is as tight as those two readings are
 * close: a process descheduled while it polls (a loaded machine) sees the
 * change late, and that sample's lower bound is off by as long as it waited
 * (0.4 ms seen with four fixed samples under load, session 28; with a fixed
 * 5 ms budget, a first sample descheduled for longer than the budget was the
 * answer, off by the whole deschedule: test/clock.test.ts simulates one). So samples are taken until the largest lower
 * bound and the smallest upper bound are within {@link CALIBRATION_WIDTH_MS};
 * past {@link CALIBRATION_BUDGET_MS}, within {@link CALIBRATION_FALLBACK_WIDTH_MS};
 * the lower bound is the answer, within that width of the origin.
 *
 * Costs one or two wall-clock milliseconds of busy waiting, once per process;
 * on a loaded machine up to {@link CALIBRATION_CAP_MS}. Falls back to
 * `performance.timeOrigin` when the wall clock does not move in that time (a
 * test's mocked `Date`).
 */
function measureTimeOriginMs(): number {
  const startedAt = performance.now();
  let lower = -Infinity;
  let upper = Infinity;
  while (upper - lower > CALIBRATION_WIDTH_MS) {
    const spentMs = performance.now() - startedAt;
    if (spentMs > CALIBRATION_CAP_MS || (spentMs > CALIBRATION_BUDGET_MS && upper - lower <= CALIBRATION_FALLBACK_WIDTH_MS)) break;
    const wallBefore = Date.now();
    /** The latest monotonic reading after which the wall clock still read `wallBefore`. */
    let monotonicBefore = -Infinity;
    let wall: number;
    for (;;) {
      const monotonic = performance.now();
      wall = Date.now();
      if (wall !== wallBefore) break;
      if (monotonic - startedAt > CALIBRATION_CAP_MS) return lower === -Infinity ? performance.timeOrigin : lower;
      monotonicBefore = monotonic;
    }
    const monotonicAfter = performance.now();
    upper = Math.min(upper, wallBefore + 1 - monotonicBefore);
    lower = Math.max(lower, wall - monotonicAfter);
  }
  return lower === -Infinity ? performance.timeOrigin : lower;
}

/** The epoch time of the monotonic clock's zero, ms: read once (see {@link measureTimeOriginMs}); this clock is read about ten times per request. */
const TIME_ORIGIN_MS = measureTimeOriginMs();

/**
 * A `performance.now()` reading (ms since this process's time origin) on the epoch scale, ms,
 * the same scale as {@link systemClock}'s `nowMs()`.
 */
export function monotonicToEpochMs(monotonicMs: number): number {
  return TIME_ORIGIN_MS + monotonicMs;
}

/**
 * Monotonic (immune to wall-clock jumps) yet on the epoch scale, with sub-millisecond precision.
 * `performance` is node:perf_hooks' (the same object): the global one is a getter on `globalThis`,
 * run on every read (about 15 ns of ~70 per call, issue 11).
 */
function monotonicNowMs(): number {
  return TIME_ORIGIN_MS + performance.now();
}

let epochAheadMs: number | undefined;

/**
 * How far this process's epoch-scale clock ({@link systemClock}, {@link monotonicToEpochMs}) reads
 * ahead of the host's monotonic clock (`process.hrtime`: CLOCK_MONOTONIC, ms since boot), ms; a
 * constant for the process's life. Every process on a host shares the monotonic clock; their
 * epoch-scale clocks differ by where each put its origin, which a wall clock slewed between their
 * starts moves (this project's test machine's ran 5 ms a second fast for a while, session 28). A
 * time of this clock less this value is on the host's monotonic clock, comparable across processes.
 * Measured on first call (of five reading pairs, the one whose monotonic readings are closest,
 * within microseconds); logged in the `listening` line. Never throws.
 */
export function epochAheadOfMonotonicMs(): number {
  if (epochAheadMs !== undefined) return epochAheadMs;
  let bestSpanNs = Infinity;
  let ahead = 0;
  for (let i = 0; i < 5; i++) {
    const before = process.hrtime.bigint();
    const epochMs = monotonicNowMs();
    const after = process.hrtime.bigint();
    const spanNs = Number(after - before);
    if (spanNs < bestSpanNs) {
      bestSpanNs = spanNs;
      ahead = epochMs - Number(before + (after - before) / 2n) / 1e6;
    }
  }
  epochAheadMs = ahead;
  return ahead;
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
