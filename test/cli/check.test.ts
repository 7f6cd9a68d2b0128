/** `robots-proxy check` as a real child process, the way a user runs it. */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { cliNodeArgs, runCli, type CliRun } from '../helpers/cli.js';
import { longLineThen } from '../helpers/long-line.js';
import { CONFORMANCE_FIXTURES_DIR, MATCH_VECTORS_FILE, expectedVerdict, readVectors, type MatchCase } from '../robots/conformance-vectors.js';

/** `robots-proxy` with `args`, `stdin` on its standard input. */
function run(args: string[], stdin = ''): Promise<CliRun> {
  return runCli(args, { stdin });
}

describe('robots-proxy check', () => {
  let dir: string;
  let robotsFile: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'robots-check-'));
    robotsFile = join(dir, 'robots.txt');
    writeFileSync(robotsFile, 'User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /\nAllow: /public/\nCrawl-delay: 2.5\n');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('prints one line per URL with verdict, token, group, rule, line and crawl-delay', async () => {
    const ua = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.1; +https://openai.com/gptbot)';
    const r = await run(['check', '--robots', robotsFile, '--user-agent', ua, 'https://example.com/public/a', 'https://example.com/x']);
    assert.equal(r.code, 1, `one URL is disallowed: exit 1 (${r.stderr})`);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 2);
    assert.match(lines[0]!, /^ALLOWED .*reason=rule-allow .*token=GPTBot .*group=GPTBot .*"allow: \/public\/" line=6 .*crawl-delay=2.5s/);
    assert.match(lines[1]!, /^DISALLOWED .*reason=rule-disallow .*"disallow: \/" line=5/);
  });

  it('shows every candidate read from --user-agent and the one that decided', async () => {
    const ua = 'Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) python-requests/2.31 (compatible; ExampleBot/1.0; +https://bot.example/)';
    const both = join(dir, 'both.txt');
    writeFileSync(both, 'User-agent: python-requests\nDisallow: /\n\nUser-agent: ExampleBot\nDisallow: /private/\n');
    const r = await run(['check', '--robots', both, '--user-agent', ua, 'https://example.com/page', 'https://example.com/private/a']);
    assert.equal(r.code, 1, `the second URL is disallowed (${r.stderr})`);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0]!, /^ALLOWED .* token=ExampleBot  candidates=ExampleBot,python-requests,Nexus,5X  group=ExampleBot /);
    assert.match(lines[1]!, /^DISALLOWED .* token=ExampleBot  candidates=ExampleBot,python-requests,Nexus,5X  group=ExampleBot .*"disallow: \/private\/" line=5/);
    // Without a group for the crawler, the library's decides; the JSON answer says so.
    const onlyLibrary = join(dir, 'library.txt');
    writeFileSync(onlyLibrary, 'User-agent: python-requests\nDisallow: /\n');
    const json = await run(['check', '--robots', onlyLibrary, '--user-agent', ua, '--json', 'https://example.com/page']);
    assert.equal(json.code, 1, json.stderr);
    const answer = JSON.parse(json.stdout);
    assert.equal(answer.token, 'python-requests');
    assert.deepEqual(answer.candidates, ['ExampleBot', 'python-requests', 'Nexus', '5X']);
    assert.equal(answer.allowed, false);
  });

  it('uses a bare --token and the * group for unknown tokens', async () => {
    const r = await run(['check', '--robots', robotsFile, '--token', 'OtherBot', '--json', 'http://example.com/private/x']);
    assert.equal(r.code, 1, r.stderr);
    const answer = JSON.parse(r.stdout);
    assert.equal(answer.allowed, false);
    assert.equal(answer.group, '*');
    assert.equal(answer.token, null);
    assert.deepEqual(answer.rule, { kind: 'disallow', pattern: '/private/', line: 2 });
  });

  it('answers JSON lines in order, with an error object for malformed lines', async () => {
    const robots = 'User-agent: FooBot\nDisallow: /x\nCrawl-delay: .5\n';
    const input = [
      JSON.stringify({ robots, url: 'http://a.example/x/y', token: 'FooBot' }),
      '{not json',
      JSON.stringify({ robots, url: 'http://a.example/z', userAgent: 'FooBot/1.0 (+http://foo)' }),
      JSON.stringify({ robots, url: 'not a url', token: 'FooBot' }),
      JSON.stringify({ robots, url: 'http://a.example/x' }),
      '',
      JSON.stringify({ robots, url: 'http://a.example/x', token: 'FooBot' }),
      ' \t',
    ].join('\n');
    const r = await run(['check', '--jsonl'], input + '\r\n');
    assert.equal(r.code, 2, 'malformed lines: exit 2, after answering every line');
    assert.match(r.stderr, /5 malformed input line/);
    // Never a blank output line: every line, the last one included, is one JSON object.
    assert.ok(r.stdout.endsWith('}\n'), JSON.stringify(r.stdout.slice(-20)));
    const out = r.stdout.slice(0, -1).split('\n').map((l) => JSON.parse(l));
    assert.equal(out.length, 8, 'one output line per input line, the blank ones included');
    assert.equal(out[7].error, 'empty line');
    assert.deepEqual(out[0], { allowed: false, reason: 'rule-disallow', token: 'FooBot', candidates: ['FooBot'], group: 'FooBot', rule: { kind: 'disallow', pattern: '/x', line: 2 }, crawlDelay: 0.5 });
    assert.ok(typeof out[1].error === 'string');
    assert.deepEqual(out[2], { allowed: true, reason: 'no-matching-rule', token: 'FooBot', candidates: ['FooBot'], group: 'FooBot', rule: null, crawlDelay: 0.5 });
    assert.ok(typeof out[3].error === 'string');
    assert.match(out[4].error, /userAgent|token|agent/);
    assert.equal(out[5].error, 'empty line');
    assert.equal(out[6].allowed, false);
  });

  it('reads the reference vectors as they are written ({"robots","agent","url"}, DESIGN.md): all 145 give their verdict', async () => {
    // Before: every line was answered {"error": "one of \"userAgent\" or \"token\" is required"}.
    const cases = readVectors<MatchCase>(CONFORMANCE_FIXTURES_DIR, MATCH_VECTORS_FILE);
    const input = cases.map((c) => JSON.stringify({ id: c.id, robots: c.robots, agent: c.agent, url: c.url, allowed: c.allowed })).join('\n') + '\n';
    const r = await run(['check', '--jsonl'], input);
    assert.equal(r.code, 1, r.stderr);
    const out = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { allowed?: boolean; error?: string; candidates?: string[] });
    assert.equal(out.length, cases.length);
    cases.forEach((c, i) => {
      assert.equal(out[i]?.error, undefined, c.id);
      assert.equal(out[i]?.allowed, expectedVerdict(c), c.id);
    });
    // `agent` is a bare token, as the reference takes it: `Foo Bar` is not `Foo`; an empty URL is `/`.
    const bare = await run(['check', '--jsonl'], JSON.stringify({ robots: 'User-agent: Foo Bar\nDisallow: /\n', agent: 'Foo Bar', url: '' }) + '\n');
    assert.deepEqual(JSON.parse(bare.stdout), { allowed: true, reason: 'no-matching-rule', token: null, candidates: ['Foo Bar'], group: null, rule: null, crawlDelay: null });
  });

  it('handles 10,000 JSON-lines cases in one run', async () => {
    const robots = 'User-agent: *\nDisallow: /a\nAllow: /a/b\n';
    const input = Array.from({ length: 10_000 }, (_, i) => JSON.stringify({ robots, url: `http://h.example/a/${i % 3 === 0 ? 'b' : 'c'}/${i}`, token: 'x' })).join('\n');
    const r = await run(['check', '--jsonl'], input);
    assert.equal(r.code, 1, `some cases are disallowed (${r.stderr})`);
    const out = r.stdout.trim().split('\n');
    assert.equal(out.length, 10_000);
    assert.equal(JSON.parse(out[3]!).allowed, true);
    assert.equal(JSON.parse(out[4]!).allowed, false);
  });

  it('exits 0 when every URL is allowed, 1 when any is disallowed (files and JSON lines)', async () => {
    const allowed = await run(['check', '--robots', robotsFile, '--token', 'OtherBot', 'http://example.com/a', 'http://example.com/b']);
    assert.equal(allowed.code, 0, allowed.stderr);
    const mixed = await run(['check', '--robots', robotsFile, '--token', 'OtherBot', 'http://example.com/a', 'http://example.com/private/b', 'http://example.com/c']);
    assert.equal(mixed.code, 1, mixed.stderr);
    assert.equal(mixed.stdout.trim().split('\n').length, 3, 'every URL is still answered');
    const robots = 'User-agent: *\nDisallow: /x\n';
    const jsonAllowed = await run(['check', '--jsonl'], JSON.stringify({ robots, url: 'http://a.example/y', token: 'A' }) + '\n');
    assert.equal(jsonAllowed.code, 0, jsonAllowed.stderr);
    const jsonDenied = await run(['check', '--jsonl'], [JSON.stringify({ robots, url: 'http://a.example/y', token: 'A' }), JSON.stringify({ robots, url: 'http://a.example/x', token: 'A' })].join('\n'));
    assert.equal(jsonDenied.code, 1, jsonDenied.stderr);
  });

  it('fails with exit code 2 and a clear message on bad usage', async () => {
    const missing = await run(['check', '--robots', join(dir, 'nope.txt'), '--token', 'x', 'http://a/']);
    assert.equal(missing.code, 2);
    // The file named with the option, and the error in words, not a bare ENOENT.
    assert.match(missing.stderr, /check: cannot read --robots .*nope\.txt \(ENOENT: no such file\)/);
    const directory = await run(['check', '--robots', dir, '--token', 'x', 'http://a/']);
    assert.equal(directory.code, 2);
    assert.match(directory.stderr, /\(EISDIR: a directory, not a file\)/);
    const noAgent = await run(['check', '--robots', robotsFile, 'http://a/']);
    assert.equal(noAgent.code, 2);
    const badFlag = await run(['check', '--robot', robotsFile]);
    assert.equal(badFlag.code, 2);
    assert.equal(badFlag.stderr, 'robots-proxy: check: unknown option --robot; run "robots-proxy check --help"\n');
    const badUrl = await run(['check', '--robots', robotsFile, '--token', 'x', 'not-a-url']);
    assert.equal(badUrl.code, 2);
    assert.match(badUrl.stderr, /not an absolute URL/);
  });

  it('refuses a --token that is no bare product token and --token beside --user-agent (Googlebot/2.1 named no group: ALLOWED, exit 0)', async () => {
    const versioned = await run(['check', '--robots', robotsFile, '--token', 'GPTBot/1.1', 'https://example.com/private/x']);
    assert.deepEqual({ code: versioned.code, stdout: versioned.stdout }, { code: 2, stdout: '' });
    assert.equal(versioned.stderr, 'robots-proxy: check: --token "GPTBot/1.1" is not a bare product token (letters, digits, "_" and "-", e.g. Googlebot); for a User-Agent header, use --user-agent instead\n');
    const both = await run(['check', '--robots', robotsFile, '--token', 'GPTBot', '--user-agent', 'OtherBot/1', 'https://example.com/x']);
    assert.deepEqual({ code: both.code, stderr: both.stderr }, { code: 2, stderr: 'robots-proxy: check: give --user-agent UA or --token TOKEN, not both\n' });
    // A name with digits is a token here, as the proxy reads names.
    const digits = await run(['check', '--robots', robotsFile, '--token', 'MJ12bot', 'https://example.com/private/x']);
    assert.equal(digits.code, 1, digits.stderr);
    const robots = 'User-agent: GPTBot\nDisallow: /\n';
    const jsonl = await run(['check', '--jsonl'], [{ robots, url: 'https://a.example/x', token: 'GPTBot/1.1' }, { robots, url: 'https://a.example/x', token: 'GPTBot', userAgent: 'GPTBot/1.1' }, { robots, url: 'https://a.example/x', token: 'GPTBot' }].map((l) => JSON.stringify(l)).join('\n') + '\n');
    const out = jsonl.stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.match(out[0].error, /^"token": "GPTBot\/1.1" is not a bare product token/);
    assert.equal(out[1].error, 'give one of "userAgent", "token" or "agent", not several');
    assert.equal(out[2].allowed, false);
    assert.equal(jsonl.code, 2);
  });

  it('decides the path a client sends for the URL (dot segments resolved, "\\" as "/"), as the proxy does', async () => {
    const urls = ['https://example.com/a/../private/x', 'https://example.com/./private/x', 'https://example.com\\private\\x', 'https:/example.com/private/x', 'https://example.com/public/../private/x'];
    const r = await run(['check', '--robots', robotsFile, '--token', 'OtherBot', '--json', ...urls]);
    assert.equal(r.code, 1, r.stderr);
    const answers = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    // Before: each was ALLOWED (no-matching-rule), read from the string as written.
    assert.deepEqual(answers.map((a) => [a.url, a.allowed, a.reason]), urls.map((u) => [u, false, 'rule-disallow']));
  });

  it('--robots /dev/zero reads the parser\'s 500 KiB, not the endless device', { timeout: 120_000 }, async () => {
    const r = await run(['check', '--robots', '/dev/zero', '--token', 'x', 'http://a/']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ALLOWED +http:\/\/a\/ +reason=no-matching-rule/);
  });

  it('--jsonl answers a line longer than 16 Mi characters with an error, not kept, and the lines after it', async () => {
    const good = JSON.stringify({ robots: 'User-agent: *\nDisallow: /x\n', url: 'https://a.example/x', token: 'A' });
    const r = await run(['check', '--jsonl'], `${'a'.repeat(16 * 1_048_576 + 1)}\n${good}\n`);
    assert.equal(r.code, 2);
    const out = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { error?: string; allowed?: boolean });
    assert.deepEqual(out[0], { error: 'line longer than 16777216 characters; skipped' });
    assert.equal(out[1]?.allowed, false);
    assert.equal(out.length, 2);
  });

  it('--jsonl reads past a line longer than any string (/dev/zero-like input): an error line, no RangeError stack trace', { timeout: 300_000 }, async () => {
    const good = JSON.stringify({ robots: 'User-agent: *\nDisallow: /x\n', url: 'https://a.example/x', token: 'A' });
    const r = await runCli(['check', '--jsonl'], { stdin: longLineThen(`${good}\n`) });
    assert.doesNotMatch(r.stderr, /RangeError|at .*:\d+:\d+/, r.stderr);
    assert.equal(r.code, 2);
    const out = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { error?: string; allowed?: boolean });
    assert.deepEqual(out, [{ error: 'line longer than 16777216 characters; skipped' }, { allowed: false, reason: 'rule-disallow', token: null, candidates: ['A'], group: '*', rule: { kind: 'disallow', pattern: '/x', line: 2 }, crawlDelay: null }]);
  });

  it('--jsonl whose reader goes away (| head -1) stops quietly: no EPIPE crash, no stack trace', async () => {
    const line = JSON.stringify({ robots: 'User-agent: *\nDisallow: /x\n', url: 'https://a.example/x', token: 'A' }) + '\n';
    const child = spawn(process.execPath, [...cliNodeArgs(), 'check', '--jsonl'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    // The reader takes the first answer and leaves, as `| head -1` does.
    child.stdout.once('data', () => child.stdout.destroy());
    child.stdin.on('error', () => undefined);
    child.stdin.end(line.repeat(50_000));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    assert.doesNotMatch(stderr, /EPIPE|Unhandled|at .*\.js:\d+/, stderr);
    assert.equal(code, 1, 'the exit code of the lines answered (one disallowed)');
  });
});
