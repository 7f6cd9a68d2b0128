/**
 * Durations and sizes as written in the configuration file, e.g. `500ms`,
 * `1m30s`, `24h`, `500KiB`. Pure; no I/O. Extension, not in RFC 9309.
 */

/** Milliseconds per duration unit accepted by {@link parseDuration}. */
const DURATION_UNITS_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * Bytes per size unit accepted by {@link parseSize}. `KiB`/`MiB`/`GiB` are
 * binary (1024-based, as RFC 9309 §2.5 writes "500 kibibytes"); `kB`/`KB`,
 * `MB`, `GB` are decimal (SI, 1000-based). Bits (`Mb`) are not accepted.
 */
const SIZE_UNITS_BYTES: Readonly<Record<string, number>> = {
  B: 1,
  kB: 1_000,
  KB: 1_000,
  MB: 1_000_000,
  GB: 1_000_000_000,
  KiB: 1_024,
  MiB: 1_048_576,
  GiB: 1_073_741_824,
};

/**
 * One `<number><unit>` part of a duration: the number may have a fraction; one optional space
 * before the unit, and one before the part when it is not the first (`1m 30s`).
 */
const DURATION_PART = /( ?)(\d+(?:\.\d+)?) ?(ms|s|m|h|d)(?![a-z])/y;

/** The rank of each duration unit, largest first: the parts of a compound go down this list, each unit once. */
const DURATION_UNIT_RANK: Readonly<Record<string, number>> = { d: 0, h: 1, m: 2, s: 3, ms: 4 };
const SIZE = /^(\d+(?:\.\d+)?) ?(B|kB|KB|MB|GB|KiB|MiB|GiB)?$/;

/** The outcome of parsing a duration or size: a value, or why it was refused. */
export type UnitParse = { ok: true; value: number } | { ok: false; reason: string };

const DURATION_HINT =
  'expected a number with a unit ms, s, m, h or d (e.g. "500ms", "10s", "1.5s", "24h", "7d"), or such parts from the largest unit to the smallest, each unit once (e.g. "1m30s", "1h 30m"); one space may stand before a unit or between parts';
const SIZE_HINT = 'expected bytes or a number with a unit B, KiB, MiB, GiB, kB, MB or GB, e.g. "512B", "500KiB", "1MiB"';

/**
 * Parses a duration into milliseconds.
 *
 * Accepts a string of one or more `<number><unit>` parts (`ms`, `s`, `m`, `h`, `d` (24 h);
 * fractions allowed, e.g. `1.5s`; compounds such as `1h30m` add up, their parts from the
 * largest unit to the smallest, each unit once: `30s1m` and `1s1s` are refused; one space may
 * stand before a unit, `10 s`, and between parts, `1m 30s`), or the
 * number `0`. Any other bare number is refused: `10` could mean seconds or
 * milliseconds, so a unit is required. Negative values are refused.
 * Never throws.
 * @returns `{ ok: true, value }` with a whole number of milliseconds, or
 *   `{ ok: false, reason }` (the value is not a duration, or is not a whole
 *   number of milliseconds, e.g. `0.5ms`).
 */
export function parseDuration(input: unknown): UnitParse {
  if (typeof input === 'number') {
    if (input === 0) return { ok: true, value: 0 };
    if (Number.isFinite(input) && input < 0) return { ok: false, reason: `must not be negative, got ${input}` };
    return { ok: false, reason: `the number ${input} has no unit; ${DURATION_HINT}` };
  }
  if (typeof input !== 'string') return { ok: false, reason: `${DURATION_HINT}, got ${describeValue(input)}` };
  const text = input.trim();
  if (text.startsWith('-')) return { ok: false, reason: `must not be negative, got ${JSON.stringify(input)}` };
  if (text === '0') return { ok: true, value: 0 };
  if (text === '') return { ok: false, reason: `${DURATION_HINT}, got an empty string` };
  let totalMs = 0;
  let previous: RegExpExecArray | undefined;
  DURATION_PART.lastIndex = 0;
  while (DURATION_PART.lastIndex < text.length) {
    const match = DURATION_PART.exec(text);
    // A space before the first part was trimmed; one before the unit only, not before the number, of the first part.
    if (match === null || (previous === undefined && match[1] !== '')) return { ok: false, reason: `invalid duration ${JSON.stringify(input)}: ${DURATION_HINT}` };
    const unit = match[3] ?? '';
    if (previous !== undefined && (DURATION_UNIT_RANK[unit] ?? 0) <= (DURATION_UNIT_RANK[previous[3] ?? ''] ?? 0)) {
      return {
        ok: false,
        reason: `invalid duration ${JSON.stringify(input)}: "${previous[0].trim()}" then "${match[0].trim()}": the parts go from the largest unit to the smallest, each unit once (e.g. "1m30s", not "30s1m")`,
      };
    }
    totalMs += Number(match[2]) * (DURATION_UNITS_MS[unit] ?? Number.NaN);
    previous = match;
  }
  return toWhole(totalMs, input, 'milliseconds');
}

