/**
 * The admin view of one origin's robots snapshot (`GET /robots?origin=`): how
 * it was obtained, a summary of its groups, the crawl-delays it gives, and the
 * parse warnings. Plain JSON, bounded in size whatever the file holds. Pure.
 * Extension, not in RFC 9309.
 */
import type { CachedRobotsSnapshot } from '../cache/index.js';
import type { SnapshotInfo } from '../policy/decision.js';
import type { ParseWarning, RequestRate } from '../robots/types.js';

/** Groups listed in a view; a file may hold 100,000 (the rest are counted). */
export const MAX_LISTED_GROUPS = 200;
/** Product tokens listed per group, and crawl-delays listed per view. */
export const MAX_LISTED_TOKENS = 50;
export const MAX_LISTED_CRAWL_DELAYS = 1000;

/** One group as written, summarised. */
export interface GroupSummary {
  /** Line of its first `user-agent` line. */
  line: number;
  /** Its product tokens (the first {@link MAX_LISTED_TOKENS}). */
  productTokens: string[];
  /** How many product tokens it names in all. */
  productTokenCount: number;
  /** How many `allow` / `disallow` rules it holds. */
  allowRules: number;
  disallowRules: number;
  /** Its largest crawl-delay, seconds (after the parse's ceiling), or null. */
  crawlDelaySeconds: number | null;
  requestRate: RequestRate | null;
}

/** The answer of `GET /robots?origin=`. */
export interface RobotsView {
  origin: string;
  /** The snapshot served: how it was obtained (the last good one when the latest fetch failed). */
  snapshot: SnapshotInfo;
  /**
   * The latest failed fetch (unreachable: 5xx, 429, timeout, network or TLS error), while it is
   * the latest attempt: behind a kept good snapshot, or `snapshot` itself when there is none to
   * keep; null once a fetch succeeds.
   */
  lastFailure: SnapshotInfo | null;
  /** When robots.txt will next be fetched, ms since the epoch. */
  nextFetchAtMs: number;
  /** Lines of the parsed body; 0 when there is none (4xx, unreachable). */
  lineCount: number;
  /** Groups as written (the first {@link MAX_LISTED_GROUPS}), and how many there are. */
  groups: GroupSummary[];
  groupCount: number;
  /**
   * Crawl-delay in seconds per product token (lower-cased; `*` for the global group), as merged
   * groups give it (the largest one), for the tokens that have one; at most {@link MAX_LISTED_CRAWL_DELAYS}.
   */
  crawlDelays: Record<string, number>;
  crawlDelayTokenCount: number;
  sitemapCount: number;
  /** Parse warnings: ignored lines, clamped values, truncation, a body that looks like HTML (see `ParseWarning`). */
  warnings: ParseWarning[];
}

/**
 * Builds the admin view of `snapshot`, the cached robots snapshot of `origin`.
 * @param nextFetchAtMs when the cache will fetch robots.txt again, ms since the epoch.
 * Pure; never throws.
 */
export function describeRobotsSnapshot(origin: string, snapshot: CachedRobotsSnapshot, nextFetchAtMs: number): RobotsView {
  const robots = snapshot.robots;
  const groups: GroupSummary[] = (robots?.groups ?? []).slice(0, MAX_LISTED_GROUPS).map((group) => {
    const disallowRules = group.rules.reduce((n, rule) => n + (rule.kind === 'disallow' ? 1 : 0), 0);
    return {
      line: group.line,
      productTokens: group.productTokens.slice(0, MAX_LISTED_TOKENS),
      productTokenCount: group.productTokens.length,
      allowRules: group.rules.length - disallowRules,
      disallowRules,
      crawlDelaySeconds: group.crawlDelaySeconds ?? null,
      requestRate: group.requestRate ?? null,
    };
  });
  const crawlDelays: Record<string, number> = {};
  let crawlDelayTokenCount = 0;
  for (const [token, merged] of robots?.groupsByToken ?? []) {
    if (merged.crawlDelaySeconds === undefined) continue;
    // Own properties only: a token spelt `__proto__` stays data.
    if (crawlDelayTokenCount++ < MAX_LISTED_CRAWL_DELAYS) Object.defineProperty(crawlDelays, token, { value: merged.crawlDelaySeconds, enumerable: true });
  }
  return {
    origin,
    snapshot: snapshot.info,
    lastFailure: snapshot.lastFailure ?? (snapshot.info.state === 'unreachable' ? snapshot.info : null),
    nextFetchAtMs,
    lineCount: robots?.lineCount ?? 0,
    groups,
    groupCount: robots?.groups.length ?? 0,
    crawlDelays,
    crawlDelayTokenCount,
    sitemapCount: robots?.sitemaps.length ?? 0,
    warnings: robots?.warnings ?? [],
  };
}
