/**
 * How many bytes of heap a cached robots snapshot costs: the snapshot and its
 * cache entry, the parsed file, and the prefix index of every group (built on
 * first use; counted from the start, so the estimate does not grow later).
 * The robots cache's byte budget (`robots.cacheBytes`) is spent in these
 * estimates.
 *
 * A linear model over what the parser produced, calibrated against the heap:
 * see the calibration note of {@link SNAPSHOT_COST_BYTES}; `npm run
 * bench:memory` measures it again and prints how the estimate compares.
 */
import type { RobotsSnapshot } from '../policy/snapshot.js';
import type { RobotsTxt } from '../robots/types.js';

/**
 * Bytes per unit of each feature of a parsed file (V8 on 64-bit Node 20,
 * without pointer compression), index of every group included.
 *
 * CALIBRATION (bench/snapshot-size.bench.ts measures it again): 857 files of
 * the shared robots.txt corpus (every file of 16 KiB and more, and a fixed
 * 12 % sample of the smaller ones) and 26 synthetic hostile files (many
 * groups, many tokens, short, long, wildcard and percent-encoded rules,
 * sitemaps, crawl-delays, warnings), each parsed and indexed 1 to 12 times
 * and measured by heapUsed after gc. Per-unit costs were read off the large
 * synthetic files (where heap noise, about 300 KB per reading, is small) and
 * the largest corpus files, then rounded up until the estimate covered the
 * corpus. Result, estimate / measured: for the 100 corpus files measured
 * above 200 KB, 5th percentile 0.99, median 1.19, sum 1.28; for the 19 above
 * 1 MB, 0.97 to 1.65; the whole sample 116.6 MiB estimated for 87.1 MiB
 * measured; hostile files 1.0 to 5.5 (the worst of them, 18,000 one-rule
 * groups in 500 KiB, is estimated at 39.5 MiB for 11.8 MiB measured). Below
 * about 50 KB the readings are noise and the per-unit costs decide.
 */
export const SNAPSHOT_COST_BYTES = {
  /** A snapshot with its info, cache entry, LRU slot and origin key, parsed or not. */
  entry: 1024,
  /** Per octet parsed, when the file has a group: the file's text, which rule patterns (V8 sliced strings) keep alive. */
  octet: 1,
  /** Per group as written (its object, arrays, crawl-delay map) and its index's root. */
  group: 1400,
  /** Per user-agent line (the token string, its merged group when new, map entries). */
  token: 900,
  /** Per rule (its object, pattern string, index entry and nodes: about 110 parsed, 300 indexed). */
  rule: 420,
  /** Per char of a rule pattern (copied strings, index labels and tails). */
  patternChar: 2,
  /** Per rule with a `*` (its tail in the index). */
  wildcardRule: 150,
  /** Per sitemap URL, plus each of its chars. */
  sitemap: 64,
  sitemapChar: 1,
  /** Per warning kept (at most 100 per file). */
  warning: 300,
} as const;

/** The features of a parsed file the model counts. */
export interface RobotsFeatures {
  octets: number;
  groups: number;
  tokens: number;
  rules: number;
  patternChars: number;
  wildcardRules: number;
  sitemaps: number;
  sitemapChars: number;
  warnings: number;
}

/** Counts the features of `robots`. Pure; O(rules). */
export function featuresOf(robots: RobotsTxt): RobotsFeatures {
  const f: RobotsFeatures = { octets: robots.bytesParsed, groups: robots.groups.length, tokens: 0, rules: 0, patternChars: 0, wildcardRules: 0, sitemaps: robots.sitemaps.length, sitemapChars: 0, warnings: robots.warnings.length };
  for (const group of robots.groups) {
    f.tokens += group.productTokens.length;
    f.rules += group.rules.length;
    for (const rule of group.rules) {
      f.patternChars += rule.pattern.length;
      if (rule.pattern.includes('*')) f.wildcardRules++;
    }
  }
  for (const sitemap of robots.sitemaps) f.sitemapChars += sitemap.length;
  return f;
}

/** The model's estimate for a parsed file, bytes, without the entry's own cost. */
export function estimateRobotsBytes(robots: RobotsTxt): number {
  const c = SNAPSHOT_COST_BYTES;
  const f = featuresOf(robots);
  return (
    (f.groups > 0 ? f.octets * c.octet : 0) +
    f.groups * c.group +
    f.tokens * c.token +
    f.rules * c.rule +
    f.patternChars * c.patternChar +
    f.wildcardRules * c.wildcardRule +
    f.sitemaps * c.sitemap +
    f.sitemapChars * c.sitemapChar +
    f.warnings * c.warning
  );
}

const robotsBytes = new WeakMap<RobotsTxt, number>();

/**
 * Estimated heap bytes of a cached snapshot: the entry plus its parsed file
 * (memoised per parsed file: a good snapshot kept while robots.txt is
 * unreachable is not walked again). Pure; never throws.
 */
export function estimateSnapshotBytes(snapshot: RobotsSnapshot): number {
  const robots = snapshot.robots;
  if (robots === null) return SNAPSHOT_COST_BYTES.entry;
  let bytes = robotsBytes.get(robots);
  if (bytes === undefined) {
    bytes = Math.ceil(estimateRobotsBytes(robots));
    robotsBytes.set(robots, bytes);
  }
  return SNAPSHOT_COST_BYTES.entry + bytes;
}
