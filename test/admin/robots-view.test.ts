// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeRobotsSnapshot, MAX_LISTED_GROUPS, MAX_LISTED_TOKENS } from '../../src/admin/robots-view.js';
import { parseRobotsTxt } from '../../src/robots/index.js';
import type { SnapshotInfo } from '../../src/policy/decision.js';

/** `i` spelt in letters (product tokens are cut at the first digit). */
function letters(i: number): string {
  return i.toString(26).replace(/[0-9]/g, (d) => String.fromCharCode(0x71 + Number(d))).replace(/[a-p]/g, (c) => c.toUpperCase());
}

const info: SnapshotInfo = { url: 'https://a.example/robots.txt', state: 'ok', status: 200, error: undefined, fetchedAtMs: 1000, expiresAtMs: 2000, bytes: 10, truncated: false };

describe('describeRobotsSnapshot', () => {
  it('summarises groups, crawl-delays per token and warnings', () => {
    const robots = parseRobotsTxt(
      'User-agent: a\nUser-agent: b\nCrawl-delay: 1e300\nDisallow: /x\nAllow: /x/y\n\nUser-agent: *\nCrawl-delay: 0.5\nRequest-rate: 1/10\nDisallow: /\nSitemap: https://a.example/s.xml\n',
    );
    const view = describeRobotsSnapshot('https://a.example', { info, robots, lastFailure: null }, 2000);
    assert.deepEqual(view.groups, [
      { line: 1, productTokens: ['a', 'b'], productTokenCount: 2, allowRules: 1, disallowRules: 1, crawlDelaySeconds: 86_400, requestRate: null },
      { line: 7, productTokens: ['*'], productTokenCount: 1, allowRules: 0, disallowRules: 1, crawlDelaySeconds: 0.5, requestRate: { requests: 1, seconds: 10 } },
    ]);
    assert.deepEqual(view.crawlDelays, { a: 86_400, b: 86_400, '*': 0.5 });
    assert.equal(view.sitemapCount, 1);
    assert.deepEqual(view.warnings.map((w) => [w.line, w.code]), [[3, 'crawl-delay-clamped']]);
    assert.equal(view.nextFetchAtMs, 2000);
  });

  it('stays small for 100,000 user-agent lines, and keeps a __proto__ token as data', () => {
    const body = 'User-agent: __proto__\nCrawl-delay: 3\n' + Array.from({ length: 100_000 }, (_, i) => `User-agent: bot${letters(i)}\nCrawl-delay: 1\n`).join('');
    const robots = parseRobotsTxt(body, { maxBytes: 10_000_000 });
    const view = describeRobotsSnapshot('https://a.example', { info, robots, lastFailure: null }, 2000);
    assert.equal(view.groupCount, 1);
    assert.equal(view.groups[0]?.productTokens.length, MAX_LISTED_TOKENS);
    assert.ok(view.groups[0]!.productTokenCount > 90_000);
    assert.equal(Object.keys(view.crawlDelays).length, 1000);
    assert.ok(view.crawlDelayTokenCount > 90_000);
    assert.equal(JSON.parse(JSON.stringify(view)).crawlDelays['__proto__'], 3);
    assert.ok(JSON.stringify(view).length < 100_000, `${JSON.stringify(view).length} bytes`);
  });

  it('lists at most MAX_LISTED_GROUPS groups', () => {
    const robots = parseRobotsTxt(Array.from({ length: 500 }, (_, i) => `User-agent: b${i}\nDisallow: /\n`).join(''));
    const view = describeRobotsSnapshot('https://a.example', { info, robots, lastFailure: null }, 2000);
    assert.equal(view.groups.length, MAX_LISTED_GROUPS);
    assert.equal(view.groupCount, 500);
  });

  it('describes an unreachable snapshot and a kept one with its failure', () => {
    const failure: SnapshotInfo = { ...info, state: 'unreachable', status: 503, fetchedAtMs: 5000, expiresAtMs: 9000 };
    const unreachable = describeRobotsSnapshot('https://a.example', { info: failure, robots: null, lastFailure: null }, 9000);
    assert.equal(unreachable.lineCount, 0);
    assert.deepEqual(unreachable.lastFailure, failure, 'a failure with no good snapshot to keep is the last failure too');
    assert.equal(describeRobotsSnapshot('https://a.example', { info, robots: null, lastFailure: null }, 9000).lastFailure, null);
    assert.deepEqual(unreachable.groups, []);
    assert.deepEqual(unreachable.warnings, []);
    const kept = describeRobotsSnapshot('https://a.example', { info, robots: parseRobotsTxt('User-agent: *\nDisallow: /\n'), lastFailure: failure }, 9000);
    assert.equal(kept.lastFailure?.status, 503);
    assert.equal(kept.groupCount, 1);
  });
});
