/**
 * Where the robots cache keeps one entry per origin. The in-memory store is an
 * LRU bounded by estimated heap bytes and by origin count; the interface lets a shared store (Redis, for a
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
  /** Estimated heap cost of the entry, bytes: snapshot, parsed file and rule indexes (see snapshot-size.ts). */
  readonly bytes: number;
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
  /** Stores (replaces) the entry for `origin`; a store may refuse an entry larger than its budget (a miss later). */
  set(origin: string, entry: CacheEntry): MaybePromise<void>;
  /** Entries held (by this instance, for a shared store). */
  readonly size: number;
  /** Estimated heap bytes of the entries this instance holds in memory (0 for a store that keeps none). */
  readonly bytes: number;
  /**
   * Bytes held outside the store that count against its memory budget
   * (robots.txt fetches in flight); the store drops entries, least recently
   * used first, so that its entries and these fit. Replaces the earlier value.
   */
  setReservedBytes(bytes: number): void;
  /** Entries dropped to stay within the bounds, since construction. */
  readonly evictions: number;
}

/** Bounds of a {@link MemorySnapshotStore}. */
export interface MemoryStoreBounds {
  /** Estimated heap bytes the entries may cost together (`robots.cacheBytes`), at least 1. */
  maxBytes: number;
  /** Most entries (`robots.maxOrigins`), at least 1. */
  maxOrigins: number;
}

/**
 * The in-memory {@link SnapshotStore}: lru-cache bounded by the entries'
 * estimated bytes (`entry.bytes`, plus the reserved bytes of fetches in
 * flight) and by their count; the least recently used origin is dropped
 * first. An entry larger than the whole budget is not kept (the request that
 * fetched it still uses it). Entries are not dropped on expiry: an expired
 * good snapshot is still needed when the next fetch fails.
 */
export class MemorySnapshotStore implements SnapshotStore {
  readonly #entries: LRUCache<string, CacheEntry>;
  readonly #maxBytes: number;
  #reservedBytes = 0;
  #evictions = 0;

  /** @throws {TypeError} from lru-cache when a bound is not a positive integer. */
  constructor(bounds: MemoryStoreBounds) {
    this.#maxBytes = bounds.maxBytes;
    this.#entries = new LRUCache<string, CacheEntry>({
      max: bounds.maxOrigins,
      maxSize: bounds.maxBytes,
      maxEntrySize: bounds.maxBytes,
      sizeCalculation: (entry) => Math.max(1, Math.ceil(entry.bytes)),
      dispose: (_entry, _origin, reason) => {
        if (reason === 'evict') this.#evictions++;
      },
    });
  }

  get(origin: string): CacheEntry | undefined {
    return this.#entries.get(origin);
  }

  peek(origin: string): CacheEntry | undefined {
    return this.#entries.peek(origin);
  }

  set(origin: string, entry: CacheEntry): void {
    this.#entries.set(origin, entry);
    this.#trim();
  }

  get size(): number {
    return this.#entries.size;
  }

  get bytes(): number {
    return this.#entries.calculatedSize;
  }

  get evictions(): number {
    return this.#evictions;
  }

  setReservedBytes(bytes: number): void {
    this.#reservedBytes = bytes;
    this.#trim();
  }

  /** Drops least recently used entries until the entries and the reserved bytes fit the budget. */
  #trim(): void {
    while (this.#entries.size > 0 && this.#entries.calculatedSize + this.#reservedBytes > this.#maxBytes) {
      this.#entries.pop(); // counted by `dispose`
    }
  }
}
