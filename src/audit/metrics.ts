/**
 * Prometheus metrics of the proxy, on a registry of their own (never
 * prom-client's global one, so a process, or a test, may hold many).
 * Labels come from closed sets (verdict, reason, status class, robots
 * state), or through a top-N bound (product token, identity, the busiest
 * origins; see bot-metrics.ts and top-labels.ts): paths, patterns and
 * User-Agents are unbounded, so they go to the access log and the ledger,
 * never into a label. Extension, not in RFC 9309.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { DECISION_REASONS, type DecisionReason, type SnapshotInfo, type Verdict } from '../policy/decision.js';
import type { AccessEntry } from './access-entry.js';
import { CONNECTION_LIMIT_NAMES, SLOT_HOLD_WAITING_ON, type LimitEvent } from './limit-events.js';
import { BotMetrics } from './bot-metrics.js';
import { BatchedHistogram, type HistogramSeries } from './batched-histogram.js';
import { registerLedgerMetrics, registerOriginPacingMetrics, ROBOTS_FETCH_OUTCOMES, SCRAPE_METRIC_NAME, robotsFetchOutcomeOf, type LedgerMetricsSource, type OriginPacingSource } from './scrape-metrics.js';

/** Prefix of every metric of ours (default process metrics keep prom-client's names). */
export const METRIC_PREFIX = 'robots_proxy_';

