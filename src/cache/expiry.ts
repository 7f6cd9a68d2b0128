/**
 * How long a robots snapshot is used before robots.txt is fetched again:
 * `Cache-Control` freshness (RFC 9111 §5.2.2) clamped to the RFC 9309 §2.4
 * ceiling, and the retry delay after a failed fetch (exponential backoff).
 * Pure: no clock, no timers.
 */
import { parseRetryAfter } from '../pacing/index.js';

/** Bounds of a cached robots.txt's lifetime. */
export interface LifetimeLimits {
  /** Longest lifetime, ms; RFC 9309 §2.4 asks for at most 24 h. */
  ttlMs: number;
  /** Shortest lifetime, ms: the floor for a small `max-age`, `no-cache` and `no-store`. */
  minTtlMs: number;
}

/** A header value as undici returns it. */
type HeaderValue = string | string[] | undefined;

/** `delta-seconds = 1*DIGIT` (RFC 9111 §1.2.2). */
const DELTA_SECONDS = /^\d+$/;

/**
 * The lifetime of a robots.txt response (2xx or 4xx), ms.
 *
 * - `s-maxage` wins over `max-age` (RFC 9111 §5.2.2.10): one snapshot serves
 *   every client behind the proxy, as a shared cache does.
 * - The `Age` field (RFC 9111 §5.1) is subtracted from it.
 * - `no-store`, `no-cache`, or an invalid or repeated-and-conflicting value
 *   give the floor (RFC 9111 §4.2.1: treat invalid freshness as stale); the
 *   floor keeps a hostile `no-store` from turning every request into a fetch.
 * - Without any of these: `ttlMs`. `Expires` is not read (a known limit).
 *
 * @param cacheControl the `Cache-Control` field value(s), or undefined.
 * @param age the `Age` field value(s), or undefined.
 * @returns ms in `[minTtlMs, ttlMs]`. Never throws.
 */
export function freshLifetimeMs(cacheControl: HeaderValue, age: HeaderValue, limits: LifetimeLimits): number {
  const directives = parseCacheControl(cacheControl);
  if (directives.has('no-store') || directives.has('no-cache')) return limits.minTtlMs;
  const raw = directives.has('s-maxage') ? directives.get('s-maxage') : directives.get('max-age');
  if (raw === undefined) return limits.ttlMs;
  if (raw === null || !DELTA_SECONDS.test(raw)) return limits.minTtlMs;
  const ageSeconds = singleDeltaSeconds(age) ?? 0;
  const lifetimeMs = (Number(raw) - ageSeconds) * 1000;
  return Math.min(limits.ttlMs, Math.max(limits.minTtlMs, lifetimeMs));
}

/**
 * Delay before retrying an unreachable robots.txt, ms (RFC 9309 §2.3.1.4:
 * "retry soon"; the doubling is our choice): `errorRetryMs` doubled once per
 * earlier consecutive failure, capped at `errorRetryMaxMs`. No jitter, so tests
 * and logs can state the retry time exactly.
 * @param consecutiveFailures failures before this one (0 for the first failure).
 * @returns ms in `[errorRetryMs, max(errorRetryMs, errorRetryMaxMs)]`. Never throws.
 */
export function retryDelayMs(errorRetryMs: number, errorRetryMaxMs: number, consecutiveFailures: number): number {
  const doublings = Math.min(Math.max(0, Math.floor(consecutiveFailures)), 52);
  return Math.max(errorRetryMs, Math.min(errorRetryMaxMs, errorRetryMs * 2 ** doublings));
}

/** Settings of {@link unreachableRetryMs}, ms. */
export interface UnreachableRetrySettings {
  /** First retry delay; doubles per earlier consecutive failure... */
  errorRetryMs: number;
  /** ...up to this. */
  errorRetryMaxMs: number;
  /** Cap on the wait a `Retry-After` asks for (`pacing.maxRetryAfter`). */
  retryAfterCapMs: number;
}

/**
 * Delay before fetching an unreachable robots.txt again, ms: the
 * {@link retryDelayMs} backoff, or the origin's `Retry-After` (RFC 9110
 * §10.2.3; seconds or HTTP-date) capped at `retryAfterCapMs` when that is
 * later. An origin that answers 429 or 503 with `Retry-After` is never asked
 * again before it said (within the cap); an invalid or past one leaves the backoff.
 * @param retryAfter the 429/503's `Retry-After` value, if any.
 * @param nowMs the current time, ms since the epoch (for an HTTP-date).
 * @returns ms, finite and >= `errorRetryMs`. Never throws.
 */
export function unreachableRetryMs(settings: UnreachableRetrySettings, consecutiveFailures: number, retryAfter: string | undefined, nowMs: number): number {
  const backoffMs = retryDelayMs(settings.errorRetryMs, settings.errorRetryMaxMs, consecutiveFailures);
  const askedMs = parseRetryAfter(retryAfter, nowMs);
  return askedMs === undefined ? backoffMs : Math.max(backoffMs, Math.min(askedMs, settings.retryAfterCapMs));
}

/**
 * Cache-Control directives by lower-cased name; the value is the argument
 * (unquoted) or null when the directive has none. A directive repeated with a
 * different argument is kept with argument `''` (invalid: stale, §4.2.1).
 */
function parseCacheControl(value: HeaderValue): Map<string, string | null> {
  const directives = new Map<string, string | null>();
  const text = Array.isArray(value) ? value.join(',') : (value ?? '');
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    const name = (eq < 0 ? part : part.slice(0, eq)).trim().toLowerCase();
    if (name === '') continue;
    const argument = eq < 0 ? null : part.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
    const seen = directives.get(name);
    directives.set(name, seen === undefined || seen === argument ? argument : '');
  }
  return directives;
}

/** The `Age` value in seconds, or undefined when absent or invalid. */
function singleDeltaSeconds(value: HeaderValue): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  return DELTA_SECONDS.test(trimmed) ? Number(trimmed) : undefined;
}
