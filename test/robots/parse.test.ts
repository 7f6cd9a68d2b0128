// run-tests: in-process
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

  it('reads misspelt keys and colon-less lines as the reference does, and says so (lenient-key)', () => {
    const body = 'User agent: foo\nDisalow: /a\nAllow /b\nUseragent: bar\nDisallow: /c\nSitemap http://e/s.xml\nCrawl_delay: 2\nuser-agent: baz\nDISALLOW: /d\n';
    const robots = parseRobotsTxt(body);
    assert.deepEqual(groupFor(body, 'foo')?.rules.map((r) => `${r.kind}:${r.pattern}`), ['disallow:/a', 'allow:/b']);
    const lenient = robots.warnings.filter((w) => w.code === 'lenient-key');
    assert.deepEqual(lenient.map((w) => w.line), [1, 2, 3, 4, 6, 7], 'every line whose key is not written as the RFC spells it; case alone is no warning');
    assert.match(lenient[0]!.message, /the key "User agent" read as user-agent.*write "user-agent:"/);
    assert.match(lenient[2]!.message, /"Allow" without a colon read as allow/);
    assert.match(lenient[4]!.message, /the key "Sitemap http" read as sitemap/);
    assert.deepEqual(parseRobotsTxt('User-Agent: a\nAllow: /\nDisallow: /x\nCrawl-delay: 1\nRequest-rate: 1/5\nSitemap: https://e/s.xml\nNoindex: /y\n').warnings.map((w) => w.code), ['unknown-directive'], 'canonical keys: none');
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

  it('splits a line without a colon at spaces and tabs only: a \\v or \\f between them is a third token', () => {
    // The compiled reference skips " \t" after the separator (strspn): `Disallow \v /a` is no rule there.
    const robots = parseRobotsTxt('user-agent: a\ndisallow \x0b /1\ndisallow \x0c /2\ndisallow\t\x0b\t/3\ndisallow \x0b/4\ndisallow\x0b /5\n');
    assert.deepEqual(robots.groupsByToken.get('a')?.rules.map((r) => r.pattern), ['/4', '/5']);
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

  it('does not copy rules per token: thousands of tokens in front of thousands of rules cost their sum', () => {
    // 490 KB: 5,000 tokens naming one group of 18,000 rules, then every token again in a second group.
    // Copying the rules into each token's merged group made this 90 million array slots (about a GB of heap, 10 s).
    const names = Array.from({ length: 5000 }, (_, i) => `bot${String.fromCharCode(97 + (i % 26), 97 + (Math.floor(i / 26) % 26), 97 + Math.floor(i / 676))}`);
    const body = names.map((n) => `User-agent: ${n}\n`).join('') + Array.from({ length: 18_000 }, (_, i) => `Disallow: /${i}\n`).join('') + names.map((n) => `User-agent: ${n}\n`).join('') + 'Allow: /7\n';
    const robots = parseRobotsTxt(body);
    assert.equal(robots.groupsByToken.size, 5000);
    const first = robots.groupsByToken.get(names[0]!)!;
    const last = robots.groupsByToken.get(names[4999]!)!;
    assert.deepEqual(first.groups, robots.groups, 'each token lists the two groups, not copies of their rules');
    assert.equal(last.groups[0], first.groups[0]);
    assert.equal(robots.truncated, false);
    assert.equal(last.rules.length, 18_001, 'the rules still read as their union, in file order');
    assert.deepEqual([last.rules[18_000]?.kind, last.rules[18_000]?.pattern, last.rules[18_000]?.line], ['allow', '/7', 28_001]);
    const single = parseRobotsTxt('User-agent: a\nUser-agent: b\nDisallow: /x\n');
    assert.equal(single.groupsByToken.get('a')!.rules, single.groups[0]!.rules, 'a token of one group reads that group\'s own array');
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
  const DAY_S = 86_400;
  // [value, recorded seconds, warning code]: every value the file asks for is honoured up to the
  // ceiling (default 24 h); a longer or infinite one is clamped to it, never dropped (issue 7).
  const cases: Array<[string, number | undefined, string | undefined]> = [
    ['10', 10, undefined],
    ['0.05', 0.05, undefined],
    ['.5', 0.5, undefined],
    ['2.5', 2.5, undefined],
    ['2.', 2, undefined],
    ['0', 0, undefined],
    ['+7', 7, undefined],
    ['1e3', 1000, undefined],
    ['86400', DAY_S, undefined],
    ['2' + '0'.repeat(305), DAY_S, 'crawl-delay-clamped'],
    ['1' + '0'.repeat(400), DAY_S, 'crawl-delay-clamped'],
    ['2147484', DAY_S, 'crawl-delay-clamped'],
    ['1000000000000000000000', DAY_S, 'crawl-delay-clamped'],
    ['1e300', DAY_S, 'crawl-delay-clamped'],
    ['1e999', DAY_S, 'crawl-delay-clamped'],
    ['Infinity', DAY_S, 'crawl-delay-clamped'],
    ['inf', DAY_S, 'crawl-delay-clamped'],
    ['INF', DAY_S, 'crawl-delay-clamped'],
    ['86400.001', DAY_S, 'crawl-delay-clamped'],
    ['-1', undefined, 'invalid-crawl-delay'],
    ['-inf', undefined, 'invalid-crawl-delay'],
    ['[5]', undefined, 'invalid-crawl-delay'],
    ['NaN', undefined, 'invalid-crawl-delay'],
    ['5 seconds', undefined, 'invalid-crawl-delay'],
    ['1,5', undefined, 'invalid-crawl-delay'],
    ['0x10', undefined, 'invalid-crawl-delay'],
    ['', undefined, 'invalid-crawl-delay'],
  ];
  for (const [value, expected, code] of cases) {
    it(`Crawl-delay: ${JSON.stringify(value.length > 24 ? `${value.slice(0, 24)}…` : value)} -> ${expected}`, () => {
      const robots = parseRobotsTxt(`User-agent: a\nCrawl-delay: ${value}\n`);
      assert.equal(robots.groupsByToken.get('a')?.crawlDelaySeconds, expected);
      assert.deepEqual(robots.warnings.map((w) => [w.line, w.code]), code === undefined ? [] : [[2, code]]);
    });
  }

  it('a ceiling that is not a finite positive number gives the default one', () => {
    for (const maxCrawlDelaySeconds of [NaN, 0, -1, Infinity]) {
      assert.equal(parseRobotsTxt('User-agent: a\nCrawl-delay: inf\n', { maxCrawlDelaySeconds }).groupsByToken.get('a')?.crawlDelaySeconds, DAY_S);
    }
  });

  it('clamps to the ceiling it is given, and says so with the value as written', () => {
    const robots = parseRobotsTxt('User-agent: a\nCrawl-delay: 7200\nUser-agent: b\nCrawl-delay: 30\n', { maxCrawlDelaySeconds: 3600 });
    assert.equal(robots.groupsByToken.get('a')?.crawlDelaySeconds, 3600);
    assert.equal(robots.groupsByToken.get('b')?.crawlDelaySeconds, 30);
    assert.equal(robots.warnings.length, 1);
    assert.match(robots.warnings[0]!.message, /"7200".*3600 s/);
  });

  it('a clamped crawl-delay still wins the merge as the largest', () => {
    const robots = parseRobotsTxt('User-agent: a\nCrawl-delay: 5\nDisallow: /x\n\nUser-agent: a\nCrawl-delay: inf\n');
    assert.equal(robots.groupsByToken.get('a')?.crawlDelaySeconds, DAY_S);
  });

  it('quotes a huge value in its warning only in part', () => {
    const robots = parseRobotsTxt(`User-agent: a\nCrawl-delay: ${'9'.repeat(10_000)}\nCrawl-delay: x${'y'.repeat(10_000)}\n`);
    assert.deepEqual(robots.warnings.map((w) => w.code), ['crawl-delay-clamped', 'invalid-crawl-delay']);
    for (const w of robots.warnings) assert.ok(w.message.length <= 240, `${w.message.length} chars`);
  });

  it('applies a crawl-delay to the user-agent lines just before it, rules to the whole group', () => {
    const robots = parseRobotsTxt('User-agent: a\nCrawl-delay: 5\n\nUser-agent: b\nUser-agent: c\nCrawl-delay: 0.5\n\nUser-agent: d\nDisallow: /x\nCrawl-delay: 2\n');
    assert.equal(robots.groups.length, 1, 'crawl-delay does not end a group (RFC 9309 §2.2)');
    assert.equal(robots.groupsByToken.get('a')?.crawlDelaySeconds, 5);
    assert.equal(robots.groupsByToken.get('b')?.crawlDelaySeconds, 0.5);
    assert.equal(robots.groupsByToken.get('c')?.crawlDelaySeconds, 0.5);
    assert.equal(robots.groupsByToken.get('d')?.crawlDelaySeconds, 2);
    for (const token of ['a', 'b', 'c', 'd']) assert.deepEqual(robots.groupsByToken.get(token)?.rules.map((r) => r.pattern), ['/x'], token);
  });

  it('applies a request-rate to the user-agent lines just before it, as a crawl-delay (Protego, urllib.robotparser)', () => {
    const robots = parseRobotsTxt('User-agent: a\nRequest-rate: 1/10s\nUser-agent: b\nRequest-rate: 100/15m\nRequest-rate: 1/1s\nUser-agent: c\nDisallow: /x\nUser-agent: d\nRequest-rate: 1/5\n');
    assert.equal(robots.groups.length, 2, 'request-rate does not end a group (RFC 9309 §2.2)');
    assert.deepEqual(robots.groupsByToken.get('a')?.requestRate, { requests: 1, seconds: 10 });
    assert.deepEqual(robots.groupsByToken.get('b')?.requestRate, { requests: 100, seconds: 900 }, 'the first one given a token applies');
    assert.equal(robots.groupsByToken.get('c')?.requestRate, undefined, 'c shares the rules of a and b, not their rates');
    assert.deepEqual(robots.groupsByToken.get('d')?.requestRate, { requests: 1, seconds: 5 });
    for (const token of ['a', 'b', 'c']) assert.deepEqual(robots.groupsByToken.get(token)?.rules.map((r) => r.pattern), ['/x'], token);
  });

  it('parses Request-rate n/seconds with units', () => {
    assert.deepEqual(groupFor('User-agent: a\nRequest-rate: 1/5\n', 'a')?.requestRate, { requests: 1, seconds: 5 });
    assert.deepEqual(groupFor('User-agent: a\nRequest-rate: 3/1m\n', 'a')?.requestRate, { requests: 3, seconds: 60 });
    assert.deepEqual(groupFor('User-agent: a\nRequest-rate: 10/1h\n', 'a')?.requestRate, { requests: 10, seconds: 3600 });
    assert.equal(groupFor('User-agent: a\nRequest-rate: 0/5\n', 'a')?.requestRate, undefined);
  });

  // [value, recorded rate, warning code]: the interval a rate implies is clamped like a crawl-delay;
  // a rate that allows anything (0 s, more requests than a double holds) is ignored, which loses no restraint.
  const rates: Array<[string, { requests: number; seconds: number } | undefined, string | undefined]> = [
    ['1/100000000', { requests: 1, seconds: 86_400 }, 'request-rate-clamped'],
    [`1${'0'.repeat(300)}/${'9'.repeat(400)}`, { requests: 1, seconds: 86_400 }, 'request-rate-clamped'],
    ['3/1000000', { requests: 1, seconds: 86_400 }, 'request-rate-clamped'],
    [`1/${'9'.repeat(400)}`, { requests: 1, seconds: 86_400 }, 'request-rate-clamped'],
    ['2/2d', { requests: 2, seconds: 172_800 }, undefined],
    ['1/2d', { requests: 1, seconds: 86_400 }, 'request-rate-clamped'],
    [`${'9'.repeat(400)}/1`, undefined, 'invalid-request-rate'],
    ['1/0', undefined, 'invalid-request-rate'],
    ['-1/5', undefined, 'invalid-request-rate'],
    ['1/-5', undefined, 'invalid-request-rate'],
    ['NaN/NaN', undefined, 'invalid-request-rate'],
    ['1/1e400', undefined, 'invalid-request-rate'],
    ['inf/inf', undefined, 'invalid-request-rate'],
  ];
  for (const [value, expected, code] of rates) {
    it(`Request-rate: ${JSON.stringify(value.length > 24 ? `${value.slice(0, 24)}…` : value)} -> ${JSON.stringify(expected)}`, () => {
      const robots = parseRobotsTxt(`User-agent: a\nRequest-rate: ${value}\n`);
      assert.deepEqual(robots.groupsByToken.get('a')?.requestRate, expected);
      assert.deepEqual(robots.warnings.map((w) => [w.line, w.code]), code === undefined ? [] : [[2, code]]);
    });
  }
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

  it('bounds warnings on garbage, and counts the ones not kept', () => {
    const robots = parseRobotsTxt('nonsense line here\n'.repeat(10_000));
    assert.equal(robots.warnings.length, 101);
    assert.deepEqual(robots.warnings.at(-1), { line: 0, code: 'too-many-warnings', message: '9900 more line warnings were not kept (at most 100 are)' });
  });

  it('keeps the truncation warning however many line warnings came first', () => {
    const robots = parseRobotsTxt('?\n'.repeat(10_000), { maxBytes: 10_000 });
    assert.equal(robots.truncated, true);
    assert.deepEqual(robots.warnings.slice(-2).map((w) => w.code), ['truncated', 'too-many-warnings']);
  });

  it('bounds each warning: a 16 KiB unknown key is quoted in part', () => {
    const robots = parseRobotsTxt(`${'k'.repeat(16_000)}: v\nUser-agent: ${'!'.repeat(16_000)}\n`);
    assert.deepEqual(robots.warnings.map((w) => w.code), ['unknown-directive', 'invalid-user-agent']);
    for (const w of robots.warnings) assert.ok(w.message.length <= 240, `${w.code}: ${w.message.length} chars`);
  });
});

describe('parseRobotsTxt: a body that is not a robots.txt', () => {
  const codes = (body: string | Uint8Array): string[] => parseRobotsTxt(body).warnings.filter((w) => w.line === 0).map((w) => w.code);

  const html: Array<[string, string]> = [
    ['a doctype', '<!DOCTYPE html>\n<html><head><title>404</title></head><body>Not found</body></html>\n'],
    ['upper-case tags after blank lines and a BOM', '\ufeff\n\n  <HTML><HEAD><TITLE>x</TITLE></HEAD></HTML>'],
    ['a bare head', '<HEAD>\n<TITLE>mail</TITLE>\n'],
    ['a div soup', '<div style="display: none;"><a href="https://x.example/">x</a></div>\nUser-agent: *\nDisallow: /\n'],
    ['XHTML', '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0//EN" "x">\n<html>'],
    ['a PHP notice before the page', 'Warning: session_start() failed in /var/www/x.php\n<html><body>Error</body></html>'],
  ];
  for (const [label, body] of html) {
    it(`warns looks-like-html for ${label}`, () => assert.deepEqual(codes(body), ['looks-like-html']));
  }

  it('still reads the records of an HTML body (the reference does), so its rules apply', () => {
    const robots = parseRobotsTxt('<div>hacked</div>\nUser-agent: *\nDisallow: /private\n');
    assert.equal(evaluate(robots, ['bot'], '/private/x').allowed, false);
  });

  it('does not warn for a robots.txt that mentions tags in comments or paths', () => {
    assert.deepEqual(codes('# <html> pages are fine\nUser-agent: *\nDisallow: /<script>\nDisallow: /a</div>\n'), []);
    assert.deepEqual(codes('User-agent: *\nDisallow:\n'), []);
  });

  it('warns looks-binary for NUL bytes, images and UTF-16, not for Latin-1 text', () => {
    assert.deepEqual(codes(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])), ['looks-binary']);
    assert.deepEqual(codes(Buffer.from('\ufeffUser-agent: *\nDisallow: /\n', 'utf16le')), ['looks-binary']);
    assert.deepEqual(codes(Uint8Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)), ['looks-binary']);
    assert.deepEqual(codes(Buffer.from('User-agent: a\nDisallow: /caf\xe9\n', 'latin1')), []);
  });
});