/** The catalog: every metric name of ours, with its unit suffix. */
export const METRIC_NAME = {
  /** Counter {verdict, reason}: finished requests (and CONNECTs). */
  requests: `${METRIC_PREFIX}requests_total`,
  /** Counter {reason}: requests forwarded although they would have been refused (`report-only`), by the reason they would have had. */
  wouldDeny: `${METRIC_PREFIX}would_deny_total`,
  /** Histogram {verdict}: arrival to last byte sent, seconds. */
  requestDuration: `${METRIC_PREFIX}request_duration_seconds`,
  /** Histogram: time queued for a start slot, seconds (queued requests only). */
  queueWait: `${METRIC_PREFIX}queue_wait_seconds`,
  /** Counter {status_class}: upstream answers by class, or `error` when none arrived. */
  upstreamResponses: `${METRIC_PREFIX}upstream_responses_total`,
  /** Counter {state}: robots.txt fetches by outcome (RFC 9309 §2.3.1). */
  robotsFetches: `${METRIC_PREFIX}robots_fetches_total`,
  /** Gauge: origins with a robots snapshot in the cache. */
  robotsCacheOrigins: `${METRIC_PREFIX}robots_cache_origins`,
  /** Gauge: estimated heap bytes of the robots cache (entries plus fetches in flight), against `robots.cacheBytes`. */
  robotsCacheBytes: `${METRIC_PREFIX}robots_cache_bytes`,
  /** Counter: robots snapshots dropped from the cache to stay within its bounds. */
  robotsCacheEvictions: `${METRIC_PREFIX}robots_cache_evictions_total`,
  /** Gauge: requests waiting for a start slot, all origins. */
  pacingQueued: `${METRIC_PREFIX}pacing_queued_requests`,
  /** Gauge: requests started and not yet finished, all origins. */
  pacingInFlight: `${METRIC_PREFIX}pacing_in_flight_requests`,
  /** Counter: TLS leaf certificates signed since start. */
  tlsLeavesIssued: `${METRIC_PREFIX}tls_leaf_certificates_issued_total`,
  /** Counter: leaf certificate lookups answered from the cache since start. */
  tlsLeafCacheHits: `${METRIC_PREFIX}tls_leaf_certificate_cache_hits_total`,
  /** Gauge: the interception CA's `notAfter`, seconds since the Unix epoch (only with `https.mode: intercept`). */
  tlsCaNotAfter: `${METRIC_PREFIX}tls_ca_not_after_seconds`,
  /** Gauge: client connections open on the proxy listener (CONNECT tunnels included). */
  clientConnectionsOpen: `${METRIC_PREFIX}client_connections_open`,
  /** Counter {limit}: client connections refused over `clients.maxConnections` or `maxConnectionsPerClient`. */
  clientConnectionsRefused: `${METRIC_PREFIX}client_connections_refused_total`,
  /** Counter {kind}: client connections or requests cut by a client timeout (`idle`, `request-body`, `response-write`). */
  clientTimeouts: `${METRIC_PREFIX}client_timeouts_total`,
  /** Counter {waiting_on}: start slots released because a request held one past `pacing.maxSlotHold`. */
  slotHoldExceeded: `${METRIC_PREFIX}pacing_slot_hold_exceeded_total`,
  /** Counter {identity, token, verdict, reason}: finished requests by bot; identity and token bounded to the top N (`metrics.*Labels`), the rest `other`. */
  botRequests: `${METRIC_PREFIX}bot_requests_total`,
  /** Histogram {token}: queue wait by product token (top N, the rest `other`), seconds. */
  botQueueWait: `${METRIC_PREFIX}bot_queue_wait_seconds`,
  /** Counter {identity, claimed, bound}: requests of a bound identity whose User-Agent names none of its tokens (issue 8); labels bounded like `botRequests`. */
  identityMismatches: `${METRIC_PREFIX}identity_mismatches_total`,
  /** Counter {outcome}: robots.txt fetches by detailed outcome (`2xx`, `4xx`, `too-many-redirects`, `429`, `5xx`, `timeout`, `network`, `other`). */
  robotsFetchOutcomes: `${METRIC_PREFIX}robots_fetch_outcomes_total`,
  /** Counter {mode}: requests paced while the fleet's Redis did not answer: `local` (alone, delays x fleetSize) or `deny` (503). */
  fleetFallbacks: `${METRIC_PREFIX}fleet_fallback_requests_total`,
  /** Gauge: 1 while the fleet's Redis answers, else 0 (only with `state.backend: redis`). */
  fleetStateAvailable: `${METRIC_PREFIX}fleet_state_available`,
  /** Gauge {origin}: requests waiting for a start slot at each of the busiest origins (`metrics.busiestOrigins`). */
  originQueued: SCRAPE_METRIC_NAME.originQueued,
  /** Gauge {origin}: requests in flight at each of the busiest origins. */
  originInFlight: SCRAPE_METRIC_NAME.originInFlight,
  /** Gauge {origin}: 1 while one of the busiest origins is paused by an upstream 429/503, else 0. */
  originPaused: SCRAPE_METRIC_NAME.originPaused,
  /** Counter: log lines dropped because stdout's reader (a pipe) did not keep up; see `LogWriter`. */
  logLinesDropped: `${METRIC_PREFIX}log_lines_dropped_total`,
  /** Counter: ledger write transactions committed. */
  ledgerWrites: SCRAPE_METRIC_NAME.ledgerWrites,
  /** Counter {kind}: ledger writes and opens that failed (`busy`, `full`, `readonly`, `open`, `schema`, `other`); never a failed request. */
  ledgerFailures: SCRAPE_METRIC_NAME.ledgerFailures,
  /** Gauge: rollup cells, refusals and robots.txt fetches waiting in memory to be written. */
  ledgerPending: SCRAPE_METRIC_NAME.ledgerPending,
  /** Counter {what}: what the ledger could not keep apart: `folded-requests` (counted under `(other)`), `refusals`, `robots-fetches` (not kept for drill-down). */
  ledgerDropped: SCRAPE_METRIC_NAME.ledgerDropped,
  /** Gauge: duration of the latest ledger write transaction, seconds. */
  ledgerWriteSeconds: SCRAPE_METRIC_NAME.ledgerWriteSeconds,
} as const;

/** Values of the `mode` label of {@link METRIC_NAME.fleetFallbacks} (`state.redis.onUnavailable`). */
export const FLEET_FALLBACK_MODES = ['local', 'deny'] as const;

/** Values of the `kind` label of {@link METRIC_NAME.clientTimeouts}. */
export type ClientTimeoutKind = 'idle' | 'request-body' | 'response-write';

