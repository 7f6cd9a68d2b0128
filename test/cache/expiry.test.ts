// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { freshLifetimeMs, retryDelayMs, unreachableRetryMs } from '../../src/cache/expiry.js';

const LIMITS = { ttlMs: 86_400_000, minTtlMs: 60_000 };

describe('freshLifetimeMs (RFC 9111 §5.2.2 within RFC 9309 §2.4)', () => {
  const cases: Array<[string, string | string[] | undefined, string | undefined, number]> = [
    ['no Cache-Control', undefined, undefined, 86_400_000],
    ['unrelated directives', 'public, must-revalidate', undefined, 86_400_000],
    ['max-age', 'max-age=7200', undefined, 7_200_000],
    ['upper-case name, quoted value', 'Max-Age="7200"', undefined, 7_200_000],
    ['split over two field lines', ['public', 'max-age=7200'], undefined, 7_200_000],
    ['same value repeated', 'max-age=7200, max-age=7200', undefined, 7_200_000],
    ['conflicting repeats are stale', 'max-age=7200, max-age=60', undefined, 60_000],
    ['max-age=0', 'max-age=0', undefined, 60_000],
    ['negative max-age is invalid', 'max-age=-5', undefined, 60_000],
    ['max-age without a value', 'max-age', undefined, 60_000],
    ['Age beyond max-age', 'max-age=100', '5000', 60_000],
    ['invalid Age is ignored', 'max-age=7200', 'soon', 7_200_000],
    ['s-maxage alone', 's-maxage=7200', undefined, 7_200_000],
    ['no-store wins over max-age', 'max-age=7200, no-store', undefined, 60_000],
  ];
  for (const [label, cacheControl, age, expected] of cases) {
    it(label, () => {
      assert.equal(freshLifetimeMs(cacheControl, age, LIMITS), expected);
    });
  }
});

describe('retryDelayMs', () => {
  it('doubles per earlier failure and stops at the ceiling', () => {
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 100].map((n) => retryDelayMs(60_000, 1_800_000, n)),
      [60_000, 120_000, 240_000, 480_000, 960_000, 1_800_000, 1_800_000],
    );
  });

  it('never goes below the first delay, even with a smaller ceiling', () => {
    assert.equal(retryDelayMs(60_000, 1_000, 3), 60_000);
    assert.equal(retryDelayMs(60_000, 1_800_000, -1), 60_000);
  });
});

describe('unreachableRetryMs: a 429/503 Retry-After on robots.txt (RFC 9110 §10.2.3)', () => {
  const NOW_MS = Date.UTC(2026, 0, 15, 12, 0, 0);
  const settings = { errorRetryMs: 2_000, errorRetryMaxMs: 1_800_000, retryAfterCapMs: 600_000 };
  const cases: Array<[string, string | undefined, number, number]> = [
    ['no Retry-After: the backoff', undefined, 0, 2_000],
    ['no Retry-After, third failure: the doubled backoff', undefined, 2, 8_000],
    ['Retry-After: 10 beats errorRetry 2s', '10', 0, 10_000],
    ['Retry-After: 10 on the third failure: the doubled backoff is later', '10', 3, 16_000],
    ['Retry-After: 1 is earlier than the backoff: the backoff', '1', 0, 2_000],
    ['Retry-After: 3600 capped at maxRetryAfter', '3600', 0, 600_000],
    ['Retry-After as an HTTP-date 90 s ahead', new Date(NOW_MS + 90_000).toUTCString(), 0, 90_000],
    ['an HTTP-date in the past: the backoff', new Date(NOW_MS - 90_000).toUTCString(), 0, 2_000],
    ['a huge delay-seconds: the cap', '1' + '0'.repeat(400), 0, 600_000],
    ['garbage: the backoff', 'soon', 0, 2_000],
    ['a fraction is invalid: the backoff', '10.5', 0, 2_000],
  ];
  for (const [label, retryAfter, failures, expected] of cases) {
    it(label, () => assert.equal(unreachableRetryMs(settings, failures, retryAfter, NOW_MS), expected));
  }
});
