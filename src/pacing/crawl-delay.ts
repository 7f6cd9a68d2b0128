/**
 * The delay a robots.txt crawl-delay imposes on the pacer (crawl-delay is an
 * extension, RFC 9309 §2.2.4). Pure: no clock, no timers.
 */

/**
 * A crawl-delay in seconds as the pacer's delay, ms: rounded to whole ms and
 * clamped to `[0, maxCrawlDelayMs]` (`pacing.maxCrawlDelay`). The parser
 * already clamps to the ceiling it was given; clamping again here applies a
 * ceiling changed since the snapshot was parsed, and keeps any value, however
 * it was built, from reaching the pacer (which refuses a non-finite delay).
 * An infinite or NaN value gets the ceiling: a site asking for restraint in a
 * form we cannot read exactly gets the most restraint, never none.
 * @param crawlDelaySeconds the decision's crawl-delay, seconds, or null for none.
 * @param maxCrawlDelayMs the ceiling, ms (finite, >= 0).
 * @returns ms, a finite integer in `[0, maxCrawlDelayMs]`. Never throws.
 */
export function crawlDelayMsOf(crawlDelaySeconds: number | null, maxCrawlDelayMs: number): number {
  if (crawlDelaySeconds === null) return 0;
  if (Number.isNaN(crawlDelaySeconds)) return maxCrawlDelayMs;
  return Math.min(maxCrawlDelayMs, Math.max(0, Math.round(crawlDelaySeconds * 1000)));
}
