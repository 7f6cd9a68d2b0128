/**
 * The demo's table: one row per origin, from what the crawler got back (the
 * `X-Robots-Proxy-Decision` header of every response) and what each origin
 * saw (its request log). Nothing here is asserted; figures are reported.
 */
import type { PlannedSite } from './crawl-plan.js';

/** What the crawler got for one request. */
export interface CrawlResult {
  botName: string;
  /** Path plus query asked for. */
  path: string;
  /** HTTP status received; 0 when no response arrived. */
  status: number;
  /** From `X-Robots-Proxy-Decision`: `allow`, `deny`; `none` without the header, `error` without a response. */
  verdict: string;
  /** The decision's reason (or the client error code when verdict is `error`). */
  reason: string;
  /** The verdict the offline engine planned (`either`: the versions of a changing robots.txt disagree). */
  expected: 'allow' | 'deny' | 'either';
}

/** One request start: as the origin saw it, or as the proxy sent it. */
export interface OriginHit {
  /** Path plus query. */
  path: string;
  userAgent: string;
  /** When it started, ms, on some clock (only differences are used). */
  atMs: number;
}

/** Everything known about one origin after the crawl. */
export interface SiteOutcome {
  site: PlannedSite;
  results: CrawlResult[];
  /** Requests as the origin saw them (`atMs`: the origin process's `performance.now()`). */
  hits: OriginHit[];
  /** Page requests as the proxy sent them upstream (its access log; `atMs` since the epoch, whole ms). */
  sent: OriginHit[];
}

/** Deny reasons get a column each, in this order when present. */
const REASON_ORDER = ['rule-disallow', 'robots-unreachable', 'queue-full'];

/** Parses `<verdict>; reason=<reason>`; missing header gives verdict `none`. */
export function parseDecisionHeader(value: string | string[] | undefined): { verdict: string; reason: string } {
  const text = Array.isArray(value) ? value[0] : value;
  const match = /^(\w+); reason=([\w-]+)$/.exec(text ?? '');
  return match ? { verdict: match[1]!, reason: match[2]! } : { verdict: 'none', reason: 'no-header' };
}

function formatSeconds(seconds: number | null): string {
  return seconds === null ? '–' : String(seconds);
}

/** `0.1 (Googlebot –)`: the most common declared delay, then the bots that differ. */
function describeDelays(site: PlannedSite, botsUsed: ReadonlySet<string>): string {
  if (site.robotsBody === undefined) return (site.spec.robotsStatus ?? 404) >= 500 ? 'n/a (robots.txt unreachable: all refused)' : '– (robots.txt unavailable: all allowed)';
  const entries = [...site.declaredDelay].filter(([bot]) => botsUsed.has(bot));
  const counts = new Map<string, number>();
  for (const [, delay] of entries) counts.set(formatSeconds(delay), (counts.get(formatSeconds(delay)) ?? 0) + 1);
  const common = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '–';
  const exceptions = entries.filter(([, d]) => formatSeconds(d) !== common).map(([bot, d]) => `${bot} ${formatSeconds(d)}`);
  return exceptions.length === 0 ? `${common} (all)` : `${common} (${exceptions.join(', ')})`;
}

/** The smallest gap found, and what was required there, ms. */
interface SmallestGap {
  gapMs: number;
  needMs: number;
}

/**
 * Smallest gap between consecutive starts that ends at a request whose bot has a delay (the
 * one with the least slack over its own delay); when no bot had a delay, the smallest gap of all.
 * @param starts sorted by `atMs`.
 */
function findSmallestGap(starts: OriginHit[], delayMsByAgent: Map<string, number>): SmallestGap | undefined {
  const gaps = starts.slice(1).map((hit, i) => ({ gapMs: hit.atMs - starts[i]!.atMs, needMs: delayMsByAgent.get(hit.userAgent) ?? 0 }));
  const delayed = gaps.filter((g) => g.needMs > 0);
  return (delayed.length > 0 ? delayed : gaps).reduce<SmallestGap | undefined>((min, g) => (min === undefined || g.gapMs - g.needMs < min.gapMs - min.needMs ? g : min), undefined);
}

