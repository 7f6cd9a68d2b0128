/**
 * Where the robots cache keeps one entry per origin. The in-memory store is an
 * LRU bounded by origin count; the interface lets a shared store (Redis, for a
 * multi-instance deployment) replace it without touching the cache
 * (DESIGN.md "State that a multi-instance deployment must share").
 */
import { LRUCache } from 'lru-cache';
import type { SnapshotInfo } from '../policy/decision.js';
import type { RobotsSnapshot } from '../policy/snapshot.js';

/**
 * A robots snapshot as the cache serves it. When the last fetch was
 * unreachable but an earlier one succeeded, `info`/`robots` are that earlier
 * good snapshot (RFC 9309 §2.4, DESIGN.md "keep using a previously fetched
 * snapshot") and `lastFailure` describes the failed attempt: its status or
 * error and, in `expiresAtMs`, when it will be retried.
 */
export interface CachedRobotsSnapshot extends RobotsSnapshot {
  /** The failed attempt behind a stale good snapshot; null when `info` is the latest attempt. */
  lastFailure: SnapshotInfo | null;
}

/** One origin's cache entry. */
export interface CacheEntry {
  /** What `RobotsCache.get` returns for the origin. */
  readonly snapshot: CachedRobotsSnapshot;
  /** Unreachable fetches in a row (0 after a 2xx or 4xx); sets the retry backoff. */
  readonly consecutiveFailures: number;
}

/** A value or a promise of it: a shared store answers asynchronously. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * Storage of cache entries by origin. Implementations may evict entries at
 * will (a miss only causes a refetch). The cache awaits every call; a call
 * that throws or rejects is logged and treated as a miss / a lost write.
 */
export interface SnapshotStore {
  /** The entry for `origin`, counting as a use (for LRU); undefined when absent. */
  get(origin: string): MaybePromise<CacheEntry | undefined>;
  /** The entry for `origin` without counting as a use. */
  peek(origin: string): MaybePromise<CacheEntry | undefined>;
  /** Stores (replaces) the entry for `origin`. */
  set(origin: string, entry: CacheEntry): MaybePromise<void>;
  /** Entries held (by this instance, for a shared store). */
  readonly size: number;
}

/**
 * The in-memory {@link SnapshotStore}: lru-cache bounded to `maxOrigins`
 * entries; the least recently used origin is dropped first. Entries are not
 * dropped on expiry: an expired good snapshot is still needed when the next
 * fetch fails.
 */
export class MemorySnapshotStore implements SnapshotStore {
  readonly #entries: LRUCache<string, CacheEntry>;

  /**
   * @param maxOrigins most entries kept, at least 1.
   * @throws {TypeError} from lru-cache when `maxOrigins` is not a positive integer.
   */
  constructor(maxOrigins: number) {
    this.#entries = new LRUCache<string, CacheEntry>({ max: maxOrigins });
  }

  get(origin: string): CacheEntry | undefined {
    return this.#entries.get(origin);
  }

  peek(origin: string): CacheEntry | undefined {
    return this.#entries.peek(origin);
  }

  set(origin: string, entry: CacheEntry): void {
    this.#entries.set(origin, entry);
  }

  get size(): number {
    return this.#entries.size;
  }
}