/** Every {@link ClientTimeoutKind}, pre-registered at 0. */
export const CLIENT_TIMEOUT_KINDS: readonly ClientTimeoutKind[] = ['idle', 'request-body', 'response-write'];

/** Access-entry error codes of the request-level client timeouts, by kind. */
const CLIENT_TIMEOUT_KIND_BY_ERROR: Readonly<Record<string, ClientTimeoutKind>> = {
  CLIENT_BODY_TIMEOUT: 'request-body',
  CLIENT_WRITE_TIMEOUT: 'response-write',
};

/** Values of the `status_class` label: `1xx` (e.g. 101 for an Upgrade) to `5xx`, or `error` when no valid answer arrived. */
export type UpstreamStatusClass = '1xx' | '2xx' | '3xx' | '4xx' | '5xx' | 'error';

/** Every {@link UpstreamStatusClass}, pre-registered at 0. */
export const UPSTREAM_STATUS_CLASSES: readonly UpstreamStatusClass[] = ['1xx', '2xx', '3xx', '4xx', '5xx', 'error'];

/** How a robots.txt fetch ended (RFC 9309 §2.3.1.1–§2.3.1.4). */
export type RobotsFetchState = SnapshotInfo['state'];

/** Every {@link RobotsFetchState}, pre-registered at 0. */
export const ROBOTS_FETCH_STATES: readonly RobotsFetchState[] = ['ok', 'unavailable', 'unreachable'];

/**
 * The verdicts each reason comes with, for pre-registering the
 * `requests_total` series at 0 (so rates work from the first scrape). A pair
 * not listed here is still counted when it happens.
 */
export const VERDICTS_BY_REASON: Readonly<Record<DecisionReason, readonly Verdict[]>> = {
  'rule-allow': ['allow'],
  'rule-disallow': ['deny'],
  'no-matching-rule': ['allow'],
  'robots-txt-itself': ['allow'],
  'robots-unavailable': ['allow'],
  'robots-unreachable': ['deny'],
  'operator-policy': ['deny'],
  'operator-allow': ['allow'],
  'report-only': ['allow'],
  'target-private-network': ['deny'],
  'client-not-allowed': ['deny'],
  'proxy-auth-required': ['deny'],
  'proxy-auth-throttled': ['deny'],
  'identity-mismatch': ['deny'],
  'queue-full': ['deny'],
  'bad-request': ['deny'],
  'upstream-error': ['allow'],
  'client-timeout': ['allow'],
  misdirected: ['deny'],
  'tunnel-denied': ['deny'],
  'internal-error': ['deny'],
  'proxy-shutting-down': ['deny'],
  'fleet-unavailable': ['deny'],
  'max-forwards': ['allow'],
  'transfer-coding-not-implemented': ['deny'],
};

/** The reasons a `report-only` request may have been spared, pre-registered at 0 in `would_deny_total`. */
export const WOULD_DENY_REASONS: readonly DecisionReason[] = ['rule-disallow', 'robots-unreachable', 'operator-policy'];

/** Seconds; from a fast cached allow to a long queue wait plus a slow upstream. */
const DURATION_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Seconds; crawl-delays are typically 0.05 s to 60 s. */
const QUEUE_WAIT_BUCKETS_SECONDS = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120];

/** Callbacks read at each scrape for the gauges; a metric whose callback is absent is not registered. */
export interface MetricsStatsSources {
  /** Requests queued and in flight over all origins. */
  pacing?: () => { queued: number; inFlight: number };
  /** Origins in the robots cache, its estimated bytes (entries plus reserved), and its evictions since start (monotonic). */
  robotsCache?: () => { size: number; bytes: number; evictions: number };
  /** Leaf certificate counters since start (monotonic). */
  tls?: () => { issued: number; cacheHits: number };
  /** The interception CA's `notAfter`, ms since the Unix epoch (fixed for the process: the CA changes only at a restart). */
  tlsCaNotAfterMs?: number;
  /** Client connections open on the proxy listener. */
  connections?: () => { open: number };
  /** Pacing figures per origin with state (the gauges show the busiest `busiestOrigins`). */
  originPacing?: OriginPacingSource;
  /** The ledger's counters. */
  ledger?: LedgerMetricsSource;
  /** Whether the fleet's Redis answers (`state.backend: redis` only). */
  fleetAvailable?: () => boolean;
  /** Log lines dropped since start (monotonic; see `droppedLogLinesOf`). */
  log?: () => { droppedLines: number };
}

