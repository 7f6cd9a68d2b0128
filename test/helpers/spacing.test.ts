// run-tests: in-process
/**
 * The politeness assertion of the four-host scenarios fails on each kind of
 * pacing fault, on synthetic start times (no clock involved).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertStartSpacing, type RequestStart } from './spacing.js';

const DELAY_MS = 50;
const T0 = 1_700_000_000_000;

/** Starts sent at the given offsets from T0, one path each. */
function startsAt(offsetsMs: readonly number[]): RequestStart[] {
  return offsetsMs.map((offset, i) => ({ path: `/page/${i}`, atMs: T0 + offset }));
}

/** 60 starts exactly `gapMs` apart. */
function evenly(gapMs: number): number[] {
  return Array.from({ length: 60 }, (_, i) => i * gapMs);
}

/** The same starts as the origin saw them, each `lateMs(i)` later. */
function seenLater(sent: readonly RequestStart[], lateMs: (i: number) => number): RequestStart[] {
  return sent.map((s, i) => ({ path: s.path, atMs: s.atMs + lateMs(i) }));
}

describe('assertStartSpacing', () => {
  it('passes starts a delay apart, however late and unevenly the origin saw them', () => {
    const sent = startsAt(evenly(DELAY_MS));
    assertStartSpacing(sent, seenLater(sent, (i) => (i % 7 === 0 ? 40 : 0.3)), DELAY_MS);
    // A loaded machine: the proxy sent some starts late (gaps of 90 ms), never early.
    const slow = startsAt(evenly(DELAY_MS).map((t, i) => t + (i > 10 ? 40 : 0)));
    assertStartSpacing(slow, seenLater(slow, () => 2), DELAY_MS);
  });

  it('fails one gap under the delay as sent', () => {
    const offsets = evenly(DELAY_MS).map((t, i) => (i >= 30 ? t - 10 : t));
    const sent = startsAt(offsets);
    assert.throws(() => assertStartSpacing(sent, seenLater(sent, () => 1), DELAY_MS), /starts 29\.\.30 as sent/);
  });

  it('fails a rate above the ceiling even when every gap is within the tolerance', () => {
    const sent = startsAt(evenly(DELAY_MS - 0.5));
    assert.throws(() => assertStartSpacing(sent, seenLater(sent, () => 1), DELAY_MS), /short of 59 x 50 ms/);
  });

  it('fails when the origin saw a request before the proxy logged sending it (a burst logged as spaced)', () => {
    const sent = startsAt(evenly(DELAY_MS));
    const burst = sent.map((s, i) => ({ path: s.path, atMs: T0 + i * 0.2 }));
    assert.throws(() => assertStartSpacing(sent, burst, DELAY_MS), /before the proxy logged sending them/);
  });

  it('fails when the origin saw a request the proxy did not send, or missed one', () => {
    const sent = startsAt(evenly(DELAY_MS));
    const seen = seenLater(sent, () => 1);
    assert.throws(() => assertStartSpacing(sent, [...seen, { path: '/page/extra', atMs: T0 + 5000 }], DELAY_MS), /exactly the requests the proxy sent/);
    assert.throws(() => assertStartSpacing(sent, seen.slice(1), DELAY_MS), /exactly the requests the proxy sent/);
  });
});
