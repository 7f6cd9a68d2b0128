/**
 * The report's data: every table the page shows, as plain rows with ordered
 * columns (so the page, the JSON and the CSV export show the same figures),
 * built from a {@link LedgerReader} for one {@link ReportQuery}, plus the
 * highlights that answer "which bot was refused most and by which line, which
 * robots.txt changed or failed, which bot waited longest". Extension, not in RFC 9309.
 */
import { createTwoFilesPatch } from 'diff';
import { CATALOG_SOURCE, profileOf } from './crawler-catalog.js';
import { waitQuantileMs, type LedgerReader, type RobotsVersion, type RuleCount, type Totals } from './ledger-reader.js';
import type { ReportQuery } from './report-query.js';
import { MINUTE_MS } from '../ledger/rollup.js';

/** A cell value: text, a number, or empty. */
export type Cell = string | number | null;

/** One table: its columns (key and title) and rows keyed by column. */
export interface ReportTable {
  columns: Array<{ key: string; title: string }>;
  rows: Array<Record<string, Cell>>;
}

/** The names of the tables, as they appear in `/report/data/<name>.json|csv`. */
export const TABLE_NAMES = ['summary', 'reasons', 'trend', 'bots', 'bot-rules', 'origins', 'robots-versions', 'refusals'] as const;
export type TableName = (typeof TABLE_NAMES)[number];

/** The answers a person looks for first. */
export interface Highlights {
  /**
   * The bot with the most refusals, and the robots.txt rule that refused it most (`rule`), with
   * the next ones (`topRules`, at most {@link TOP_RULES_SHOWN}, most refusals first) and how many
   * distinct rules refused it (`ruleCount`): a tie at the top is visible, not hidden.
   */
  mostRefused: {
    identity: string;
    token: string;
    requests: number;
    refused: number;
    refusedByRule: number;
    robotsUnreachable: number;
    rule: RuleCount | null;
    topRules: RuleCount[];
    ruleCount: number;
  } | null;
  /**
   * Origins whose robots.txt changed (a new content) or failed (unreachable) in the range;
   * `latestChangeId`: the newest changed version in the range (its diff), or null.
   */
  robotsIssues: Array<{ origin: string; changes: number; failures: number; lastState: string; lastStatus: number | null; lastError: string | null; latestChangeId: number | null }>;
  /** The bot with the longest queue wait (p95, then max). */
  longestWait: { identity: string; token: string; waitP95Ms: number | null; waitMaxMs: number; paced: number } | null;
}

/** Everything the page shows. */
export interface ReportData {
  generatedAtMs: number;
  query: ReportQuery;
  /** Size of a trend bucket, minutes. */
  bucketMinutes: number;
  /** The oldest refusal still kept, ms (refusals have a shorter retention than rollups), or null. */
  oldestRefusalMs: number | null;
  /** Where the operator and category of each bot come from. */
  catalogSource: string;
  filters: { identities: string[]; tokens: string[]; origins: string[] };
  highlights: Highlights;
  tables: Record<TableName, ReportTable>;
}

