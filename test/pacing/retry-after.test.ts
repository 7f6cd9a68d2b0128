// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { computeBackoffMs, parseHttpDate, parseRetryAfter } from '../../src/pacing/retry-after.js';

const NOW = Date.UTC(2025, 5, 15, 12, 0, 0); // Sun, 15 Jun 2025 12:00:00 GMT

describe('parseRetryAfter (RFC 9110 §10.2.3)', () => {
  it('reads delay-seconds as ms from now', () => {
    assert.equal(parseRetryAfter('120', NOW), 120_000);
    assert.equal(parseRetryAfter('0', NOW), 0);
    assert.equal(parseRetryAfter(' \t5 ', NOW), 5000);
    assert.equal(parseRetryAfter('007', NOW), 7000);
  });

  it('bounds a huge delay-seconds instead of overflowing', () => {
    assert.equal(parseRetryAfter('9'.repeat(400), NOW), Number.MAX_SAFE_INTEGER);
  });

  it('rejects what is neither delay-seconds nor an HTTP-date', () => {
    for (const value of ['', ' ', '-1', '+5', '1.5', '1e3', '5s', '5, 5', 'soon', '0x10', 'Infinity']) {
      assert.equal(parseRetryAfter(value, NOW), undefined, JSON.stringify(value));
    }
    assert.equal(parseRetryAfter(undefined, NOW), undefined);
    assert.equal(parseRetryAfter(null, NOW), undefined);
  });

  it('reads an IMF-fixdate as ms from now, and a past date as 0', () => {
    assert.equal(parseRetryAfter('Sun, 15 Jun 2025 12:01:30 GMT', NOW), 90_000);
    assert.equal(parseRetryAfter('Sun, 15 Jun 2025 11:00:00 GMT', NOW), 0);
    assert.equal(parseRetryAfter('Sun, 15 Jun 2025 12:00:00 GMT', NOW), 0);
  });

  it('reads the obsolete RFC 850 and asctime formats', () => {
    assert.equal(parseRetryAfter('Sunday, 15-Jun-25 12:00:10 GMT', NOW), 10_000);
    assert.equal(parseRetryAfter('Sun Jun 15 12:00:20 2025', NOW), 20_000);
    assert.equal(parseRetryAfter('Sun Jun  1 12:00:00 2025', NOW), 0);
  });
});

describe('parseHttpDate (RFC 9110 §5.6.7)', () => {
  it('parses the three formats to the same instant', () => {
    const expected = Date.UTC(1994, 10, 6, 8, 49, 37);
    assert.equal(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT', NOW), expected);
    assert.equal(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', NOW), expected);
    assert.equal(parseHttpDate('Sun Nov  6 08:49:37 1994', NOW), expected);
  });

  it('takes a two-digit year more than 50 years ahead as the past century', () => {
    // now is 2025: 75 -> 2075 (50 years ahead, kept); 76 -> 2076 would be 51 ahead -> 1976.
    assert.equal(parseHttpDate('Monday, 01-Jan-75 00:00:00 GMT', NOW), Date.UTC(2075, 0, 1));
    assert.equal(parseHttpDate('Thursday, 01-Jan-76 00:00:00 GMT', NOW), Date.UTC(1976, 0, 1));
  });

  it('keeps four-digit years below 100 as written', () => {
    const date = new Date(0);
    date.setUTCFullYear(99, 0, 1);
    assert.equal(parseHttpDate('Fri, 01 Jan 0099 00:00:00 GMT', NOW), date.getTime());
  });

  it('accepts a leap second', () => {
    assert.equal(parseHttpDate('Sat, 31 Dec 2016 23:59:60 GMT', NOW), Date.UTC(2017, 0, 1));
  });

  it('rejects impossible or malformed dates', () => {
    for (const text of [
      'Sun, 30 Feb 2025 12:00:00 GMT',
      'Sun, 15 Jun 2025 24:00:00 GMT',
      'Sun, 15 Jun 2025 12:60:00 GMT',
      'Sun, 15 Jun 2025 12:00:61 GMT',
      'Sun, 15 Jun 2025 12:00:00 UTC',
      'Sun, 15 Jun 2025 12:00:00 +0000',
      'sun, 15 jun 2025 12:00:00 GMT',
      'Sun, 5 Jun 2025 12:00:00 GMT',
      'Sun, 15 June 2025 12:00:00 GMT',
      '2025-06-15T12:00:00Z',
      'Sun Jun 15 12:00:00 2025 GMT',
    ]) {
      assert.equal(parseHttpDate(text, NOW), undefined, text);
    }
  });
});

describe('computeBackoffMs', () => {
  const settings = { baseMs: 1000, capMs: 8000 };

  it('doubles the ceiling per attempt up to the cap, scaled by the random draw', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 60, 10_000].map((attempt) => computeBackoffMs(attempt, settings, () => 0.5)),
      [500, 1000, 2000, 4000, 4000, 4000, 4000],
    );
  });

  it('draws over the full range [0, ceiling)', () => {
    assert.equal(computeBackoffMs(3, settings, () => 0), 0);
    assert.equal(computeBackoffMs(3, settings, () => 0.999), 3996);
  });

  it('clamps a broken random source to the polite side', () => {
    assert.equal(computeBackoffMs(1, settings, () => Number.NaN), 1000);
    assert.equal(computeBackoffMs(1, settings, () => 7), 1000);
    assert.equal(computeBackoffMs(1, settings, () => -1), 0);
    assert.equal(computeBackoffMs(0, settings, () => 0.5), 500);
  });
});
