// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, extractProductTokens, normalisePath, normalisePattern, parseRobotsTxt, selectGroup } from '../../src/robots/index.js';

function decide(body: string, tokens: string[], path: string) {
  return evaluate(parseRobotsTxt(body), tokens, path);
}

describe('evaluate: RFC 9309 §2.2.2 longest match', () => {
  const body = 'User-agent: *\nDisallow: /shop\nAllow: /shop/public\nDisallow: /*.pdf$\nAllow: /page\nDisallow: /page\nDisallow: /q?*sort=\n';
  const table: Array<[string, boolean, string, number | null]> = [
    ['/shop/cart', false, 'rule-disallow', 2],
    ['/shop/public/x', true, 'rule-allow', 3],
    ['/a/b.pdf', false, 'rule-disallow', 4],
    ['/a/b.pdf?x=1', true, 'no-matching-rule', null],
    ['/page', true, 'rule-allow', 5],
    ['/q?a=1&sort=up', false, 'rule-disallow', 7],
    ['/robots.txt', true, 'robots-txt-itself', null],
    ['/other', true, 'no-matching-rule', null],
  ];
  for (const [path, allowed, outcome, line] of table) {
    it(`${path} -> ${outcome}`, () => {
      const r = decide(body, ['bot'], path);
      assert.equal(r.allowed, allowed);
      assert.equal(r.outcome, outcome);
      assert.equal(r.rule?.line ?? null, line);
    });
  }

  it('merged groups decide as one: longest across groups, allow on a tie, then the earlier line (§2.2.1)', () => {
    const merged = 'User-agent: bot\nDisallow: /a\nAllow: /b/index.html\n\nUser-agent: other\nDisallow: /\n\nUser-agent: bot\nAllow: /a\nDisallow: /ab\nDisallow: /b/$\n';
    assert.deepEqual([decide(merged, ['bot'], '/a').rule?.line, decide(merged, ['bot'], '/a').allowed], [9, true], 'equal length: allow wins across groups');
    assert.deepEqual([decide(merged, ['bot'], '/abc').rule?.line, decide(merged, ['bot'], '/abc').allowed], [10, false], 'longer pattern in the later group');
    // `/b/$` (4 octets) against the index.html twin `/b/$` of line 3 (4 octets, allow): allow wins.
    assert.deepEqual([decide(merged, ['bot'], '/b/').rule?.line, decide(merged, ['bot'], '/b/').allowed], [3, true]);
    assert.equal(decide(merged, ['other'], '/a').allowed, false);
  });

  it('ignores the empty pattern', () => {
    assert.equal(decide('User-agent: *\nDisallow:\n', ['x'], '/a').outcome, 'no-matching-rule');
    assert.equal(decide('User-agent: *\nDisallow: /\nAllow:\n', ['x'], '/a').allowed, false);
  });

  it('always allows /robots.txt even under Disallow: /', () => {
    assert.equal(decide('User-agent: *\nDisallow: /\n', ['x'], '/robots.txt').allowed, true);
    assert.equal(decide('User-agent: *\nDisallow: /\n', ['x'], '/robots.txt.bak').allowed, false);
  });

  it('treats $ as an anchor only at the end', () => {
    assert.equal(decide('User-agent: *\nDisallow: /a$b\n', ['x'], '/a$b/c').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /a$\n', ['x'], '/a/').allowed, true);
    assert.equal(decide('User-agent: *\nDisallow: /*$\n', ['x'], '/anything').allowed, false);
  });

  it('matches a pathological wildcard pattern without backtracking', () => {
    const pattern = '/*a*a*a*a*a*a*a*a*b';
    const path = '/' + 'a'.repeat(2000);
    assert.equal(decide(`User-agent: *\nDisallow: ${pattern}\n`, ['x'], path).allowed, true);
    assert.equal(decide(`User-agent: *\nDisallow: ${pattern}\n`, ['x'], path + 'b').allowed, false);
  });
});

describe('selectGroup: RFC 9309 §2.2.1', () => {
  const robots = parseRobotsTxt('User-agent: *\nDisallow: /all\n\nUser-agent: GPTBot\nDisallow: /\n\nUser-agent: Googlebot-Image\nAllow: /\n');
  it('picks the first candidate a group names, case-insensitively and exactly', () => {
    assert.equal(selectGroup(robots, ['Unknown', 'gptbot']).productToken, 'gptbot');
    assert.equal(selectGroup(robots, ['Googlebot']).group?.productToken, '*', 'no prefix match');
    assert.equal(selectGroup(robots, ['Googlebot-Image']).group?.productToken, 'Googlebot-Image');
  });
  it('uses * only when no group names the token; no * group means no rules', () => {
    assert.equal(evaluate(robots, ['other'], '/all/x').allowed, false);
    const noStar = parseRobotsTxt('User-agent: a\nDisallow: /\n');
    const r = evaluate(noStar, ['b'], '/x');
    assert.equal(r.allowed, true);
    assert.equal(r.group, undefined);
  });
  it('a group with no rules for the token shadows *', () => {
    const r = evaluate(parseRobotsTxt('User-agent: *\nDisallow: /\nUser-agent: a\nCrawl-delay: 1\n'), ['a'], '/x');
    assert.equal(r.allowed, true);
    assert.equal(r.group?.crawlDelaySeconds, 1);
  });
});

/** Issue 7 item 4 and issue 12: a group never applies to a header for a different name. */
describe('selectGroup: whole names, never another crawler\'s group', () => {
  const userAgentDecides = (body: string, userAgent: string, path = '/x') => evaluate(parseRobotsTxt(body), extractProductTokens(userAgent), path);

  it('Example2Bot does not take the Example group', () => {
    const r = userAgentDecides('User-agent: Example\nAllow: /\n\nUser-agent: *\nDisallow: /\n', 'Example2Bot/3.1');
    assert.equal(r.allowed, false);
    assert.equal(r.group?.productToken, '*');
    assert.equal(r.productToken, undefined);
  });
  it('W3C_Validator does not take the W3C-checklink group', () => {
    const r = userAgentDecides('User-agent: W3C-checklink\nDisallow: /\n', 'W3C_Validator/1.3');
    assert.equal(r.allowed, true);
    assert.equal(r.group, undefined);
  });
  it('Rule1TestBot obeys none of Rule2TestBot ... Rule7TestBot, only its own group', () => {
    const others = [2, 3, 4, 5, 6, 7].map((n) => `User-agent: Rule${n}TestBot\nDisallow: /\n`).join('\n');
    assert.equal(userAgentDecides(others, 'Rule1TestBot/1.0').allowed, true);
    const withOwn = `${others}\nUser-agent: Rule1TestBot\nDisallow: /own\n`;
    const r = userAgentDecides(withOwn, 'Rule1TestBot/1.0', '/x');
    assert.equal(r.allowed, true);
    assert.equal(r.productToken, 'Rule1TestBot');
    assert.deepEqual(r.group?.rules.map((rule) => rule.pattern), ['/own']);
  });
  it('User-agent: 008 applies to the 80legs header', () => {
    const r = userAgentDecides('User-agent: 008\nDisallow: /\n', 'Mozilla/5.0 (compatible; 008/0.83; http://www.80legs.com/webcrawler.html)');
    assert.equal(r.allowed, false);
    assert.equal(r.productToken, '008');
  });
  it('MJ12bot matches User-agent: MJ12bot in any case, and not User-agent: MJ', () => {
    const ua = 'Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)';
    assert.equal(userAgentDecides('User-agent: mj12BOT\nDisallow: /\n', ua).allowed, false);
    assert.equal(userAgentDecides('User-agent: MJ\nDisallow: /\n', ua).allowed, true);
  });
  it('neither a longer nor a shorter name', () => {
    assert.equal(userAgentDecides('User-agent: ExampleBot\nDisallow: /\n', 'ExampleBotNews/1.0').allowed, true);
    assert.equal(userAgentDecides('User-agent: ExampleBotNews\nDisallow: /\n', 'ExampleBot/1.0').allowed, true);
    assert.equal(selectGroup(parseRobotsTxt('User-agent: ExampleBot\nDisallow: /\n'), ['ExampleBo', 'ExampleBotN']).group, undefined);
  });
  it('a valid RFC token is compared as the RFC says: Foo Bar, Foo/1.0 and Foo* name Foo', () => {
    for (const line of ['Foo Bar', 'Foo/1.0', 'Foo*', 'FOO']) {
      assert.equal(selectGroup(parseRobotsTxt(`User-agent: ${line}\nDisallow: /\n`), ['foo']).productToken, 'foo', line);
    }
    // The reference compares the agent as given: "Foo Bar" is not the name Foo.
    assert.equal(selectGroup(parseRobotsTxt('User-agent: Foo Bar\nDisallow: /\n'), ['Foo Bar']).group, undefined);
  });
  it('a line whose name goes on with digits is not read as its letters (the reference would)', () => {
    assert.equal(userAgentDecides('User-agent: crawler4j\nDisallow: /\n', 'Mozilla/5.0 (compatible; Example! Crawler/3.0)').allowed, true);
    assert.equal(userAgentDecides('User-agent: RankingBot2\nDisallow: /\n', 'RankingBot/1.0').allowed, true);
    assert.equal(userAgentDecides('User-agent: RankingBot2\nDisallow: /\n', 'Mozilla/5.0 (compatible; RankingBot2 -- https://www.example.com/)').allowed, false);
  });
  it('a name that appears only in a URL or an address takes no group', () => {
    const body = 'User-agent: examplebot\nDisallow: /\n';
    assert.equal(userAgentDecides(body, 'Mozilla/5.0 (compatible; Other/1.0; +https://examplebot.example/examplebot.html; examplebot@example.com)').allowed, true);
  });
});

describe('normalisePath: RFC 9309 §2.2.2', () => {
  const table: Array<[string, string]> = [
    ['/a/b', '/a/b'],
    ['/caf\u00e9', '/caf%C3%A9'],
    ['/%7efoo', '/~foo'],
    ['/%2fx', '/%2Fx'],
    ['/%41%42', '/AB'],
    ['/50%', '/50%25'],
    ['/a b', '/a%20b'],
    ['/q?x=%e3%83%84', '/q?x=%E3%83%84'],
    ['/a|b', '/a%7Cb'],
    ['/a%7cb', '/a%7Cb'],
    ['/x?"<>\\^`{|}', '/x?%22%3C%3E%5C%5E%60%7B%7C%7D'],
    ['/price$', '/price%24'],
    ['/file-*.html', '/file-%2A.html'],
    ['/a%24%2a', '/a%24%2A'],
  ];
  for (const [input, expected] of table) {
    it(`${JSON.stringify(input)} -> ${expected}`, () => assert.equal(normalisePath(input), expected));
  }
  it('normalises the pattern and the path alike', () => {
    assert.equal(decide('User-agent: *\nDisallow: /%7Euser\n', ['x'], '/~user/page').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /~user\n', ['x'], '/%7euser/page').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /a%2Fb\n', ['x'], '/a/b').allowed, true);
  });
});

