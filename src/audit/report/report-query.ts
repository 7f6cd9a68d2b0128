/**
 * What a report is asked for: a time range and optional filters, read from
 * URL query parameters (`range=1h|24h|7d|30d`, or `from`/`to` as ISO-8601 or
 * ms since the epoch; `identity`, `token`, `origin`; `limit`) or from the
 * command line (`--since 7d`). Pure: the current time comes in as `nowMs`.
 * Extension, not in RFC 9309.
 */
import { parseDuration } from '../../config/units.js';
import { hostKeyOf } from '../../proxy/target-origin.js';

/** The preset ranges of the page. */
export const RANGE_PRESETS: Readonly<Record<string, number>> = {
  '1h': 3_600_000,
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
};

/** Longest range a report may cover, ms (the longest rollup retention). */
export const MAX_RANGE_MS = 3650 * 86_400_000;
/** Rows of a drill-down table (refusals, rules, versions) by default, and at most. */
export const DEFAULT_ROW_LIMIT = 200;
export const MAX_ROW_LIMIT = 5_000;
/** Longest filter value accepted, characters. */
const MAX_FILTER_CHARS = 2048;

/** A validated report query. `toMs` is exclusive. */
export interface ReportQuery {
  fromMs: number;
  toMs: number;
  /** Exact identity; `''` selects requests without one. Undefined: all. */
  identity?: string;
  /** Exact product token (as the ledger keys it). Undefined: all. */
  token?: string;
  /** Origin `scheme://host[:port]` as the ledger keys it (normalised: see `originFilterOf`). Undefined: all. */
  origin?: string;
  /** Rows of drill-down tables. */
  limit: number;
}

/** The outcome of reading a query: the query, or why it is refused (a 400). */
export type ReportQueryParse = { ok: true; query: ReportQuery } | { ok: false; message: string };

/**
 * Digits below this (ms since the epoch: 1973-03-03T09:46:40Z) are refused as a time: what is
 * written so is seconds since the epoch (`1733200000`, ten digits, is 2024-12-03 in seconds and
 * 1970-01-21 in ms), and read as ms it gave a range of 56 years ("longer than 3650 days") or,
 * with `to` in seconds too, an empty report of 1970 without a word.
 */
const MIN_EPOCH_MS = 100_000_000_000;

/** Which forms `from` and `to` take, for every refusal of one. */
const TIME_FORMS = 'ISO-8601 (e.g. 2026-01-01T00:00:00Z) or ms since the epoch (13 digits, e.g. 1767225600000)';

/**
 * A time as ms since the epoch (digits) or ISO-8601, or why it is refused (`name`, `from` or `to`,
 * begins the reason): neither form, or digits that read as a time before 1973 (seconds since
 * the epoch, most likely: the reason gives the value in ms and as ISO-8601). Pure.
 */
function parseTime(name: 'from' | 'to', text: string): number | string {
  if (/^\d{1,15}$/.test(text)) {
    const ms = Number(text);
    if (ms >= MIN_EPOCH_MS) return ms;
    const asSeconds = ms * 1000;
    const seconds = asSeconds <= 8.64e15 ? `; if ${text} is seconds since the epoch, write ${asSeconds} or ${new Date(asSeconds).toISOString()}` : '';
    return `${name} ${text} reads as ms since the epoch, ${new Date(ms).toISOString()}: too early for a report${seconds}; it takes ${TIME_FORMS}`;
  }
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : `${name} must be ${TIME_FORMS}, got ${JSON.stringify(text.slice(0, 64))}`;
}

/**
 * The origin filter as the ledger keys origins (the proxy's origin key: `URL.origin`, lower case,
 * default port elided, an IPv4-mapped host as its IPv4 address): `https://Example.com:443/` is
 * `https://example.com`, which an exact comparison with what was typed would never find (an empty
 * report, silently). A value that is no http(s) URL is kept as written (compared exactly); an
 * http(s) URL with a path, query, fragment or user information is no origin: undefined. Pure.
 */
function originFilterOf(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return value;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return value;
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') return undefined;
  return `${url.protocol}//${hostKeyOf(url.host)}`;
}

/**
 * A range written as a preset or a duration (`90m`, `7d`), ms; undefined when it is not one.
 * Pure; never throws.
 */
export function parseRange(text: string): number | undefined {
  const preset = RANGE_PRESETS[text];
  if (preset !== undefined) return preset;
  const parsed = parseDuration(text);
  return parsed.ok && parsed.value > 0 ? parsed.value : undefined;
}

/**
 * Reads a report query from URL query parameters. Defaults: the last 24 h, no filters,
 * {@link DEFAULT_ROW_LIMIT} rows. `to` is read only with `from` (a `to` without one is refused:
 * a preset range ends now). Pure; never throws.
 * @param nowMs the current time, ms since the epoch (the end of a preset range).
 */
export function parseReportQuery(params: URLSearchParams, nowMs: number): ReportQueryParse {
  let fromMs: number;
  let toMs = nowMs;
  const from = params.get('from');
  const to = params.get('to');
  if (from !== null && from !== '') {
    const parsedFrom = parseTime('from', from);
    if (typeof parsedFrom === 'string') return { ok: false, message: parsedFrom };
    fromMs = parsedFrom;
    if (to !== null && to !== '') {
      const parsedTo = parseTime('to', to);
      if (typeof parsedTo === 'string') return { ok: false, message: parsedTo };
      toMs = parsedTo;
    }
  } else {
    // A `to` alone would be dropped and the report would end now: refused, not ignored.
    if (to !== null && to !== '') return { ok: false, message: 'to needs from: a range (range=) always ends now' };
    const range = params.get('range') ?? '24h';
    const rangeMs = parseRange(range);
    if (rangeMs === undefined) return { ok: false, message: `range must be 1h, 24h, 7d, 30d or a duration such as 90m, got ${JSON.stringify(range.slice(0, 64))}` };
    fromMs = nowMs - rangeMs;
  }
  if (!(toMs > fromMs)) return { ok: false, message: 'the range is empty: to must be after from' };
  if (toMs - fromMs > MAX_RANGE_MS) return { ok: false, message: 'the range is longer than 3650 days' };
  const query: ReportQuery = { fromMs, toMs, limit: DEFAULT_ROW_LIMIT };
  for (const key of ['identity', 'token', 'origin'] as const) {
    const value = params.get(key);
    if (value === null || (value === '' && key !== 'identity')) continue;
    if (value.length > MAX_FILTER_CHARS) return { ok: false, message: `${key} is longer than ${MAX_FILTER_CHARS} characters` };
    if (key === 'origin') {
      const origin = originFilterOf(value);
      if (origin === undefined) return { ok: false, message: `origin must be scheme://host[:port] without a path or query, e.g. https://example.com, got ${JSON.stringify(value.slice(0, 64))}` };
      query.origin = origin;
      continue;
    }
    query[key] = value;
  }
  const limit = params.get('limit');
  if (limit !== null && limit !== '') {
    if (!/^\d{1,6}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_ROW_LIMIT) return { ok: false, message: `limit must be 1..${MAX_ROW_LIMIT}` };
    query.limit = Number(limit);
  }
  return { ok: true, query };
}
