// run-tests: in-process
/**
 * The bot-labelled metrics: requests by identity, token, verdict and reason,
 * queue wait by token, with tokens bounded to the top N by traffic (the rest
 * `other`) and totals that never go down when a token loses its label; the
 * busiest origins' pacing gauges; robots.txt fetch outcomes; the ledger's counters.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { METRIC_NAME, ProxyMetrics } from '../../src/audit/metrics.js';
import { makeDecision, makeEntry, makeSnapshot } from './factories.js';
import { parseSamples, valueOf, type Sample } from './prometheus-text.js';

const allow = makeDecision({ verdict: 'allow', reason: 'rule-allow', productToken: null });

function sendAs(metrics: ProxyMetrics, token: string, times: number, queueWaitMs: number | null = null): void {
  for (let i = 0; i < times; i++) metrics.observe(makeEntry({ decision: allow, productTokens: [token], timings: { queueWaitMs } }));
}

function tokensOf(samples: Sample[]): Map<string, number> {
  const byToken = new Map<string, number>();
  for (const s of samples) if (s.name === METRIC_NAME.botRequests) byToken.set(s.labels['token']!, (byToken.get(s.labels['token']!) ?? 0) + s.value);
  return byToken;
}

describe('bot metrics', () => {
  it('gives the top N tokens by traffic a label, counts the rest as other, and never loses a request', async () => {
    const metrics = new ProxyMetrics({}, { collectDefaultMetrics: false, tokenLabels: 2 });
    sendAs(metrics, 'SmallBot', 1);
    sendAs(metrics, 'MidBot', 3);
    sendAs(metrics, 'BigBot', 20);
    sendAs(metrics, 'HugeBot', 40);
    // Before the first scrape the first two tokens seen hold the labels.
    assert.deepEqual([...tokensOf(parseSamples(await metrics.render())).entries()].sort(), [
      ['other', 64],
    ], 'the scrape moved the labels to BigBot and HugeBot: SmallBot and MidBot were folded into other with them');
    sendAs(metrics, 'HugeBot', 4);
    sendAs(metrics, 'BigBot', 2);
    sendAs(metrics, 'SmallBot', 1);
    const after = tokensOf(parseSamples(await metrics.render()));
    assert.deepEqual([...after.entries()].sort(), [
      ['BigBot', 2],
      ['HugeBot', 4],
      ['other', 65],
    ]);
  });

  it('labels the identity (none without one) and the verdict and reason of the Decision', async () => {
    const metrics = new ProxyMetrics({}, { collectDefaultMetrics: false });
    metrics.observe({ ...makeEntry(), identity: 'team-a' });
    metrics.observe(makeEntry());
    const samples = parseSamples(await metrics.render());
    assert.equal(valueOf(samples, METRIC_NAME.botRequests, { identity: 'team-a', token: 'gptbot', verdict: 'deny', reason: 'rule-disallow' }), 1);
    assert.equal(valueOf(samples, METRIC_NAME.botRequests, { identity: 'none', token: 'gptbot', verdict: 'deny', reason: 'rule-disallow' }), 1);
  });

  it('observes queue waits per token', async () => {
    const metrics = new ProxyMetrics({}, { collectDefaultMetrics: false });
    sendAs(metrics, 'SlowBot', 2, 1500);
    sendAs(metrics, 'FastBot', 1, 5);
    const samples = parseSamples(await metrics.render());
    assert.equal(valueOf(samples, `${METRIC_NAME.botQueueWait}_count`, { token: 'SlowBot' }), 2);
    assert.equal(valueOf(samples, `${METRIC_NAME.botQueueWait}_sum`, { token: 'SlowBot' }), 3);
    assert.equal(valueOf(samples, `${METRIC_NAME.botQueueWait}_bucket`, { token: 'FastBot', le: '0.01' }), 1);
  });

  it('shows pacing gauges for the busiest origins only', async () => {
    const origins = [
      { origin: 'http://quiet.example', queued: 0, inFlight: 1, pausedUntilMs: undefined },
      { origin: 'http://busy.example', queued: 7, inFlight: 1, pausedUntilMs: undefined },
      { origin: 'http://paused.example', queued: 3, inFlight: 0, pausedUntilMs: 1 },
      { origin: 'http://idle.example', queued: 0, inFlight: 0, pausedUntilMs: undefined },
    ];
    const metrics = new ProxyMetrics({ originPacing: () => origins }, { collectDefaultMetrics: false, busiestOrigins: 2 });
    const samples = parseSamples(await metrics.render());
    const queued = samples.filter((s) => s.name === METRIC_NAME.originQueued);
    assert.deepEqual(queued.map((s) => [s.labels['origin'], s.value]), [
      ['http://busy.example', 7],
      ['http://paused.example', 3],
    ]);
    assert.equal(valueOf(samples, METRIC_NAME.originPaused, { origin: 'http://paused.example' }), 1);
    assert.equal(valueOf(samples, METRIC_NAME.originInFlight, { origin: 'http://busy.example' }), 1);
  });

  it('counts robots.txt fetches by detailed outcome', async () => {
    const metrics = new ProxyMetrics({}, { collectDefaultMetrics: false });
    metrics.observeRobotsFetch(makeSnapshot());
    metrics.observeRobotsFetch(makeSnapshot({ state: 'unavailable', status: 404 }));
    metrics.observeRobotsFetch(makeSnapshot({ state: 'unavailable', status: 301, error: 'too-many-redirects' }));
    metrics.observeRobotsFetch(makeSnapshot({ state: 'unreachable', status: 429 }));
    metrics.observeRobotsFetch(makeSnapshot({ state: 'unreachable', status: 503 }));
    metrics.observeRobotsFetch(makeSnapshot({ state: 'unreachable', status: undefined, error: 'timeout' }));
    metrics.observeRobotsFetch(makeSnapshot({ state: 'unreachable', status: undefined, error: 'ECONNREFUSED' }));
    const samples = parseSamples(await metrics.render());
    const outcomes = Object.fromEntries(samples.filter((s) => s.name === METRIC_NAME.robotsFetchOutcomes).map((s) => [s.labels['outcome'], s.value]));
    assert.deepEqual(outcomes, { '2xx': 1, '4xx': 1, 'too-many-redirects': 1, '429': 1, '5xx': 1, timeout: 1, network: 1, other: 0 });
    assert.equal(valueOf(samples, METRIC_NAME.robotsFetches, { state: 'unreachable' }), 4);
  });

  it("mirrors the ledger's counters", async () => {
    const stats = {
      writes: 12,
      failures: { busy: 2, full: 1, readonly: 0, open: 0, schema: 0, other: 0 },
      pendingCells: 3,
      pendingRefusals: 1,
      pendingRobotsFetches: 0,
      foldedRequests: 9,
      droppedRefusals: 0,
      droppedRobotsFetches: 0,
      lastWriteMs: 4,
    };
    const metrics = new ProxyMetrics({ ledger: () => stats }, { collectDefaultMetrics: false });
    const samples = parseSamples(await metrics.render());
    assert.equal(valueOf(samples, METRIC_NAME.ledgerWrites), 12);
    assert.equal(valueOf(samples, METRIC_NAME.ledgerFailures, { kind: 'busy' }), 2);
    assert.equal(valueOf(samples, METRIC_NAME.ledgerPending), 4);
    assert.equal(valueOf(samples, METRIC_NAME.ledgerDropped, { what: 'folded-requests' }), 9);
    assert.equal(valueOf(samples, METRIC_NAME.ledgerWriteSeconds), 0.004);
  });
});
