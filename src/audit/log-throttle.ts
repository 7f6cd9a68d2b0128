/**
 * At most one log line per key per interval: a warning any peer can trigger
 * (a refused connection, an aborted TLS handshake) must not let a flood of
 * such peers flood the log. The line that is written says how many were not
 * (`suppressed`, since the previous line for the key). Extension, not in RFC 9309.
 */

/** Options of {@link LogThrottle}. */
export interface LogThrottleOptions {
  /** The current time, ms (any monotonic or epoch clock). */
  nowMs: () => number;
  /** At most one line per key per this many ms. @default 10000 */
  intervalMs?: number;
  /**
   * Keys remembered at most; beyond, the oldest is forgotten (its next event is
   * logged at once). Bounds memory when keys come from peers. @default 256
   */
  maxKeys?: number;
}

/** Decides per key whether a line is written now, and counts those that are not. Never throws. */
export class LogThrottle {
  readonly #options: LogThrottleOptions;
  readonly #state = new Map<string, { lastLoggedAtMs: number; suppressed: number }>();

  constructor(options: LogThrottleOptions) {
    this.#options = options;
  }

  /**
   * One event for `key`. Returns the number of events suppressed since the
   * previous line for the key when this one is to be logged (0 for the first),
   * or `undefined` when it is suppressed (and counted).
   */
  admit(key: string): number | undefined {
    const nowMs = this.#options.nowMs();
    const state = this.#state.get(key);
    if (state !== undefined && nowMs - state.lastLoggedAtMs < (this.#options.intervalMs ?? 10_000)) {
      state.suppressed += 1;
      return undefined;
    }
    this.#state.delete(key);
    if (this.#state.size >= (this.#options.maxKeys ?? 256)) {
      const oldest = this.#state.keys().next();
      if (oldest.done !== true) this.#state.delete(oldest.value);
    }
    this.#state.set(key, { lastLoggedAtMs: nowMs, suppressed: 0 });
    return state?.suppressed ?? 0;
  }
}
