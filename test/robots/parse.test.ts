import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseRobotsTxt, evaluate, productTokenOf } from '../../src/robots/index.js';

function groupFor(body: string | Uint8Array, token: string) {
  return parseRobotsTxt(body).groupsByToken.get(token.toLowerCase());
}

describe('parseRobotsTxt: lenient reading of real files', () => {
  it('skips a UTF-8 BOM, and a partial one, only at the start', () => {
    for (const prefix of [[0xef, 0xbb, 0xbf], [0xef, 0xbb], [0xef]]) {
      const body = Buffer.concat([Buffer.from(prefix), Buffer.from('User-agent: foo\nDisallow: /x\n')]);
      assert.equal(groupFor(body, 'foo')?.rules.length, 1, `prefix ${prefix.length}`);
    }
    const inner = parseRobotsTxt('User-agent: foo\n\ufeffDisallow: /x\n');
    assert.equal(inner.groupsByToken.get('foo')?.rules.length, 0, 'a BOM after the start is not skipped');
  });

  it('splits lines on LF, CRLF and lone CR, counting lines like the reference', () => {
    for (const eol of ['\n', '\r\n', '\r']) {
      const robots = parseRobotsTxt(['User-Agent: foo', 'Allow: /some/path', 'User-Agent: bar', '', '', 'Disallow: /'].join(eol) + eol);
      const bar = robots.groupsByToken.get('bar');
      assert.deepEqual(bar?.rules.map((r) => r.line), [6], JSON.stringify(eol));
      assert.deepEqual(robots.groupsByToken.get('foo')?.rules.map((r) => r.line), [2]);
    }
  });

  it('numbers the lines of the reference reporting example', () => {
    const body =
      'User-Agent: foo\nAllow: /some/path\nUser-Agent bar # no\nabsolutely random line\n#so comment, much wow\n\nunicorns: /extinct\nnoarchive: /some\nDisallow: /\nError #and comment\nuseragent: baz\ndisallaw: /some\nsite-map: https://e/s.xml #comment\nsitemap: https://e/t.xml\nNoarchive: /someCapital\n';
    const robots = parseRobotsTxt(body);
    assert.deepEqual(robots.groups.map((g) => [g.productTokens, g.rules.map((r) => `${r.kind}:${r.pattern}@${r.line}`)]), [
      [['foo'], ['allow:/some/path@2']],
      [['bar'], ['disallow:/@9']],
      [['baz'], ['disallow:/some@12']],
    ]);
    assert.deepEqual(robots.sitemaps, ['https://e/s.xml', 'https://e/t.xml']);
    assert.equal(robots.lineCount, 16);
  });

  it('accepts typos and a missing colon with exactly two tokens', () => {
    const robots = parseRobotsTxt('user agent: a\ndisalow: /1\nuseragent b\ndissallow /2\nUSER-AGENT: c\nDisallow /3 /4\n');
    assert.deepEqual(robots.groupsByToken.get('a')?.rules.map((r) => r.pattern), ['/1']);
    assert.deepEqual(robots.groupsByToken.get('b')?.rules.map((r) => r.pattern), ['/2']);
    assert.deepEqual(robots.groupsByToken.get('c')?.rules, [], 'three tokens without a colon is not a rule');
  });

  it('cuts the line at NUL and at # comments', () => {
    const robots = parseRobotsTxt('User-agent: a\nDisallow: /x\0/y\nDisallow: /p#q\n');
    assert.deepEqual(robots.groupsByToken.get('a')?.rules.map((r) => r.pattern), ['/x', '/p']);
  });

  it('keeps the first 16663 octets of a very long line', () => {
    const long = '/x/' + 'a'.repeat(20000);
    const robots = parseRobotsTxt(`user-agent: a\ndisallow: ${long}\nallow: /x/b\n`);
    const rules = robots.groupsByToken.get('a')!.rules;
    assert.equal(rules[0]!.pattern.length, 2083 * 8 - 1 - 'disallow: '.length);
    assert.equal(rules[1]!.pattern, '/x/b');
    assert.ok(robots.warnings.some((w) => w.code === 'line-too-long'));
  });

  it('reads a user-agent value as its leading name, the [A-Za-z0-9_-] run; `*` is global', () => {
    const robots = parseRobotsTxt('User-agent: Googlebot/2.1 (+http://x)\nUser-agent: * foo\nDisallow: /g\nUser-agent: 3bot\nDisallow: /n\nUser-agent: /bot\nDisallow: /s\n');
    assert.deepEqual(robots.groups[0]!.productTokens, ['Googlebot', '*']);
    assert.deepEqual(robots.groups[1]!.productTokens, ['3bot']);
    assert.deepEqual(robots.groups[2]!.productTokens, []);
    assert.deepEqual(robots.warnings.map((w) => [w.line, w.code]), [[6, 'invalid-user-agent']]);
  });

  it('keeps digits in the name, where the reference parser would cut (issue 7, item 4)', () => {
    const values: Array<[string, string]> = [
      ['MJ12bot', 'MJ12bot'],
      ['008', '008'],
      ['W3C-checklink', 'W3C-checklink'],
      ['Rule2TestBot', 'Rule2TestBot'],
      ['larbin_2.6.2 (larbin2.6.2@unspecified.mail)', 'larbin_2'],
      ['Foo Bar', 'Foo'],
      ['Foo/1.0', 'Foo'],
      ['Foo*', 'Foo'],
      ['Mail.RU_Bot', 'Mail'],
      ['Googlebot-Image/1.0', 'Googlebot-Image'],
    ];
    for (const [value, name] of values) {
      assert.equal(productTokenOf(value), name, value);
      assert.ok(parseRobotsTxt(`User-agent: ${value}\nDisallow: /\n`).groupsByToken.has(name.toLowerCase()), value);
    }
  });

  it('merges groups that name the same token, case-insensitively', () => {
    const robots = parseRobotsTxt('User-agent: FooBot\nDisallow: /a\n\nUser-agent: other\nDisallow: /o\n\nUser-agent: foobot\nDisallow: /b\nCrawl-delay: 2\n');
    const merged = robots.groupsByToken.get('foobot')!;
    assert.deepEqual(merged.rules.map((r) => r.pattern), ['/a', '/b']);
    assert.deepEqual(merged.lines, [1, 7]);
    assert.equal(merged.crawlDelaySeconds, 2);
  });

  it('ignores rules before any user-agent, with a warning', () => {
    const robots = parseRobotsTxt('Disallow: /\nUser-agent: a\nDisallow: /a\n');
    assert.equal(robots.groups.length, 1);
    assert.deepEqual(robots.warnings.map((w) => [w.line, w.code]), [[1, 'rule-outside-group']]);
  });

  it('does not end a group at sitemap, unknown or blank lines', () => {
    const robots = parseRobotsTxt('User-agent: a\nSitemap: https://x/s.xml\n\nFoo: bar\nUser-agent: b\nDisallow: /\n');
    assert.equal(robots.groups.length, 1);
    assert.deepEqual(robots.groups[0]!.productTokens, ['a', 'b']);
  });
});