/** Per-site figures and the rendered table lines. */
export function renderTable(outcomes: SiteOutcome[], userAgentToBot: Map<string, string>): { lines: string[]; leaks: number; mismatches: number } {
  const reasons = [...new Set(outcomes.flatMap((o) => o.results.filter((r) => r.verdict === 'deny').map((r) => r.reason)))];
  reasons.sort((a, b) => (REASON_ORDER.indexOf(a) + 1 || 99) - (REASON_ORDER.indexOf(b) + 1 || 99) || a.localeCompare(b));
  const header = ['origin serves', 'reqs', 'allowed', ...reasons, 'other', 'hits', 'robots', 'rate/s', 'gap seen/need ms', 'gap sent/need ms', 'crawl-delay s (bots used)'];
  const rows: string[][] = [];
  let leaks = 0;
  let mismatches = 0;
  for (const { site, results, hits, sent } of outcomes) {
    const allowed = results.filter((r) => r.verdict === 'allow' && r.status >= 200 && r.status < 300).length;
    const refused = reasons.map((reason) => results.filter((r) => r.verdict === 'deny' && r.reason === reason).length);
    const other = results.length - allowed - refused.reduce((a, b) => a + b, 0);
    const pages = hits.filter((h) => h.path !== '/robots.txt').sort((a, b) => a.atMs - b.atMs);
    const robotsFetches = hits.length - pages.length;
    const refusedKeys = new Set(results.filter((r) => r.verdict !== 'allow').map((r) => `${r.botName} ${r.path}`));
    leaks += pages.filter((h) => refusedKeys.has(`${userAgentToBot.get(h.userAgent)} ${h.path}`)).length;
    mismatches += results.filter((r) => r.expected !== 'either' && (r.verdict === 'allow' ? 'allow' : 'deny') !== r.expected).length;
    const spanS = pages.length >= 2 ? (pages[pages.length - 1]!.atMs - pages[0]!.atMs) / 1000 : 0;
    const rate = spanS > 0 ? ((pages.length - 1) / spanS).toFixed(2) : '–';
    const delayMsByAgent = new Map<string, number>();
    for (const [ua, bot] of userAgentToBot) delayMsByAgent.set(ua, Math.round((site.declaredDelay.get(bot) ?? 0) * 1000));
    const botsUsed = new Set(results.map((r) => r.botName));
    const seenGap = findSmallestGap(pages, delayMsByAgent);
    const sentGap = findSmallestGap([...sent].sort((a, b) => a.atMs - b.atMs), delayMsByAgent);
    rows.push([
      site.spec.label,
      String(results.length),
      String(allowed),
      ...refused.map(String),
      String(other),
      String(pages.length),
      String(robotsFetches),
      rate,
      seenGap === undefined ? '–' : `${seenGap.gapMs.toFixed(1)}/${seenGap.needMs}`,
      sentGap === undefined ? '–' : `${sentGap.gapMs.toFixed(0)}/${sentGap.needMs}`,
      describeDelays(site, botsUsed),
    ]);
  }
  // reqs, allowed, each reason, other, hits, robots: the columns that add up.
  const summed = 5 + reasons.length;
  const totals = ['total', ...Array.from({ length: summed }, (_, i) => String(rows.reduce((sum, row) => sum + Number(row[i + 1]), 0)))];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length), totals[i]?.length ?? 0));
  const isText = (i: number): boolean => i === 0 || i === header.length - 1;
  const format = (cells: string[]): string =>
    cells
      .map((c, i) => (isText(i) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return { lines: [format(header), rule, ...rows.map(format), rule, format(totals)], leaks, mismatches };
}

/** The footer: what each column means. */
export function renderFooter(facts: { connections: number; budgetSeconds: number }): string[] {
  return [
    'Columns:',
    '  origin serves  the robots.txt this 127.0.0.1 origin serves, read from test/fixtures/robots/, or the status it answers instead;',
    '                 "(robots.txt changes)" serves three versions, the next at each fetch (the last stays), each with Cache-Control: max-age=2',
    '  reqs           requests the crawler sent to this origin through the proxy (several real bot User-Agents; paths built from',
    '                 the rules of the group that applies to each bot, so some are disallowed, plus ordinary paths)',
    '  allowed        allowed by the proxy and answered 2xx by the origin',
    '  rule-disallow  refused by the proxy with 403: a Disallow rule of the bot\'s group matched (RFC 9309 §2.2.2)',
    '  robots-unreachable  refused with 503 + Retry-After: robots.txt answered 5xx, so all is disallowed (§2.3.1.4)',
    '  queue-full     (if present) refused with 429: the wait for a start slot would exceed pacing.maxWait',
    '  other          anything else (upstream errors, client errors); 0 is expected',
    '  hits           page requests the origin actually received; equal to "allowed" when nothing refused leaked through',
    '  robots         robots.txt fetches the origin received (once per origin and cache lifetime, however many bots ask at once)',
    '  rate/s         page requests per second at the origin, first to last (a Crawl-delay of d s caps it at 1/d)',
    '  gap seen/need  smallest time between two consecutive request starts as the origin saw them, and the Crawl-delay',
    '                 that applied there, ms. Only gaps that end at a request whose bot has a delay count (the one with',
    '                 the least slack over its delay); where no bot has a delay, the smallest gap of all, /0 (up to',
    '                 pacing.maxConcurrency run at once). Taken when the origin\'s handler runs, in a separate process:',
    '                 on a busy machine a late timestamp shortens one gap (and lengthens the next) by that much',
    '  gap sent/need  the same from the proxy\'s access log (upstreamStartedAt: when the request left the proxy; whole',
    '                 ms, so +-1 ms of rounding). This is what the pacer controls',
    '  crawl-delay s  Crawl-delay of the group that applies to each bot used ("–": none); the most common value first,',
    '                 the bots that differ in parentheses. A "*" group with a delay slows every bot it applies to',
    `Pacing model start-to-start: a request with a delay runs alone and starts no earlier than the previous start plus`,
    `its own delay. Allowed requests with a delay were planned to fit ${facts.budgetSeconds} s per origin; ${facts.connections} client connections.`,
  ];
}
