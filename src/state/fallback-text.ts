/**
 * What an instance does while the fleet's Redis does not answer, in words for its `fleet-state`
 * log lines (README "Running a fleet", "When Redis is unreachable"). Extension, not in RFC 9309.
 */
import type { StateConfig } from '../config/types.js';

/**
 * The fallback `state.redis.onUnavailable` and `state.fleetSize` give, as a clause for a log
 * message, e.g. "this instance paces alone, every delay x 2 and maxConcurrency / 2
 * (state.redis.onUnavailable: local, state.fleetSize: 2), and fetches robots.txt alone". Pure.
 */
export function fallbackClause(config: Pick<StateConfig, 'fleetSize'> & { redis: Pick<StateConfig['redis'], 'onUnavailable'> }): string {
  if (config.redis.onUnavailable === 'deny') return 'requests are answered 503 fleet-unavailable with Retry-After (state.redis.onUnavailable: deny)';
  const n = config.fleetSize;
  return `this instance paces alone, every delay x ${n} and maxConcurrency / ${n} (state.redis.onUnavailable: local, state.fleetSize: ${n}), and fetches robots.txt alone`;
}
