/**
 * Robots snapshots shared by a fleet through Redis (issue 10): one robots.txt
 * fetch per origin per cache period for every instance. An instance whose
 * local copy is stale asks Redis once (one script): a fresh stored snapshot is
 * used as is; otherwise the first instance takes the origin's lock (a lease,
 * so a dead holder blocks nobody for longer) and fetches, and the others wait
 * for its announcement on the fleet's channel (or the lease's end), then read
 * what it stored. Stored snapshots carry their body (gzipped when large) and
 * expire; every instance keeps its own copy in front (the robots cache) and
 * drops it when another instance announces a newer one. When Redis fails, the
 * fetch is this instance's own; a lock a stalled Redis may have given it
 * unanswered is freed once Redis answers. Extension, not in RFC 9309.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { nextFetchAtMs } from '../cache/robots-cache.js';
import type { CacheEntry } from '../cache/snapshot-store.js';
import type { Clock } from '../clock.js';
import type { RobotsTxt } from '../robots/types.js';
import type { RedisConnection, StateLogger } from './redis-connection.js';
import { LUA_GUARDS } from './lua-guards.js';
import { decodeSnapshot, encodeSnapshot } from './snapshot-codec.js';
import type { FetchedEntry, SnapshotFlight } from './types.js';

/** Options of {@link RedisSnapshotFlight}. */
export interface RedisSnapshotFlightOptions {
  /** Lease of an origin's fetch lock, ms. */
  lockLeaseMs: number;
  /** How long a stored snapshot outlives its next fetch time, ms (an expired good one is still kept while robots.txt is unreachable). */
  retainMs: number;
  /** Parses a stored body with the fetcher's options. */
  parse: (body: Buffer) => RobotsTxt;
  /** Longest stored record read, decompressed, bytes ({@link maxRecordBytesOf} of `robots.maxBytes`). @default no bound */
  maxRecordBytes?: number;
  clock: Clock;
  logger: StateLogger;
}

/**
 * KEYS: snapshot hash, lock. ARGV: token, nowMs (the caller's clock: freshness is judged as the
 * robots cache judges it), leaseMs. Returns `{'fresh', data}`, `{'lead', data or nil}` (the lock
 * is ours; data is the stale stored snapshot, if any) or `{'wait', pttl}`.
 */
const LEAD_SCRIPT = `${LUA_GUARDS}
kind(KEYS[1], 'hash')
kind(KEYS[2], 'string')
local nextAt = redis.call('HGET', KEYS[1], 'next')
if nextAt and num(nextAt) > tonumber(ARGV[2]) then return {'fresh', redis.call('HGET', KEYS[1], 'data')} end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[3]) then return {'lead', redis.call('HGET', KEYS[1], 'data')} end
return {'wait', tostring(redis.call('PTTL', KEYS[2]))}
`;

/**
 * KEYS: snapshot hash, lock. ARGV: token, nextAt ('' : store nothing), data, pxMs, channel, message.
 * Stores the snapshot (unless nextAt is empty), frees the lock if still ours, announces.
 */
const SHARE_SCRIPT = `${LUA_GUARDS}
kind(KEYS[1], 'hash')
kind(KEYS[2], 'string')
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'next', ARGV[2], 'data', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
`;

interface FlightCommands {
  rpLeadBuffer(snapshot: string, lock: string, token: string, nowMs: string, leaseMs: string): Promise<[Buffer, Buffer | null]>;
  rpShare(snapshot: string, lock: string, token: string, nextAt: string, data: Buffer | string, pxMs: string, channel: string, message: string): Promise<number>;
}

/** Counters of a {@link RedisSnapshotFlight} since start. */
export interface SnapshotFlightStats {
  /** Refreshes answered with a snapshot another instance stored. */
  shared: number;
  /** Fetches this instance made as the fleet's one fetcher. */
  led: number;
  /** Waits for another instance's fetch. */
  waits: number;
  /** Fetches made alone because Redis failed or a wait ran out. */
  alone: number;
}

/** Unanswered lock requests remembered at most; beyond, their leases end them. */
const MAX_UNANSWERED_LOCKS = 1_000;

/** The Redis {@link SnapshotFlight}. */
export class RedisSnapshotFlight implements SnapshotFlight {
  readonly #connection: RedisConnection;
  readonly #options: RedisSnapshotFlightOptions;
  readonly #channel: string;
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #newerListeners: Array<(origin: string) => void> = [];
  readonly #stats: SnapshotFlightStats = { shared: 0, led: 0, waits: 0, alone: 0 };
  /** Locks asked for and not answered (a stalled Redis may have given them): freed once it answers. */
  #unansweredLocks: Array<{ origin: string; token: string }> = [];

