/**
 * The Lua scripts of the fleet's pacing slots (issue 10). Each runs atomically
 * on the Redis server and reads the server's clock (`TIME`), so the clocks of
 * the instances cannot skew a start. Keys of one origin:
 * - `slot:<origin>` hash: `last` (latest start, ms on the server's clock),
 *   `end` (latest release), `solo` (token of the delayed request holding the origin),
 *   `waiting` (set while a reservation was answered busy and no release has been announced since);
 * - `busy:<origin>` sorted set: tokens in flight, scored by their lease end;
 * - `pause:<origin>`: end of an upstream 429/503 pause.
 * Times are kept as decimal ms with three decimals (Lua's default number
 * format would round an epoch time to 0.1 ms). Extension, not in RFC 9309.
 */

import { LUA_GUARDS } from './lua-guards.js';

/**
 * Shared prologue: {@link LUA_GUARDS}, `now` in ms (fraction from the microseconds), `fmt` for numbers
 * written back, `setPause(key, pauseMs)`: the pause key becomes now + pauseMs (expiring then) unless
 * it already ends later (a pause is never shortened); pauseMs <= 0 sets nothing.
 */
const PROLOGUE = `${LUA_GUARDS}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local function fmt(x) return string.format('%.3f', x) end
local function setPause(p, pauseMs)
  if pauseMs > 0 then
    local untilMs = now + pauseMs
    if untilMs > num(redis.call('GET', p)) then redis.call('SET', p, fmt(untilMs), 'PX', math.ceil(pauseMs)) end
  end
end
`;

/**
 * Reserves a start slot. KEYS: slot hash, busy set, pause key. ARGV: token, delayMs, maxConcurrency,
 * leaseMs, endToStart ('1'/'0'), retainMs (how long the hash must outlive the start), maxStartInMs.
 * Returns `{1, 'ok', startInMs}`, or `{0, 'paused'|'busy'|'later', retryInMs}`.
 * - a delayed request (delayMs > 0) needs nothing in flight; its start is the later of now and
 *   the previous start (or end) plus its delay; it holds the origin (`solo`) until released; a
 *   start more than maxStartInMs ahead is not reserved (`later`, nothing written);
 * - an undelayed request needs no delayed one in flight and fewer than maxConcurrency in flight.
 */
export const RESERVE_SCRIPT = `${PROLOGUE}
kind(KEYS[1], 'hash')
kind(KEYS[2], 'zset')
kind(KEYS[3], 'string')
local pausedUntil = num(redis.call('GET', KEYS[3]))
if pausedUntil > now then return {0, 'paused', fmt(pausedUntil - now)} end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', fmt(now))
local inFlight = redis.call('ZCARD', KEYS[2])
local delay = tonumber(ARGV[2])
local lease = tonumber(ARGV[4])
local function busy()
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  -- Someone waits: the next release is announced, whatever the limits of the request released.
  redis.call('HSET', KEYS[1], 'waiting', '1')
  if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], math.ceil(lease)) end
  return {0, 'busy', fmt(tonumber(first[2]) - now)}
end
local last = num(redis.call('HGET', KEYS[1], 'last'))
local start = now
if delay > 0 then
  if inFlight > 0 then return busy() end
  local from = last
  if ARGV[5] == '1' then from = math.max(from, num(redis.call('HGET', KEYS[1], 'end'))) end
  start = math.max(now, from + delay)
  if start - now > tonumber(ARGV[7]) then return {0, 'later', fmt(start - now)} end
  redis.call('HSET', KEYS[1], 'last', fmt(start), 'solo', ARGV[1])
else
  if inFlight > 0 then
    local solo = redis.call('HGET', KEYS[1], 'solo')
    if solo and redis.call('ZSCORE', KEYS[2], solo) then return busy() end
    if inFlight >= tonumber(ARGV[3]) then return busy() end
  end
  if now > last then redis.call('HSET', KEYS[1], 'last', fmt(now)) end
end
redis.call('ZADD', KEYS[2], fmt(start + lease), ARGV[1])
redis.call('PEXPIRE', KEYS[1], math.ceil(start - now + tonumber(ARGV[6])))
if redis.call('PTTL', KEYS[2]) < start - now + lease then redis.call('PEXPIRE', KEYS[2], math.ceil(start - now + lease)) end
return {1, 'ok', fmt(start - now)}
`;

