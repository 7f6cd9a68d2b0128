/**
 * Metrics read at each scrape from stats callbacks: pacing gauges of the
 * busiest origins (a top-N bound chosen at each scrape, so the origin label
 * never holds more than N values at once) and the ledger's counters; and the
 * detailed outcome of a robots.txt fetch. Extension, not in RFC 9309.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { SnapshotInfo } from '../policy/decision.js';
import type { LedgerFailureKind } from './ledger/ledger.js';

/** Detailed outcomes of a robots.txt fetch (RFC 9309 §2.3.1.2-§2.3.1.4): a closed set, a label. */
export type RobotsFetchOutcome = '2xx' | '4xx' | 'too-many-redirects' | '429' | '5xx' | 'timeout' | 'network' | 'other';

/** Every {@link RobotsFetchOutcome}, pre-registered at 0. */
export const ROBOTS_FETCH_OUTCOMES: readonly RobotsFetchOutcome[] = ['2xx', '4xx', 'too-many-redirects', '429', '5xx', 'timeout', 'network', 'other'];

/** The detailed outcome of a fetch from its snapshot info. Pure. */
export function robotsFetchOutcomeOf(info: SnapshotInfo): RobotsFetchOutcome {
  if (info.error === 'too-many-redirects') return 'too-many-redirects';
  const status = info.status;
  if (status !== undefined) {
    if (status >= 200 && status < 300) return '2xx';
    if (status === 429) return '429';
    if (status >= 400 && status < 500) return '4xx';
    if (status >= 500 && status < 600) return '5xx';
    return 'other';
  }
  if (info.error === 'timeout') return 'timeout';
  return info.error === undefined ? 'other' : 'network';
}

/** One origin's pacing figures, as the pacer reports them. */
export interface OriginPacingFigures {
  origin: string;
  queued: number;
  inFlight: number;
  pausedUntilMs: number | undefined;
}

/** Pacing figures of every origin with state. */
export type OriginPacingSource = () => readonly OriginPacingFigures[];

/** The ledger's counters (a subset of `LedgerStats`). */
export type LedgerMetricsSource = () => {
  writes: number;
  failures: Record<LedgerFailureKind, number>;
  pendingCells: number;
  pendingRefusals: number;
  pendingRobotsFetches: number;
  foldedRequests: number;
  droppedRefusals: number;
  droppedRobotsFetches: number;
  lastWriteMs: number;
};

/** Names of the metrics registered here. */
export const SCRAPE_METRIC_NAME = {
  originQueued: 'robots_proxy_origin_queued_requests',
  originInFlight: 'robots_proxy_origin_in_flight_requests',
  originPaused: 'robots_proxy_origin_paused',
  ledgerWrites: 'robots_proxy_ledger_writes_total',
  ledgerFailures: 'robots_proxy_ledger_failures_total',
  ledgerPending: 'robots_proxy_ledger_pending_rows',
  ledgerDropped: 'robots_proxy_ledger_dropped_total',
  ledgerWriteSeconds: 'robots_proxy_ledger_last_write_seconds',
} as const;

/**
 * Registers the per-origin pacing gauges: at each scrape, the `busiest` origins by queued plus
 * in-flight requests (ties: more queued first), each with its figures; other origins have no series.
 */
export function registerOriginPacingMetrics(source: OriginPacingSource, busiest: number, registers: Registry[]): void {
  if (busiest <= 0) return;
  let snapshot: readonly OriginPacingFigures[] = [];
  let snapshotAtMs = -Infinity;
  // The three gauges are collected one after the other: one selection serves the whole scrape.
  const top = (): readonly OriginPacingFigures[] => {
    const nowMs = Date.now();
    if (nowMs - snapshotAtMs > 100) {
      snapshot = [...source()].sort((a, b) => b.queued + b.inFlight - (a.queued + a.inFlight) || b.queued - a.queued).slice(0, busiest);
      snapshotAtMs = nowMs;
    }
    return snapshot;
  };
  const gauge = (name: string, help: string, value: (o: OriginPacingFigures) => number): void => {
    new Gauge({
      name,
      help,
      labelNames: ['origin'],
      registers,
      collect() {
        this.reset();
        for (const o of top()) this.set({ origin: o.origin }, value(o));
      },
    });
  };
  gauge(SCRAPE_METRIC_NAME.originQueued, `Requests waiting for a start slot, at each of the ${busiest} busiest origins.`, (o) => o.queued);
  gauge(SCRAPE_METRIC_NAME.originInFlight, `Requests in flight, at each of the ${busiest} busiest origins.`, (o) => o.inFlight);
  gauge(SCRAPE_METRIC_NAME.originPaused, `1 while an upstream 429/503 pauses the origin, at each of the ${busiest} busiest origins.`, (o) => (o.pausedUntilMs === undefined ? 0 : 1));
}

/** Registers the ledger's counters and gauges, mirrored from its own counts at each scrape. */
export function registerLedgerMetrics(source: LedgerMetricsSource, registers: Registry[]): void {
  new Counter({
    name: SCRAPE_METRIC_NAME.ledgerWrites,
    help: 'Ledger write transactions committed since start.',
    registers,
    collect() {
      this.reset();
      this.inc(source().writes);
    },
  });
  new Counter({
    name: SCRAPE_METRIC_NAME.ledgerFailures,
    help: 'Ledger writes and opens that failed, by kind (busy, full, readonly, open, schema, other); requests never fail for it.',
    labelNames: ['kind'],
    registers,
    collect() {
      this.reset();
      for (const [kind, count] of Object.entries(source().failures)) this.inc({ kind }, count);
    },
  });
  new Gauge({
    name: SCRAPE_METRIC_NAME.ledgerPending,
    help: 'Ledger rows (rollup cells, refusals, robots.txt fetches) waiting in memory to be written.',
    registers,
    collect() {
      const s = source();
      this.set(s.pendingCells + s.pendingRefusals + s.pendingRobotsFetches);
    },
  });
  new Counter({
    name: SCRAPE_METRIC_NAME.ledgerDropped,
    help: 'What the ledger could not keep apart: folded-requests (counted under "(other)"), refusals and robots-fetches (not kept for drill-down).',
    labelNames: ['what'],
    registers,
    collect() {
      const s = source();
      this.reset();
      this.inc({ what: 'folded-requests' }, s.foldedRequests);
      this.inc({ what: 'refusals' }, s.droppedRefusals);
      this.inc({ what: 'robots-fetches' }, s.droppedRobotsFetches);
    },
  });
  new Gauge({
    name: SCRAPE_METRIC_NAME.ledgerWriteSeconds,
    help: 'Duration of the latest ledger write transaction, seconds.',
    registers,
    collect() {
      this.set(source().lastWriteMs / 1000);
    },
  });
}
