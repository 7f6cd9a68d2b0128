/**
 * Metrics that can answer "which bot": requests by identity, product token,
 * verdict and reason, and queue wait by product token, with the token and
 * identity labels bounded by {@link TopLabels} (the top N by traffic keep
 * their own value, the rest are `other`; no token at all is `none`).
 * Extension, not in RFC 9309.
 */
import { Counter, type Registry } from 'prom-client';
import { BatchedHistogram, type HistogramSeries } from './batched-histogram.js';
import type { AccessEntry } from './access-entry.js';
import { ledgerTokenOf } from './ledger/rollup.js';
import { OTHER_LABEL, TopLabels } from './top-labels.js';

/** Label value for a request without product token or identity. */
export const NONE_LABEL = 'none';

/** Options of {@link BotMetrics}. */
export interface BotMetricsOptions {
  /** Product tokens with a label of their own. @default 20 */
  tokenLabels?: number;
  /** Identities with a label of their own. @default 20 */
  identityLabels?: number;
  /** Histogram buckets of the queue wait, seconds. */
  queueWaitBuckets: number[];
  /** Metric names. */
  names: { requests: string; queueWait: string; mismatches: string };
}

interface Series {
  identity: string;
  token: string;
  verdict: string;
  reason: string;
  count: number;
}

/**
 * The bot-labelled metrics. Counts live here (bounded: identities x tokens x
 * verdict/reason pairs); the counter is rebuilt from them at each scrape, after
 * the label sets are rebalanced, so a token that leaves the top N folds its
 * count into `other` and the totals never go down.
 */
export class BotMetrics {
  readonly #tokens: TopLabels;
  readonly #identities: TopLabels;
  readonly #series = new Map<string, Series>();
  /** Identity mismatches (issue 8) by identity, claimed token and bound token, folded like the series. */
  readonly #mismatches = new Map<string, { identity: string; claimed: string; bound: string; count: number }>();
  /** The series {@link BotMetrics.#add} counted last (still in {@link BotMetrics.#series}), or undefined after a rebalance moved series. */
  #lastSeries: Series | undefined;
  readonly #queueWait: BatchedHistogram<'token'>;
  /** The queue-wait series of the token counted last, reused while a run of its requests lasts; undefined after a rebalance. */
  #lastWait: HistogramSeries | undefined;

  constructor(registers: Registry[], options: BotMetricsOptions) {
    this.#tokens = new TopLabels(options.tokenLabels ?? 20);
    this.#identities = new TopLabels(options.identityLabels ?? 20);
    const self = this;
    new Counter({
      name: options.names.requests,
      help: 'Finished requests by identity, product token (top N by traffic, the rest "other"; "none" without one), verdict and reason.',
      labelNames: ['identity', 'token', 'verdict', 'reason'],
      registers,
      collect() {
        self.#rebalance();
        this.reset();
        for (const s of self.#series.values()) this.inc({ identity: s.identity, token: s.token, verdict: s.verdict, reason: s.reason }, s.count);
      },
    });
    new Counter({
      name: options.names.mismatches,
      help: 'Requests of a bound identity whose User-Agent named none of its tokens, by identity, claimed token (the User-Agent\'s best candidate; "none" without one) and bound token (the one decided for); labels bounded as in bot_requests_total.',
      labelNames: ['identity', 'claimed', 'bound'],
      registers,
      collect() {
        // Registered after the requests counter, whose collect has just rebalanced the labels for this scrape
        // (a second rebalance would halve the counts twice).
        this.reset();
        for (const m of self.#mismatches.values()) this.inc({ identity: m.identity, claimed: m.claimed, bound: m.bound }, m.count);
      },
    });
    this.#queueWait = new BatchedHistogram<'token'>({
      name: options.names.queueWait,
      help: 'Time a request waited for its start slot, in seconds, by product token (top N by traffic, the rest "other").',
      labelNames: ['token'],
      buckets: options.queueWaitBuckets,
      registers,
    });
  }

  /** Counts one finished request. O(1); never throws. */
  observe(entry: AccessEntry): void {
    const token = this.#tokens.labelOf(ledgerTokenOf(entry) || NONE_LABEL);
    const identity = this.#identities.labelOf(entry.identity || NONE_LABEL);
    const { verdict, reason } = entry.decision;
    this.#add(identity, token, verdict, reason, 1);
    const facts = entry.decision.identity;
    if (facts?.isMismatch) {
      const first = facts.claimedTokens[0];
      // The claimed token competes for a label like any token (a client that keeps claiming it makes it a top one).
      const claimed = first === undefined ? NONE_LABEL : this.#tokens.labelOf(first);
      this.#addMismatch(identity, claimed, token, 1);
    }
    const waitMs = entry.timings.queueWaitMs;
    if (waitMs !== null) {
      let series = this.#lastWait;
      if (series === undefined || series.labels['token'] !== token) {
        series = this.#queueWait.series({ token });
        this.#lastWait = series;
      }
      series.observe(Math.max(0, waitMs) / 1000);
    }
  }

  #add(identity: string, token: string, verdict: string, reason: string, count: number): void {
    // A crawl sends run after run of the same bot, verdict and reason: the last series is reused without building its key.
    const last = this.#lastSeries;
    if (last !== undefined && last.reason === reason && last.token === token && last.identity === identity && last.verdict === verdict) {
      last.count += count;
      return;
    }
    const key = `${identity}\n${token}\n${verdict}\n${reason}`;
    const series = this.#series.get(key);
    if (series !== undefined) {
      series.count += count;
      this.#lastSeries = series;
    } else {
      const added = { identity, token, verdict, reason, count };
      this.#series.set(key, added);
      this.#lastSeries = added;
    }
  }

  #addMismatch(identity: string, claimed: string, bound: string, count: number): void {
    const key = `${identity}\n${claimed}\n${bound}`;
    const known = this.#mismatches.get(key);
    if (known !== undefined) known.count += count;
    else this.#mismatches.set(key, { identity, claimed, bound, count });
  }

  /** Rebalances both label sets and folds the series of values that lost their label into `other`. */
  #rebalance(): void {
    const tokens = new Set(this.#tokens.rebalance().removed);
    const identities = new Set(this.#identities.rebalance().removed);
    if (tokens.size === 0 && identities.size === 0) return;
    this.#lastSeries = undefined;
    for (const [key, s] of [...this.#series]) {
      const token = tokens.has(s.token) ? OTHER_LABEL : s.token;
      const identity = identities.has(s.identity) ? OTHER_LABEL : s.identity;
      if (token === s.token && identity === s.identity) continue;
      this.#series.delete(key);
      this.#add(identity, token, s.verdict, s.reason, s.count);
    }
    for (const [key, m] of [...this.#mismatches]) {
      const fold = (value: string): string => (tokens.has(value) ? OTHER_LABEL : value);
      const identity = identities.has(m.identity) ? OTHER_LABEL : m.identity;
      if (identity === m.identity && fold(m.claimed) === m.claimed && fold(m.bound) === m.bound) continue;
      this.#mismatches.delete(key);
      this.#addMismatch(identity, fold(m.claimed), fold(m.bound), m.count);
    }
    this.#lastWait = undefined;
    for (const token of tokens) this.#queueWait.remove({ token });
  }
}
