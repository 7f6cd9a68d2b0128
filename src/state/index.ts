/**
 * The state a fleet shares (issue 10): store interfaces, their in-memory
 * implementations and the Redis ones. What other folders need, nothing more.
 */
import type { Clock } from '../clock.js';
import type { StateConfig } from '../config/types.js';
import type { RobotsTxt } from '../robots/types.js';
import { RedisConnection, type StateLogger } from './redis-connection.js';
import { RedisSlotStore } from './redis-slots.js';
import { RedisSnapshotFlight } from './redis-snapshots.js';
import { maxRecordBytesOf } from './snapshot-codec.js';
import { fallbackClause } from './fallback-text.js';

export type { FetchedEntry, SlotLease, SlotRequest, SlotReservation, SlotReturn, SlotStore, SnapshotFlight } from './types.js';
export { MemorySlotStore, MemorySnapshotFlight } from './memory.js';
export { RedisConnection, type RedisConnectionStats } from './redis-connection.js';
export { RedisSlotStore } from './redis-slots.js';
export { RedisSnapshotFlight, type SnapshotFlightStats } from './redis-snapshots.js';

/** The Redis-backed stores of one instance, sharing one connection. */
export interface RedisFleetState {
  connection: RedisConnection;
  slots: RedisSlotStore;
  snapshots: RedisSnapshotFlight;
  /** Sends pending releases and disconnects. Never rejects. */
  close(): Promise<void>;
}

/**
 * Connects to `state.redis` and builds the stores. Resolves within about twice the command
 * timeout even when Redis does not answer (the stores fall back until it does). Never rejects.
 * @param parse parses a stored robots.txt body with the fetcher's options.
 * @param retainMs how long a stored robots snapshot outlives its next fetch time, ms (`robots.ttl`).
 * @param maxBodyBytes the longest robots.txt body parsed (`robots.maxBytes`): bounds the stored records read.
 */
export async function openRedisFleetState(
  config: StateConfig,
  deps: { clock: Clock; logger: StateLogger; parse: (body: Buffer) => RobotsTxt; retainMs: number; maxBodyBytes: number },
): Promise<RedisFleetState> {
  const { redis } = config;
  const connection = new RedisConnection({ url: redis.url, keyPrefix: redis.keyPrefix, commandTimeoutMs: redis.commandTimeoutMs, logger: deps.logger, fallback: fallbackClause(config) });
  const slots = new RedisSlotStore(connection, { slotLeaseMs: redis.slotLeaseMs, logger: deps.logger });
  const snapshots = new RedisSnapshotFlight(connection, { lockLeaseMs: redis.robotsLockLeaseMs, retainMs: deps.retainMs, parse: deps.parse, maxRecordBytes: maxRecordBytesOf(deps.maxBodyBytes), clock: deps.clock, logger: deps.logger });
  await connection.start();
  await Promise.all([slots.start(), snapshots.start()]);
  return {
    connection,
    slots,
    snapshots,
    close: async () => {
      await slots.close();
      await snapshots.close();
      // Lets the last releases reach Redis before the connection goes.
      await new Promise((resolve) => setImmediate(resolve));
      await connection.close();
    },
  };
}