/**
 * Parses a size into bytes.
 *
 * Accepts a non-negative integer (bytes), a string of digits (bytes), or a
 * number with a unit: `B`, `KiB`, `MiB`, `GiB` (1024-based), `kB`/`KB`, `MB`,
 * `GB` (1000-based), one optional space before the unit. Fractions are allowed
 * when the result is a whole number of bytes (`1.5KiB` = 1536). Never throws.
 * @returns `{ ok: true, value }` in bytes, or `{ ok: false, reason }`.
 */
export function parseSize(input: unknown): UnitParse {
  if (typeof input === 'number') {
    if (Number.isFinite(input) && input < 0) return { ok: false, reason: `must not be negative, got ${input}` };
    return toWhole(input, input, 'bytes');
  }
  if (typeof input !== 'string') return { ok: false, reason: `${SIZE_HINT}, got ${describeValue(input)}` };
  const text = input.trim();
  if (text.startsWith('-')) return { ok: false, reason: `must not be negative, got ${JSON.stringify(input)}` };
  const match = SIZE.exec(text);
  if (match === null) return { ok: false, reason: `invalid size ${JSON.stringify(input)}: ${SIZE_HINT}` };
  const bytes = Number(match[1]) * (SIZE_UNITS_BYTES[match[2] ?? 'B'] ?? Number.NaN);
  return toWhole(bytes, input, 'bytes');
}

/**
 * Writes milliseconds in the largest unit that divides them exactly, e.g.
 * `86400000` -> `"24h"`, `90000` -> `"90s"`, `1500` -> `"1500ms"`. The result
 * parses back to the same value with {@link parseDuration}.
 * @param ms a non-negative whole number of milliseconds.
 * @throws RangeError if `ms` is negative or not a safe integer.
 */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`not a duration in milliseconds: ${ms}`);
  if (ms === 0) return '0';
  for (const unit of ['h', 'm', 's'] as const) {
    const size = DURATION_UNITS_MS[unit] ?? 1;
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/**
 * Writes bytes in the largest binary unit that divides them exactly, e.g.
 * `512000` -> `"500KiB"`, `1000` -> `"1000B"`. The result parses back to the
 * same value with {@link parseSize}.
 * @param bytes a non-negative whole number of bytes.
 * @throws RangeError if `bytes` is negative or not a safe integer.
 */
export function formatSize(bytes: number): string {
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`not a size in bytes: ${bytes}`);
  if (bytes === 0) return '0B';
  for (const unit of ['GiB', 'MiB', 'KiB'] as const) {
    const size = SIZE_UNITS_BYTES[unit] ?? 1;
    if (bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return `${bytes}B`;
}

/**
 * Describes a value read from YAML for an error message: strings quoted,
 * `null` as "an empty value", lists and mappings by kind. Never throws.
 */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'an empty value';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return String(value);
}

function toWhole(value: number, input: unknown, unit: 'milliseconds' | 'bytes'): UnitParse {
  // Fractions in the input can leave binary noise (0.1s * 1000 = 100.00000000000001).
  const rounded = Math.round(value);
  if (!Number.isFinite(value) || Math.abs(value - rounded) > Math.max(1e-6, Math.abs(value) * 1e-12)) {
    return { ok: false, reason: `${describeValue(input)} is not a whole number of ${unit}` };
  }
  if (!Number.isSafeInteger(rounded)) return { ok: false, reason: `${describeValue(input)} is too large` };
  return { ok: true, value: rounded };
}
