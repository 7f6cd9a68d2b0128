/**
 * Robots snapshots per origin: single-flight fetches, expiry, a store bounded
 * in bytes and entries (fetches in flight count against the same budget), and
 * a previously good snapshot kept while robots.txt is unreachable (RFC 9309
 * §2.3.1.4, §2.4; DESIGN.md "Protocol semantics").
 */
import type { Clock } from '../clock.js';
import type { RobotsSnapshot } from '../policy/snapshot.js';
import { retryDelayMs } from './expiry.js';
import type { FetchContext } from './robots-fetcher.js';
import { MemorySnapshotStore, type CacheEntry, type CachedRobotsSnapshot, type SnapshotStore } from './snapshot-store.js';
import { estimateSnapshotBytes } from './snapshot-size.js';
import type { FetchedEntry, SnapshotFlight } from '../state/types.js';

/** Default of {@link RobotsCacheOptions.maxBytes}: 256 MiB. */
export const DEFAULT_CACHE_BYTES = 256 * 1024 * 1024;

/**
 * Fetches one origin's robots.txt; `RobotsFetcher.fetch` is one. Should not reject, but may.
 * `body`, when given, is the bytes parsed (null for an outcome without one): a fleet's
 * {@link SnapshotFlight} shares it so other instances parse the same file.
 */
export type FetchRobots = (origin: string, context: FetchContext) => Promise<RobotsSnapshot & { body?: Buffer | null }>;

