/**
 * The ledger behind a real proxy: real origins, real SQLite files in temp
 * directories. Every request lands in the per-minute rollups, refusals keep
 * their rule and line, robots.txt versions keep their history, and a database
 * that cannot be written (locked by another connection, read-only, full)
 * never fails a request and loses nothing once it can be written again.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, openSync, closeSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { startOrigin, startTestProxy, siteHandler, proxyGet } from '../../helpers/harness.js';
import { startProxyProcess } from '../../helpers/processes.js';
import { waitFor } from '../../helpers/proxy-client.js';
import { loadConfig } from '../../../src/config/index.js';
import { startProxy } from '../../../src/main.js';
import { ledgerCounts, openReadOnly, requestsByKey, sendMany, tempDir, totalRequests, UA } from './support.js';

// A crawl-delay long enough that back-to-back requests wait for it however loaded the machine is.
const ROBOTS = 'User-agent: GPTBot\nDisallow: /private/\nCrawl-delay: 0.5\n\nUser-agent: *\nAllow: /\n';
const isRoot = process.getuid?.() === 0;

describe('ledger: what a real proxy records', () => {
  it('counts every request per minute and key, keeps refusals with their rule and line, and the robots.txt version', async () => {
    const origin = await startOrigin(siteHandler({ robots: ROBOTS }));
    const stateDir = tempDir();
    const proxy = await startTestProxy({ stateDir });
    try {
      assert.deepEqual(await sendMany(proxy.proxyAddress.port, `${origin.url}/public/a`, UA.gpt, 3), [200, 200, 200]);
      assert.deepEqual(await sendMany(proxy.proxyAddress.port, `${origin.url}/private/x?q=1`, UA.gpt, 2), [403, 403]);
      assert.deepEqual(await sendMany(proxy.proxyAddress.port, `${origin.url}/page`, UA.example, 2), [200, 200]);
    } finally {
      await proxy.close();
      await origin.close();
    }
    const db = openReadOnly(join(stateDir, 'ledger.sqlite'));
    try {
      const byKey = requestsByKey(db);
      assert.equal(byKey.get(`GPTBot ${origin.url} allow no-matching-rule`), 3);
      assert.equal(byKey.get(`GPTBot ${origin.url} deny rule-disallow`), 2);
      // No group names ExampleBot: the `*` group decided, and the ledger keys on the best candidate token.
      assert.equal(byKey.get(`ExampleBot ${origin.url} allow rule-allow`), 2);
      assert.equal([...byKey.values()].reduce((a, b) => a + b, 0), 7, 'nothing else was counted');

      const example = db.prepare("SELECT sum(bytes_out) AS out, sum(s2xx) AS ok FROM rollups WHERE token = 'ExampleBot'").get() as { out: number; ok: number };
      assert.equal(example.out, 2 * Buffer.byteLength('page /page\n'));
      assert.equal(example.ok, 2);

      const paced = db.prepare("SELECT queued, wait_max_ms, delay_max_ms, w0 + w1 + w2 + w3 + w4 + w5 + w6 + w7 + w8 + w9 + w10 + w11 AS histogram FROM rollups WHERE token = 'GPTBot' AND verdict = 'allow'").get() as {
        queued: number;
        wait_max_ms: number;
        delay_max_ms: number;
        histogram: number;
      };
      assert.equal(paced.queued, 3, 'every allowed GPTBot request went through the queue');
      assert.equal(paced.histogram, 3, 'each queued request is in one histogram bucket');
      assert.equal(paced.delay_max_ms, 500, 'the crawl-delay in force');
      assert.ok(paced.wait_max_ms >= 100, `back-to-back requests waited for the crawl-delay (max ${paced.wait_max_ms} ms)`);

      const refusals = db.prepare('SELECT * FROM refusals ORDER BY id').all() as Array<Record<string, unknown>>;
      assert.equal(refusals.length, 2);
      for (const r of refusals) {
        assert.equal(r['token'], 'GPTBot');
        assert.equal(r['reason'], 'rule-disallow');
        assert.equal(r['status'], 403);
        assert.equal(r['url'], `${origin.url}/private/x?q=1`);
        assert.equal(r['rule_kind'], 'disallow');
        assert.equal(r['rule_pattern'], '/private/');
        assert.equal(r['rule_line'], 2);
        assert.equal(r['robots_url'], `${origin.url}/robots.txt`);
        assert.equal(r['group_name'], 'GPTBot');
      }

      const versions = db.prepare('SELECT * FROM robots_versions').all() as Array<Record<string, unknown>>;
      assert.equal(versions.length, 1);
      const v = versions[0]!;
      assert.equal(v['origin'], origin.url);
      assert.equal(v['state'], 'ok');
      assert.equal(v['status'], 200);
      assert.equal(v['sha256'], createHash('sha256').update(ROBOTS).digest('hex'));
      assert.equal(v['bytes'], Buffer.byteLength(ROBOTS));
      assert.equal((v['body'] as Buffer).toString('utf8'), ROBOTS);
      assert.deepEqual(JSON.parse(v['crawl_delays'] as string), { gptbot: 0.5 });

      const bots = db.prepare('SELECT token, user_agent FROM bots ORDER BY token').all();
      assert.deepEqual(bots, [
        { token: 'ExampleBot', user_agent: UA.example },
        { token: 'GPTBot', user_agent: UA.gpt },
      ]);
    } finally {
      db.close();
    }
  });

  it('keeps the history of robots.txt changes and the bodies of the latest versions only', async () => {
    const bodies = ['User-agent: *\nDisallow: /a\n', 'User-agent: *\nDisallow: /a\n', 'User-agent: *\nDisallow: /b\n', 500, 'User-agent: *\nDisallow: /a\n'] as const;
    let fetches = 0;
    const origin = await startOrigin((req, res) => {
      if (req.url === '/robots.txt') {
        const body = bodies[Math.min(fetches++, bodies.length - 1)]!;
        res.writeHead(typeof body === 'number' ? body : 200, { 'content-type': 'text/plain' });
        res.end(typeof body === 'number' ? 'down' : body);
        return;
      }
      res.end('ok');
    });
    const stateDir = tempDir();
    // Every request fetches robots.txt again (1 ms lifetime, 1 ms retry after the 500).
    const proxy = await startTestProxy({ stateDir, robots: { ttl: '1ms', minTtl: 0, errorRetry: '1ms' }, ledger: { robotsBodiesPerOrigin: 2 } });
    try {
      for (let i = 0; i < bodies.length; i++) {
        await proxyGet(proxy.proxyAddress.port, `${origin.url}/c`, { headers: { 'user-agent': UA.example } });
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    } finally {
      await proxy.close();
      await origin.close();
    }
    assert.equal(origin.robotsHits(), bodies.length, 'one robots.txt fetch per request');
    const db = openReadOnly(join(stateDir, 'ledger.sqlite'));
    try {
      const rows = db.prepare('SELECT state, status, sha256, fetches, body IS NOT NULL AS has_body FROM robots_versions ORDER BY id').all() as Array<{
        state: string;
        status: number;
        sha256: string;
        fetches: number;
        has_body: number;
      }>;
      const hashA = createHash('sha256').update(bodies[0]).digest('hex');
      const hashB = createHash('sha256').update(bodies[2]).digest('hex');
      assert.deepEqual(
        rows.map((r) => [r.state, r.status, r.sha256, r.fetches]),
        [
          ['ok', 200, hashA, 2],
          ['ok', 200, hashB, 1],
          ['unreachable', 500, '', 1],
          ['ok', 200, hashA, 1],
        ],
        'A twice, B, the 500, A again: one row per change',
      );
      assert.deepEqual(
        rows.map((r) => r.has_body),
        [0, 1, 0, 1],
        'the bodies of the latest two versions with one are kept',
      );
    } finally {
      db.close();
    }
  });
});

describe('ledger: a database that cannot be written never fails a request', () => {
  it('a write lock held by another connection: requests are served, the failure is counted, nothing is lost', async () => {
    const origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    const stateDir = tempDir();
    const proxy = await startTestProxy({ stateDir, ledger: { flushInterval: '20ms' } });
    const path = join(stateDir, 'ledger.sqlite');
    const holder = new Database(path, { timeout: 0 });
    try {
      holder.exec('BEGIN IMMEDIATE');
      assert.deepEqual(await sendMany(proxy.proxyAddress.port, `${origin.url}/x`, UA.example, 5), [200, 200, 200, 200, 200]);
      await waitFor(() => proxy.ledger!.stats().failures.busy >= 2, 'busy failures', 5000);
      assert.ok(proxy.ledger!.stats().pendingCells > 0, 'the aggregates wait in memory');
      holder.exec('ROLLBACK');
      await waitFor(() => proxy.ledger!.stats().pendingCells === 0, 'the pending cells written', 5000);
      const n = (holder.prepare('SELECT sum(requests) AS n FROM rollups').get() as { n: number }).n;
      assert.equal(n, 5, 'every request reached the file once the lock was released');
    } finally {
      holder.close();
      await proxy.close();
      await origin.close();
    }
  });

  it('a read-only file: requests are served, the failure is counted, and the aggregates are written once it is writable', async () => {
    const stateDir = tempDir();
    const path = join(stateDir, 'ledger.sqlite');
    // Create the file, then make it read-only (as root, permissions do not stop writes: the immutable flag does).
    (await startTestProxy({ stateDir })).close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(existsSync(path));
    const makeReadOnly = (on: boolean): void => {
      if (isRoot) execFileSync('chattr', [on ? '+i' : '-i', path]);
      else chmodSync(path, on ? 0o444 : 0o644);
    };
    makeReadOnly(true);
    after(() => makeReadOnly(false));
    const origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    const proxy = await startTestProxy({ stateDir, ledger: { flushInterval: '20ms' } });
    try {
      assert.deepEqual(await sendMany(proxy.proxyAddress.port, `${origin.url}/x`, UA.example, 4), [200, 200, 200, 200]);
      await waitFor(() => proxy.ledger!.stats().failures.readonly + proxy.ledger!.stats().failures.open >= 1, 'a read-only failure', 5000);
      assert.ok(proxy.ledger!.stats().pendingCells > 0, 'the aggregates wait in memory');
      makeReadOnly(false);
      await waitFor(() => proxy.ledger!.stats().pendingCells === 0, 'the pending cells written', 5000);
    } finally {
      await proxy.close();
      await origin.close();
    }
    assert.equal(totalRequests(path), 4);
  });

  it('a full disk: requests are served, the failure is counted, and the aggregates are written once there is room', async (t) => {
    const mountPoint = tempDir('robots-ledger-tmpfs-');
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mountPoint], { stdio: 'ignore' });
    } catch {
      t.skip('cannot mount a small tmpfs here (needs root with CAP_SYS_ADMIN)');
      return;
    }
    after(() => execFileSync('umount', [mountPoint]));
    const path = join(mountPoint, 'ledger.sqlite');
    const origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    const proxy = await startTestProxy({ stateDir: tempDir(), ledger: { path, flushInterval: '20ms' } });
    const filler = join(mountPoint, 'filler');
    try {
      assert.equal(proxy.ledger!.stats().isOpen, true);
      // Fill every remaining byte of the file system.
      const fd = openSync(filler, 'w');
      const block = Buffer.alloc(4096, 1);
      try {
        for (;;) writeSync(fd, block);
      } catch (error) {
        assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
      } finally {
        closeSync(fd);
      }
      // Distinct URLs of distinct tokens: enough rows to need new pages.
      for (let i = 0; i < 40; i++) {
        const status = (await proxyGet(proxy.proxyAddress.port, `${origin.url}/x${i}`, { headers: { 'user-agent': `Bot${i}Crawler/1.0` } })).status;
        assert.equal(status, 200);
      }
      await waitFor(() => proxy.ledger!.stats().failures.full >= 1, 'a disk-full failure', 5000);
      rmSync(filler);
      await waitFor(() => proxy.ledger!.stats().pendingCells === 0, 'the pending cells written', 5000);
    } finally {
      await proxy.close();
      await origin.close();
    }
    assert.equal(totalRequests(path), 40);
  });

  it('a file written by a newer version is refused and left untouched; requests are served', async () => {
    const stateDir = tempDir();
    const path = join(stateDir, 'ledger.sqlite');
    mkdirSync(stateDir, { recursive: true });
    const newer = new Database(path);
    newer.pragma('user_version = 99');
    newer.close();
    const origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    const proxy = await startTestProxy({ stateDir, ledger: { flushInterval: '20ms' } });
    try {
      assert.equal((await proxyGet(proxy.proxyAddress.port, `${origin.url}/x`)).status, 200);
      assert.ok(proxy.ledger!.stats().failures.schema >= 1);
    } finally {
      await proxy.close();
      await origin.close();
    }
    const db = openReadOnly(path);
    try {
      assert.equal(db.pragma('user_version', { simple: true }), 99);
      assert.deepEqual(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all(), []);
    } finally {
      db.close();
    }
  });

  it('another application\'s database at ledger.path is refused and left untouched, its journal mode too; requests are served', async () => {
    for (const version of [0, 2]) {
      const stateDir = tempDir();
      const path = join(stateDir, 'ledger.sqlite');
      mkdirSync(stateDir, { recursive: true });
      const foreign = new Database(path);
      foreign.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada');");
      foreign.pragma(`user_version = ${version}`);
      foreign.close();
      const origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
      const proxy = await startTestProxy({ stateDir, ledger: { flushInterval: '20ms' } });
      try {
        assert.equal((await proxyGet(proxy.proxyAddress.port, `${origin.url}/x`)).status, 200);
        await new Promise((resolve) => setTimeout(resolve, 100));
        assert.ok(proxy.ledger!.stats().failures.schema >= 1, `version ${version}: refused as schema`);
        assert.equal(proxy.ledger!.stats().writes, 0);
      } finally {
        await proxy.close();
        await origin.close();
      }
      const db = openReadOnly(path);
      try {
        assert.deepEqual(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(), ['users'], `version ${version}: no ledger table written into it`);
        assert.equal(db.pragma('journal_mode', { simple: true }), 'delete', `version ${version}: not switched to WAL`);
        assert.equal(db.pragma('user_version', { simple: true }), version);
      } finally {
        db.close();
      }
    }
  });

  it('a ledger.path under a directory that cannot be made (/proc): serve starts and serves, the failure logged (it hung at start, a core spinning, before)', { skip: !existsSync('/proc/self'), timeout: 60_000 }, async () => {
    const origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    try {
      const proxy = await startProxyProcess(
        'listen: { host: 127.0.0.1, port: 0 }\nadmin: { enabled: false }\nupstream: { allowPrivateNetworks: true }\nstateDir: $STATE\nledger: { path: /proc/robots-proxy-nope/ledger.sqlite, flushInterval: 50ms }\n',
        { startTimeoutMs: 20_000 },
      );
      try {
        assert.equal((await proxyGet(proxy.proxyPort, `${origin.url}/x`)).status, 200);
        await waitFor(() => proxy.logs.some((l) => l['event'] === 'ledger-write-failed'), 'the failure logged', 5_000);
        const failed = proxy.logs.find((l) => l['event'] === 'ledger-write-failed')!;
        assert.equal(failed['code'], 'ENOENT');
        assert.equal(failed['path'], '/proc/robots-proxy-nope/ledger.sqlite');
      } finally {
        await proxy.close();
      }
    } finally {
      await origin.close();
    }
  });
});

describe('ledger: reload and shutdown', () => {
  it('a reload (SIGHUP, POST /reload) keeps the ledger and what it aggregated; ledger keys wait for a restart', async () => {
    const origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    const dir = tempDir();
    const path = join(dir, 'ledger.sqlite');
    const configPath = join(dir, 'config.yaml');
    const yaml = (flushInterval: string): string =>
      `listen: { host: 127.0.0.1, port: 0 }\nadmin: { host: 127.0.0.1, port: 0 }\nupstream: { allowPrivateNetworks: true }\nlog: { level: silent }\nstateDir: ${JSON.stringify(dir)}\nledger: { path: ${JSON.stringify(path)}, flushInterval: ${flushInterval} }\n`;
    writeFileSync(configPath, yaml('1m'));
    const proxy = await startProxy(loadConfig(configPath), { configPath });
    try {
      assert.deepEqual(await sendMany(proxy.proxyAddress.port, `${origin.url}/x`, UA.example, 3), [200, 200, 200]);
      writeFileSync(configPath, yaml('30s'));
      const report = proxy.reloadFromFile();
      assert.ok(report.ok && report.restartRequired.includes('ledger.flushInterval'), JSON.stringify(report));
      assert.deepEqual(await sendMany(proxy.proxyAddress.port, `${origin.url}/y`, UA.example, 2), [200, 200]);
      assert.equal(proxy.ledger!.stats().writes, 0, 'nothing written yet: one flush a minute');
    } finally {
      await proxy.close();
      await origin.close();
    }
    assert.equal(totalRequests(path), 5, 'the requests before and after the reload');
  });


  it('a real process: SIGHUP reloads without losing what was aggregated, SIGTERM then writes all of it', async () => {
    const origin = await startOrigin(siteHandler({ robots: 'User-agent: GPTBot\nDisallow: /private/\n' }));
    const dir = tempDir();
    const path = join(dir, 'ledger.sqlite');
    // One flush a minute: nothing reaches the file before the SIGTERM, so the reload had to keep it all in memory.
    const yaml = (maxWait: string): string =>
      `listen: { host: 127.0.0.1, port: 0 }\nadmin: { enabled: false }\nupstream: { allowPrivateNetworks: true }\nstateDir: $STATE\nlog: { level: info }\npacing: { maxWait: ${maxWait} }\nledger: { path: ${JSON.stringify(path)}, flushInterval: 1m }\n`;
    const proxy = await startProxyProcess(yaml('60s'));
    try {
      assert.deepEqual(await sendMany(proxy.proxyPort, `${origin.url}/private/a`, UA.gpt, 3), [403, 403, 403]);
      assert.deepEqual(await sendMany(proxy.proxyPort, `${origin.url}/a`, UA.gpt, 2), [200, 200]);
      await proxy.waitForAccessLines(5);
      writeFileSync(proxy.configPath, yaml('30s').replaceAll('$STATE', join(dirname(proxy.configPath), 'state')));
      proxy.kill('SIGHUP');
      const reloaded = await proxy.waitForEvent('config-reloaded');
      assert.ok((reloaded['applied'] as string[]).includes('pacing.maxWait'), JSON.stringify(reloaded));
      assert.equal(Number(totalRequests(path)), 0, 'nothing written yet: one flush a minute');
      assert.deepEqual(await sendMany(proxy.proxyPort, `${origin.url}/private/b`, UA.gpt, 1), [403]);
      assert.deepEqual(await sendMany(proxy.proxyPort, `${origin.url}/b`, UA.gpt, 1), [200]);
      await proxy.waitForAccessLines(7);
      proxy.kill('SIGTERM');
      assert.equal((await proxy.exited).code, 0);
    } finally {
      await proxy.close();
      await origin.close();
    }
    const { byKey, refusals, robotsVersions } = ledgerCounts(path);
    assert.equal(byKey.get(`GPTBot ${origin.url} deny rule-disallow`), 4, 'refusals before and after the SIGHUP');
    assert.equal(byKey.get(`GPTBot ${origin.url} allow no-matching-rule`), 3, 'allowed requests before and after the SIGHUP');
    assert.equal(refusals, 4);
    assert.equal(robotsVersions, 1, 'the robots.txt fetch too');
  });

  it('SIGTERM writes what was aggregated since the last flush', async () => {
    const origin = await startOrigin(siteHandler({ robots: 'User-agent: GPTBot\nDisallow: /\n' }));
    const dir = tempDir();
    const path = join(dir, 'ledger.sqlite');
    // One flush a minute: only the shutdown can have written these requests.
    const proxy = await startProxyProcess(
      `listen: { host: 127.0.0.1, port: 0 }\nadmin: { enabled: false }\nupstream: { allowPrivateNetworks: true }\nstateDir: $STATE\nlog: { level: info }\nledger: { path: ${JSON.stringify(path)}, flushInterval: 1m }\n`,
    );
    try {
      assert.deepEqual(await sendMany(proxy.proxyPort, `${origin.url}/x`, UA.gpt, 3), [403, 403, 403]);
      assert.deepEqual(await sendMany(proxy.proxyPort, `${origin.url}/robots.txt`, UA.gpt, 1), [200]);
      await proxy.waitForAccessLines(4);
    } finally {
      await proxy.close();
      await origin.close();
    }
    const { byKey, refusals } = ledgerCounts(path);
    assert.equal(byKey.get(`GPTBot ${origin.url} deny rule-disallow`), 3);
    assert.equal(byKey.get(`GPTBot ${origin.url} allow robots-txt-itself`), 1);
    assert.equal(refusals, 3);
  });
});
