/**
 * The spacing assertions of the four-host scenarios: request starts at a
 * Crawl-delay origin, as the proxy sent them and as the origin saw them.
 */
import assert from 'node:assert/strict';

/**
 * Asserts that request starts are spaced by `delayMs`:
 * - as sent (the proxy's access log `upstreamStartedAt`, ms precision): no gap
 *   under `delayMs - 1` (1 ms of rounding);
 * - as seen by the origin (its own process reads the clock when it handles
 *   each request): OS scheduling on a shared machine can show a start 5-15 ms
 *   late while the proxy sent it on time, which shortens the next gap. So no
 *   gap under 60% of the delay: a pacing bug (requests sent together, gaps of
 *   a few ms) still fails it, scheduling noise does not.
 * - the rate at the origin, starts per second, is at least `minRatePerSecond`
 *   and not above 1000 / delayMs (+0.25%).
 */
export function assertStartSpacing(sentMs: number[], seenMs: number[], delayMs: number, minRatePerSecond: number): void {
  const sent = [...sentMs].sort((a, b) => a - b);
  const sentGaps = sent.slice(1).map((t, i) => t - sent[i]!);
  assert.ok(Math.min(...sentGaps) >= delayMs - 1, `smallest gap as sent ${Math.min(...sentGaps)} ms`);

  const gaps = seenMs.slice(1).map((t, i) => t - seenMs[i]!);
  if (process.env['DEBUG_GAPS']) console.log(gaps.map((g) => g.toFixed(1)).join(' '), '|', sentGaps.join(' '));
  gaps.forEach((gap, i) => {
    const around = gaps.slice(Math.max(0, i - 2), i + 3).map((g) => g.toFixed(1)).join(' ');
    assert.ok(gap >= 0.6 * delayMs, `gap ${i} at the origin is ${gap.toFixed(2)} ms (gaps around it: ${around})`);
  });
  const rate = (seenMs.length - 1) / ((seenMs[seenMs.length - 1]! - seenMs[0]!) / 1000);
  assert.ok(rate <= (1000 / delayMs) * 1.0025, `rate ${rate.toFixed(2)}/s above the ${1000 / delayMs}/s ceiling`);
  assert.ok(rate >= minRatePerSecond, `rate ${rate.toFixed(2)}/s is below ${minRatePerSecond}/s`);
}
