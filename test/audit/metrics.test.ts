// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FLEET_FALLBACK_MODES, METRIC_NAME, METRIC_PREFIX, ProxyMetrics, toStatusClass, VERDICTS_BY_REASON } from '../../src/audit/metrics.js';
import { DECISION_REASONS } from '../../src/policy/decision.js';
import { CONNECTION_LIMIT_NAMES, SLOT_HOLD_WAITING_ON } from '../../src/audit/limit-events.js';
import { ROBOTS_FETCH_OUTCOMES } from '../../src/audit/scrape-metrics.js';
import { makeDecision, makeEntry } from './factories.js';
import { parseSamples, valueOf } from './prometheus-text.js';


describe('ProxyMetrics', () => {
  it('pre-registers every reason with its verdicts, status classes and robots states at 0', async () => {
    const samples = parseSamples(await new ProxyMetrics({}, { collectDefaultMetrics: false }).render());
    for (const reason of DECISION_REASONS) {
      for (const verdict of VERDICTS_BY_REASON[reason]) {
        assert.equal(valueOf(samples, METRIC_NAME.requests, { verdict, reason }), 0, `${verdict}/${reason}`);
      }
    }
    for (const statusClass of ['1xx', '2xx', '3xx', '4xx', '5xx', 'error']) {
      assert.equal(valueOf(samples, METRIC_NAME.upstreamResponses, { status_class: statusClass }), 0);
    }
    for (const state of ['ok', 'unavailable', 'unreachable']) {
      assert.equal(valueOf(samples, METRIC_NAME.robotsFetches, { state }), 0);
    }
    assert.equal(valueOf(samples, METRIC_NAME.pacingQueued), undefined, 'no stats callback, no gauge');
  });

  it('counts observed requests by the Decision, with durations, queue waits and upstream classes', async () => {
    const metrics = new ProxyMetrics({}, { collectDefaultMetrics: false });
    const allowed = makeDecision({ verdict: 'allow', reason: 'rule-allow', rule: { kind: 'allow', pattern: '/', line: 2 } });
    metrics.observe(makeEntry());
    metrics.observe(makeEntry());
    metrics.observe(makeEntry({ decision: allowed, timings: { queueWaitMs: 250, upstreamMs: 40, durationMs: 300 }, response: { status: 200, upstreamStatus: 200 } }));
    metrics.observe(makeEntry({ decision: allowed, timings: { queueWaitMs: 0, upstreamMs: 10, durationMs: 20 }, response: { status: 503, upstreamStatus: 503 } }));
    metrics.observe(
      makeEntry({
        decision: makeDecision({ verdict: 'allow', reason: 'upstream-error', rule: null }),
        timings: { queueWaitMs: 0, upstreamMs: null, durationMs: 5 },
        response: { status: 502, upstreamStatus: null },
        error: 'ECONNREFUSED',
      }),
    );
    metrics.observeRobotsFetch('ok');
    metrics.observeRobotsFetch('unreachable');
    metrics.observeRobotsFetch('unreachable');
    const samples = parseSamples(await metrics.render());
    assert.equal(valueOf(samples, METRIC_NAME.requests, { verdict: 'deny', reason: 'rule-disallow' }), 2);
    assert.equal(valueOf(samples, METRIC_NAME.requests, { verdict: 'allow', reason: 'rule-allow' }), 2);
    assert.equal(valueOf(samples, METRIC_NAME.requests, { verdict: 'allow', reason: 'upstream-error' }), 1);
    assert.equal(valueOf(samples, `${METRIC_NAME.requestDuration}_count`, { verdict: 'deny' }), 2);
    assert.equal(valueOf(samples, `${METRIC_NAME.requestDuration}_count`, { verdict: 'allow' }), 3);
    assert.equal(valueOf(samples, `${METRIC_NAME.requestDuration}_sum`, { verdict: 'allow' }), 0.325);
    assert.equal(valueOf(samples, `${METRIC_NAME.requestDuration}_bucket`, { verdict: 'allow', le: '0.25' }), 2);
    assert.equal(valueOf(samples, `${METRIC_NAME.queueWait}_count`), 3, 'denied requests were not queued');
    assert.equal(valueOf(samples, `${METRIC_NAME.queueWait}_sum`), 0.25);
    assert.equal(valueOf(samples, METRIC_NAME.upstreamResponses, { status_class: '2xx' }), 1);
    assert.equal(valueOf(samples, METRIC_NAME.upstreamResponses, { status_class: '5xx' }), 1);
    assert.equal(valueOf(samples, METRIC_NAME.upstreamResponses, { status_class: 'error' }), 1);
    assert.equal(valueOf(samples, METRIC_NAME.robotsFetches, { state: 'ok' }), 1);
    assert.equal(valueOf(samples, METRIC_NAME.robotsFetches, { state: 'unreachable' }), 2);
  });

  it('keeps counting across scrapes: the per-request counts are read at each scrape, never reset by it, unknown pairs included', async () => {
    const metrics = new ProxyMetrics({ log: () => ({ droppedLines: 7 }) }, { collectDefaultMetrics: false });
    metrics.observe(makeEntry());
    metrics.observe(makeEntry({ response: { upstreamStatus: 101 } }));
    let samples = parseSamples(await metrics.render());
    assert.equal(valueOf(samples, METRIC_NAME.requests, { verdict: 'deny', reason: 'rule-disallow' }), 2);
    assert.equal(valueOf(samples, METRIC_NAME.upstreamResponses, { status_class: '1xx' }), 1);
    assert.equal(valueOf(samples, METRIC_NAME.logLinesDropped), 7);
    metrics.observe(makeEntry());
    // A pair outside VERDICTS_BY_REASON still gets its series.
    metrics.observe(makeEntry({ decision: makeDecision({ verdict: 'deny', reason: 'upstream-error' }), response: { upstreamStatus: 99 } }));
    samples = parseSamples(await metrics.render());
    assert.equal(valueOf(samples, METRIC_NAME.requests, { verdict: 'deny', reason: 'rule-disallow' }), 3);
    assert.equal(valueOf(samples, METRIC_NAME.requests, { verdict: 'deny', reason: 'upstream-error' }), 1);
    assert.equal(valueOf(samples, METRIC_NAME.requests, { verdict: 'allow', reason: 'upstream-error' }), 0, 'pre-registered pair kept at 0');
    assert.equal(valueOf(samples, METRIC_NAME.upstreamResponses, { status_class: 'error' }), 1, 'an upstream status outside 100-599');
    assert.equal(valueOf(samples, METRIC_NAME.requests, { verdict: 'allow', reason: 'rule-disallow' }), undefined, 'no series for a pair never seen nor expected');
  });

  it('labels only from closed sets or top-N bounded tokens and identities: no origin, path, pattern or User-Agent anywhere', async () => {
    const metrics = new ProxyMetrics({}, { collectDefaultMetrics: false });
    metrics.observe(makeEntry({ request: { userAgent: 'UniqueBot/9.9' } }));
    const text = await metrics.render();
    const closedSets: Record<string, ReadonlySet<string>> = {
      verdict: new Set(['allow', 'deny']),
      reason: new Set(DECISION_REASONS),
      status_class: new Set(['1xx', '2xx', '3xx', '4xx', '5xx', 'error']),
      state: new Set(['ok', 'unavailable', 'unreachable']),
      limit: new Set(CONNECTION_LIMIT_NAMES),
      kind: new Set(['idle', 'request-body', 'response-write']),
      waiting_on: new Set(SLOT_HOLD_WAITING_ON),
      outcome: new Set(ROBOTS_FETCH_OUTCOMES),
      mode: new Set(FLEET_FALLBACK_MODES),
      // Bounded by TopLabels (tested in bot-metrics.test.ts): the decided token, no identity.
      token: new Set(['gptbot']),
      identity: new Set(['none']),
    };
    const samples = parseSamples(text);
    assert.ok(samples.length > 10);
    for (const sample of samples) {
      assert.ok(sample.name.startsWith(METRIC_PREFIX), sample.name);
      for (const [label, value] of Object.entries(sample.labels)) {
        if (label === 'le') continue; // histogram bucket bound
        assert.ok(closedSets[label]?.has(value), `label ${label}="${value}" on ${sample.name}`);
      }
    }
    assert.doesNotMatch(text, /origin=|127\.0\.0\.1|\/private\/|UniqueBot/i);
  });

  it('reads gauges and TLS counters from the stats callbacks at each scrape', async () => {
    let queued = 3;
    const metrics = new ProxyMetrics(
      {
        pacing: () => ({ queued, inFlight: 2 }),
        robotsCache: () => ({ size: 7, bytes: 123_456, evictions: 4 }),
        tls: () => ({ issued: 5, cacheHits: 11 }),
      },
      { collectDefaultMetrics: false },
    );
    let samples = parseSamples(await metrics.render());
    assert.equal(valueOf(samples, METRIC_NAME.pacingQueued), 3);
    assert.equal(valueOf(samples, METRIC_NAME.pacingInFlight), 2);
    assert.equal(valueOf(samples, METRIC_NAME.robotsCacheOrigins), 7);
    assert.equal(valueOf(samples, METRIC_NAME.robotsCacheBytes), 123_456);
    assert.equal(valueOf(samples, METRIC_NAME.robotsCacheEvictions), 4);
    assert.equal(valueOf(samples, METRIC_NAME.tlsLeavesIssued), 5);
    assert.equal(valueOf(samples, METRIC_NAME.tlsLeafCacheHits), 11);
    queued = 0;
    samples = parseSamples(await metrics.render());
    assert.equal(valueOf(samples, METRIC_NAME.pacingQueued), 0);
    assert.equal(valueOf(samples, METRIC_NAME.tlsLeavesIssued), 5, 'a mirrored counter is not added up twice');
  });

  it('has its own registry: instances do not share counts, and default process metrics are collected', async () => {
    const a = new ProxyMetrics();
    const b = new ProxyMetrics();
    a.observe(makeEntry());
    const textA = await a.render();
    const samplesB = parseSamples(await b.render());
    assert.equal(valueOf(parseSamples(textA), METRIC_NAME.requests, { verdict: 'deny', reason: 'rule-disallow' }), 1);
    assert.equal(valueOf(samplesB, METRIC_NAME.requests, { verdict: 'deny', reason: 'rule-disallow' }), 0);
    assert.match(textA, /^process_cpu_user_seconds_total /m);
    assert.match(a.contentType, /^text\/plain; version=0\.0\.4/);
  });

  it('maps statuses to classes, anything out of range to error', () => {
    assert.equal(toStatusClass(101), '1xx');
    assert.equal(toStatusClass(204), '2xx');
    assert.equal(toStatusClass(308), '3xx');
    assert.equal(toStatusClass(429), '4xx');
    assert.equal(toStatusClass(599), '5xx');
    assert.equal(toStatusClass(600), 'error');
    assert.equal(toStatusClass(99), 'error');
    assert.equal(toStatusClass(200.5), 'error');
  });
});