/** Trend bucket size for a range, minutes: about 60 to 150 points. */
export function bucketMinutesFor(rangeMs: number): number {
  if (rangeMs <= 2 * 3_600_000) return 1;
  if (rangeMs <= 26 * 3_600_000) return 10;
  if (rangeMs <= 8 * 86_400_000) return 60;
  return 360;
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** The outcome columns the bots and origins tables share, in this order (keys of their rows). */
const OUTCOME_COLUMNS: ReadonlyArray<[string, string]> = [
  ['requests', 'Requests'],
  ['allowed', 'Allowed'],
  ['refused', 'Refused'],
  ['refusedByRule', 'By rule'],
  ['robotsUnreachable', 'robots.txt unreachable'],
  ['queueFull', 'Queue full'],
];

function table(columns: Array<[string, string]>, rows: Array<Record<string, Cell>>): ReportTable {
  return { columns: columns.map(([key, title]) => ({ key, title })), rows };
}

function waitFigures(t: Totals): { waitP50Ms: number | null; waitP95Ms: number | null; waitMaxMs: number; waitMeanMs: number | null } {
  return {
    waitP50Ms: waitQuantileMs(t.waitBuckets, t.waitMaxMs, 0.5),
    waitP95Ms: waitQuantileMs(t.waitBuckets, t.waitMaxMs, 0.95),
    waitMaxMs: Math.round(t.waitMaxMs),
    waitMeanMs: t.paced === 0 ? null : Math.round(t.waitSumMs / t.paced),
  };
}

/** `robots.txt URL line N: pattern` of a rule count, for one table cell. */
function ruleText(r: RuleCount): string {
  if (r.reason === 'operator-policy') return `policy rule ${r.policyRule ?? '(unknown)'}`;
  if (r.ruleLine === null) return `${r.reason} (${r.robotsUrl ?? 'no robots.txt'})`;
  return `${r.robotsUrl ?? ''} line ${r.ruleLine}: disallow ${r.rulePattern ?? ''}`;
}

/** Bots named per origin in its table cell (the count is beside it). */
const BOTS_LISTED = 12;
/** Rules of the most refused bot named in its answer. */
export const TOP_RULES_SHOWN = 3;
/** Parse warnings listed per robots.txt version in its table cell (all of them are in the diff view). */
const WARNINGS_LISTED = 5;

/** `line 3: unknown-directive; line 9: invalid-line (+4)` from a version's parse warnings; null when none. */
function warningText(warnings: ReadonlyArray<{ line: number; code: string }>): string | null {
  if (warnings.length === 0) return null;
  const shown = warnings.slice(0, WARNINGS_LISTED).map((w) => (w.line > 0 ? `line ${w.line}: ${w.code}` : w.code));
  return warnings.length > WARNINGS_LISTED ? `${shown.join('; ')} (+${warnings.length - WARNINGS_LISTED})` : shown.join('; ');
}

/** `*: 2s, gptbot: 10s` from a version's crawl-delays. */
function crawlDelayText(delays: Record<string, number>): string {
  const entries = Object.entries(delays);
  if (entries.length === 0) return '';
  const shown = entries.slice(0, 6).map(([token, seconds]) => `${token}: ${seconds}s`);
  return entries.length > 6 ? `${shown.join(', ')} (+${entries.length - 6})` : shown.join(', ');
}

/**
 * Builds every table and the highlights for `query`. Reads only; never writes.
 * @param nowMs the time the report is made, ms since the epoch.
 * @throws SQLite errors from the reader (a file that went away, for one).
 */
export function buildReport(reader: LedgerReader, query: ReportQuery, nowMs: number): ReportData {
  const bucketMinutes = bucketMinutesFor(query.toMs - query.fromMs);
  const totals = reader.totals(query);
  const bots = reader.bots(query);
  const pressure = new Map(reader.pressure(query).map((p) => [`${p.identity}\n${p.token}`, p]));
  const ruleCounts = reader.ruleCounts({ ...query, limit: Math.max(query.limit, 1000) });
  // The rules that refused each bot, most refusals first (ruleCounts is sorted so).
  const rulesOf = new Map<string, RuleCount[]>();
  for (const r of ruleCounts) {
    if (r.reason !== 'rule-disallow') continue;
    const key = `${r.identity}\n${r.token}`;
    const held = rulesOf.get(key);
    if (held === undefined) rulesOf.set(key, [r]);
    else held.push(r);
  }
  const topRuleOf = new Map([...rulesOf].map(([key, rules]) => [key, rules[0]!]));
  const userAgents = reader.userAgents(bots.map((b) => b.token));
  const origins = reader.origins(query);
  const latest = new Map(reader.latestVersions({ ...query, limit: Math.max(query.limit, 5_000) }).map((v) => [v.origin, v]));
  const versions = reader.versions(query);
  const changesOf = new Map<string, { changes: number; failures: number; latestChangeId: number | null }>();
  for (const v of versions) {
    const c = changesOf.get(v.origin) ?? { changes: 0, failures: 0, latestChangeId: null };
    // A change: a new version (content, status or state) that replaced an earlier one within the range.
    if (v.hasPrevious && v.firstFetchedMs >= query.fromMs) {
      c.changes++;
      c.latestChangeId = Math.max(c.latestChangeId ?? 0, v.id);
    }
    if (v.state === 'unreachable') c.failures++;
    changesOf.set(v.origin, c);
  }

  const summary = {
    from: iso(query.fromMs),
    to: iso(query.toMs),
    requests: totals.requests,
    allowed: totals.allowed,
    refused: totals.refused,
    refusedByRule: totals.refusedByRule,
    robotsUnreachable: totals.robotsUnreachable,
    queueFull: totals.queueFull,
    refusedOther: totals.refusedOther,
    paced: totals.paced,
    ...waitFigures(totals),
    bytesIn: totals.bytesIn,
    bytesOut: totals.bytesOut,
    backoffs: totals.backoffs,
    bots: bots.length,
    origins: origins.length,
  };

  const trendRows: Array<Record<string, Cell>> = [];
  const byBucket = new Map(reader.trend(query, bucketMinutes).map((b) => [b.bucketMinute, b.totals]));
  const firstBucket = Math.floor(query.fromMs / MINUTE_MS / bucketMinutes) * bucketMinutes;
  for (let minute = firstBucket; minute * MINUTE_MS < query.toMs; minute += bucketMinutes) {
    const t = byBucket.get(minute);
    trendRows.push({
      at: iso(minute * MINUTE_MS),
      atMs: minute * MINUTE_MS,
      allowed: t?.allowed ?? 0,
      refusedByRule: t?.refusedByRule ?? 0,
      robotsUnreachable: t?.robotsUnreachable ?? 0,
      queueFull: t?.queueFull ?? 0,
      refusedOther: t?.refusedOther ?? 0,
      paced: t?.paced ?? 0,
      waitMeanMs: t === undefined || t.paced === 0 ? null : Math.round(t.waitSumMs / t.paced),
      waitMaxMs: t === undefined ? null : Math.round(t.waitMaxMs),
    });
  }

  const botRows = bots.map((b) => {
    const key = `${b.identity}\n${b.token}`;
    const profile = profileOf(b.token, userAgents.get(b.token));
    const p = pressure.get(key);
    const allowedPerMin = p === undefined ? null : Math.round((60_000 / p.delayMs) * 100) / 100;
    const rule = topRuleOf.get(key);
    return {
      identity: b.identity,
      token: b.token,
      operator: profile.operator,
      category: profile.categories.join(', ') || null,
      description: profile.description,
      requests: b.totals.requests,
      allowed: b.totals.allowed,
      refused: b.totals.refused,
      refusedByRule: b.totals.refusedByRule,
      robotsUnreachable: b.totals.robotsUnreachable,
      queueFull: b.totals.queueFull,
      paced: b.totals.paced,
      ...waitFigures(b.totals),
      peakOfferedPerMin: p?.offered ?? null,
      allowedPerMin,
      pressure: p === undefined || allowedPerMin === null ? null : Math.round((p.offered / allowedPerMin) * 100) / 100,
      pressureOrigin: p?.origin ?? null,
      pressureAt: p === undefined ? null : iso(p.minute * MINUTE_MS),
      origins: b.origins,
      topRule: rule === undefined ? null : ruleText(rule),
      topRuleRefusals: rule?.refusals ?? null,
    };
  });

  const originRows = origins.map((o) => {
    const v: RobotsVersion | undefined = latest.get(o.origin);
    const c = changesOf.get(o.origin);
    return {
      origin: o.origin,
      requests: o.totals.requests,
      allowed: o.totals.allowed,
      refused: o.totals.refused,
      refusedByRule: o.totals.refusedByRule,
      robotsUnreachable: o.totals.robotsUnreachable,
      queueFull: o.totals.queueFull,
      bots: o.bots,
      botNames: o.botNames.length > BOTS_LISTED ? `${o.botNames.slice(0, BOTS_LISTED).join(', ')} (+${o.botNames.length - BOTS_LISTED})` : o.botNames.join(', ') || null,
      backoffs: o.totals.backoffs,
      upstream5xx: o.totals.s5xx,
      delayMaxMs: o.totals.delayMaxMs,
      crawlDelays: v === undefined ? null : crawlDelayText(v.crawlDelays),
      robotsState: v?.state ?? null,
      robotsStatus: v?.status ?? null,
      robotsError: v?.error ?? null,
      robotsFetchedAt: v === undefined ? null : iso(v.lastFetchedMs),
      robotsChanges: c?.changes ?? 0,
      robotsFailures: c?.failures ?? 0,
      robotsWarnings: v?.warnings.length ?? null,
      robotsTruncated: v === undefined ? null : v.truncated ? 'yes' : 'no',
    };
  });

  const versionRows = versions.map((v) => ({
    id: v.id,
    origin: v.origin,
    state: v.state,
    status: v.status,
    error: v.error,
    firstFetchedAt: iso(v.firstFetchedMs),
    lastFetchedAt: iso(v.lastFetchedMs),
    fetches: v.fetches,
    bytes: v.bytes,
    truncated: v.truncated ? 'yes' : 'no',
    warnings: v.warnings.length,
    warningList: warningText(v.warnings),
    change: v.hasPrevious ? 'changed' : 'first seen',
    sha256: v.sha256 === '' ? null : v.sha256.slice(0, 12),
    body: v.hasBody ? (v.bodyCut ? 'kept (cut)' : 'kept') : null,
  }));

  const refusalRows = reader.refusals(query).map((r) => ({
    at: iso(r.atMs),
    requestId: r.requestId,
    identity: r.identity,
    token: r.token,
    origin: r.origin,
    url: r.url,
    reason: r.reason,
    status: r.status,
    robotsUrl: r.robotsUrl,
    line: r.ruleLine,
    pattern: r.rulePattern,
    policyRule: r.policyRule,
    wouldDeny: r.wouldDeny,
  }));

  const mostRefusedBot = [...bots].sort((a, b) => b.totals.refused - a.totals.refused)[0];
  const mostRefusedRules = mostRefusedBot === undefined ? [] : (rulesOf.get(`${mostRefusedBot.identity}\n${mostRefusedBot.token}`) ?? []);
  const waited = botRows.filter((b) => b.paced > 0).sort((a, b) => (b.waitP95Ms ?? 0) - (a.waitP95Ms ?? 0) || b.waitMaxMs - a.waitMaxMs)[0];
  const highlights: Highlights = {
    mostRefused:
      mostRefusedBot === undefined || mostRefusedBot.totals.refused === 0
        ? null
        : {
            identity: mostRefusedBot.identity,
            token: mostRefusedBot.token,
            requests: mostRefusedBot.totals.requests,
            refused: mostRefusedBot.totals.refused,
            refusedByRule: mostRefusedBot.totals.refusedByRule,
            robotsUnreachable: mostRefusedBot.totals.robotsUnreachable,
            rule: mostRefusedRules[0] ?? null,
            topRules: mostRefusedRules.slice(0, TOP_RULES_SHOWN),
            ruleCount: mostRefusedRules.length,
          },
    robotsIssues: [...changesOf]
      .map(([origin, c]) => {
        const last = latest.get(origin);
        return { origin, changes: c.changes, failures: c.failures, lastState: last?.state ?? '', lastStatus: last?.status ?? null, lastError: last?.error ?? null, latestChangeId: c.latestChangeId };
      })
      .filter((i) => i.changes > 0 || i.failures > 0)
      .sort((a, b) => b.failures + b.changes - (a.failures + a.changes)),
    longestWait: waited === undefined ? null : { identity: waited.identity, token: waited.token, waitP95Ms: waited.waitP95Ms, waitMaxMs: waited.waitMaxMs, paced: waited.paced },
  };

  return {
    generatedAtMs: nowMs,
    query,
    bucketMinutes,
    oldestRefusalMs: reader.oldestRefusalMs(),
    catalogSource: CATALOG_SOURCE,
    filters: reader.filterValues(query),
    highlights,
    tables: {
      summary: table(
        [
          ['from', 'From'],
          ['to', 'To'],
          ['requests', 'Requests'],
          ['allowed', 'Allowed'],
          ['refused', 'Refused'],
          ['refusedByRule', 'Refused by a robots.txt rule'],
          ['robotsUnreachable', 'Refused: robots.txt unreachable'],
          ['queueFull', 'Refused: queue full (429)'],
          ['refusedOther', 'Refused: other reasons'],
          ['paced', 'Paced (queued)'],
          ['waitP50Ms', 'Queue wait p50 (ms)'],
          ['waitP95Ms', 'Queue wait p95 (ms)'],
          ['waitMaxMs', 'Queue wait max (ms)'],
          ['waitMeanMs', 'Queue wait mean (ms)'],
          ['bytesIn', 'Bytes in'],
          ['bytesOut', 'Bytes out'],
          ['backoffs', 'Upstream 429/503'],
          ['bots', 'Bots'],
          ['origins', 'Origins'],
        ],
        [summary],
      ),
      reasons: table(
        [
          ['verdict', 'Verdict'],
          ['reason', 'Reason'],
          ['requests', 'Requests'],
        ],
        reader.reasons(query),
      ),
      trend: table(
        [
          ['at', 'Bucket start'],
          ['allowed', 'Allowed'],
          ['refusedByRule', 'Refused by rule'],
          ['robotsUnreachable', 'robots.txt unreachable'],
          ['queueFull', 'Queue full'],
          ['refusedOther', 'Refused, other'],
          ['paced', 'Paced'],
          ['waitMeanMs', 'Wait mean (ms)'],
          ['waitMaxMs', 'Wait max (ms)'],
        ],
        trendRows,
      ),
      bots: table(
        [
          ['identity', 'Identity'],
          ['token', 'Product token'],
          ['operator', 'Operator'],
          ['category', 'Category'],
          ...OUTCOME_COLUMNS,
          ['topRule', 'Rule that refused it most'],
          ['topRuleRefusals', 'Its refusals'],
          ['paced', 'Paced'],
          ['waitP50Ms', 'Wait p50 (ms)'],
          ['waitP95Ms', 'Wait p95 (ms)'],
          ['waitMaxMs', 'Wait max (ms)'],
          ['peakOfferedPerMin', 'Peak offered /min'],
          ['allowedPerMin', 'Allowed by crawl-delay /min'],
          ['pressure', 'Offered / allowed'],
          ['pressureOrigin', 'At origin'],
          ['origins', 'Origins'],
          ['description', 'Description'],
        ],
        botRows,
      ),
      'bot-rules': table(
        [
          ['identity', 'Identity'],
          ['token', 'Product token'],
          ['origin', 'Origin'],
          ['robotsUrl', 'robots.txt'],
          ['ruleLine', 'Line'],
          ['rulePattern', 'Pattern'],
          ['reason', 'Reason'],
          ['policyRule', 'Policy rule'],
          ['wouldDeny', 'Would deny'],
          ['refusals', 'Refusals'],
        ],
        ruleCounts.slice(0, query.limit).map((r) => ({ ...r })),
      ),
      origins: table(
        [
          // robots.txt health first: it is what this table is read for, and wide tables scroll.
          ['origin', 'Origin'],
          ['robotsState', 'robots.txt state'],
          ['robotsStatus', 'Status'],
          ['robotsChanges', 'Changes in range'],
          ['robotsFailures', 'Failed fetches in range'],
          ['robotsWarnings', 'Parse warnings'],
          ['robotsTruncated', 'Truncated'],
          ['crawlDelays', 'Crawl-delay in the file (s)'],
          ['delayMaxMs', 'Delay applied (ms)'],
          ...OUTCOME_COLUMNS,
          ['bots', 'Bots'],
          ['botNames', 'Bots seen'],
          ['backoffs', 'Upstream 429/503 pauses'],
          ['upstream5xx', 'Upstream 5xx'],
          ['robotsError', 'Error'],
          ['robotsFetchedAt', 'Last fetched'],
        ],
        originRows,
      ),
      'robots-versions': table(
        [
          ['id', 'Version'],
          ['origin', 'Origin'],
          ['state', 'State'],
          ['status', 'Status'],
          ['error', 'Error'],
          ['firstFetchedAt', 'First fetched'],
          ['lastFetchedAt', 'Last fetched'],
          ['fetches', 'Fetches'],
          ['bytes', 'Bytes'],
          ['truncated', 'Truncated'],
          ['warnings', 'Warnings'],
          ['warningList', 'Parse warnings (line: code)'],
          ['change', 'Change'],
          ['sha256', 'SHA-256'],
          ['body', 'Body'],
        ],
        versionRows,
      ),
      refusals: table(
        [
          ['at', 'At'],
          ['requestId', 'Request id'],
          ['identity', 'Identity'],
          ['token', 'Product token'],
          ['origin', 'Origin'],
          ['url', 'URL'],
          ['reason', 'Reason'],
          ['status', 'Status'],
          ['robotsUrl', 'robots.txt'],
          ['line', 'Line'],
          ['pattern', 'Pattern'],
          ['policyRule', 'Policy rule'],
          ['wouldDeny', 'Would deny'],
        ],
        refusalRows,
      ),
    },
  };
}

/** A version, the one before it, and the unified diff of their bodies (when both were kept). */
export interface VersionDiff {
  version: RobotsVersion;
  previous: RobotsVersion | null;
  /** Unified diff, previous -> this; null when a body is missing (not kept, or not 2xx). */
  diff: string | null;
  /** This version's body as text (null when not kept). */
  body: string | null;
}

/** Bytes of a body shown in a diff; a longer body is cut there (the file keeps up to `robotsBodyBytes`). */
const MAX_DIFF_BODY_BYTES = 256 * 1024;

/**
 * The diff between a robots.txt version and the one before it at the same origin.
 * @returns undefined when there is no such version.
 */
export function diffVersion(reader: LedgerReader, id: number): VersionDiff | undefined {
  const found = reader.versionWithPrevious(id);
  if (found === undefined) return undefined;
  const text = (body: Buffer | null): string | null => (body === null ? null : body.subarray(0, MAX_DIFF_BODY_BYTES).toString('utf8'));
  const body = text(found.body);
  const before = found.previous === null ? '' : text(found.previousBody);
  const label = (v: RobotsVersion | null): string => (v === null ? '(none)' : `version ${v.id} (${new Date(v.firstFetchedMs).toISOString()})`);
  const diff = body === null || before === null ? null : createTwoFilesPatch(label(found.previous), label(found.version), before, body, undefined, undefined, { context: 3 });
  return { version: found.version, previous: found.previous, diff, body };
}

/** robots.txt diffs embedded in a static page at most (the latest changes first). */
export const MAX_EMBEDDED_DIFFS = 50;

/**
 * The diffs of the changed robots.txt versions a report lists (at most {@link MAX_EMBEDDED_DIFFS},
 * in the report's order, newest first), for a static page that cannot fetch them.
 * @throws SQLite errors from the reader.
 */
export function diffsOfChangedVersions(reader: LedgerReader, data: ReportData): VersionDiff[] {
  const changed = data.tables['robots-versions'].rows.filter((r) => r['change'] === 'changed').slice(0, MAX_EMBEDDED_DIFFS);
  return changed.map((r) => diffVersion(reader, Number(r['id']))).filter((d): d is VersionDiff => d !== undefined);
}