  constructor(connection: RedisConnection, options: RedisSnapshotFlightOptions) {
    this.#connection = connection;
    this.#options = options;
    this.#channel = connection.key('robots');
    const client = connection.client as Redis & Partial<FlightCommands>;
    if (!client.rpLeadBuffer) {
      client.defineCommand('rpLead', { numberOfKeys: 2, lua: LEAD_SCRIPT });
      client.defineCommand('rpShare', { numberOfKeys: 2, lua: SHARE_SCRIPT });
    }
    connection.onAvailability((isAvailable) => {
      if (isAvailable) this.#freeUnansweredLocks();
    });
  }

  /** Subscribes to the fleet's announcements. Never rejects. */
  async start(): Promise<void> {
    await this.#connection.subscribe(this.#channel, (message) => {
      let parsed: { origin?: unknown; by?: unknown; unlocked?: unknown };
      try {
        parsed = JSON.parse(message) as typeof parsed;
      } catch {
        return;
      }
      if (typeof parsed.origin !== 'string') return;
      for (const wake of this.#waiters.get(parsed.origin) ?? []) wake();
      if (parsed.by !== this.#connection.instanceId && parsed.unlocked !== true) for (const listener of this.#newerListeners) listener(parsed.origin);
    });
  }

  onNewer(listener: (origin: string) => void): void {
    this.#newerListeners.push(listener);
  }

