/**
 * A report over a large ledger must not stall the proxy: the admin API's
 * `/report` queries aggregate up to every per-minute rollup of a range (30
 * days: 43,200 minutes per key), which took over a second of synchronous
 * SQLite work on the event loop, during which no request was forwarded. The
 * report is read off the event loop; a request sent while it runs is answered
 * before it.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { proxyGet, siteHandler, startOrigin, startTestProxy, type TestOrigin } from '../../helpers/harness.js';
import { tempDir, UA } from '../ledger/support.js';

/** Fills the ledger with 30 days of per-minute rollups for `keys` (identity, token, origin) keys. */
function fillLedger(path: string, keys: number): void {
  const db = new Database(path, { timeout: 5000 });
  const insert = db.prepare('INSERT OR IGNORE INTO rollups (minute, identity, token, origin, verdict, reason, requests, s2xx) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  const nowMinute = Math.floor(Date.now() / 60_000);
  db.transaction(() => {
    for (let m = nowMinute - 30 * 1440; m < nowMinute; m += 1) {
      for (let k = 0; k < keys; k += 1) insert.run(m, '', `Bot${k}`, `https://site${k}.example`, 'allow', 'rule-allow', 1, 1);
    }
  })();
  db.close();
}

describe('a report over a large ledger', () => {
  let origin: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    const stateDir = tempDir();
    proxy = await startTestProxy({ stateDir });
    // One request creates the ledger file and its schema.
    assert.equal((await proxyGet(proxy.proxyAddress.port, `${origin.url}/first`, { headers: { 'user-agent': UA.example } })).status, 200);
    await fetch(`${proxy.adminUrl}/report/data/summary.json?range=1h`);
    fillLedger(join(stateDir, 'ledger.sqlite'), 6);
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('does not hold up a proxied request sent while it runs', async () => {
    const order: string[] = [];
    const report = fetch(`${proxy.adminUrl}/report/data/report.json?range=30d&limit=5000`).then(async (r) => {
      order.push('report');
      return { status: r.status, body: await r.text() };
    });
    // Let the report request reach the proxy, then send a request through it.
    await new Promise((resolve) => setTimeout(resolve, 30));
    const forwarded = proxyGet(proxy.proxyAddress.port, `${origin.url}/during`, { headers: { 'user-agent': UA.example } }).then((r) => {
      order.push('proxied');
      return r;
    });
    const [reported, proxied] = await Promise.all([report, forwarded]);
    assert.equal(proxied.status, 200);
    assert.equal(reported.status, 200, reported.body.slice(0, 300));
    assert.ok(JSON.parse(reported.body).tables.summary.rows.length > 0);
    assert.deepEqual(order, ['proxied', 'report'], 'the proxied request waited for the report');
  });

  it('answers 503 report-busy with Retry-After beyond 4 queries at once', async () => {
    const answers = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const r = await fetch(`${proxy.adminUrl}/report/data/bots.json?range=30d`);
        return { status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() };
      }),
    );
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 200, 503, 503]);
    const busy = answers.find((a) => a.status === 503)!;
    assert.equal(busy.retryAfter, '1');
    assert.equal(JSON.parse(busy.body).error, 'report-busy');
  });
});