describe('one verdict for every spelling of a URL (RFC 9309 §2.2.2, §2.2.3; issue 7 item 3)', () => {
  it('an octet that may not appear raw in a URI matches its %XX form, both ways (a real file)', () => {
    // Both rules come from one real robots.txt; each spelling used to slip past the other's rule.
    const robots = 'User-agent: *\nDisallow: /sch/*%7C\nDisallow: /b/*?*|\n';
    assert.equal(decide(robots, ['x'], '/sch/i.html?_nkw=a|b').allowed, false);
    assert.equal(decide(robots, ['x'], '/sch/i.html?_nkw=a%7Cb').allowed, false);
    assert.equal(decide(robots, ['x'], '/b/x?y=a%7Cb').allowed, false);
    assert.equal(decide(robots, ['x'], '/b/x?y=a|b').allowed, false);
    assert.equal(decide(robots, ['x'], '/b/x?y=ab').allowed, true);
  });

  for (const char of ['"', '<', '>', '\\', '^', '`', '{', '|', '}', ' ']) {
    const hex = '%' + char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0');
    it(`${JSON.stringify(char)} and ${hex} are one octet in rules and paths`, () => {
      const rawRule = `User-agent: *\nDisallow: /p${char}q\n`;
      const encodedRule = `User-agent: *\nDisallow: /p${hex}q\n`;
      for (const robots of [rawRule, encodedRule]) {
        for (const path of [`/p${char}q`, `/p${hex}q`, `/p${hex.toLowerCase()}q`]) {
          assert.equal(decide(robots, ['x'], path).allowed, false, `${JSON.stringify(robots)} vs ${path}`);
        }
      }
    });
  }

  it('%24 and %2A in a rule name a literal $ and * in the URL (§2.2.3)', () => {
    assert.equal(decide('User-agent: *\nDisallow: /a%24\n', ['x'], '/a$').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /a%24\n', ['x'], '/a%24').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /a%24$\n', ['x'], '/a$b').allowed, true);
    assert.equal(decide('User-agent: *\nDisallow: /path/file-with-a-%2A.html\n', ['x'], '/path/file-with-a-*.html').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /path/file-with-a-%2A.html\n', ['x'], '/path/file-with-a-b.html').allowed, true);
    assert.equal(decide('User-agent: *\nDisallow: /path/foo-%24\n', ['x'], '/path/foo-$').allowed, false);
  });

  it('a $ inside a pattern is a literal $, which the URL may spell %24', () => {
    const robots = 'User-agent: *\nDisallow: /Web$history\n';
    assert.equal(decide(robots, ['x'], '/Web$history').allowed, false);
    assert.equal(decide(robots, ['x'], '/Web%24history').allowed, false);
    assert.equal(decide(robots, ['x'], '/Webhistory').allowed, true);
  });

  it('* stays the wildcard and a final $ the anchor', () => {
    assert.equal(decide('User-agent: *\nDisallow: /a*b$\n', ['x'], '/a-x-b').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /a*b$\n', ['x'], '/a-x-bc').allowed, true);
    assert.equal(decide('User-agent: *\nDisallow: /a*b$\n', ['x'], '/a*b').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /a$$\n', ['x'], '/a$').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /a$$\n', ['x'], '/a$b').allowed, true);
  });

  it('the directory an index.html allow also allows has the priority of `/d/$` as written (found by the differential against the reference)', () => {
    // Reference: `/$` (priority 2) loses to `/*$` (3); the text after the slash must not count.
    assert.equal(decide('User-agent: *\nAllow: /index.html%7E%7E\nDisallow: /*$\n', ['x'], '/').allowed, false);
    // Reference: `/$` (2) ties `/*` (2) and allow wins a tie.
    assert.equal(decide('User-agent: *\nAllow: /index.html|\nDisallow: /*\n', ['x'], '/').allowed, true);
    assert.equal(decide('User-agent: *\nAllow: /shop/index.html?ref=%7Ebob\nDisallow: /shop/*$\n', ['x'], '/shop/').allowed, false);
    assert.equal(decide('User-agent: *\nAllow: /shop/index.html?ref=a|b\nDisallow: /shop/\n', ['x'], '/shop/').allowed, true);
    assert.equal(parseRobotsTxt('User-agent: *\nAllow: /caf\u00e9/index.html\n').groupsByToken.get('*')?.rules[0]?.directoryPriority, '/caf/'.length + 6 + 1);
  });

  it('respelling an octet does not change which rule wins: priority counts the pattern as written (§2.2.2)', () => {
    // As the reference counts: `/x$y` is 4 octets, `/x*y*` 5, so the allow wins although `/x%24y` is longer.
    assert.equal(decide('User-agent: *\nDisallow: /x$y\nAllow: /x*y*\n', ['x'], '/x$y').allowed, true);
    assert.equal(decide('User-agent: *\nAllow: /a|\nDisallow: /a*\n', ['x'], '/a|').allowed, true);
    assert.equal(parseRobotsTxt('User-agent: *\nDisallow: /caf\u00e9|\n').groupsByToken.get('*')?.rules[0]?.priority, '/caf'.length + 3 * 2 + 1);
  });

  it('a % that starts no escape in a rule matches the % of any escape in the path, as the reference reads it', () => {
    // Real patterns: `/jobs*%`, `/itm/*/%`, mcmaster.com's `/%`.
    assert.equal(decide('User-agent: *\nDisallow: /%\n', ['x'], '/%3f').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /jobs*%\n', ['x'], '/jobs/a b').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /jobs*%\n', ['x'], '/jobs/ab').allowed, true);
    assert.equal(decide('User-agent: *\nDisallow: /50%\n', ['x'], '/50%').allowed, false);
    assert.equal(normalisePattern('/a%'), '/a%');
    assert.equal(normalisePattern('/a%*b'), '/a%*b');
    assert.equal(normalisePattern('*url%2*watches*'), '*url%2*watches*');
    assert.equal(normalisePattern('/a%e*'), '/a%E*');
    assert.equal(decide('User-agent: *\nDisallow: *url%2*watches*\n', ['x'], '/p?url%2Fwatches').allowed, false);
    assert.equal(normalisePath('/a%'), '/a%25');
  });

  it('a % that cannot begin an escape is a literal percent sign, in a rule as in the path (urllib.robotparser PercentEncodingTest)', () => {
    // Before: `/p1%xy` stayed as written and never matched, since a path spells a lone % as %25.
    assert.equal(normalisePattern('/p1%xy'), '/p1%25xy');
    assert.equal(normalisePattern('/a%2x'), '/a%252x');
    assert.equal(normalisePattern('/a%%'), '/a%25%');
    // At the end, a % and one hex digit begin an escape, upper-cased as a path spells it; `%2` also begins a literal's %25.
    assert.equal(normalisePattern('/a%2'), '/a%2');
    assert.equal(normalisePattern('/a%e'), '/a%E');
    assert.equal(decide('User-agent: *\nDisallow: /a%2\n', ['x'], '/a%2Fb').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /a%2\n', ['x'], '/a%2').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /a%e\n', ['x'], '/a%eb').allowed, false);
    // Before the final $, a % can only be a literal one (real: `/coupons/*cached40%$`).
    assert.equal(normalisePattern('/a%$'), '/a%25$');
    assert.equal(decide('User-agent: *\nDisallow: /coupons/*cached40%$\n', ['x'], '/coupons/x-cached40%').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /coupons/*cached40%$\n', ['x'], '/coupons/x-cached40%25').allowed, false);
    assert.equal(decide('User-agent: *\nDisallow: /coupons/*cached40%$\n', ['x'], '/coupons/x-cached40%2F').allowed, true);
    const robots = 'User-agent: *\nDisallow: /p1%xy\nDisallow: /*hashid=%subscriber_hash%\n';
    assert.equal(decide(robots, ['x'], '/p1%xy').allowed, false);
    assert.equal(decide(robots, ['x'], '/p1%25xy').allowed, false);
    assert.equal(decide(robots, ['x'], '/p1%2525xy').allowed, true);
    // A real rule: the literal template a mailer left unfilled, which clients send as %25subscriber_hash%25.
    assert.equal(decide(robots, ['x'], '/u?hashid=%25subscriber_hash%25').allowed, false);
    assert.equal(decide(robots, ['x'], '/u?hashid=%subscriber_hash%').allowed, false);
    assert.equal(decide(robots, ['x'], '/u?hashid=abc').allowed, true);
  });

  it('normalisePattern keeps the wildcard and the final anchor, and spells other $ as %24', () => {
    assert.equal(normalisePattern('/a*b$'), '/a*b$');
    assert.equal(normalisePattern('/Web$history'), '/Web%24history');
    assert.equal(normalisePattern('/a$$'), '/a%24$');
    assert.equal(normalisePattern('/a|b'), '/a%7Cb');
  });
});

describe('selectGroup with many bots in turn (lower cases kept, match.ts)', () => {
  it('chooses each request its own group, by any spelling of its tokens, with more bots in turn than tokens kept', () => {
    // 20 groups, one per bot; the lower case of a token is kept for a few tokens only, so these are
    // lowered afresh, found again, and taken over by others as the requests go round.
    const names = Array.from({ length: 20 }, (_, i) => `Bot${String.fromCharCode(65 + i)}x`);
    const robots = parseRobotsTxt(names.map((name, i) => `User-agent: ${name}\nDisallow: /only-${i}\n`).join('\n'));
    const spellings = (name: string): string[] => [name, name.toLowerCase(), name.toUpperCase(), `${name.slice(0, 3).toLowerCase()}${name.slice(3).toUpperCase()}`];
    let seed = 11;
    for (let step = 0; step < 2000; step++) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      const i = seed % (step < 1000 ? 5 : names.length); // a few bots first (kept), then all of them
      const spelling = spellings(names[i] as string)[(seed >> 8) % 4] as string;
      // A token as a request carries it: a fresh string, or the same object again.
      const token = step % 2 === 0 ? spelling : `${spelling} `.trimEnd();
      const chosen = selectGroup(robots, ['Unknown', token, 'Mozilla']);
      assert.equal(chosen.productToken, token, `step ${step}`);
      assert.equal(chosen.group?.productToken, names[i], `step ${step}: ${token}`);
      assert.equal(evaluate(robots, [token], `/only-${i}`).allowed, false);
      assert.equal(evaluate(robots, [token], `/only-${(i + 1) % names.length}`).allowed, true);
    }
    // No group named: the `*` group or none.
    assert.equal(selectGroup(robots, ['Unknown', 'Mozilla']).group, undefined);
    assert.equal(selectGroup(parseRobotsTxt('User-agent: *\nDisallow: /\n'), ['BotAx']).productToken, undefined);
  });
});
