/**
 * The store interfaces for what a fleet of instances shares (issue 10,
 * DESIGN.md "fleet"): pacing slots and pauses per origin, and robots.txt
 * fetches. Each has an in-memory implementation that is today's single
 * process (`memory.ts`) and a Redis one (`redis-*.ts`). Extension, not in
 * RFC 9309.
 */
import type { CacheEntry } from '../cache/snapshot-store.js';

/** What one request asks of the fleet's pacing at its origin. */
export interface SlotRequest {
  /** `scheme://host[:port]`, normalised. */
  origin: string;
  /**
   * The request's delay, ms (>= 0). > 0: it runs alone fleet-wide and starts no earlier than
   * the origin's previous start (or end, `end-to-start`) plus this. 0: at most `maxConcurrency`
   * undelayed requests in flight fleet-wide.
   */
  delayMs: number;
  /** Undelayed requests in flight at the origin fleet-wide, integer >= 1. */
  maxConcurrency: number;
  /** Measure the delay from the previous end (`end-to-start`) as well as the previous start. */
  isEndToStart: boolean;
  /**
   * Latest start the request accepts, ms from now (what is left of its `pacing.maxWait`): a delayed
   * start later than this is not reserved (answered `later`), so a request that would be refused
   * takes no start from the others. Undefined: any start.
   */
  maxStartInMs?: number;
}

/** A reserved slot: the holder must release it exactly once; its lease frees it if the holder dies. */
export interface SlotLease {
  readonly origin: string;
  /** Unique per reservation. */
  readonly token: string;
  /** True when the request had a delay (it runs alone). */
  readonly isDelayed: boolean;
}

/**
 * The answer to {@link SlotStore.reserve}:
 * - granted: the slot is held from now; the request may start `startInMs` from now (the reserved
 *   start, on the store's clock; 0 = at once).
 * - not granted: `paused` (an upstream 429/503 paused the origin) or `busy` (a delayed request
 *   runs, or `maxConcurrency` are in flight); ask again after a {@link SlotStore.onFree} notice
 *   for the origin or after `retryInMs`, whichever is first (the earliest lease or pause end);
 *   `later`: the delayed start would be `retryInMs` from now, past `maxStartInMs` (nothing reserved).
 */
export type SlotReservation =
  | { granted: true; lease: SlotLease; startInMs: number }
  | { granted: false; why: 'busy' | 'paused' | 'later'; retryInMs: number };

/** What the holder learned, given back with the slot. */
export interface SlotReturn {
  /** ms since the request was written upstream (its real start), or undefined when it never was. */
  sentAgoMs: number | undefined;
  /** Pause the origin for every instance this long from now, ms (an upstream 429/503); 0: no pause. */
  pauseMs: number;
}

/**
 * Pacing slots and pauses per origin, fleet-wide. Calls that talk to a shared store reject with
 * `StateUnavailableError` when it does not answer within its command timeout.
 */
export interface SlotStore {
  /** Reserves the next start slot at `request.origin`, or says why not and when to ask again. */
  reserve(request: SlotRequest): Promise<SlotReservation>;
  /** Gives a slot back (frees its concurrency, records its real start, sets a pause). Never throws; a failure is logged, the lease expires. */
  release(lease: SlotLease, facts: SlotReturn): void;
  /**
   * Pauses `origin` for every instance `pauseMs` from now (on the store's clock), unless it is
   * already paused longer: a pause is never shortened (the origin's robots.txt answered 429/503,
   * held by no slot). `pauseMs` <= 0 does nothing.
   * @returns a promise that settles once the store holds the pause, or its failure is logged
   *   (`fleet-state`: the pause stays this instance's own); never rejects.
   */
  pause(origin: string, pauseMs: number): Promise<void>;
  /** Calls `listener` when a slot at `origin` may have become free (another instance released one). @returns the unsubscribe function. */
  onFree(origin: string, listener: () => void): () => void;
  /** True while the store answers (a shared store that stopped answering is false until it is back). */
  readonly isAvailable: boolean;
  close(): Promise<void>;
}

/** A fetched cache entry with the body it was parsed from (null: the outcome had none; undefined: not known here). */
export interface FetchedEntry {
  entry: CacheEntry;
  body: Buffer | null | undefined;
}

/**
 * One robots.txt fetch per origin per cache period for the whole fleet (single flight). Never
 * rejects: when the shared store fails, the fetch is this instance's own.
 */
export interface SnapshotFlight {
  /**
   * The entry to serve for `origin`: a fresh one another instance stored, else the result of
   * `fetchHere` (called at most once, with the newest entry known: the shared one or `previous`),
   * which is then shared. Concurrent callers on other instances wait for it (a lease bounds the wait).
   */
  refresh(origin: string, previous: CacheEntry | undefined, fetchHere: (base: CacheEntry | undefined) => Promise<FetchedEntry>): Promise<CacheEntry>;
  /** Calls `listener` with an origin when another instance stored a newer entry for it. */
  onNewer(listener: (origin: string) => void): void;
  close(): Promise<void>;
}
