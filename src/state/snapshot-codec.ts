/**
 * The form a robots snapshot takes in the fleet's store (issue 10): what the
 * robots cache keeps for an origin (how the file was obtained, the failed
 * attempt behind a kept good snapshot, the failure count) and the body it was
 * parsed from, so every instance parses the same bytes. JSON, gzipped when
 * larger than {@link COMPRESS_ABOVE_BYTES}. Extension, not in RFC 9309.
 */
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { cacheEntryOf } from '../cache/robots-cache.js';
import type { CacheEntry } from '../cache/snapshot-store.js';
import type { SnapshotInfo } from '../policy/decision.js';
import type { RobotsTxt } from '../robots/types.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** Records larger than this are stored gzipped, bytes. */
export const COMPRESS_ABOVE_BYTES = 1024;

/** Room for a record's JSON beside its base64 body, bytes. */
const RECORD_OVERHEAD_BYTES = 64 * 1024;

/**
 * The largest record a body of at most `maxBodyBytes` (`robots.maxBytes`) makes, bytes: its base64
 * and the JSON around it. A larger one (decompressed) is refused before it is read whole: a small
 * gzip record must not expand to gigabytes in the heap ("no input can end the process").
 */
export function maxRecordBytesOf(maxBodyBytes: number): number {
  return Math.ceil(maxBodyBytes / 3) * 4 + RECORD_OVERHEAD_BYTES;
}

/** First byte of a stored record: its encoding. */
const PLAIN = 0x6a; // 'j'
const GZIP = 0x7a; // 'z'

interface StoredRecord {
  v: 1;
  info: SnapshotInfo;
  lastFailure: SnapshotInfo | null;
  consecutiveFailures: number;
  /** base64 of the body `info` was parsed from; null when `info.state` is not `ok`. */
  body: string | null;
}

/**
 * Encodes a cache entry with the body of its `info` (required when `info.state` is `ok`).
 * @throws {TypeError} when an `ok` entry comes without its body.
 */
export async function encodeSnapshot(entry: CacheEntry, body: Buffer | null): Promise<Buffer> {
  const { info, lastFailure } = entry.snapshot;
  if (info.state === 'ok' && body === null) throw new TypeError('an ok robots snapshot is shared with its body');
  const record: StoredRecord = { v: 1, info, lastFailure, consecutiveFailures: entry.consecutiveFailures, body: info.state === 'ok' && body ? body.toString('base64') : null };
  const json = Buffer.from(JSON.stringify(record), 'utf8');
  if (json.length <= COMPRESS_ABOVE_BYTES) return Buffer.concat([Buffer.of(PLAIN), json]);
  return Buffer.concat([Buffer.of(GZIP), await gzipAsync(json)]);
}

/** A decoded record: the cache entry (its file parsed again with `parse`) and the body. */
export interface DecodedSnapshot {
  entry: CacheEntry;
  body: Buffer | null;
}

/**
 * Decodes a stored record; `parse` turns the body into the parsed file, with the options the
 * fetcher uses.
 * @param maxRecordBytes the longest record accepted, decompressed (see {@link maxRecordBytesOf}).
 * @throws {SyntaxError|RangeError|Error} when the record is not one this version wrote, or is longer
 *   than `maxRecordBytes` (the caller fetches instead).
 */
export async function decodeSnapshot(data: Buffer, parse: (body: Buffer) => RobotsTxt, maxRecordBytes = Infinity): Promise<DecodedSnapshot> {
  const kind = data[0];
  if (kind !== PLAIN && kind !== GZIP) throw new Error('unknown robots snapshot record');
  if (kind === PLAIN && data.length - 1 > maxRecordBytes) throw new RangeError(`robots snapshot record longer than ${maxRecordBytes} bytes`);
  const json =
    kind === GZIP
      ? await gunzipAsync(data.subarray(1), Number.isFinite(maxRecordBytes) ? { maxOutputLength: maxRecordBytes } : {}).catch((error: unknown) => {
          if ((error as { code?: unknown }).code !== 'ERR_BUFFER_TOO_LARGE') throw error;
          throw new RangeError(`robots snapshot record longer than ${maxRecordBytes} bytes once decompressed`);
        })
      : data.subarray(1);
  const record = JSON.parse(json.toString('utf8')) as StoredRecord;
  if (record.v !== 1 || typeof record.info !== 'object') throw new Error('unknown robots snapshot record version');
  const body = record.body === null ? null : Buffer.from(record.body, 'base64');
  let robots: RobotsTxt | null = null;
  if (record.info.state === 'ok') {
    if (body === null) throw new Error('robots snapshot record without its body');
    // The stored body is the part that was parsed; `truncated` is what the fetch saw.
    robots = { ...parse(body), truncated: record.info.truncated };
  }
  const info = infoOf(record.info);
  const lastFailure = record.lastFailure === null ? null : infoOf(record.lastFailure);
  return { entry: cacheEntryOf({ info, robots, lastFailure }, record.consecutiveFailures), body };
}

/** JSON drops `undefined` fields: every field of a {@link SnapshotInfo} is put back. */
function infoOf(raw: SnapshotInfo): SnapshotInfo {
  return {
    url: raw.url,
    state: raw.state,
    status: raw.status,
    error: raw.error,
    fetchedAtMs: raw.fetchedAtMs,
    expiresAtMs: raw.expiresAtMs,
    bytes: raw.bytes,
    truncated: raw.truncated,
  };
}