/** The subset of a pino logger the cache uses. */
export interface CacheLogger {
  debug(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** Options of {@link RobotsCache}. */
export interface RobotsCacheOptions {
  /** Fetches robots.txt; called at most once at a time per origin. */
  fetch: FetchRobots;
  /** Decides freshness (`nowMs` against `expiresAtMs`). Timers are not used. */
  clock: Clock;
  /** Most origins kept in memory (lru-cache `max`), at least 1. Ignored when `store` is given. */
  maxOrigins: number;
  /**
   * Estimated heap bytes the cache may hold (`robots.cacheBytes`): the stored
   * entries (snapshots, parsed files, rule indexes; see snapshot-size.ts)
   * plus `fetchReserveBytes` per fetch in flight. Least recently used origins
   * are dropped first. Ignored by a `store` given here. @default 268_435_456 (256 MiB)
   */
  maxBytes?: number;
  /**
   * Bytes one robots.txt fetch may hold until its entry is stored (its body
   * buffers: about twice `robots.maxBytes`). Reserved against `maxBytes` while
   * it runs; when the reservations fill `maxBytes`, further fetches wait for
   * one to end (one fetch always runs). @default 0 (fetches are not counted)
   */
  fetchReserveBytes?: number;
  /** Replaces the in-memory LRU store, e.g. with a shared one. */
  store?: SnapshotStore;
  /**
   * Shares fetches with a fleet (`state.backend: redis`): one fetch per origin per cache period
   * for every instance. @default each fetch is this instance's own
   */
  flight?: SnapshotFlight;
  logger?: CacheLogger;
  /**
   * Retry delay after `fetch` rejected (a bug, not a network outcome), ms;
   * doubles per consecutive failure up to `errorRetryMaxMs`. @default 60_000
   */
  errorRetryMs?: number;
  /** @default 1_800_000 (30 min) */
  errorRetryMaxMs?: number;
}

/** Counters of a {@link RobotsCache}; all counts since construction. */
export interface RobotsCacheStats {
  /** `get` calls answered from a fresh entry without fetching. */
  hits: number;
  /** `get` calls that started a fetch or waited for one in flight. */
  misses: number;
  /** Fetches started (one per origin per refresh, whatever the number of waiting callers). */
  fetches: number;
  /** Fetches that rejected and were turned into unreachable snapshots. */
  fetchErrors: number;
  /** Fetches that were unreachable while an earlier good snapshot was kept. */
  staleKept: number;
  /** Fetches in flight now. */
  inFlight: number;
  /** Entries in the store now. */
  entries: number;
  /** Estimated heap bytes of the stored entries now. */
  bytes: number;
  /** Bytes reserved by the fetches in flight now. */
  reservedBytes: number;
  /** Fetches waiting for room in the budget now. */
  fetchesWaiting: number;
  /** Entries dropped to stay within the bounds. */
  evictions: number;
  /** Fetched snapshots too large for the whole budget, served to their waiting requests only. */
  tooLarge: number;
}

/**
 * The robots cache. `get(origin)` returns the origin's snapshot, fetching it
 * when missing or expired. Any number of concurrent `get` calls for an origin
 * that needs a fetch share exactly one fetch (single flight). The returned
 * promise never rejects, even when `fetch` does.
 *
 * Expiry is whatever the fetcher put in `expiresAtMs` (Cache-Control within
 * [minTtl, 24 h] for 2xx/4xx, retry backoff for unreachable). When a fetch is
 * unreachable and the entry held a good (`ok`) snapshot, the good one keeps
 * being served with `lastFailure` set, and is retried at
 * `lastFailure.expiresAtMs`, however old it gets (RFC 9309 §2.3.1.4 lets a
 * crawler keep a cached copy while the file is unreachable). A 4xx replaces it.
 */
export class RobotsCache {
  readonly #fetch: FetchRobots;
  readonly #clock: Clock;
  readonly #store: SnapshotStore;
  /** Set once the store answered `get` with a promise: {@link RobotsCache.getFresh} then always defers to `get`. */
  #isStoreAsync = false;
  readonly #logger: CacheLogger | undefined;
  #errorRetryMs: number;
  #errorRetryMaxMs: number;
  readonly #maxBytes: number;
  readonly #fetchReserveBytes: number;
  readonly #inFlight = new Map<string, Promise<CachedRobotsSnapshot>>();
  readonly #flight: SnapshotFlight | undefined;
  /** Origins whose entry another instance replaced: fetched (from the fleet's store) on their next use. */
  readonly #stale = new Set<string>();
  readonly #counts = { hits: 0, misses: 0, fetches: 0, fetchErrors: 0, staleKept: 0, tooLarge: 0 };
  /** Fetches running now (each holds `fetchReserveBytes`), and those waiting for room, in arrival order. */
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  /** @throws {TypeError} from lru-cache when `maxOrigins` or `maxBytes` is not a positive integer (and no `store`). */
  constructor(options: RobotsCacheOptions) {
    this.#fetch = options.fetch;
    this.#clock = options.clock;
    this.#maxBytes = options.maxBytes ?? DEFAULT_CACHE_BYTES;
    this.#fetchReserveBytes = options.fetchReserveBytes ?? 0;
    this.#store = options.store ?? new MemorySnapshotStore({ maxOrigins: options.maxOrigins, maxBytes: this.#maxBytes });
    this.#logger = options.logger;
    this.#errorRetryMs = options.errorRetryMs ?? 60_000;
    this.#errorRetryMaxMs = options.errorRetryMaxMs ?? 1_800_000;
    this.#flight = options.flight;
    this.#flight?.onNewer((origin) => this.invalidate(origin));
  }

  /**
   * Marks the origin's entry as replaced elsewhere (a fleet instance stored a newer one): the
   * next `get` refreshes it, and keeps serving it meanwhile. Does nothing for an origin without an entry.
   */
  invalidate(origin: string): void {
    if (this.#store.peek(origin) !== undefined) this.#stale.add(origin);
  }

  /** Applies reloaded `robots.errorRetry` / `robots.errorRetryMax` (ms) to the retries scheduled from now on. */
  setErrorRetry(errorRetryMs: number, errorRetryMaxMs: number): void {
    this.#errorRetryMs = errorRetryMs;
    this.#errorRetryMaxMs = errorRetryMaxMs;
  }

  /**
   * The snapshot of `origin` (`scheme://host[:port]`, as normalised by the
   * caller): a fresh entry at once, otherwise the result of a fetch, shared
   * with every concurrent caller. Never rejects.
   */
  async get(origin: string): Promise<CachedRobotsSnapshot> {
    const pending = this.#inFlight.get(origin);
    if (pending !== undefined) {
      this.#counts.misses++;
      return pending;
    }
    const entry = await this.#read(() => this.#store.get(origin), origin);
    if (entry !== undefined && this.#clock.nowMs() < nextFetchAtMs(entry.snapshot) && !this.#stale.has(origin)) {
      this.#counts.hits++;
      return entry.snapshot;
    }
    this.#counts.misses++;
    // Checked again: another caller may have started the fetch while the store answered.
    const started = this.#inFlight.get(origin);
    if (started !== undefined) return started;
    const refresh = this.#refresh(origin, entry);
    this.#inFlight.set(origin, refresh);
    void refresh.finally(() => {
      if (this.#inFlight.get(origin) === refresh) this.#inFlight.delete(origin);
    });
    return refresh;
  }

  /**
   * The snapshot of `origin` at once when it is cached, fresh, not marked stale and no fetch of
   * it runs, and the store answers synchronously (the memory store does; Redis does not): a
   * cache hit, as {@link RobotsCache.get} would count it. Undefined otherwise (then `get`).
   * Never throws: a store failure is left for `get` to log.
   */
  getFresh(origin: string): CachedRobotsSnapshot | undefined {
    // The sizes first: both are empty nearly always, and a look-up costs more than a size (issue 11).
    if (this.#isStoreAsync || (this.#inFlight.size !== 0 && this.#inFlight.has(origin))) return undefined;
    let entry: ReturnType<SnapshotStore['get']>;
    try {
      entry = this.#store.get(origin);
    } catch {
      return undefined;
    }
    if (entry instanceof Promise) {
      // A store that answers later: never asked synchronously again (its answer here is dropped; `get` asks again).
      this.#isStoreAsync = true;
      void entry.catch(() => undefined);
      return undefined;
    }
    if (entry === undefined || this.#clock.nowMs() >= nextFetchAtMs(entry.snapshot) || (this.#stale.size !== 0 && this.#stale.has(origin))) return undefined;
    this.#counts.hits++;
    return entry.snapshot;
  }

  /**
   * The stored snapshot of `origin`, fresh or not, without fetching and
   * without counting as a use (for the admin `explain` answer).
   * @returns undefined when the origin has no entry. Never rejects.
   */
  async peek(origin: string): Promise<CachedRobotsSnapshot | undefined> {
    return (await this.#read(() => this.#store.peek(origin), origin))?.snapshot;
  }

  /** When the origin's robots.txt will next be fetched, ms since epoch; undefined when not cached. */
  async nextFetchAtMs(origin: string): Promise<number | undefined> {
    const snapshot = await this.peek(origin);
    return snapshot === undefined ? undefined : nextFetchAtMs(snapshot);
  }

  /** Counters since construction, plus the current in-flight and entry counts. */
  stats(): RobotsCacheStats {
    return {
      ...this.#counts,
      inFlight: this.#inFlight.size,
      entries: this.#store.size,
      bytes: this.#store.bytes,
      reservedBytes: this.#running * this.#fetchReserveBytes,
      fetchesWaiting: this.#waiting.length,
      evictions: this.#store.evictions,
    };
  }

  /** True when one more fetch's reservation fits the budget (always when none runs). */
  #hasRoomForFetch(): boolean {
    return this.#running === 0 || (this.#running + 1) * this.#fetchReserveBytes <= this.#maxBytes;
  }

  /** Reserves a fetch's bytes, waiting (in arrival order) until they fit. */
  async #reserve(): Promise<void> {
    if (this.#waiting.length === 0 && this.#hasRoomForFetch()) this.#running++;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve)); // `#release` counts it in
    this.#store.setReservedBytes(this.#running * this.#fetchReserveBytes);
  }

  /** Gives a fetch's reservation back and starts the waiting fetches that now fit, in order. */
  #release(): void {
    this.#running--;
    while (this.#waiting.length > 0 && this.#hasRoomForFetch()) {
      this.#running++;
      this.#waiting.shift()!();
    }
    this.#store.setReservedBytes(this.#running * this.#fetchReserveBytes);
  }

  /** Fetches, computes the new entry, stores it; resolves with the snapshot to serve, never rejects. */
  async #refresh(origin: string, previous: CacheEntry | undefined): Promise<CachedRobotsSnapshot> {
    await this.#reserve();
    try {
      return await this.#fetchAndStore(origin, previous);
    } finally {
      this.#release();
    }
  }

  async #fetchAndStore(origin: string, previous: CacheEntry | undefined): Promise<CachedRobotsSnapshot> {
    this.#stale.delete(origin);
    const entry = this.#flight ? await this.#flight.refresh(origin, previous, (base) => this.#fetchEntry(origin, base)) : (await this.#fetchEntry(origin, previous)).entry;
    try {
      await this.#store.set(origin, entry);
    } catch (error) {
      this.#logger?.error({ event: 'robots-store-failed', operation: 'save', origin, err: error }, 'robots snapshot store failed to save an entry');
    }
    return entry.snapshot;
  }

  /** Fetches here and computes the origin's next entry; never rejects. */
  async #fetchEntry(origin: string, previous: CacheEntry | undefined): Promise<FetchedEntry> {
    this.#counts.fetches++;
    const consecutiveFailures = previous?.consecutiveFailures ?? 0;
    let entry: CacheEntry;
    let body: Buffer | null | undefined;
    try {
      const fetched = await this.#fetch(origin, { consecutiveFailures });
      entry = nextEntry(previous, fetched);
      body = fetched.body;
    } catch (error) {
      // Includes a fetch that resolved with something that is not a snapshot.
      this.#counts.fetchErrors++;
      this.#logger?.error({ event: 'robots-fetch-failed', origin, err: error }, 'robots.txt fetch failed unexpectedly; treated as unreachable');
      entry = nextEntry(previous, this.#failedFetchSnapshot(origin, consecutiveFailures));
    }
    if (entry.bytes > this.#maxBytes) {
      this.#counts.tooLarge++;
      this.#logger?.warn(
        { event: 'robots-too-large', origin, estimatedBytes: entry.bytes, cacheBytes: this.#maxBytes },
        'robots.txt is larger in memory than the whole robots cache (robots.cacheBytes); used for the requests waiting for it, fetched again next time',
      );
    }
    const { info, lastFailure } = entry.snapshot;
    if (lastFailure !== null) {
      this.#counts.staleKept++;
      this.#logger?.warn(
        { event: 'robots-stale-kept', origin, status: lastFailure.status, error: lastFailure.error, retryAtMs: lastFailure.expiresAtMs, keptFetchedAtMs: info.fetchedAtMs },
        'robots.txt unreachable; keeping the previously fetched snapshot (RFC 9309 §2.4)',
      );
    } else {
      this.#logger?.debug({ event: 'robots-fetched', origin, state: info.state, status: info.status, error: info.error, expiresAtMs: info.expiresAtMs }, 'robots.txt fetched');
    }
    return { entry, body };
  }

  /** An unreachable snapshot for a fetch that rejected. */
  #failedFetchSnapshot(origin: string, consecutiveFailures: number): RobotsSnapshot {
    const nowMs = Math.floor(this.#clock.nowMs());
    const info = {
      url: `${origin}/robots.txt`,
      state: 'unreachable' as const,
      status: undefined,
      error: 'fetch-failed',
      fetchedAtMs: nowMs,
      expiresAtMs: Math.round(nowMs + retryDelayMs(this.#errorRetryMs, this.#errorRetryMaxMs, consecutiveFailures)),
      bytes: 0,
      truncated: false,
    };
    return { info, robots: null };
  }

  /** Runs a store read; a store failure is logged and counts as a miss. */
  async #read(read: () => ReturnType<SnapshotStore['get']>, origin: string): Promise<CacheEntry | undefined> {
    try {
      return await read();
    } catch (error) {
      this.#logger?.error({ event: 'robots-store-failed', operation: 'read', origin, err: error }, 'robots snapshot store failed to read an entry');
      return undefined;
    }
  }
}

/**
 * When the snapshot served now stops being fresh, ms since epoch: the retry
 * time of the failed attempt behind a stale good snapshot, else its own expiry.
 */
export function nextFetchAtMs(snapshot: CachedRobotsSnapshot): number {
  return (snapshot.lastFailure ?? snapshot.info).expiresAtMs;
}

/**
 * The entry after a fetch, with its estimated bytes. 2xx and 4xx replace
 * whatever was there and reset the failure count. Unreachable keeps an earlier `ok` snapshot (with
 * `lastFailure` set) or else becomes the snapshot; the failure count grows.
 */
export function nextEntry(previous: CacheEntry | undefined, fetched: RobotsSnapshot): CacheEntry {
  if (fetched.info.state !== 'unreachable') {
    return cacheEntryOf({ info: fetched.info, robots: fetched.robots, lastFailure: null }, 0);
  }
  const consecutiveFailures = (previous?.consecutiveFailures ?? 0) + 1;
  const kept = previous?.snapshot;
  if (kept !== undefined && kept.info.state === 'ok' && kept.robots !== null) {
    return cacheEntryOf({ info: kept.info, robots: kept.robots, lastFailure: fetched.info }, consecutiveFailures);
  }
  return cacheEntryOf({ info: fetched.info, robots: fetched.robots, lastFailure: null }, consecutiveFailures);
}

/**
 * A cache entry of `snapshot`, with its estimated bytes. Freezes `snapshot.info` and `snapshot.lastFailure` (never
 * changed once fetched): every access line of the origin then copies the snapshot's encoded bytes without
 * comparing its fields again (audit/access-line.ts). Never throws.
 */
export function cacheEntryOf(snapshot: CachedRobotsSnapshot, consecutiveFailures: number): CacheEntry {
  Object.freeze(snapshot.info);
  if (snapshot.lastFailure !== null) Object.freeze(snapshot.lastFailure);
  return { snapshot, consecutiveFailures, bytes: estimateSnapshotBytes(snapshot) };
}
