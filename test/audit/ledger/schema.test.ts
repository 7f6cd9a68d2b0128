/**
 * Ledger schema migrations on real SQLite files: a file at an older version is
 * brought up to date with its rows intact, a new file gets the whole schema,
 * and a file from a newer version is refused.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { LEDGER_SCHEMA_VERSION, Ledger, migrate, schemaVersionOf } from '../../../src/audit/ledger/index.js';
import { makeEntry, T0_MS } from '../factories.js';
import { openReadOnly, tempDir } from './support.js';

const clock = { nowMs: () => T0_MS, setTimer: () => undefined, clearTimer: () => undefined };
const silent = pino({ level: 'silent' });

describe('ledger schema', () => {
  it('creates every table of the current version in a new file', () => {
    const db = new Database(':memory:');
    assert.equal(migrate(db), 0);
    assert.equal(schemaVersionOf(db), LEDGER_SCHEMA_VERSION);
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>).map((t) => t.name);
    assert.deepEqual(tables, ['bots', 'refusals', 'robots_versions', 'rollups']);
    assert.equal(migrate(db), LEDGER_SCHEMA_VERSION, 'a second run changes nothing');
    db.close();
  });

  it('migrates a version-1 file, keeping its rows, and the ledger writes to it', () => {
    const path = join(tempDir(), 'ledger.sqlite');
    const old = new Database(path);
    migrate(old, 1);
    assert.equal(schemaVersionOf(old), 1);
    old.prepare("INSERT INTO rollups (minute, identity, token, origin, verdict, reason, requests) VALUES (?, '', 'OldBot', 'http://old.example', 'allow', 'rule-allow', 7)").run(Math.floor(T0_MS / 60_000));
    old.prepare("INSERT INTO refusals (at_ms, identity, token, origin, url, reason, status) VALUES (?, '', 'OldBot', 'http://old.example', 'http://old.example/x', 'rule-disallow', 403)").run(T0_MS);
    old.close();

    const ledger = new Ledger({ path, clock, logger: silent, flushIntervalMs: 0, pruneIntervalMs: 0 });
    ledger.observe(makeEntry());
    assert.equal(ledger.flush(), true);
    ledger.close();

    const db = openReadOnly(path);
    try {
      assert.equal(schemaVersionOf(db), LEDGER_SCHEMA_VERSION);
      assert.deepEqual(db.prepare("SELECT requests FROM rollups WHERE token = 'OldBot'").all(), [{ requests: 7 }], 'the old rollup is intact');
      assert.equal((db.prepare('SELECT count(*) AS n FROM refusals').get() as { n: number }).n, 2, 'the old refusal and the new one');
      assert.deepEqual(db.prepare('SELECT token FROM bots').all(), [{ token: 'gptbot' }], 'the table version 2 added is written');
    } finally {
      db.close();
    }
  });

  it('refuses a file from a newer version with ERR_LEDGER_SCHEMA and does not touch it', () => {
    const db = new Database(':memory:');
    db.pragma(`user_version = ${LEDGER_SCHEMA_VERSION + 1}`);
    assert.throws(() => migrate(db), { code: 'ERR_LEDGER_SCHEMA' });
    assert.equal(schemaVersionOf(db), LEDGER_SCHEMA_VERSION + 1);
    db.close();
  });
});
