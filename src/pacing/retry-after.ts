/**
 * Pure helpers for upstream overload signals: the `Retry-After` field
 * (RFC 9110 §10.2.3), HTTP-date (RFC 9110 §5.6.7) and exponential backoff with
 * full jitter for answers that carry no usable `Retry-After`.
 * Pure: no clock, no timers; time comes in as `nowMs`.
 */

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;
const MONTH = MONTHS.join('|');
const DAY = 'Mon|Tue|Wed|Thu|Fri|Sat|Sun';
const DAY_LONG = 'Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';

/** IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = new RegExp(`^(?:${DAY}), (\\d{2}) (${MONTH}) (\\d{4}) ${TIME} GMT$`);
/** Obsolete RFC 850 format: `Sunday, 06-Nov-94 08:49:37 GMT`. */
const RFC850_DATE = new RegExp(`^(?:${DAY_LONG}), (\\d{2})-(${MONTH})-(\\d{2}) ${TIME} GMT$`);
/** Obsolete asctime format: `Sun Nov  6 08:49:37 1994`. */
const ASCTIME_DATE = new RegExp(`^(?:${DAY}) (${MONTH}) ( \\d|\\d{2}) ${TIME} (\\d{4})$`);

/** `delay-seconds = 1*DIGIT` (RFC 9110 §10.2.3). */
const DELAY_SECONDS = /^\d+$/;

/**
 * Reads a `Retry-After` field value (RFC 9110 §10.2.3): either
 * `delay-seconds` (a non-negative decimal integer of seconds) or an HTTP-date
 * (any of the three formats of RFC 9110 §5.6.7).
 *
 * Surrounding spaces and tabs (OWS) are ignored. Fractions (`1.5`), signs,
 * several values joined by commas and unknown date formats are invalid.
 * Dates are case-sensitive, as §5.6.7 says; the day name is not checked
 * against the date.
 *
 * @param value the field value as received, or null/undefined when absent.
 * @param nowMs the current time, ms since the Unix epoch (the reference for a date).
 * @returns milliseconds from `nowMs` until the origin may be retried: 0 for a date
 *   in the past, at most `Number.MAX_SAFE_INTEGER`; `undefined` when absent or
 *   invalid. Callers apply their own cap. Never throws.
 */
export function parseRetryAfter(value: string | undefined | null, nowMs: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  const text = value.replace(/^[ \t]+|[ \t]+$/g, '');
  if (DELAY_SECONDS.test(text)) {
    return Math.min(Number(text) * 1000, Number.MAX_SAFE_INTEGER);
  }
  const dateMs = parseHttpDate(text, nowMs);
  if (dateMs === undefined) return undefined;
  return Math.max(0, dateMs - nowMs);
}

/**
 * Parses an HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, or the obsolete RFC 850
 * and asctime formats that recipients must accept. A two-digit RFC 850 year
 * that would lie more than 50 years after `nowMs`'s year is taken as the most
 * recent past year with those digits (§5.6.7).
 *
 * Accepts second 60 (a leap second) as the last second of its minute + 1 s.
 * @param text the date, without surrounding whitespace.
 * @param nowMs the current time, ms since the Unix epoch (only used for two-digit years).
 * @returns ms since the Unix epoch, or `undefined` when `text` is not a valid HTTP-date
 *   (wrong format, impossible day such as 30 Feb, hour > 23). Never throws.
 */
export function parseHttpDate(text: string, nowMs: number): number | undefined {
  let m = IMF_FIXDATE.exec(text);
  if (m) return toEpochMs(Number(m[3]), m[2], Number(m[1]), m[4], m[5], m[6]);
  m = RFC850_DATE.exec(text);
  if (m) {
    const nowYear = new Date(nowMs).getUTCFullYear();
    let year = Math.floor(nowYear / 100) * 100 + Number(m[3]);
    if (year > nowYear + 50) year -= 100;
    return toEpochMs(year, m[2], Number(m[1]), m[4], m[5], m[6]);
  }
  m = ASCTIME_DATE.exec(text);
  if (m) return toEpochMs(Number(m[6]), m[1], Number(m[2]?.trim()), m[3], m[4], m[5]);
  return undefined;
}

function toEpochMs(
  year: number,
  monthName: string | undefined,
  day: number,
  hourText: string | undefined,
  minuteText: string | undefined,
  secondText: string | undefined,
): number | undefined {
  const month = MONTHS.indexOf(monthName as (typeof MONTHS)[number]);
  const hour = Number(hourText);
  const minute = Number(minuteText);
  const second = Number(secondText);
  if (month < 0 || hour > 23 || minute > 59 || second > 60) return undefined;
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0-99 to 1900-1999.
  date.setUTCFullYear(year, month, day);
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month || date.getUTCDate() !== day) {
    return undefined;
  }
  date.setUTCHours(hour, minute, Math.min(second, 59), 0);
  return date.getTime() + (second === 60 ? 1000 : 0);
}

/** Settings for {@link computeBackoffMs}; all in milliseconds. */
export interface BackoffSettings {
  /** Ceiling of the first attempt's pause, ms (> 0). */
  baseMs: number;
  /** Largest ceiling any attempt may reach, ms (>= baseMs). */
  capMs: number;
}

/**
 * Exponential backoff with full jitter: a pause drawn uniformly from
 * `[0, min(capMs, baseMs * 2^(attempt-1)))`. Used after an upstream 429/503
 * without a usable `Retry-After` (extension, not in RFC 9309 or RFC 9110;
 * "full jitter" as in the AWS Architecture Blog, "Exponential Backoff And Jitter").
 *
 * @param attempt 1 for the first consecutive overload answer, 2 for the next, ...
 *   (values below 1 count as 1).
 * @param random a source of numbers in [0, 1), e.g. `Math.random`; values outside are clamped, NaN counts as 1.
 * @returns the pause in ms, >= 0 and < the ceiling (the ceiling itself only if `random` returns 1). Never throws.
 */
export function computeBackoffMs(attempt: number, settings: BackoffSettings, random: () => number): number {
  // 2^52 already exceeds any cap; bounding the exponent keeps the product finite.
  const exponent = Math.min(Math.max(1, Math.floor(attempt)) - 1, 52);
  const ceilingMs = Math.min(settings.capMs, settings.baseMs * 2 ** exponent);
  const drawn = random();
  // A broken source (NaN) gets the longest pause, the polite side.
  const r = Number.isNaN(drawn) ? 1 : Math.min(1, Math.max(0, drawn));
  return r * ceilingMs;
}
