/**
 * The ledger's in-memory side: finished requests folded into per-minute rollup
 * cells keyed by (identity, product token, origin, verdict, reason), the
 * refusals kept for drill-down, and one sample User-Agent per product token.
 * One {@link RollupAggregator.add} per request is O(1): a couple of map
 * lookups and additions, one short key string, and one small object only for a
 * refusal or the first request of a key in a flush window. Extension, not in RFC 9309.
 */
import type { AccessEntry } from '../access-entry.js';
import type { DecisionReason, Verdict } from '../../policy/decision.js';

/** Milliseconds per rollup period. */
export const MINUTE_MS = 60_000;

/**
 * Upper bounds of the coarse queue-wait histogram, ms; a last bucket holds longer waits.
 * Chosen around crawl-delays of 0.05 s to 60 s.
 */
export const WAIT_BUCKET_BOUNDS_MS: readonly number[] = [10, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000];

/** Number of histogram buckets: one per bound plus the overflow bucket. */
export const WAIT_BUCKETS = WAIT_BUCKET_BOUNDS_MS.length + 1;

/** Origin under which requests of a minute's keys beyond `maxKeysPerMinute` are counted. */
export const OTHER_ORIGIN = '(other)';

/** Length caps of the values a client or remote file controls, in UTF-16 code units. */
export const LEDGER_LIMITS = {
  tokenChars: 128,
  identityChars: 128,
  originChars: 300,
  urlChars: 2048,
  userAgentChars: 512,
  patternChars: 1024,
  requestIdChars: 128,
} as const;

/** Status classes counted per cell; `error`: forwarded (or `upstream-error`) with no valid status. */
export type StatusClassColumn = 's1xx' | 's2xx' | 's3xx' | 's4xx' | 's5xx' | 'sError';

/** One rollup cell: the figures of one key in one minute (a delta until written). */
export interface RollupCell {
  /** Minutes since the epoch (`floor(startedAtMs / 60000)`) of the requests' arrival. */
  minute: number;
  /** `''` when no identity applied. */
  identity: string;
  /** The product token that decided, else the best candidate from the User-Agent, else `''`. */
  token: string;
  /** `scheme://host[:port]`, `''` for a request without a valid target, {@link OTHER_ORIGIN} past the key cap. */
  origin: string;
  verdict: Verdict;
  reason: DecisionReason;
  requests: number;
  /** Request body bytes received from clients. */
  bytesIn: number;
  /** Response body bytes sent to clients. */
  bytesOut: number;
  /** Requests that waited for a start slot (queue wait known). */
  queued: number;
  waitSumMs: number;
  waitMaxMs: number;
  /** Queue-wait histogram, counts per {@link WAIT_BUCKET_BOUNDS_MS} bucket (length {@link WAIT_BUCKETS}). */
  waitBuckets: number[];
  s1xx: number;
  s2xx: number;
  s3xx: number;
  s4xx: number;
  s5xx: number;
  sError: number;
  /** Upstream 429 and 503 answers (each pauses the origin). */
  backoffs: number;
  /** Largest pacing delay applied (crawl-delay raised to any operator minimum), ms; 0 when none. */
  delayMaxMs: number;
}

/** One refused request (or, `reason: report-only`, one forwarded that would have been refused), for the drill-down table. */
export interface RefusalRecord {
  atMs: number;
  requestId: string | null;
  identity: string;
  token: string;
  origin: string;
  url: string;
  reason: DecisionReason;
  status: number;
  /** The robots.txt URL of the snapshot that decided, or null. */
  robotsUrl: string | null;
  group: string | null;
  ruleKind: string | null;
  rulePattern: string | null;
  ruleLine: number | null;
  /** The operator policy rule that matched (`Decision.policy.rule`), or null. */
  policyRule: string | null;
  /** The reason a `report-only` request would have had (`Decision.wouldDeny`), or null. */
  wouldDeny: DecisionReason | null;
}

/** The last User-Agent seen for a product token in a flush window (for operator and category lookup). */
export interface BotSample {
  token: string;
  userAgent: string;
  seenAtMs: number;
}

