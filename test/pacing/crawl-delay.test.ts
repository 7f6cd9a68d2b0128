// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { crawlDelayMsOf } from '../../src/pacing/crawl-delay.js';
import { checkRequestLimits } from '../../src/pacing/pacing-options.js';
import { decide } from '../../src/policy/decide.js';
import { parseRobotsTxt } from '../../src/robots/index.js';

describe('crawlDelayMsOf', () => {
  const DAY_MS = 86_400_000;
  const cases: Array<[number | null, number]> = [
    [null, 0],
    [0, 0],
    [0.05, 50],
    [0.0004, 0],
    [2.5, 2_500],
    [86_400, DAY_MS],
    [2_147_484, DAY_MS],
    [1e21, DAY_MS],
    [2e305, DAY_MS],
    [Infinity, DAY_MS],
    [NaN, DAY_MS],
    [-3, 0],
  ];
  for (const [seconds, expected] of cases) {
    it(`${seconds} s -> ${expected} ms (ceiling 24 h)`, () => assert.equal(crawlDelayMsOf(seconds, DAY_MS), expected));
  }

  it('applies a lower ceiling than the one the snapshot was parsed with', () => {
    assert.equal(crawlDelayMsOf(86_400, 3_600_000), 3_600_000);
  });
});

describe('crawl-delay property: no value any robots.txt holds reaches the pacer out of range', () => {
  // Numbers of every size and spelling, and garbage, as a site could write them.
  const delayValue = fc.oneof(
    fc.double().map(String),
    fc.bigInt({ min: -(10n ** 400n), max: 10n ** 400n }).map(String),
    fc.tuple(fc.integer({ min: -9, max: 9 }), fc.integer({ min: -999, max: 999 })).map(([m, e]) => `${m}e${e}`),
    fc.constantFrom('inf', '-inf', 'Infinity', 'NaN', '+0', '-0', '.', '1.', '.5', '0x10', '1_000', '١٢'),
    fc.string(),
  );
  const body = fc
    .array(fc.tuple(fc.constantFrom('Crawl-delay', 'Request-rate', 'Disallow', 'User-agent'), delayValue), { maxLength: 8 })
    .map((lines) => `User-agent: *\n${lines.map(([k, v]) => `${k}: ${v}`).join('\n')}\n`);

  it('parse -> decide -> crawlDelayMsOf is a finite integer ms within the ceiling, which the pacer accepts', () => {
    const maxMs = 86_400_000;
    fc.assert(
      fc.property(body, fc.integer({ min: 1_000, max: 2_592_000_000 }), (text, ceilingMs) => {
        const robots = parseRobotsTxt(text, { maxCrawlDelaySeconds: ceilingMs / 1000 });
        const info = { url: 'http://a.example/robots.txt', state: 'ok' as const, status: 200, error: undefined, fetchedAtMs: 0, expiresAtMs: 1, bytes: text.length, truncated: false };
        const decision = decide({ info, robots }, { origin: 'http://a.example', pathAndQuery: '/', productTokens: ['bot'] });
        if (decision.crawlDelaySeconds !== null) {
          assert.ok(Number.isFinite(decision.crawlDelaySeconds) && decision.crawlDelaySeconds >= 0 && decision.crawlDelaySeconds <= ceilingMs / 1000);
        }
        assert.doesNotThrow(() => JSON.stringify(robots.warnings));
        const delayMs = crawlDelayMsOf(decision.crawlDelaySeconds, maxMs);
        assert.ok(Number.isInteger(delayMs) && delayMs >= 0 && delayMs <= maxMs, String(delayMs));
        assert.doesNotThrow(() => checkRequestLimits(delayMs, undefined));
      }),
      { numRuns: 2000 },
    );
  });
});
