/**
 * ISO-8601 timestamps for log lines, cheaply: the access line carries five of
 * them (pino's `time`, `startedAt`, `upstreamStartedAt`, the snapshot's
 * `fetchedAt` and `expiresAt`), and `Date#toISOString` was 1.5% of a proxied
 * request's CPU (bench/PROFILE.md). Extension, not in RFC 9309.
 */
import { setBytes, type LineBuffer } from './line-buffer.js';

/** First instant Date#toISOString writes with a six-digit year (10000-01-01), ms since the epoch. */
const YEAR_10000_MS = 253_402_300_800_000;

/**
 * A formatter of ms-since-the-epoch as ISO-8601 with ms precision, exactly as
 * `new Date(ms).toISOString()` writes it (`2026-11-30T17:26:27.123Z`), or
 * `'invalid'` for a value Date cannot represent (NaN, ±Infinity, beyond
 * ±8.64e15). It remembers the second it formatted last, so successive values
 * within one second cost a remainder and a concatenation; give each kind of
 * timestamp its own formatter so they do not evict each other. Fractional
 * milliseconds are truncated toward zero, as Date does.
 */
export type IsoFormatter = (ms: number) => string;

/** Creates an {@link IsoFormatter} with its own one-second cache. Pure apart from that cache. */
export function createIsoFormatter(): IsoFormatter {
  let cachedSecondMs = -1;
  /** `YYYY-MM-DDTHH:MM:SS.` of {@link cachedSecondMs}. */
  let cachedPrefix = '';
  return (ms: number): string => {
    // Years 1970-9999 take the cached path; everything else (negative, six-digit years, NaN) goes through Date.
    if (!(ms >= 0 && ms < YEAR_10000_MS)) return slowIso(ms);
    const whole = Math.trunc(ms);
    const milli = whole % 1000;
    const secondMs = whole - milli;
    if (secondMs !== cachedSecondMs) {
      cachedPrefix = new Date(secondMs).toISOString().slice(0, 20);
      cachedSecondMs = secondMs;
    }
    return cachedPrefix + (milli < 10 ? '00' : milli < 100 ? '0' : '') + milli + 'Z';
  };
}

/** `new Date(ms).toISOString()`, or `'invalid'` where it would throw. */
function slowIso(ms: number): string {
  const d = new Date(ms);
  return Number.isFinite(d.getTime()) ? d.toISOString() : 'invalid';
}

/**
 * Appends a timestamp as a JSON string (`"2026-11-30T17:26:27.123Z"`, or
 * `"invalid"`) to a {@link LineBuffer}: the bytes `JSON.stringify(format(ms))`
 * has for the {@link IsoFormatter} of the same value, without making a string.
 */
export type IsoWriter = (out: LineBuffer, ms: number) => void;

/** Creates an {@link IsoWriter} with its own one-second cache (give each kind of timestamp its own). */
export function createIsoWriter(): IsoWriter {
  let cachedSecondMs = -1;
  /** `"` and the 20 ASCII bytes `YYYY-MM-DDTHH:MM:SS.` of {@link cachedSecondMs}, copied in one `set`. */
  const prefix = new Uint8Array(21);
  prefix[0] = 0x22;
  return (out: LineBuffer, ms: number): void => {
    if (!(ms >= 0 && ms < YEAR_10000_MS)) {
      out.string(slowIso(ms));
      return;
    }
    // Whole seconds by a division of the whole ms (a float `%` is a C call in optimised code).
    const whole = Math.trunc(ms);
    const secondMs = Math.floor(whole / 1000) * 1000;
    const milli = whole - secondMs;
    if (secondMs !== cachedSecondMs) {
      const text = new Date(secondMs).toISOString();
      for (let i = 0; i < 20; i++) prefix[i + 1] = text.charCodeAt(i);
      cachedSecondMs = secondMs;
    }
    out.ensure(26);
    const buf = out.buf;
    let p = out.length;
    setBytes.call(buf, prefix, p);
    p += 21;
    buf[p++] = 0x30 + Math.floor(milli / 100);
    buf[p++] = 0x30 + (Math.floor(milli / 10) % 10);
    buf[p++] = 0x30 + (milli % 10);
    buf[p++] = 0x5a; // Z
    buf[p++] = 0x22;
    out.length = p;
  };
}