describe('parseRobotsTxt: crawl-delay and request-rate (extensions, §2.2.4)', () => {
  const cases: Array<[string, number | undefined]> = [
    ['10', 10],
    ['0.05', 0.05],
    ['.5', 0.5],
    ['2.5', 2.5],
    ['2.', 2],
    ['-1', undefined],
    ['[5]', undefined],
    ['1e3', undefined],
    ['Infinity', undefined],
    ['NaN', undefined],
    ['5 seconds', undefined],
    ['', undefined],
  ];
  for (const [value, expected] of cases) {
    it(`Crawl-delay: ${JSON.stringify(value)} -> ${expected}`, () => {
      const robots = parseRobotsTxt(`User-agent: a\nCrawl-delay: ${value}\n`);
      assert.equal(robots.groupsByToken.get('a')?.crawlDelaySeconds, expected);
      if (expected === undefined) assert.ok(robots.warnings.some((w) => w.code === 'invalid-crawl-delay' && w.line === 2));
    });
  }

  it('applies a crawl-delay to the user-agent lines just before it, rules to the whole group', () => {
    const robots = parseRobotsTxt('User-agent: a\nCrawl-delay: 5\n\nUser-agent: b\nUser-agent: c\nCrawl-delay: 0.5\n\nUser-agent: d\nDisallow: /x\nCrawl-delay: 2\n');
    assert.equal(robots.groups.length, 1, 'crawl-delay does not end a group (RFC 9309 §2.2)');
    assert.equal(robots.groupsByToken.get('a')?.crawlDelaySeconds, 5);
    assert.equal(robots.groupsByToken.get('b')?.crawlDelaySeconds, 0.5);
    assert.equal(robots.groupsByToken.get('c')?.crawlDelaySeconds, 0.5);
    assert.equal(robots.groupsByToken.get('d')?.crawlDelaySeconds, 2);
    for (const token of ['a', 'b', 'c', 'd']) assert.deepEqual(robots.groupsByToken.get(token)?.rules.map((r) => r.pattern), ['/x'], token);
  });

  it('parses Request-rate n/seconds with units', () => {
    assert.deepEqual(groupFor('User-agent: a\nRequest-rate: 1/5\n', 'a')?.requestRate, { requests: 1, seconds: 5 });
    assert.deepEqual(groupFor('User-agent: a\nRequest-rate: 3/1m\n', 'a')?.requestRate, { requests: 3, seconds: 60 });
    assert.equal(groupFor('User-agent: a\nRequest-rate: 0/5\n', 'a')?.requestRate, undefined);
  });
});

describe('parseRobotsTxt: limits and hostile input', () => {
  it('parses only maxBytes, drops the cut line and marks the result truncated', () => {
    const body = 'User-agent: *\nDisallow: /a\nDisallow: /bbbbbbbb\n';
    const limit = body.indexOf('/bbb') + 2;
    const robots = parseRobotsTxt(body, { maxBytes: limit });
    assert.equal(robots.truncated, true);
    assert.equal(robots.bytesParsed, limit);
    assert.deepEqual(robots.groupsByToken.get('*')?.rules.map((r) => r.pattern), ['/a']);
    assert.equal(evaluate(robots, ['x'], '/b').allowed, true, 'the cut rule is not applied');
  });

  it('defaults to 500 KiB', () => {
    const body = 'User-agent: *\n' + 'Disallow: /x\n'.repeat(60_000);
    const robots = parseRobotsTxt(body);
    assert.equal(robots.truncated, true);
    assert.equal(robots.bytesParsed, 500 * 1024);
  });

  it('reads HTML, binary and non-UTF-8 bodies without throwing and finds no rules', () => {
    const html = parseRobotsTxt('<!DOCTYPE html><html><body>Not found</body></html>');
    assert.equal(html.groupsByToken.size, 0);
    const binary = parseRobotsTxt(Uint8Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256));
    assert.ok(binary.lineCount > 0);
    const latin1 = parseRobotsTxt(Buffer.from('User-agent: a\nDisallow: /caf\xe9\n', 'latin1'));
    assert.equal(latin1.groupsByToken.get('a')?.rules[0]?.pattern, '/caf%E9');
  });

  it('bounds warnings on garbage', () => {
    const robots = parseRobotsTxt('nonsense line here\n'.repeat(10_000));
    assert.ok(robots.warnings.length <= 100);
  });
});
