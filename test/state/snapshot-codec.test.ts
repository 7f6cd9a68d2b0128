// run-tests: in-process
/**
 * The stored form of a robots snapshot (issue 10): the entry and its body
 * round-trip, the file parsed again from the same bytes; large records are
 * gzipped; an ok snapshot without its body is refused.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cacheEntryOf } from '../../src/cache/robots-cache.js';
import { gzipSync } from 'node:zlib';
import { COMPRESS_ABOVE_BYTES, decodeSnapshot, encodeSnapshot, maxRecordBytesOf } from '../../src/state/snapshot-codec.js';
import { parseRobotsTxt } from '../../src/robots/index.js';
import type { SnapshotInfo } from '../../src/policy/decision.js';

const parse = (body: Buffer) => parseRobotsTxt(body);

function okEntry(text: string) {
  const body = Buffer.from(text);
  const info: SnapshotInfo = { url: 'https://a.example/robots.txt', state: 'ok', status: 200, error: undefined, fetchedAtMs: 1_000, expiresAtMs: 2_000, bytes: body.length, truncated: false };
  const unreachable: SnapshotInfo = { ...info, state: 'unreachable', status: 503, fetchedAtMs: 1_500, expiresAtMs: 1_800, bytes: 0 };
  return { body, entry: cacheEntryOf({ info, robots: parse(body), lastFailure: unreachable }, 2) };
}

describe('snapshot codec', () => {
  it('round-trips a small entry as plain JSON, with the kept snapshot, the failed attempt and the failure count', async () => {
    const { body, entry } = okEntry('User-agent: *\nDisallow: /private/\nCrawl-delay: 0.05\n');
    const data = await encodeSnapshot(entry, body);
    assert.equal(data[0], 'j'.charCodeAt(0));
    const decoded = await decodeSnapshot(data, parse);
    assert.deepEqual(decoded.body, body);
    assert.deepEqual(decoded.entry.snapshot.info, entry.snapshot.info);
    assert.deepEqual(decoded.entry.snapshot.lastFailure, entry.snapshot.lastFailure);
    assert.equal(decoded.entry.consecutiveFailures, 2);
    assert.deepEqual(decoded.entry.snapshot.robots, entry.snapshot.robots);
  });

  it('gzips a record larger than the threshold, and it still round-trips', async () => {
    const lines = Array.from({ length: 400 }, (_, i) => `Disallow: /section-${i}/`).join('\n');
    const { body, entry } = okEntry(`User-agent: *\n${lines}\n`);
    assert.ok(body.length > COMPRESS_ABOVE_BYTES);
    const data = await encodeSnapshot(entry, body);
    assert.equal(data[0], 'z'.charCodeAt(0));
    assert.ok(data.length < body.length / 2, `${data.length} bytes stored for ${body.length}`);
    assert.deepEqual((await decodeSnapshot(data, parse)).entry.snapshot.robots, entry.snapshot.robots);
  });

  it('refuses a record longer than a body of robots.maxBytes makes, before it is read whole: a small gzip record that expands to 64 MiB (read whole and parsed before)', async () => {
    const maxRecordBytes = maxRecordBytesOf(500 * 1024);
    const { body, entry } = okEntry('User-agent: *\nDisallow: /x\n');
    assert.ok((await decodeSnapshot(await encodeSnapshot(entry, body), parse, maxRecordBytes)).entry.snapshot.robots, 'a record within the bound is read');
    // A well-formed record whose body (64 MiB of comment lines) is far past robots.maxBytes: gzipped, about 64 KiB.
    const huge = Buffer.alloc(64 * 1024 * 1024, '#\n');
    const json = JSON.stringify({ v: 1, info: { ...entry.snapshot.info, bytes: huge.length }, lastFailure: null, consecutiveFailures: 0, body: huge.toString('base64') });
    const bomb = Buffer.concat([Buffer.of('z'.charCodeAt(0)), gzipSync(json)]);
    assert.ok(bomb.length < 1_000_000, `${bomb.length} bytes stored`);
    await assert.rejects(decodeSnapshot(bomb, parse, maxRecordBytes), (error: Error) => error instanceof RangeError && /longer than \d+ bytes once decompressed/.test(error.message));
    const plain = Buffer.concat([Buffer.of('j'.charCodeAt(0)), Buffer.from(json.slice(0, maxRecordBytes + 10))]);
    await assert.rejects(decodeSnapshot(plain, parse, maxRecordBytes), (error: Error) => error instanceof RangeError && /longer than/.test(error.message));
  });

  it('refuses an ok snapshot without its body, and an unknown record', async () => {
    const { entry } = okEntry('User-agent: *\n');
    await assert.rejects(encodeSnapshot(entry, null), TypeError);
    await assert.rejects(decodeSnapshot(Buffer.from('?{}'), parse));
  });
});