/** Options of {@link ProxyMetrics}. */
export interface ProxyMetricsOptions {
  /** Also collect prom-client's default process metrics (CPU, memory, event loop lag, GC). @default true */
  collectDefaultMetrics?: boolean;
  /** Product tokens with a label value of their own (`metrics.tokenLabels`). @default 20 */
  tokenLabels?: number;
  /** Identities with a label value of their own (`metrics.identityLabels`). @default 20 */
  identityLabels?: number;
  /** Origins with pacing gauges of their own (`metrics.busiestOrigins`). @default 10 */
  busiestOrigins?: number;
}

/**
 * Maps an upstream status to its class: 100–599 to `Nxx`, anything else to
 * `error`. Pure. RFC 9110 §15 (status classes).
 */
export function toStatusClass(status: number): UpstreamStatusClass {
  if (!Number.isInteger(status) || status < 100 || status > 599) return 'error';
  return `${Math.floor(status / 100)}xx` as UpstreamStatusClass;
}

/** Both verdicts, in the order of the counts kept per reason. */
const VERDICTS: readonly Verdict[] = ['allow', 'deny'];
const ERROR_CLASS_INDEX = UPSTREAM_STATUS_CLASSES.indexOf('error');

/** Index of {@link toStatusClass}(status) in {@link UPSTREAM_STATUS_CLASSES}, without building the label. */
function statusClassIndexOf(status: number): number {
  if (!Number.isInteger(status) || status < 100 || status > 599) return ERROR_CLASS_INDEX;
  return Math.floor(status / 100) - 1;
}

/**
 * The proxy's metrics: counters and histograms fed by {@link ProxyMetrics.observe}
 * (one call per finished request) and {@link ProxyMetrics.observeRobotsFetch},
 * gauges read from the stats callbacks at each scrape, rendered as
 * Prometheus text by {@link ProxyMetrics.render}.
 */
export class ProxyMetrics {
  /** The registry holding every metric of this instance (default process metrics included). */
  readonly registry: Registry;
  readonly #requests: Counter<'verdict' | 'reason'>;
  /** Finished requests by reason: [allow, deny] (requests_total, read at each scrape). */
  readonly #requestCounts = new Map<DecisionReason, [number, number]>();
  /** Upstream answers by index in {@link UPSTREAM_STATUS_CLASSES} (upstream_responses_total, read at each scrape). */
  readonly #upstreamCounts = new Float64Array(UPSTREAM_STATUS_CLASSES.length);
  readonly #wouldDeny: Counter<'reason'>;
  /** `request_duration_seconds` of allowed and denied requests (the label set resolved once). */
  readonly #durationAllow: HistogramSeries;
  readonly #durationDeny: HistogramSeries;
  readonly #queueWait: HistogramSeries;
  readonly #robotsFetches: Counter<'state'>;
  readonly #connectionsRefused: Counter<'limit'>;
  readonly #clientTimeouts: Counter<'kind'>;
  readonly #slotHoldExceeded: Counter<'waiting_on'>;
  readonly #robotsFetchOutcomes: Counter<'outcome'>;
  readonly #bots: BotMetrics;
  readonly #fleetFallbacks: Counter<'mode'>;

