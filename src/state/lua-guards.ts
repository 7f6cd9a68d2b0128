/**
 * Lua helpers the fleet's scripts start with, so that what another writer
 * left under the key prefix (a key of another kind, a field that is not a
 * number: another tool, a hand edit, a half-restored dump) is read as absent
 * and replaced (key and field names: `slot-scripts.ts`, `redis-snapshots.ts`), rather than failing every script on that key (WRONGTYPE, or
 * arithmetic on nil) and taking the whole fleet to its `onUnavailable`
 * fallback for as long as the key lives, which for a key without TTL is
 * forever. Losing such a key costs what an evicted key costs: one start
 * sooner than the delay, once. Extension, not in RFC 9309.
 * - `kind(key, want)`: deletes `key` when it holds something other than `want`
 *   (`hash`, `zset`, `string`), or has no TTL: the fleet writes every key with
 *   one, so a key without is not the fleet's (a pause of `9e99` ms written by
 *   hand would otherwise hold the origin for good);
 * - `num(x)`: `x` as a number, 0 when it is absent or not a number.
 */
export const LUA_GUARDS = `
local function kind(key, want)
  local k = redis.call('TYPE', key)['ok']
  if k ~= 'none' and (k ~= want or redis.call('PTTL', key) == -1) then redis.call('DEL', key) end
end
local function num(x) return tonumber(x) or 0 end
`;
