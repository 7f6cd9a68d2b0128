/**
 * What one rollup cell puts in a real SQLite file: every column of the row, written over two
 * flushes (the first inserts the row, the second adds to it through the upsert's conflict
 * clause), so a parameter bound to the wrong column, or dropped, shows as a wrong figure.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import pino from 'pino';
import { Ledger } from '../../../src/audit/ledger/index.js';
import { makeDecision, makeEntry, T0_MS } from '../factories.js';
import { openReadOnly, tempDir } from './support.js';

const clock = { nowMs: () => T0_MS, setTimer: () => undefined, clearTimer: () => undefined };
const silent = pino({ level: 'silent' });
const paced = { ...makeDecision({ verdict: 'allow', reason: 'rule-allow', rule: { kind: 'allow', pattern: '/', line: 1 } }), pacing: { delayMs: 2_000, waitedMs: 0 } };

describe('ledger: a cell written over two flushes', () => {
  it('stores every column of the cell and adds the second flush to the first', () => {
    // Distinct figures per column, so that two columns swapped show: bucket i holds i + 1 waits;
    // the status classes 1xx..5xx and errors 1, 59, 3, 4, 5 and 6 answers.
    const waits = [5, 40, 80, 200, 400, 900, 2_000, 4_000, 9_000, 20_000, 50_000, 70_000];
    const statuses: Array<number | null> = [100, ...Array<number>(2).fill(200), ...Array<number>(3).fill(302), ...Array<number>(4).fill(429), ...Array<number>(5).fill(503), ...Array<null>(6).fill(null)];
    const entries = waits.flatMap((wait, bucket) => Array.from({ length: bucket + 1 }, () => wait)).map((wait, i) => {
      const upstreamStatus = statuses[i] === undefined ? 200 : statuses[i]!;
      return makeEntry({
        decision: paced,
        startedAtMs: T0_MS + i * 100,
        timings: { queueWaitMs: wait, upstreamMs: 12 },
        response: { status: upstreamStatus ?? 502, upstreamStatus, bytesSent: i, bytesReceived: 2 * i },
      });
    });
    assert.equal(entries.length, 78);
    const path = join(tempDir(), 'ledger.sqlite');
    const ledger = new Ledger({ path, clock, logger: silent, flushIntervalMs: 0, pruneIntervalMs: 0 });
    for (const entry of entries.slice(0, 30)) ledger.observe(entry);
    assert.equal(ledger.flush(), true);
    for (const entry of entries.slice(30)) ledger.observe(entry);
    assert.equal(ledger.flush(), true);
    ledger.close();

    const db = openReadOnly(path);
    try {
      const rows = db.prepare('SELECT * FROM rollups').all() as Array<Record<string, unknown>>;
      assert.equal(rows.length, 1, 'one row: the second flush added to the first');
      const sumOf = (n: number): number => (n * (n - 1)) / 2; // 0 + 1 + ... + (n - 1)
      assert.deepEqual(rows[0], {
        minute: Math.floor(T0_MS / 60_000),
        identity: '',
        token: 'gptbot',
        origin: 'http://127.0.0.1:8081',
        verdict: 'allow',
        reason: 'rule-allow',
        requests: 78,
        bytes_in: 2 * sumOf(78),
        bytes_out: sumOf(78),
        queued: 78,
        wait_sum_ms: waits.reduce((sum, wait, bucket) => sum + wait * (bucket + 1), 0),
        wait_max_ms: 70_000,
        // Buckets <= 10, 50, 100, 250, 500, 1,000, 2,500, 5,000, 10,000, 30,000, 60,000 ms, then longer.
        ...Object.fromEntries(waits.map((_, bucket) => [`w${bucket}`, bucket + 1])),
        s1xx: 1,
        s2xx: 2 + (78 - statuses.length),
        s3xx: 3,
        s4xx: 4,
        s5xx: 5,
        s_error: 6,
        backoffs: 9,
        delay_max_ms: 2_000,
      });
    } finally {
      db.close();
    }
  });
});
