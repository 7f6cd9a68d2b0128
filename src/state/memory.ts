/**
 * The in-memory stores: one process is the whole fleet (`state.backend:
 * memory`, the default). The robots cache's own single flight and the local
 * pacer already do everything for one process, so the proxy uses no slot
 * store then; {@link MemorySlotStore} keeps the Redis store's semantics in
 * process (several pacers sharing it act as instances of one fleet, which the
 * fleet pacer's tests use). Extension, not in RFC 9309.
 */
import type { Clock } from '../clock.js';
import type { CacheEntry } from '../cache/snapshot-store.js';
import type { FetchedEntry, SlotLease, SlotRequest, SlotReservation, SlotReturn, SlotStore, SnapshotFlight } from './types.js';

/** Every fetch is this process's own; nothing is announced. */
export class MemorySnapshotFlight implements SnapshotFlight {
  async refresh(_origin: string, previous: CacheEntry | undefined, fetchHere: (base: CacheEntry | undefined) => Promise<FetchedEntry>): Promise<CacheEntry> {
    return (await fetchHere(previous)).entry;
  }

  onNewer(): void {}

  async close(): Promise<void> {}
}

interface OriginSlots {
  lastStartMs: number;
  lastEndMs: number;
  solo: string | undefined;
  /** Token -> lease end, ms. */
  inFlight: Map<string, number>;
  /** A reservation was answered busy since the last announced release. */
  isWaiting: boolean;
  pausedUntilMs: number;
}

interface MemoryLease extends SlotLease {
  readonly maxConcurrency: number;
}

/** The {@link SlotStore} semantics of `slot-scripts.ts`, in process, on `clock`. */
export class MemorySlotStore implements SlotStore {
  readonly #clock: Clock;
  readonly #slotLeaseMs: number;
  readonly #origins = new Map<string, OriginSlots>();
  readonly #listeners = new Map<string, Set<() => void>>();
  #seq = 0;

  /** @param slotLeaseMs lease of a slot, ms (> 0). */
  constructor(clock: Clock, slotLeaseMs: number) {
    this.#clock = clock;
    this.#slotLeaseMs = slotLeaseMs;
  }

  get isAvailable(): boolean {
    return true;
  }

  async reserve(request: SlotRequest): Promise<SlotReservation> {
    const nowMs = this.#clock.nowMs();
    const state = this.#stateOf(request.origin);
    if (state.pausedUntilMs > nowMs) return { granted: false, why: 'paused', retryInMs: state.pausedUntilMs - nowMs };
    for (const [token, endMs] of state.inFlight) if (endMs <= nowMs) state.inFlight.delete(token);
    const busy = (): SlotReservation => {
      state.isWaiting = true;
      return { granted: false, why: 'busy', retryInMs: Math.min(...state.inFlight.values()) - nowMs };
    };
    const token = `m${this.#seq++}`;
    let startMs = nowMs;
    if (request.delayMs > 0) {
      if (state.inFlight.size > 0) return busy();
      const fromMs = request.isEndToStart ? Math.max(state.lastStartMs, state.lastEndMs) : state.lastStartMs;
      startMs = Math.max(nowMs, fromMs + request.delayMs);
      if (startMs - nowMs > (request.maxStartInMs ?? Infinity)) return { granted: false, why: 'later', retryInMs: startMs - nowMs };
      state.solo = token;
    } else if (state.inFlight.size > 0 && ((state.solo !== undefined && state.inFlight.has(state.solo)) || state.inFlight.size >= request.maxConcurrency)) {
      return busy();
    }
    state.lastStartMs = Math.max(state.lastStartMs, startMs);
    state.inFlight.set(token, startMs + this.#slotLeaseMs);
    const lease: MemoryLease = { origin: request.origin, token, isDelayed: request.delayMs > 0, maxConcurrency: request.maxConcurrency };
    return { granted: true, lease, startInMs: startMs - nowMs };
  }

  release(lease: SlotLease, facts: SlotReturn): void {
    const nowMs = this.#clock.nowMs();
    const state = this.#stateOf(lease.origin);
    const before = state.inFlight.size;
    const wasHeld = state.inFlight.delete(lease.token);
    const isSolo = state.solo === lease.token;
    if (isSolo) {
      if (facts.sentAgoMs !== undefined) state.lastStartMs = Math.max(state.lastStartMs, nowMs - facts.sentAgoMs);
      state.solo = undefined;
    }
    state.lastEndMs = nowMs;
    if (facts.pauseMs > 0) state.pausedUntilMs = Math.max(state.pausedUntilMs, nowMs + facts.pauseMs);
    if (wasHeld && (isSolo || state.isWaiting || before >= (lease as MemoryLease).maxConcurrency)) {
      state.isWaiting = false;
      for (const listener of this.#listeners.get(lease.origin) ?? []) queueMicrotask(listener);
    }
  }

  async pause(origin: string, pauseMs: number): Promise<void> {
    if (!(pauseMs > 0)) return;
    const state = this.#stateOf(origin);
    state.pausedUntilMs = Math.max(state.pausedUntilMs, this.#clock.nowMs() + pauseMs);
  }

  onFree(origin: string, listener: () => void): () => void {
    let listeners = this.#listeners.get(origin);
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(origin, listeners);
    }
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  async close(): Promise<void> {}

  #stateOf(origin: string): OriginSlots {
    let state = this.#origins.get(origin);
    if (!state) {
      state = { lastStartMs: -Infinity, lastEndMs: -Infinity, solo: undefined, inFlight: new Map(), isWaiting: false, pausedUntilMs: 0 };
      this.#origins.set(origin, state);
    }
    return state;
  }
}
