/**
 * The report on the admin listener of a real proxy that served real traffic:
 * every JSON table equals what SQL says about the ledger file, CSV carries the
 * same rows, filters narrow every table, robots.txt versions diff, bad queries
 * get 400, a proxy without ledger 503; and /metrics names the bots.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'csv-parse/sync';
import type Database from 'better-sqlite3';
import { startTestProxy } from '../../helpers/harness.js';
import { openReadOnly } from '../ledger/support.js';
import { SHOP_ROBOTS_V2, startTrafficScenario, type TrafficScenario } from './support.js';

interface TableAnswer {
  columns: Array<{ key: string; title: string }>;
  rows: Array<Record<string, string | number | null>>;
}

async function table(s: TrafficScenario, name: string, query = 'range=1h'): Promise<TableAnswer> {
  const response = await fetch(`${s.proxy.adminUrl}/report/data/${name}.json?${query}`);
  assert.equal(response.status, 200, `${name}: ${response.status}`);
  return (await response.json()) as TableAnswer;
}

describe('report endpoints on the admin listener', () => {
  let s: TrafficScenario;
  let db: Database.Database;
  before(async () => {
    s = await startTrafficScenario();
    // The report flushes the ledger before it reads: one read makes the file current.
    await table(s, 'summary');
    db = openReadOnly(s.ledgerPath);
  });
  after(async () => {
    db.close();
    await s.close();
  });

  const sql = (text: string, ...params: unknown[]): Record<string, number> => db.prepare(text).get(...params) as Record<string, number>;

  it('summary: the totals the ledger holds', async () => {
    const [row] = (await table(s, 'summary')).rows;
    const expected = sql(`SELECT sum(requests) AS requests, sum(CASE WHEN verdict = 'deny' THEN requests ELSE 0 END) AS refused,
      sum(CASE WHEN reason = 'rule-disallow' THEN requests ELSE 0 END) AS byRule, sum(CASE WHEN reason = 'robots-unreachable' THEN requests ELSE 0 END) AS unreachable,
      sum(queued) AS paced, sum(bytes_out) AS bytesOut, max(wait_max_ms) AS waitMax FROM rollups`);
    assert.equal(expected['requests'], 17, 'the scenario sent 17 requests');
    assert.equal(row!['requests'], expected['requests']);
    assert.equal(row!['refused'], expected['refused']);
    assert.equal(row!['refusedByRule'], expected['byRule']);
    assert.equal(row!['robotsUnreachable'], expected['unreachable']);
    assert.equal(row!['paced'], expected['paced']);
    assert.equal(row!['bytesOut'], expected['bytesOut']);
    assert.equal(row!['waitMaxMs'], Math.round(expected['waitMax']!));
    assert.equal(row!['bots'], 3);
    assert.equal(row!['origins'], 3);
  });

  it('bots: per identity and token, with operator and category from the crawler list, and the rule that refused it most', async () => {
    const { rows } = await table(s, 'bots');
    assert.deepEqual(rows.map((r) => r['token']), ['GPTBot', 'CCBot', 'ExampleBot'], 'most requests first');
    for (const r of rows) {
      const expected = sql(`SELECT sum(requests) AS requests, sum(CASE WHEN verdict = 'deny' THEN requests ELSE 0 END) AS refused FROM rollups WHERE token = ?`, r['token']);
      assert.equal(r['requests'], expected['requests'], `${r['token']} requests`);
      assert.equal(r['refused'], expected['refused'], `${r['token']} refused`);
    }
    const gpt = rows[0]!;
    assert.equal(gpt['operator'], 'openai.com');
    assert.equal(gpt['category'], 'ai-crawler');
    assert.equal(gpt['refusedByRule'], 6);
    assert.equal(gpt['topRule'], `${s.shop.url}/robots.txt line 2: disallow /private/`);
    assert.equal(gpt['topRuleRefusals'], 4);
    assert.equal(gpt['allowedPerMin'], 200, 'a 0.3 s crawl-delay allows 200 requests a minute');
    assert.ok((gpt['paced'] as number) >= 3);
    const cc = rows[1]!;
    assert.equal(cc['operator'], 'commoncrawl.org');
    assert.equal(cc['robotsUnreachable'], 3, 'refused on the origin whose robots.txt answers 503');
  });

  it('bot-rules and refusals: each refusal with its robots.txt URL, line and pattern', async () => {
    const rules = (await table(s, 'bot-rules')).rows;
    const fromSql = db.prepare('SELECT token, rule_line AS line, rule_pattern AS pattern, count(*) AS n FROM refusals GROUP BY token, origin, robots_url, rule_line, rule_pattern, reason ORDER BY n DESC, token').all() as Array<{ token: string; line: number | null; pattern: string | null; n: number }>;
    assert.deepEqual(
      rules.map((r) => [r['token'], r['ruleLine'], r['rulePattern'], r['refusals']]),
      fromSql.map((r) => [r.token, r.line, r.pattern, r.n]),
    );
    assert.ok(rules.some((r) => r['rulePattern'] === '/cart/' && r['ruleLine'] === 3), 'the second version\'s new rule, line 3');
    const refusals = (await table(s, 'refusals')).rows;
    assert.equal(refusals.length, sql('SELECT count(*) AS n FROM refusals')['n']);
    assert.ok(refusals.every((r) => r['status'] === 403 || r['status'] === 503));
  });

  it('origins and robots.txt versions: health, changes, failures, crawl-delays, and a diff between versions', async () => {
    const origins = new Map((await table(s, 'origins')).rows.map((r) => [r['origin'], r]));
    const shop = origins.get(s.shop.url)!;
    assert.equal(shop['robotsState'], 'ok');
    assert.equal(shop['robotsChanges'], 1, 'the shop changed its robots.txt once');
    assert.equal(shop['crawlDelays'], 'gptbot: 0.3s');
    assert.equal(shop['bots'], 2);
    assert.equal(shop['botNames'], 'CCBot, GPTBot', 'the bots seen at the shop');
    assert.equal(shop['delayMaxMs'], 300);
    const blog = origins.get(s.blog.url)!;
    assert.equal(blog['backoffs'], 1, 'the blog\'s 503 paused it once');
    assert.equal(blog['upstream5xx'], 1);
    assert.equal(shop['backoffs'], 0);
    const down = origins.get(s.down.url)!;
    assert.equal(down['robotsState'], 'unreachable');
    assert.equal(down['robotsStatus'], 503);
    assert.equal(down['robotsFailures'], 1);

    const versions = (await table(s, 'robots-versions')).rows;
    const changed = versions.find((v) => v['origin'] === s.shop.url && v['change'] === 'changed')!;
    assert.ok(changed, 'the shop has a changed version');
    const diff = (await (await fetch(`${s.proxy.adminUrl}/report/robots-diff.json?id=${changed['id']}`)).json()) as { diff: string; body: string };
    assert.match(diff.diff, /^\+Disallow: \/cart\/$/m);
    assert.equal(diff.body, SHOP_ROBOTS_V2);
    assert.equal(changed['warnings'], 1);
    assert.equal(changed['warningList'], 'line 8: unknown-directive');
    assert.equal(shop['robotsWarnings'], 1, 'the latest version\'s parse warnings');
  });

  it('a filter narrows every table', async () => {
    const bots = (await table(s, 'bots', 'range=1h&token=CCBot')).rows;
    assert.deepEqual(bots.map((r) => r['token']), ['CCBot']);
    const [summary] = (await table(s, 'summary', `range=1h&token=CCBot&origin=${encodeURIComponent(s.down.url)}`)).rows;
    assert.equal(summary!['requests'], 3);
    assert.equal(summary!['robotsUnreachable'], 3);
    const refusals = (await table(s, 'refusals', 'range=1h&token=ExampleBot')).rows;
    assert.deepEqual(refusals.map((r) => [r['token'], r['pattern'], r['line']]), [['ExampleBot', '/drafts/', 2]]);
  });

  it('CSV carries the same rows as JSON', async () => {
    const json = await table(s, 'bots');
    const response = await fetch(`${s.proxy.adminUrl}/report/data/bots.csv?range=1h`);
    assert.equal(response.headers.get('content-type'), 'text/csv; charset=utf-8');
    const records = parse(await response.text(), { columns: true }) as Array<Record<string, string>>;
    assert.equal(records.length, json.rows.length);
    records.forEach((record, i) => {
      for (const { key } of json.columns) assert.equal(record[key], String(json.rows[i]![key] ?? ''), `${key} of row ${i}`);
    });
  });

  it('the page is served with the data embedded and a policy that allows nothing from elsewhere', async () => {
    const response = await fetch(`${s.proxy.adminUrl}/report?range=1h`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    const html = await response.text();
    assert.doesNotMatch(html, /<script[^>]+src=|<link[^>]+href=/i, 'no external script or style');
    const embedded = /<script id="report-data" type="application\/json">(.*?)<\/script>/s.exec(html);
    assert.ok(embedded);
    assert.equal((JSON.parse(embedded[1]!) as { tables: { summary: TableAnswer } }).tables.summary.rows[0]!['requests'], 17);
  });

  it('answers 400 for a bad range and 404 for an unknown table', async () => {
    const bad = await fetch(`${s.proxy.adminUrl}/report/data/bots.json?range=soon`);
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: string }).error, 'bad-query');
    const unknown = await fetch(`${s.proxy.adminUrl}/report/data/secrets.json`);
    assert.equal(unknown.status, 404);
    const noVersion = await fetch(`${s.proxy.adminUrl}/report/robots-diff.json?id=99999`);
    assert.equal(noVersion.status, 404);
  });

  it('/metrics labels requests by bot and shows the ledger writing', async () => {
    const text = await (await fetch(`${s.proxy.adminUrl}/metrics`)).text();
    assert.match(text, /robots_proxy_bot_requests_total\{identity="none",token="GPTBot",verdict="deny",reason="rule-disallow"\} 6/);
    assert.match(text, /robots_proxy_ledger_writes_total [1-9]/);
    assert.match(text, /robots_proxy_ledger_failures_total\{kind="busy"\} 0/);
    assert.match(text, /robots_proxy_robots_fetch_outcomes_total\{outcome="5xx"\} 1/);
  });
});

describe('report without a ledger', () => {
  it('answers 503 ledger-unavailable', async () => {
    const proxy = await startTestProxy({ ledger: { enabled: false } });
    try {
      const response = await fetch(`${proxy.adminUrl}/report`);
      assert.equal(response.status, 503);
      assert.equal(((await response.json()) as { error: string }).error, 'ledger-unavailable');
    } finally {
      await proxy.close();
    }
  });
});
