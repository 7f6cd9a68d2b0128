/**
 * ISO-8601 timestamps for log lines, cheaply: the access line carries five of
 * them (pino's `time`, `startedAt`, `upstreamStartedAt`, the snapshot's
 * `fetchedAt` and `expiresAt`), and `Date#toISOString` was 1.5% of a proxied
 * request's CPU (bench/PROFILE.md). Extension, not in RFC 9309.
 */
import type { LineBuffer } from './line-buffer.js';

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

/** `.ddd` (the milliseconds 000-999 after the seconds' dot) as little-endian words, by value. */
const MILLI_WORDS = new Int32Array(1000);
for (let ms = 0; ms < 1000; ms++) {
  const text = `.${String(ms).padStart(3, '0')}`;
  MILLI_WORDS[ms] = text.charCodeAt(0) | (text.charCodeAt(1) << 8) | (text.charCodeAt(2) << 16) | (text.charCodeAt(3) << 24);
}
/** `Z"`, the timestamp's end, as a little-endian word. */
const Z_QUOTE = 0x5a | (0x22 << 8);

/**
 * Creates an {@link IsoWriter} with its own one-second cache (give each kind of timestamp its own). A timestamp is
 * three stores of little-endian words: `"YYYY-MM-DDTHH:MM:SS` (five words, cached per second), `.ddd` (from a
 * table) and `Z"` (under callgrind ~320 instructions a timestamp, against ~360 with a `set` of the prefix and
 * the digits computed). A new second in the cached minute rewrites the seconds' two digits; only a new minute
 * formats with `Date#toISOString` (under callgrind, where a request takes ~50 times its time, a new second came
 * every ~20 requests for each of the line's three writers: ~500 instructions a line).
 */
export function createIsoWriter(): IsoWriter {
  let cachedSecondMs = -1;
  /** The first ms of {@link cachedSecondMs}'s minute (none yet: no second is within 60 s of it). */
  let cachedMinuteMs = -Infinity;
  /** `"` and the 19 ASCII bytes `YYYY-MM-DDTHH:MM:SS` of {@link cachedSecondMs}, as five little-endian words. */
  const prefix = new Int32Array(5);
  return (out: LineBuffer, ms: number): void => {
    if (!(ms >= 0 && ms < YEAR_10000_MS)) {
      out.string(slowIso(ms));
      return;
    }
    // Whole seconds by a division of the whole ms (a float `%` is a C call in optimised code).
    const whole = Math.trunc(ms);
    const secondMs = Math.floor(whole / 1000) * 1000;
    if (secondMs !== cachedSecondMs) {
      const seconds = (secondMs - cachedMinuteMs) / 1000;
      if (seconds >= 0 && seconds < 60) {
        // Word 4 is `M:SS` (bytes 16-19): the minute's last digit, the colon, then the seconds.
        const tens = Math.floor(seconds / 10);
        prefix[4] = ((prefix[4] as number) & 0xffff) | ((0x30 + tens) << 16) | ((0x30 + seconds - tens * 10) << 24);
      } else {
        const text = `"${new Date(secondMs).toISOString()}`;
        for (let i = 0; i < 5; i++) {
          prefix[i] = text.charCodeAt(4 * i) | (text.charCodeAt(4 * i + 1) << 8) | (text.charCodeAt(4 * i + 2) << 16) | (text.charCodeAt(4 * i + 3) << 24);
        }
        cachedMinuteMs = Math.floor(secondMs / 60_000) * 60_000;
      }
      cachedSecondMs = secondMs;
    }
    out.words(prefix, 5);
    out.word(MILLI_WORDS[whole - secondMs] as number, 4);
    out.word(Z_QUOTE, 2);
  };
}
