/**
 * The ledger's retention prune on a real SQLite file: rollups, refusals,
 * robots.txt versions and bot samples older than their retention go (each
 * origin's latest robots.txt version stays), and refusals beyond maxRefusals go
 * oldest first.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import pino from 'pino';
import { Ledger } from '../../../src/audit/ledger/index.js';
import type { RobotsSnapshot } from '../../../src/policy/snapshot.js';
import { makeDecision, makeEntry, makeSnapshot, T0_MS } from '../factories.js';
import { openReadOnly, tempDir } from './support.js';

const DAY_MS = 86_400_000;
const silent = pino({ level: 'silent' });

function snapshotAt(fetchedAtMs: number, status: number): RobotsSnapshot {
  return { info: makeSnapshot({ fetchedAtMs, state: status === 200 ? 'ok' : 'unreachable', status }), robots: null };
}

describe('ledger retention', () => {
  it('prunes what is older than its retention and keeps the rest', () => {
    let nowMs = T0_MS;
    const clock = { nowMs: () => nowMs, setTimer: () => undefined, clearTimer: () => undefined };
    const path = join(tempDir(), 'ledger.sqlite');
    const ledger = new Ledger({ path, clock, logger: silent, flushIntervalMs: 0, pruneIntervalMs: 0, rollupRetentionMs: 90 * DAY_MS, refusalRetentionMs: 7 * DAY_MS });
    const allow = makeDecision({ verdict: 'allow', reason: 'rule-allow', productToken: null });
    // Day 0: a rollup, a refusal and two robots.txt versions of one origin, one of another.
    ledger.observe(makeEntry({ startedAtMs: T0_MS, decision: allow, productTokens: ['OldBot'] }));
    ledger.observe(makeEntry({ startedAtMs: T0_MS }));
    ledger.recordRobotsFetch({ origin: 'http://a.example', snapshot: snapshotAt(T0_MS, 200), body: Buffer.from('User-agent: *\n') });
    ledger.recordRobotsFetch({ origin: 'http://a.example', snapshot: snapshotAt(T0_MS + 1, 500), body: null });
    ledger.recordRobotsFetch({ origin: 'http://b.example', snapshot: snapshotAt(T0_MS, 200), body: Buffer.from('x') });
    assert.equal(ledger.flush(), true);
    // Day 85: a newer rollup and refusal.
    ledger.observe(makeEntry({ startedAtMs: T0_MS + 85 * DAY_MS, decision: allow, productTokens: ['NewBot'] }));
    ledger.observe(makeEntry({ startedAtMs: T0_MS + 85 * DAY_MS }));
    assert.equal(ledger.flush(), true);

    nowMs = T0_MS + 91 * DAY_MS;
    assert.ok(ledger.prune() > 0);
    ledger.close();
    const check = openReadOnly(path);
    try {
      const minutes = (check.prepare('SELECT DISTINCT minute FROM rollups').all() as Array<{ minute: number }>).map((r) => r.minute);
      assert.deepEqual(minutes, [Math.floor((T0_MS + 85 * DAY_MS) / 60_000)], 'only the day-85 rollups are left');
      const refusals = (check.prepare('SELECT at_ms FROM refusals').all() as Array<{ at_ms: number }>).map((r) => r.at_ms);
      assert.deepEqual(refusals, [T0_MS + 85 * DAY_MS], 'the day-0 refusal is older than 7 days, the day-85 one is not');
      const versions = check.prepare('SELECT origin, status FROM robots_versions ORDER BY id').all();
      assert.deepEqual(versions, [
        { origin: 'http://a.example', status: 500 },
        { origin: 'http://b.example', status: 200 },
      ], "each origin's latest version stays; the older one goes");
      assert.deepEqual(check.prepare('SELECT token FROM bots ORDER BY token').all(), [{ token: 'NewBot' }, { token: 'gptbot' }], 'samples seen on day 85 stay, OldBot (day 0) goes');
    } finally {
      check.close();
    }
  });

  it('keeps at most maxRefusals refusals, dropping the oldest', () => {
    const clock = { nowMs: () => T0_MS, setTimer: () => undefined, clearTimer: () => undefined };
    const path = join(tempDir(), 'ledger.sqlite');
    const ledger = new Ledger({ path, clock, logger: silent, flushIntervalMs: 0, pruneIntervalMs: 0, maxRefusals: 1_000 });
    for (let i = 0; i < 1_200; i++) ledger.observe(makeEntry({ startedAtMs: T0_MS - 1_200 + i }));
    assert.equal(ledger.flush(), true);
    assert.equal(ledger.prune(), 200);
    ledger.close();
    const db = openReadOnly(path);
    try {
      const { n, oldest } = db.prepare('SELECT count(*) AS n, min(at_ms) AS oldest FROM refusals').get() as { n: number; oldest: number };
      assert.equal(n, 1_000);
      assert.equal(oldest, T0_MS - 1_000, 'the 200 oldest went');
      assert.equal((db.prepare('SELECT sum(requests) AS n FROM rollups').get() as { n: number }).n, 1_200, 'the rollups still count them all');
    } finally {
      db.close();
    }
  });
});