/** Options of {@link RollupAggregator}. */
export interface RollupAggregatorOptions {
  /** Distinct keys per minute; further keys go to origin {@link OTHER_ORIGIN}. */
  maxKeysPerMinute: number;
  /**
   * Cells held until the next write (they pile up while the database cannot be written); past it,
   * new keys are counted under identity, token and origin {@link OTHER_ORIGIN}, so memory stays bounded.
   */
  maxPendingCells: number;
  /** Refusals held until the next write; more are counted in `droppedRefusals` (they stay in the rollups). */
  maxPendingRefusals: number;
}

/** Counters of a {@link RollupAggregator} since construction. */
export interface RollupAggregatorStats {
  /** Cells waiting to be written. */
  pendingCells: number;
  pendingRefusals: number;
  /** Requests counted under {@link OTHER_ORIGIN} because their minute had `maxKeysPerMinute` keys, or `maxPendingCells` were waiting. */
  foldedRequests: number;
  /** Refusals not kept for drill-down because `maxPendingRefusals` were waiting. */
  droppedRefusals: number;
}

/**
 * Minutes of key sets remembered for the per-minute cap (a request may finish minutes after it
 * arrived; one finishing later than this may add keys past the cap to its minute). Bounds the
 * sets to this many times `maxKeysPerMinute` keys.
 */
const KEY_SET_MINUTES = 3;

/** `s1xx`..`s5xx` for an HTTP status, undefined outside 100..599. */
function statusColumn(status: number): StatusClassColumn | undefined {
  if (!Number.isInteger(status) || status < 100 || status > 599) return undefined;
  return (['s1xx', 's2xx', 's3xx', 's4xx', 's5xx'] as const)[Math.floor(status / 100) - 1];
}

/** Index of the histogram bucket of a wait, ms. */
export function waitBucketOf(waitMs: number): number {
  for (let i = 0; i < WAIT_BUCKET_BOUNDS_MS.length; i++) if (waitMs <= (WAIT_BUCKET_BOUNDS_MS[i] as number)) return i;
  return WAIT_BUCKET_BOUNDS_MS.length;
}

/** Cuts `value` to `max` code units (a key part the client controls). */
function capped(value: string, max: number): string {
  return value.length <= max ? value : value.slice(0, max);
}

/** A new, empty cell. */
export function emptyCell(minute: number, identity: string, token: string, origin: string, verdict: Verdict, reason: DecisionReason): RollupCell {
  return {
    minute,
    identity,
    token,
    origin,
    verdict,
    reason,
    requests: 0,
    bytesIn: 0,
    bytesOut: 0,
    queued: 0,
    waitSumMs: 0,
    waitMaxMs: 0,
    waitBuckets: new Array<number>(WAIT_BUCKETS).fill(0),
    s1xx: 0,
    s2xx: 0,
    s3xx: 0,
    s4xx: 0,
    s5xx: 0,
    sError: 0,
    backoffs: 0,
    delayMaxMs: 0,
  };
}

/**
 * The bot name the ledger keys on: the product token that decided, else the
 * best candidate read from the User-Agent, else `''`; capped. Pure.
 */
export function ledgerTokenOf(entry: Pick<AccessEntry, 'decision' | 'productTokens'>): string {
  return capped(entry.decision.productToken ?? entry.productTokens[0] ?? '', LEDGER_LIMITS.tokenChars);
}

/** Folds one finished request into `cell`. */
export function addToCell(cell: RollupCell, entry: AccessEntry): void {
  cell.requests++;
  cell.bytesIn += entry.response.bytesReceived;
  cell.bytesOut += entry.response.bytesSent;
  const waitMs = entry.timings.queueWaitMs;
  if (waitMs !== null) {
    // Whole ms, as the access line shows it: `report --from-logs` must land every wait in the same bucket.
    const wait = waitMs > 0 ? Math.round(waitMs) : 0;
    cell.queued++;
    cell.waitSumMs += wait;
    if (wait > cell.waitMaxMs) cell.waitMaxMs = wait;
    (cell.waitBuckets[waitBucketOf(wait)] as number)++;
  }
  const upstreamStatus = entry.response.upstreamStatus;
  if (upstreamStatus !== null) {
    const column = statusColumn(upstreamStatus);
    if (column === undefined) cell.sError++;
    else cell[column]++;
    if (upstreamStatus === 429 || upstreamStatus === 503) cell.backoffs++;
  } else if (entry.decision.reason === 'upstream-error' || entry.timings.upstreamMs !== null) {
    cell.sError++;
  }
  const delayMs = entry.decision.pacing?.delayMs ?? 0;
  if (delayMs > cell.delayMaxMs) cell.delayMaxMs = delayMs;
}