/** Number of ARGV entries per release in {@link RELEASE_SCRIPT}. */
export const RELEASE_ARGS = 5;

/**
 * Releases slots, any number in one call. KEYS: per release its slot hash, busy set, pause key.
 * ARGV[1]: the channel a release is announced on; then per release: token, sentAgoMs (-1: never
 * sent), pauseMs (0: none), maxConcurrency, origin.
 * - the delayed holder's real start (now - sentAgoMs) moves `last` later, never earlier;
 * - a pause is the later of the current one and now + pauseMs;
 * - the release is announced (the origin's name on the channel) when someone may be waiting:
 *   the origin was held by a delayed request, or was at maxConcurrency, or a reservation was
 *   answered busy since the last announcement (`waiting`: a delayed request waits for nothing
 *   in flight, a request under a policy rule's lower maxConcurrency for fewer than the others').
 */
export const RELEASE_SCRIPT = `${PROLOGUE}
for i = 0, (#KEYS / 3) - 1 do
  local h, z, p = KEYS[i * 3 + 1], KEYS[i * 3 + 2], KEYS[i * 3 + 3]
  kind(h, 'hash')
  kind(z, 'zset')
  kind(p, 'string')
  local a = 2 + i * ${RELEASE_ARGS}
  local token, sentAgo, pauseMs, maxc, origin = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), ARGV[a + 4]
  local before = redis.call('ZCARD', z)
  local removed = redis.call('ZREM', z, token)
  local isSolo = false
  local isWaiting = false
  if redis.call('EXISTS', h) == 1 then
    isSolo = redis.call('HGET', h, 'solo') == token
    isWaiting = redis.call('HEXISTS', h, 'waiting') == 1
    if isSolo then
      if sentAgo >= 0 then
        local sent = now - sentAgo
        if sent > num(redis.call('HGET', h, 'last')) then redis.call('HSET', h, 'last', fmt(sent)) end
      end
      redis.call('HDEL', h, 'solo')
    end
    redis.call('HSET', h, 'end', fmt(now))
  end
  setPause(p, pauseMs)
  if removed == 1 and (isSolo or isWaiting or before >= maxc) then
    if isWaiting then redis.call('HDEL', h, 'waiting') end
    redis.call('PUBLISH', ARGV[1], origin)
  end
end
return 1
`;

/**
 * Pauses an origin without a slot (its robots.txt answered 429/503). KEYS: the pause key.
 * ARGV: pauseMs. The same guard and rule as a release's pause: a key of another kind or without
 * TTL is dropped first, and an existing later pause is kept. Returns the pause's end, ms on the
 * server's clock (0: not paused).
 */
export const PAUSE_SCRIPT = `${PROLOGUE}
kind(KEYS[1], 'string')
setPause(KEYS[1], tonumber(ARGV[1]) or 0)
return fmt(num(redis.call('GET', KEYS[1])))
`;

/**
 * Extends leases still held, any number in one call. KEYS: per lease its busy set. ARGV[1]: leaseMs;
 * then the tokens. A token no longer in its set (expired, released) is left alone.
 */
export const RENEW_SCRIPT = `${PROLOGUE}
local lease = tonumber(ARGV[1])
for i = 1, #KEYS do
  kind(KEYS[i], 'zset')
  if redis.call('ZSCORE', KEYS[i], ARGV[i + 1]) then
    redis.call('ZADD', KEYS[i], 'XX', fmt(now + lease), ARGV[i + 1])
    if redis.call('PTTL', KEYS[i]) < lease then redis.call('PEXPIRE', KEYS[i], lease) end
  end
end
return 1
`;
