/**
 * Robots snapshots per origin: fetch with undici (RFC 9309 §2.3), status
 * mapping, expiry (§2.4), single flight, LRU bound. What other folders need.
 */
export { RobotsCache, nextFetchAtMs, type CacheLogger, type FetchRobots, type RobotsCacheOptions, type RobotsCacheStats } from './robots-cache.js';
export { RobotsFetcher, createRobotsAgent, robotsUrlOf, type FetchContext, type FetchedRobots, type RobotsFetcherOptions } from './robots-fetcher.js';
export { MemorySnapshotStore, type CacheEntry, type CachedRobotsSnapshot, type MaybePromise, type SnapshotStore } from './snapshot-store.js';