/** The refusal record of a denied request, or of a `report-only` one (forwarded, with the reason it would have had). */
export function refusalOf(entry: AccessEntry, identity: string, token: string): RefusalRecord {
  const d = entry.decision;
  return {
    atMs: Math.floor(entry.startedAtMs), // whole ms, as the log's ISO startedAt (report --from-logs) has it
    // Absent only in entries rebuilt from log lines written before request ids existed.
    requestId: typeof entry.requestId === 'string' ? capped(entry.requestId, LEDGER_LIMITS.requestIdChars) : null,
    identity,
    token,
    origin: capped(d.origin, LEDGER_LIMITS.originChars),
    url: capped(entry.request.url, LEDGER_LIMITS.urlChars),
    reason: d.reason,
    status: entry.response.status,
    robotsUrl: d.snapshot === null ? null : capped(d.snapshot.url, LEDGER_LIMITS.urlChars),
    group: d.group === null ? null : capped(d.group, LEDGER_LIMITS.patternChars),
    ruleKind: d.rule?.kind ?? null,
    rulePattern: d.rule === null ? null : capped(d.rule.pattern, LEDGER_LIMITS.patternChars),
    ruleLine: d.rule?.line ?? null,
    policyRule: d.policy === undefined ? null : capped(d.policy.rule, LEDGER_LIMITS.patternChars),
    wouldDeny: d.wouldDeny ?? null,
  };
}

/**
 * Aggregates finished requests in memory until the ledger writes them. Not
 * thread-safe (one event loop); the writer reads {@link RollupAggregator.cells}
 * and friends, and calls {@link RollupAggregator.clear} only once they are stored,
 * so a failed write loses nothing.
 */
export class RollupAggregator {
  readonly #options: RollupAggregatorOptions;
  /** Pending cells: minute -> key -> cell. */
  readonly #cells = new Map<number, Map<string, RollupCell>>();
  /** Keys seen per recent minute (written or not), for the per-minute cap. */
  readonly #keysByMinute = new Map<number, Set<string>>();
  #refusals: RefusalRecord[] = [];
  readonly #bots = new Map<string, BotSample>();
  #pendingCells = 0;
  #foldedRequests = 0;
  #droppedRefusals = 0;
  /**
   * The pending cell each origin's latest request was counted in (never a folded one). A crawl
   * sends run after run of one bot, verdict and reason to an origin: the next such request finds
   * its cell here without building its key (issue 11). Emptied with the cells it points to.
   */
  readonly #lastCellByOrigin = new Map<string, RollupCell>();

  constructor(options: RollupAggregatorOptions) {
    this.#options = options;
  }