  stats(): SnapshotFlightStats {
    return { ...this.#stats };
  }

  async refresh(origin: string, previous: CacheEntry | undefined, fetchHere: (base: CacheEntry | undefined) => Promise<FetchedEntry>): Promise<CacheEntry> {
    const alone = async (why: string): Promise<CacheEntry> => {
      this.#stats.alone++;
      this.#options.logger.warn({ event: 'fleet-robots', origin, why }, 'robots.txt fetched by this instance alone');
      return (await fetchHere(previous)).entry;
    };
    if (!this.#connection.isAvailable) return alone('Redis unavailable');
    const { clock, lockLeaseMs } = this.#options;
    // Listening before asking: an announcement between the answer and the wait is not missed.
    const wait = { isNotified: false, wake: undefined as (() => void) | undefined };
    const onAnnounced = (): void => {
      wait.isNotified = true;
      wait.wake?.();
    };
    this.#listen(origin, onAnnounced);
    const token = randomBytes(8).toString('hex');
    // A holder that dies frees the lock after its lease: two leases is the longest honest wait.
    const deadlineMs = clock.nowMs() + 2 * lockLeaseMs;
    // A fresh stored record this instance cannot read is asked for again as if stale: one instance
    // fetches and replaces it, the others wait for that (rather than each fetching alone, and
    // leaving it in place, until the record expires).
    let isStoredUnreadable = false;
    try {
      for (;;) {
        wait.isNotified = false;
        const asOfMs = isStoredUnreadable ? Number.MAX_VALUE : clock.nowMs();
        let reply: [Buffer, Buffer | null];
        let isSent = false;
        try {
          reply = await this.#connection.run('robots lead', (client) => {
            isSent = true;
            return (client as unknown as FlightCommands).rpLeadBuffer(this.#snapshotKey(origin), this.#lockKey(origin), token, String(asOfMs), String(lockLeaseMs));
          });
        } catch {
          if (isSent && this.#unansweredLocks.length < MAX_UNANSWERED_LOCKS) this.#unansweredLocks.push({ origin, token });
          return await alone('Redis failed');
        }
        const kind = reply[0].toString();
        const stored = reply[1] === null ? undefined : await this.#decode(origin, reply[1]);
        if (kind === 'fresh') {
          if (stored) {
            this.#stats.shared++;
            return stored.entry;
          }
          // Fresh even as of the end of time (a "next" of 1e999): fetched alone, as before.
          if (isStoredUnreadable) return await alone('stored snapshot unreadable');
          isStoredUnreadable = true;
          continue;
        }
        isStoredUnreadable = false;
        if (kind === 'lead') {
          this.#stats.led++;
          const base = newerOf(stored?.entry, previous);
          const fetched = await fetchHere(base);
          await this.#share(origin, token, fetched, base === stored?.entry ? stored : undefined);
          return fetched.entry;
        }
        const remainingMs = deadlineMs - clock.nowMs();
        if (remainingMs <= 0) return await alone('waited two lock leases');
        this.#stats.waits++;
        if (!wait.isNotified) await sleep(Math.min(Math.max(1, Number(reply[1]?.toString() ?? lockLeaseMs)), remainingMs), wait);
      }
    } finally {
      this.#unlisten(origin, onAnnounced);
    }
  }

  async close(): Promise<void> {
    for (const waiters of this.#waiters.values()) for (const wake of waiters) wake();
  }

  /** Frees the locks a stalled Redis may have given unanswered (if still theirs) and announces them, so nobody waits for their lease. */
  #freeUnansweredLocks(): void {
    const locks = this.#unansweredLocks;
    this.#unansweredLocks = [];
    for (const { origin, token } of locks) {
      // Wakes the waiters; `unlocked`: nothing new was stored, so no copy is dropped.
      const message = JSON.stringify({ origin, by: this.#connection.instanceId, unlocked: true });
      void this.#connection
        .run('robots unlock', (client) => (client as unknown as FlightCommands).rpShare(this.#snapshotKey(origin), this.#lockKey(origin), token, '', '', '1', this.#channel, message))
        .catch(() => undefined); // its lease ends it
    }
  }

  #snapshotKey(origin: string): string {
    return this.#connection.key('robots', origin);
  }

  #lockKey(origin: string): string {
    return this.#connection.key('robots-lock', origin);
  }

  async #decode(origin: string, data: Buffer): Promise<{ entry: CacheEntry; body: Buffer | null } | undefined> {
    try {
      return await decodeSnapshot(data, this.#options.parse, this.#options.maxRecordBytes);
    } catch (error) {
      this.#options.logger.warn({ event: 'fleet-robots', origin, err: (error as Error).message }, 'stored robots snapshot unreadable; fetching again');
      return undefined;
    }
  }

  /** Stores the fetched entry, frees the lock and announces it; a failure is logged (the lock's lease ends it). */
  async #share(origin: string, token: string, fetched: FetchedEntry, base: { entry: CacheEntry; body: Buffer | null } | undefined): Promise<void> {
    const { entry } = fetched;
    const info = entry.snapshot.info;
    // A kept good snapshot (robots.txt unreachable now) is shared with the body it was stored with.
    let body: Buffer | null | undefined = entry.snapshot.lastFailure === null ? fetched.body : undefined;
    if (body === undefined && base && base.entry.snapshot.info.fetchedAtMs === info.fetchedAtMs) body = base.body;
    if (info.state !== 'ok') body = null;
    let data: Buffer | undefined;
    if (body !== undefined) {
      try {
        data = await encodeSnapshot(entry, body);
      } catch (error) {
        this.#options.logger.warn({ event: 'fleet-robots', origin, err: (error as Error).message }, 'robots snapshot not shared');
      }
    }
    const nextAtMs = nextFetchAtMs(entry.snapshot);
    const pxMs = Math.max(1, Math.ceil(nextAtMs - this.#options.clock.nowMs() + this.#options.retainMs));
    const message = JSON.stringify({ origin, by: this.#connection.instanceId });
    await this.#connection
      .run('robots share', (client) =>
        (client as unknown as FlightCommands).rpShare(this.#snapshotKey(origin), this.#lockKey(origin), token, data ? String(nextAtMs) : '', data ?? '', String(pxMs), this.#channel, message),
      )
      .catch((error: unknown) => this.#options.logger.warn({ event: 'fleet-robots', origin, err: (error as Error).message }, 'robots snapshot not shared (Redis failed)'));
  }

  #listen(origin: string, wake: () => void): void {
    let waiters = this.#waiters.get(origin);
    if (!waiters) {
      waiters = new Set();
      this.#waiters.set(origin, waiters);
    }
    waiters.add(wake);
  }

  #unlisten(origin: string, wake: () => void): void {
    const waiters = this.#waiters.get(origin);
    waiters?.delete(wake);
    if (waiters?.size === 0) this.#waiters.delete(origin);
  }
}

/** The entry fetched later, of two (either may be missing). */
function newerOf(a: CacheEntry | undefined, b: CacheEntry | undefined): CacheEntry | undefined {
  if (!a || !b) return a ?? b;
  const at = (e: CacheEntry): number => (e.snapshot.lastFailure ?? e.snapshot.info).fetchedAtMs;
  return at(a) >= at(b) ? a : b;
}

/** Waits `ms` or until `wait.wake` is called. */
function sleep(ms: number, wait: { wake: (() => void) | undefined }): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(), ms);
    const done = (): void => {
      clearTimeout(timer);
      wait.wake = undefined;
      resolve();
    };
    wait.wake = done;
  });
}
