import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, normalisePath, parseRobotsTxt, selectGroup } from '../../src/robots/index.js';

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