  /** Folds one finished request in. O(1); never throws for a well-formed entry. */
  add(entry: AccessEntry): void {
    const d = entry.decision;
    const minute = Math.floor(entry.startedAtMs / MINUTE_MS);
    const identity = entry.identity == null ? '' : capped(entry.identity, LEDGER_LIMITS.identityChars);
    const token = ledgerTokenOf(entry);
    const origin = d.origin.length <= LEDGER_LIMITS.originChars ? d.origin : d.origin.slice(0, LEDGER_LIMITS.originChars);
    const last = this.#lastCellByOrigin.get(origin);
    const cell =
      last !== undefined && last.minute === minute && last.reason === d.reason && last.token === token && last.identity === identity && last.verdict === d.verdict
        ? last
        : this.#cellFor(minute, identity, token, origin, d.verdict, d.reason);
    addToCell(cell, entry);
    // A shadowed refusal (report mode) is kept too: it is what a report-mode roll-out is for.
    if (d.verdict === 'deny' || d.wouldDeny !== undefined) {
      if (this.#refusals.length < this.#options.maxPendingRefusals) this.#refusals.push(refusalOf(entry, identity, token));
      else this.#droppedRefusals++;
    }
    const userAgent = entry.request.userAgent;
    if (token !== '' && userAgent !== null) {
      const sample = this.#bots.get(token);
      if (sample === undefined) this.#bots.set(token, { token, userAgent: capped(userAgent, LEDGER_LIMITS.userAgentChars), seenAtMs: Math.floor(entry.startedAtMs) });
      else if (entry.startedAtMs > sample.seenAtMs) sample.seenAtMs = Math.floor(entry.startedAtMs);
    }
  }

  /**
   * The pending cell of a key, created (and counted against the caps) when new; past
   * `maxPendingCells` or a minute's `maxKeysPerMinute`, the `(other)` cell the request folds into.
   */
  #cellFor(minute: number, identity: string, token: string, keyOrigin: string, verdict: Verdict, reason: DecisionReason): RollupCell {
    let origin = keyOrigin;
    let key = `${identity}\n${token}\n${origin}\n${verdict}\n${reason}`;
    let byKey = this.#cells.get(minute);
    if (byKey === undefined) {
      byKey = new Map();
      this.#cells.set(minute, byKey);
    }
    let cell = byKey.get(key);
    if (cell === undefined) {
      let seen = this.#keysByMinute.get(minute);
      if (seen === undefined) {
        seen = new Set();
        this.#keysByMinute.set(minute, seen);
      }
      let cellIdentity = identity;
      let cellToken = token;
      if (this.#pendingCells >= this.#options.maxPendingCells) {
        this.#foldedRequests++;
        cellIdentity = cellToken = origin = OTHER_ORIGIN;
        key = `${OTHER_ORIGIN}\n${OTHER_ORIGIN}\n${OTHER_ORIGIN}\n${verdict}\n${reason}`;
        cell = byKey.get(key);
      } else if (!seen.has(key)) {
        if (seen.size >= this.#options.maxKeysPerMinute) {
          this.#foldedRequests++;
          origin = OTHER_ORIGIN;
          key = `${identity}\n${token}\n${origin}\n${verdict}\n${reason}`;
          cell = byKey.get(key);
        } else {
          seen.add(key);
        }
      }
      if (cell === undefined) {
        cell = emptyCell(minute, cellIdentity, cellToken, origin, verdict, reason);
        byKey.set(key, cell);
        this.#pendingCells++;
      }
    }
    // A folded request is not remembered: the next one of its key is folded (and counted) again.
    if (cell.origin === keyOrigin) this.#lastCellByOrigin.set(keyOrigin, cell);
    return cell;
  }

  /** Every pending cell, oldest minute first. */
  *cells(): IterableIterator<RollupCell> {
    for (const byKey of this.#cells.values()) yield* byKey.values();
  }

  /** Pending refusals, in arrival order of their end. */
  refusals(): readonly RefusalRecord[] {
    return this.#refusals;
  }

  /** Pending bot samples. */
  bots(): IterableIterator<BotSample> {
    return this.#bots.values();
  }

  /** True when nothing waits to be written. */
  get isEmpty(): boolean {
    return this.#pendingCells === 0 && this.#refusals.length === 0 && this.#bots.size === 0;
  }

  /**
   * Forgets what was written: every pending cell, refusal and bot sample. Also drops key sets of
   * minutes older than 3 minutes before `nowMs` (a later request of such a minute starts a new set).
   */
  clear(nowMs: number): void {
    this.#cells.clear();
    this.#lastCellByOrigin.clear();
    this.#refusals = [];
    this.#bots.clear();
    this.#pendingCells = 0;
    const oldest = Math.floor(nowMs / MINUTE_MS) - KEY_SET_MINUTES;
    for (const minute of this.#keysByMinute.keys()) if (minute < oldest) this.#keysByMinute.delete(minute);
  }

  stats(): RollupAggregatorStats {
    return {
      pendingCells: this.#pendingCells,
      pendingRefusals: this.#refusals.length,
      foldedRequests: this.#foldedRequests,
      droppedRefusals: this.#droppedRefusals,
    };
  }
}
