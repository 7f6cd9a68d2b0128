/**
 * Options for lru-cache's `get` that cost no allocation. lru-cache 11's `get(key, options = {})`
 * makes a new options object on every call that passes none, and then writes `status` into it
 * (issue 8: admission's look-ups run once or twice per request, every request). Passing one shared
 * object avoids that: `status` stays undefined in it while no diagnostics channel subscribes to
 * lru-cache's metrics; once one does, the `status` object lru-cache then stores in it is reused
 * (refilled) by every later look-up, which only a subscriber sees.
 */
import type { LRUCache } from 'lru-cache';

const SHARED: { status?: unknown } = { status: undefined };

/**
 * The shared `get` options (see the module comment), typed for a cache of `K` to `V`: pass them as
 * `cache.get(key, quietGet())`. Never throws; never allocates.
 */
export function quietGet<K extends {}, V extends {}>(): LRUCache.GetOptions<K, V, unknown> {
  return SHARED as LRUCache.GetOptions<K, V, unknown>;
}
