/**
 * `robots-proxy report` as a real child process: a static, self-contained
 * HTML file from a ledger written by a real proxy (numbers equal the
 * ledger's), and the same report rebuilt from that proxy's JSON access-log
 * lines (`--from-logs`), split over two files as a fleet's would be.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSync, readFileSync, writeFileSync, writeSync, closeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { openLedgerDatabase } from '../../../src/audit/ledger/ledger.js';
import { join } from 'node:path';
import { runCli as runCliProcess } from '../../helpers/cli.js';
import { longLineThen } from '../../helpers/long-line.js';
import { startOrigin, type TestOrigin } from '../../helpers/harness.js';
import { startProxyProcess } from '../../helpers/processes.js';
import { openReadOnly, sendMany, tempDir, UA } from '../ledger/support.js';
import { SHOP_ROBOTS_V1 } from './support.js';

const runCli = (args: string[], stdin?: string) => runCliProcess(args, stdin === undefined ? {} : { stdin });

interface Report {
  tables: Record<string, { rows: Array<Record<string, unknown>> }>;
  highlights: Record<string, unknown>;
}

describe('robots-proxy report', () => {
  const dir = tempDir();
  const ledgerPath = join(dir, 'ledger.sqlite');
  let logLines: string[] = [];
  let origin: TestOrigin;
  let unreachable: TestOrigin;

  before(async () => {
    origin = await startOrigin((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url === '/robots.txt' ? SHOP_ROBOTS_V1 : 'page\n');
    });
    unreachable = await startOrigin((req, res) => {
      res.writeHead(req.url === '/robots.txt' ? 500 : 200);
      res.end();
    });
    const proxy = await startProxyProcess(
      `listen: { host: 127.0.0.1, port: 0 }\nadmin: { enabled: false }\nupstream: { allowPrivateNetworks: true }\nstateDir: $STATE\nlog: { level: info }\nledger: { path: ${JSON.stringify(ledgerPath)} }\n`,
    );
    try {
      await sendMany(proxy.proxyPort, `${origin.url}/a`, UA.gpt, 3);
      await sendMany(proxy.proxyPort, `${origin.url}/private/b`, UA.gpt, 2);
      await sendMany(proxy.proxyPort, `${origin.url}/c`, UA.example, 2);
      await sendMany(proxy.proxyPort, `${unreachable.url}/d`, UA.ccbot, 2);
      await proxy.waitForAccessLines(9);
    } finally {
      await proxy.close();
    }
    logLines = proxy.logs.map((l) => JSON.stringify(l));
  });
  after(async () => {
    await origin.close();
    await unreachable.close();
  });

  it('writes one self-contained HTML file whose numbers are the ledger\'s', async () => {
    const out = join(dir, 'report.html');
    const r = await runCli(['report', '--ledger', ledgerPath, '--since', '1h', '--out', out]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /wrote .*report\.html \(9 requests, 4 refused/);
    const html = readFileSync(out, 'utf8');
    assert.doesNotMatch(html, /<script[^>]+src=|<link[^>]+href=|@import|url\(http/i, 'nothing is loaded from elsewhere');
    assert.match(html, /uPlot/, 'the chart library is inlined');
    const data = JSON.parse(/<script id="report-data" type="application\/json">(.*?)<\/script>/s.exec(html)![1]!) as Report;
    const db = openReadOnly(ledgerPath);
    try {
      const sums = db.prepare("SELECT sum(requests) AS n, sum(CASE WHEN verdict = 'deny' THEN requests ELSE 0 END) AS refused FROM rollups").get() as { n: number; refused: number };
      assert.equal(data.tables['summary']!.rows[0]!['requests'], sums.n);
      assert.equal(data.tables['summary']!.rows[0]!['refused'], sums.refused);
    } finally {
      db.close();
    }
    assert.deepEqual((data.highlights['mostRefused'] as { token: string }).token, 'GPTBot');
  });

  it('rebuilds the same report from the access-log lines, split over two files', async () => {
    const half = Math.floor(logLines.length / 2);
    const first = join(dir, 'instance-a.log');
    const second = join(dir, 'instance-b.log');
    writeFileSync(first, `${logLines.slice(0, half).join('\n')}\n`);
    writeFileSync(second, `${logLines.slice(half).join('\n')}\nthis line is not JSON\n`);
    const [fromLogs, fromLedger] = await Promise.all([
      runCli(['report', '--from-logs', first, second, '--since', '1h', '--json']),
      runCli(['report', '--ledger', ledgerPath, '--since', '1h', '--json']),
    ]);
    assert.equal(fromLogs.code, 0, fromLogs.stderr);
    assert.match(fromLogs.stderr, /read 9 access lines and 2 robots\.txt fetches from 2 file\(s\).*1 unreadable \(first: .*instance-b\.log:\d+\)/);
    assert.equal(fromLedger.code, 0, fromLedger.stderr);
    const a = JSON.parse(fromLogs.stdout) as Report;
    const b = JSON.parse(fromLedger.stdout) as Report;
    const without = (rows: Array<Record<string, unknown>>, ...keys: string[]) => rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !keys.includes(k))));
    for (const name of ['reasons', 'bots', 'bot-rules', 'refusals']) {
      assert.deepEqual(a.tables[name]!.rows, b.tables[name]!.rows, name);
    }
    assert.deepEqual(without(a.tables['summary']!.rows, 'from', 'to'), without(b.tables['summary']!.rows, 'from', 'to'));
    // The log has no robots.txt bodies and no crawl-delays: everything else about each origin is the same.
    assert.deepEqual(without(a.tables['origins']!.rows, 'crawlDelays'), without(b.tables['origins']!.rows, 'crawlDelays'));
    assert.deepEqual(without(a.tables['robots-versions']!.rows, 'id', 'body'), without(b.tables['robots-versions']!.rows, 'id', 'body'));
  });

  it('counts a line longer than any string as unreadable and reads the lines after it (no RangeError stack trace)', { timeout: 300_000 }, async () => {
    const r = await runCliProcess(['report', '--from-logs', '-', '--since', '1h', '--json'], { stdin: longLineThen(`${logLines.join('\n')}\n`) });
    assert.doesNotMatch(r.stderr, /RangeError|at .*:\d+:\d+/, r.stderr);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, / 1 unreadable \(first: \(stdin\):1\)/, r.stderr);
    assert.equal((JSON.parse(r.stdout) as Report).tables['summary']!.rows[0]!['requests'], 9, 'the lines after the long one are read');
  });

  it('reads standard input with "-"', async () => {
    const r = await runCli(['report', '--from-logs', '-', '--since', '1h', '--json'], `${logLines.join('\n')}\n`);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as Report).tables['summary']!.rows[0]!['requests'], 9);
  });

  it('--origin as a person types it (a trailing slash, capitals, the default port, the mapped spelling) and --token in any case find their requests; a URL with a path is refused', async () => {
    const requestsFor = async (filter: string) => {
      const r = await runCli(['report', '--ledger', ledgerPath, '--since', '1h', '--json', '--origin', filter]);
      assert.equal(r.code, 0, `${filter}: ${r.stderr}`);
      return (JSON.parse(r.stdout) as Report).tables['summary']!.rows[0]!['requests'];
    };
    const port = new URL(origin.url).port;
    // Before: an exact comparison, so every spelling but the first was an empty report.
    // Independent runs, so side by side (each its own process): the file's wall time, not what is proved.
    const filters = [origin.url, `${origin.url}/`, `HTTP://127.0.0.1:${port}`, `http://[::ffff:127.0.0.1]:${port}/`];
    const byFilter = await Promise.all(filters.map(requestsFor));
    filters.forEach((filter, i) => assert.equal(byFilter[i], 7, filter));
    // A product token in any case (RFC 9309 §2.2.1): the ledger keeps the User-Agent's spelling, GPTBot.
    const tokenRequests = async (token: string) => {
      const r = await runCli(['report', '--ledger', ledgerPath, '--since', '1h', '--json', '--token', token]);
      assert.equal(r.code, 0, r.stderr);
      return (JSON.parse(r.stdout) as Report).tables['summary']!.rows[0]!['requests'];
    };
    const [tokens, withPath] = await Promise.all([
      Promise.all(['GPTBot', 'gptbot', 'GPTBOT'].map(tokenRequests)),
      runCli(['report', '--ledger', ledgerPath, '--origin', `${origin.url}/private/`]),
    ]);
    assert.deepEqual(tokens, [5, 5, 5]);
    assert.equal(withPath.code, 2);
    assert.match(withPath.stderr, /report: origin must be scheme:\/\/host\[:port\] without a path or query/);
  });

  it('names --out and why when the report cannot be written there (Node\'s "ENOENT: no such file or directory, open ..." before)', async () => {
    const [noDir, isDir] = await Promise.all([
      runCli(['report', '--ledger', ledgerPath, '--since', '1h', '--out', join(dir, 'no-such-dir', 'r.html')]),
      runCli(['report', '--ledger', ledgerPath, '--since', '1h', '--out', dir]),
    ]);
    assert.deepEqual({ code: noDir.code, stderr: noDir.stderr }, { code: 1, stderr: `robots-proxy: report: cannot write --out ${join(dir, 'no-such-dir', 'r.html')}: ENOENT (its directory does not exist)\n` });
    assert.deepEqual({ code: isDir.code, stderr: isDir.stderr }, { code: 1, stderr: `robots-proxy: report: cannot write --out ${dir}: EISDIR (it is a directory; name a file)\n` });
  });

  it('refuses a bad --since and a missing ledger with a clear message', async () => {
    const [bad, missing] = await Promise.all([runCli(['report', '--ledger', ledgerPath, '--since', 'last week']), runCli(['report', '--ledger', join(dir, 'nope.sqlite')])]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--since must be 1h, 24h, 7d, 30d/);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /cannot open the ledger .*nope\.sqlite/);
    assert.match(missing.stderr, /run `robots-proxy serve` with the same config, or name the file with --ledger/, 'it says how the file comes to exist');
  });

  it('names the file and says it is damaged when a query meets a damaged page after the open ("robots-proxy: database disk image is malformed" before)', async () => {
    const damaged = join(dir, 'damaged.sqlite');
    const db = openLedgerDatabase(damaged);
    db.pragma('journal_mode = DELETE');
    const insert = db.prepare("INSERT INTO refusals (at_ms, request_id, identity, token, origin, url, reason, status) VALUES (?, ?, '', 'gptbot', 'https://a.example', ?, 'rule-disallow', 403)");
    const nowMs = Date.now();
    db.transaction(() => {
      for (let i = 0; i < 20_000; i++) insert.run(nowMs - i, `r${i}`, `https://a.example/private/${'x'.repeat(100)}${i}`);
    })();
    db.close();
    // The header and schema pages stay good (the open succeeds); pages in the middle of the table are junk.
    const fd = openSync(damaged, 'r+');
    writeSync(fd, randomBytes(20 * 4096), 0, 20 * 4096, 50 * 4096);
    closeSync(fd);
    const result = await runCli(['report', '--ledger', damaged, '--json']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /cannot read the ledger .*damaged\.sqlite: database disk image is malformed \(the file is damaged/);
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
  });

  it('refuses --from/--to in seconds since the epoch, saying how it read them and what to write ("the range is longer than 3650 days" before)', async () => {
    const forms = 'it takes ISO-8601 (e.g. 2026-01-01T00:00:00Z) or ms since the epoch (13 digits, e.g. 1767225600000)';
    const [fromSeconds, bothSeconds, toSeconds, word, ms] = await Promise.all([
      runCli(['report', '--ledger', ledgerPath, '--from', '1733200000']),
      runCli(['report', '--ledger', ledgerPath, '--from', '1733200000', '--to', '1733286400', '--json']),
      runCli(['report', '--ledger', ledgerPath, '--from', '2024-12-03T00:00:00Z', '--to', '1733286400']),
      runCli(['report', '--ledger', ledgerPath, '--from', 'yesterday']),
      runCli(['report', '--ledger', ledgerPath, '--from', String(Date.now() - 3_600_000), '--json']),
    ]);
    assert.deepEqual(
      { code: fromSeconds.code, stderr: fromSeconds.stderr },
      { code: 2, stderr: `robots-proxy: report: --from 1733200000 reads as ms since the epoch, 1970-01-21T01:26:40.000Z: too early for a report; if 1733200000 is seconds since the epoch, write 1733200000000 or 2024-12-03T04:26:40.000Z; ${forms}\n` },
    );
    // Both in seconds: a day of 1970, an empty report without a word, before.
    assert.equal(bothSeconds.code, 2, bothSeconds.stdout.slice(0, 200));
    assert.equal(toSeconds.code, 2);
    assert.match(toSeconds.stderr, /^robots-proxy: report: --to 1733286400 reads as ms since the epoch, 1970-01-21T01:28:06\.400Z: .*write 1733286400000 or 2024-12-04T04:26:40\.000Z; it takes ISO-8601/);
    assert.deepEqual({ code: word.code, stderr: word.stderr }, { code: 2, stderr: `robots-proxy: report: --from must be ISO-8601 (e.g. 2026-01-01T00:00:00Z) or ms since the epoch (13 digits, e.g. 1767225600000), got "yesterday"\n` });
    // Milliseconds still work.
    assert.equal(ms.code, 0, ms.stderr);
  });

  it('answers an unknown option, a missing value and a value given to a flag as the other commands do: exit 2, our words', async () => {
    const cases: [string[], string][] = [
      [['report', '--bogus'], 'robots-proxy: report: unknown option --bogus; run "robots-proxy report --help"\n'],
      [['report', '--limit'], 'robots-proxy: report: option --limit needs a value; run "robots-proxy report --help"\n'],
      [['report', '--json=yes'], 'robots-proxy: report: option --json takes no value; run "robots-proxy report --help"\n'],
      // --to alone was ignored: the report ended now, whatever it said.
      [['report', '--to', '2026-12-01T00:00:00Z'], 'robots-proxy: report: --to needs --from (--since counts back from now)\n'],
      [['report', '--since', '7d', '--to', '2026-12-01T00:00:00Z'], 'robots-proxy: report: --to needs --from (--since counts back from now)\n'],
      // Node calls a value starting with "-" ambiguous: the option still needs a value, and may have one written with "=".
      [['report', '--limit', '-1'], 'robots-proxy: report: option --limit needs a value (one starting with "-" is written --limit=-VALUE); run "robots-proxy report --help"\n'],
      [['report', '--since', '--json'], 'robots-proxy: report: option --since needs a value (one starting with "-" is written --since=-VALUE); run "robots-proxy report --help"\n'],
      // Node keeps the last of a repeated option: two instances' ledgers reported the second alone, silently.
      [['report', '--ledger', 'a.sqlite', '--ledger', 'b.sqlite'], 'robots-proxy: report: option --ledger given twice ("a.sqlite", "b.sqlite"); it takes one value; run "robots-proxy report --help"\n'],
      [['report', '-o', 'a.html', '--out=b.html'], 'robots-proxy: report: option --out given twice ("a.html", "b.html"); it takes one value; run "robots-proxy report --help"\n'],
    ];
    const runs = await Promise.all(cases.map(([args]) => runCli(args)));
    cases.forEach(([args, stderr], i) => assert.deepEqual({ code: runs[i]!.code, stderr: runs[i]!.stderr }, { code: 2, stderr }, args.join(' ')));
  });
});
