/**
 * Drives a Pacer on a FakeClock and records what happened to each request:
 * when it started (relative to the clock's start), when it ended, how many
 * requests were in flight per origin at most.
 */
import { Pacer } from '../../src/pacing/pacer.js';
import type { PacingOptions } from '../../src/pacing/pacing-options.js';
import type { AbortSignalLike, AcquireOutcome, RequestLimits, Slot } from '../../src/pacing/types.js';
import { FakeClock } from './fake-clock.js';

export interface RequestPlan {
  /** Release this long after the start (via the fake clock); 0 releases at once; omit to release by hand. */
  serviceMs?: number;
  /** Status reported on release. */
  status?: number;
  retryAfter?: string | null;
  signal?: AbortSignalLike;
  maxConcurrency?: number;
  /** Recomputes the delay and concurrency when the pacer is reconfigured while the request waits. */
  limits?: () => RequestLimits;
  /** Who asks (round-robin between identities); {@link DEFAULT_IDENTITY} when omitted. */
  identity?: string;
}

/** The identity of a request whose plan names none. */
export const DEFAULT_IDENTITY = 'client-1';

export interface Trace {
  origin: string;
  identity: string;
  delayMs: number;
  outcome: AcquireOutcome | undefined;
  /** Start, ms after the clock's start. */
  startMs: number | undefined;
  /** End, ms after the clock's start. */
  endMs: number | undefined;
  slot: Slot | undefined;
}

export class Harness {
  readonly clock: FakeClock;
  readonly pacer: Pacer;
  readonly traces: Trace[] = [];
  readonly #t0: number;
  readonly #inFlight = new Map<string, number>();
  /** Most requests seen in flight at once, per origin. */
  readonly maxInFlight = new Map<string, number>();

  constructor(options: Partial<PacingOptions> = {}) {
    this.clock = new FakeClock();
    this.#t0 = this.clock.nowMs();
    this.pacer = new Pacer({ maxConcurrency: 4, maxWaitMs: 1e9, maxQueue: 1000, ...options }, this.clock);
  }

  /** Now, ms after the clock's start. */
  get now(): number {
    return this.clock.nowMs() - this.#t0;
  }

  request(origin: string, delayMs: number, plan: RequestPlan = {}): Trace {
    const identity = plan.identity ?? DEFAULT_IDENTITY;
    const trace: Trace = { origin, identity, delayMs, outcome: undefined, startMs: undefined, endMs: undefined, slot: undefined };
    this.traces.push(trace);
    const { signal, maxConcurrency, limits } = plan;
    void Promise.resolve(this.pacer.acquire(origin, delayMs, { identity, ...(signal ? { signal } : {}), ...(maxConcurrency ? { maxConcurrency } : {}), ...(limits ? { limits } : {}) })).then((outcome) => {
      trace.outcome = outcome;
      if (!outcome.granted) return;
      trace.slot = outcome.slot;
      trace.startMs = outcome.slot.startedAtMs - this.#t0;
      if (outcome.slot.startedAtMs !== this.clock.nowMs()) throw new Error('slot resolved at another time than its start');
      const n = (this.#inFlight.get(origin) ?? 0) + 1;
      this.#inFlight.set(origin, n);
      this.maxInFlight.set(origin, Math.max(this.maxInFlight.get(origin) ?? 0, n));
      if (plan.serviceMs === 0) this.end(trace, plan);
      else if (plan.serviceMs !== undefined) this.clock.setTimer(() => this.end(trace, plan), plan.serviceMs);
    });
    return trace;
  }

  /** Releases a granted request now with the plan's status. */
  end(trace: Trace, plan: RequestPlan = {}): void {
    if (!trace.slot) throw new Error('not granted');
    trace.endMs = this.now;
    this.#inFlight.set(trace.origin, (this.#inFlight.get(trace.origin) ?? 1) - 1);
    trace.slot.release({
      ...(plan.status !== undefined ? { status: plan.status } : {}),
      ...(plan.retryAfter !== undefined ? { retryAfter: plan.retryAfter } : {}),
    });
  }

  /** Start times (ms after the clock's start) of the granted requests to `origin`, in start order. */
  starts(origin: string): number[] {
    return this.traces
      .filter((t) => t.origin === origin && t.startMs !== undefined)
      .map((t) => t.startMs as number)
      .sort((a, b) => a - b);
  }
}