  /**
   * @param sources callbacks for the gauges, read at each scrape; a callback
   *   that throws makes {@link ProxyMetrics.render} reject.
   * @param options see {@link ProxyMetricsOptions}.
   */
  constructor(sources: MetricsStatsSources = {}, options: ProxyMetricsOptions = {}) {
    this.registry = new Registry();
    const registers = [this.registry];
    const requestCounts = this.#requestCounts;
    for (const reason of DECISION_REASONS) requestCounts.set(reason, [0, 0]);
    this.#requests = new Counter({
      name: METRIC_NAME.requests,
      help: 'Finished requests (and CONNECTs) by verdict and decision reason.',
      labelNames: ['verdict', 'reason'],
      registers,
      // Counted per request in plain numbers (observe); the series are rebuilt from them here, at each scrape.
      collect() {
        this.reset();
        for (const [reason, counts] of requestCounts) {
          const expected = VERDICTS_BY_REASON[reason] ?? [];
          for (const verdict of VERDICTS) {
            const count = counts[verdict === 'allow' ? 0 : 1];
            if (count > 0 || expected.includes(verdict)) this.inc({ verdict, reason }, count);
          }
        }
      },
    });
    this.#wouldDeny = new Counter({
      name: METRIC_NAME.wouldDeny,
      help: 'Requests forwarded although they would have been refused (enforcement: report, or a report rule), by the reason they would have had.',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of WOULD_DENY_REASONS) this.#wouldDeny.inc({ reason }, 0);
    // Counted per request into series resolved here (prom-client's observe validated and hashed a label object per call).
    const duration = new BatchedHistogram<'verdict'>({
      name: METRIC_NAME.requestDuration,
      help: 'Request duration from arrival to last byte sent, in seconds, by verdict.',
      labelNames: ['verdict'],
      buckets: DURATION_BUCKETS_SECONDS,
      registers,
    });
    this.#durationAllow = duration.series({ verdict: 'allow' });
    this.#durationDeny = duration.series({ verdict: 'deny' });
    this.#queueWait = new BatchedHistogram({
      name: METRIC_NAME.queueWait,
      help: 'Time a request waited for its start slot, in seconds (queued requests only).',
      buckets: QUEUE_WAIT_BUCKETS_SECONDS,
      registers,
    }).series({});
    const upstreamCounts = this.#upstreamCounts;
    new Counter({
      name: METRIC_NAME.upstreamResponses,
      help: 'Upstream responses by status class; error when none arrived.',
      labelNames: ['status_class'],
      registers,
      collect() {
        this.reset();
        UPSTREAM_STATUS_CLASSES.forEach((statusClass, i) => this.inc({ status_class: statusClass }, upstreamCounts[i] ?? 0));
      },
    });
    this.#robotsFetches = new Counter({
      name: METRIC_NAME.robotsFetches,
      help: 'robots.txt fetches by outcome: ok, unavailable (allow all) or unreachable (disallow all).',
      labelNames: ['state'],
      registers,
    });
    for (const state of ROBOTS_FETCH_STATES) this.#robotsFetches.inc({ state }, 0);
    this.#connectionsRefused = new Counter({
      name: METRIC_NAME.clientConnectionsRefused,
      help: 'Client connections refused by a connection cap (answered 503/429, or closed), by limit.',
      labelNames: ['limit'],
      registers,
    });
    for (const limit of CONNECTION_LIMIT_NAMES) this.#connectionsRefused.inc({ limit }, 0);
    this.#clientTimeouts = new Counter({
      name: METRIC_NAME.clientTimeouts,
      help: 'Client connections or requests cut by a client timeout: idle, request-body or response-write.',
      labelNames: ['kind'],
      registers,
    });
    for (const kind of CLIENT_TIMEOUT_KINDS) this.#clientTimeouts.inc({ kind }, 0);
    this.#slotHoldExceeded = new Counter({
      name: METRIC_NAME.slotHoldExceeded,
      help: 'Start slots released because a request held one past pacing.maxSlotHold, by what it was waiting on.',
      labelNames: ['waiting_on'],
      registers,
    });
    for (const waitingOn of SLOT_HOLD_WAITING_ON) this.#slotHoldExceeded.inc({ waiting_on: waitingOn }, 0);
    this.#robotsFetchOutcomes = new Counter({
      name: METRIC_NAME.robotsFetchOutcomes,
      help: 'robots.txt fetches by outcome: 2xx, 4xx, too-many-redirects, 429, 5xx, timeout, network (connection or TLS error), other.',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ROBOTS_FETCH_OUTCOMES) this.#robotsFetchOutcomes.inc({ outcome }, 0);
    this.#bots = new BotMetrics(registers, {
      ...(options.tokenLabels !== undefined ? { tokenLabels: options.tokenLabels } : {}),
      ...(options.identityLabels !== undefined ? { identityLabels: options.identityLabels } : {}),
      queueWaitBuckets: QUEUE_WAIT_BUCKETS_SECONDS,
      names: { requests: METRIC_NAME.botRequests, queueWait: METRIC_NAME.botQueueWait, mismatches: METRIC_NAME.identityMismatches },
    });
    this.#fleetFallbacks = new Counter({
      name: METRIC_NAME.fleetFallbacks,
      help: 'Requests paced while the fleet\'s Redis did not answer: local (alone, delays x state.fleetSize) or deny (answered 503).',
      labelNames: ['mode'],
      registers,
    });
    for (const mode of FLEET_FALLBACK_MODES) this.#fleetFallbacks.inc({ mode }, 0);
    const fleetAvailable = sources.fleetAvailable;
    if (fleetAvailable) {
      new Gauge({
        name: METRIC_NAME.fleetStateAvailable,
        help: '1 while the fleet\'s Redis answers, else 0.',
        registers,
        collect() {
          this.set(fleetAvailable() ? 1 : 0);
        },
      });
    }
    registerStatsMetrics(sources, registers);
    if (sources.originPacing) registerOriginPacingMetrics(sources.originPacing, options.busiestOrigins ?? 10, registers);
    if (sources.ledger) registerLedgerMetrics(sources.ledger, registers);
    if (options.collectDefaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** The Content-Type of {@link ProxyMetrics.render}'s text (Prometheus text exposition format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * Counts one finished request: `requests_total{verdict,reason}` from its
   * Decision (never re-derived), its duration, its queue wait when it was
   * queued, and its upstream outcome when it was forwarded (status class, or
   * `error` when it was forwarded, or failed as `upstream-error`, without a status).
   * Never throws.
   */
  observe(entry: AccessEntry): void {
    const { verdict, reason } = entry.decision;
    const counts = this.#requestCounts.get(reason);
    if (counts !== undefined) counts[verdict === 'allow' ? 0 : 1]++;
    else this.#requestCounts.set(reason, verdict === 'allow' ? [1, 0] : [0, 1]);
    if (entry.decision.wouldDeny !== undefined) this.#wouldDeny.inc({ reason: entry.decision.wouldDeny });
    (verdict === 'allow' ? this.#durationAllow : this.#durationDeny).observe(Math.max(0, entry.timings.durationMs) / 1000);
    if (entry.timings.queueWaitMs !== null) this.#queueWait.observe(Math.max(0, entry.timings.queueWaitMs) / 1000);
    const upstreamStatus = entry.response.upstreamStatus;
    const classIndex =
      upstreamStatus !== null ? statusClassIndexOf(upstreamStatus) : reason === 'upstream-error' || entry.timings.upstreamMs !== null ? ERROR_CLASS_INDEX : -1;
    if (classIndex >= 0) this.#upstreamCounts[classIndex] = (this.#upstreamCounts[classIndex] ?? 0) + 1;
    const timeoutKind = reason === 'client-timeout' && entry.error !== null ? CLIENT_TIMEOUT_KIND_BY_ERROR[entry.error] : undefined;
    if (timeoutKind !== undefined) this.#clientTimeouts.inc({ kind: timeoutKind });
    this.#bots.observe(entry);
  }

  /** Counts one limit hit that is not a request (see {@link LimitEvent}). Never throws. */
  observeLimit(event: LimitEvent): void {
    switch (event.kind) {
      case 'connection-refused':
        this.#connectionsRefused.inc({ limit: event.limit });
        return;
      case 'client-idle-timeout':
        this.#clientTimeouts.inc({ kind: 'idle' });
        return;
      case 'slot-hold-exceeded':
        this.#slotHoldExceeded.inc({ waiting_on: event.waitingOn });
        return;
    }
  }

  /**
   * Counts one robots.txt fetch by how it ended (RFC 9309 §2.3.1): by state, and, given the
   * snapshot's info, by detailed outcome too. Never throws.
   */
  observeRobotsFetch(fetched: RobotsFetchState | SnapshotInfo): void {
    if (typeof fetched === 'string') {
      this.#robotsFetches.inc({ state: fetched });
      return;
    }
    this.#robotsFetches.inc({ state: fetched.state });
    this.#robotsFetchOutcomes.inc({ outcome: robotsFetchOutcomeOf(fetched) });
  }

  /** Counts one request paced while the fleet's Redis did not answer (`state.redis.onUnavailable`). Never throws. */
  observeFleetFallback(mode: 'local' | 'deny'): void {
    this.#fleetFallbacks.inc({ mode });
  }

  /**
   * Renders every metric of this instance as Prometheus text.
   * @throws whatever a stats callback throws.
   */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}

/** Registers the gauges and counters read from the stats callbacks. */
function registerStatsMetrics(sources: MetricsStatsSources, registers: Registry[]): void {
  const { pacing, robotsCache, tls, connections, log } = sources;
  if (log) {
    new Counter({
      name: METRIC_NAME.logLinesDropped,
      help: "Log lines dropped because stdout's reader (a pipe) did not keep up, or was gone.",
      registers,
      collect() {
        this.reset();
        this.inc(log().droppedLines);
      },
    });
  }
  if (connections) {
    new Gauge({
      name: METRIC_NAME.clientConnectionsOpen,
      help: 'Client connections open on the proxy listener (CONNECT tunnels included).',
      registers,
      collect() {
        this.set(connections().open);
      },
    });
  }
  if (robotsCache) {
    new Gauge({
      name: METRIC_NAME.robotsCacheOrigins,
      help: 'Origins with a robots snapshot in the cache.',
      registers,
      collect() {
        this.set(robotsCache().size);
      },
    });
    new Gauge({
      name: METRIC_NAME.robotsCacheBytes,
      help: 'Estimated heap bytes of the robots cache: stored snapshots with their parsed files and rule indexes, plus fetches in flight.',
      registers,
      collect() {
        this.set(robotsCache().bytes);
      },
    });
    new Counter({
      name: METRIC_NAME.robotsCacheEvictions,
      help: 'Robots snapshots dropped from the cache to stay within robots.cacheBytes and robots.maxOrigins.',
      registers,
      collect() {
        this.reset();
        this.inc(robotsCache().evictions);
      },
    });
  }
  if (pacing) {
    new Gauge({
      name: METRIC_NAME.pacingQueued,
      help: 'Requests waiting for a start slot, over all origins.',
      registers,
      collect() {
        this.set(pacing().queued);
      },
    });
    new Gauge({
      name: METRIC_NAME.pacingInFlight,
      help: 'Requests started and not yet finished, over all origins.',
      registers,
      collect() {
        this.set(pacing().inFlight);
      },
    });
  }
  if (sources.tlsCaNotAfterMs !== undefined) {
    new Gauge({
      name: METRIC_NAME.tlsCaNotAfter,
      help: 'The interception CA\'s notAfter, seconds since the Unix epoch: alert on it minus time() (after it every CONNECT to intercept is refused 500).',
      registers,
    }).set(sources.tlsCaNotAfterMs / 1000);
  }
  if (tls) {
    // Counters mirrored from the issuer's own monotonic counts: reset, then add the current total.
    new Counter({
      name: METRIC_NAME.tlsLeavesIssued,
      help: 'TLS leaf certificates signed since start.',
      registers,
      collect() {
        this.reset();
        this.inc(tls().issued);
      },
    });
    new Counter({
      name: METRIC_NAME.tlsLeafCacheHits,
      help: 'TLS leaf certificate lookups answered from the cache since start.',
      registers,
      collect() {
        this.reset();
        this.inc(tls().cacheHits);
      },
    });
  }
}
