/**
 * LimitReporter: every limit hit is counted; refusals are logged at most once
 * per limit per interval (a flood must not flood the log), the next line
 * saying how many were not logged.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { LimitReporter, type LimitEvent } from '../../src/audit/limit-events.js';
import { METRIC_NAME, ProxyMetrics } from '../../src/audit/metrics.js';
import { FakeClock } from '../pacing/fake-clock.js';
import { CapturedLines } from './factories.js';

function refusal(limit: 'max-connections' | 'max-connections-per-client'): LimitEvent {
  return { kind: 'connection-refused', limit, client: '192.0.2.7', cap: 10, open: 10, openFromClient: 3, answered: true };
}

function setup(): { reporter: LimitReporter; clock: FakeClock; lines: CapturedLines; metrics: ProxyMetrics } {
  const lines = new CapturedLines();
  const clock = new FakeClock();
  const metrics = new ProxyMetrics({}, { collectDefaultMetrics: false });
  const reporter = new LimitReporter({ logger: pino({ level: 'debug' }, lines), metrics, clock, refusalLogIntervalMs: 10_000 });
  return { reporter, clock, lines, metrics };
}

async function sample(metrics: ProxyMetrics, name: string, label: string): Promise<number> {
  const match = new RegExp(`^${name}\\{${label}\\} (\\d+)$`, 'm').exec(await metrics.render());
  return match ? Number(match[1]) : NaN;
}

describe('LimitReporter', () => {
  it('logs the first refusal of an interval, counts the rest, and says how many it did not log', async () => {
    const { reporter, clock, lines, metrics } = setup();
    for (let i = 0; i < 5; i += 1) reporter.report(refusal('max-connections'));
    await clock.advance(9_999);
    reporter.report(refusal('max-connections'));
    assert.equal(lines.records().length, 1);
    await clock.advance(1);
    reporter.report(refusal('max-connections'));
    const records = lines.records();
    assert.equal(records.length, 2);
    assert.deepEqual(
      records.map((r) => [r['event'], r['limit'], r['suppressed'], r['level']]),
      [
        ['connection-refused', 'max-connections', 0, 40],
        ['connection-refused', 'max-connections', 5, 40],
      ],
    );
    assert.equal(records[0]!['client'], '192.0.2.7');
    assert.equal(await sample(metrics, METRIC_NAME.clientConnectionsRefused, 'limit="max-connections"'), 7);
  });

  it('keeps one interval per limit', () => {
    const { reporter, lines } = setup();
    reporter.report(refusal('max-connections'));
    reporter.report(refusal('max-connections-per-client'));
    reporter.report(refusal('max-connections-per-client'));
    assert.deepEqual(
      lines.records().map((r) => r['limit']),
      ['max-connections', 'max-connections-per-client'],
    );
  });

  it('logs idle closes (info when a request head was cut, debug otherwise) and slot holds (warn), counting each', async () => {
    const { reporter, lines, metrics } = setup();
    reporter.report({ kind: 'client-idle-timeout', client: '192.0.2.7', partialRequest: false });
    reporter.report({ kind: 'client-idle-timeout', client: '192.0.2.7', partialRequest: true });
    reporter.report({ kind: 'slot-hold-exceeded', origin: 'https://a.test', client: { address: '192.0.2.7', port: 4000 }, heldMs: 30_000, waitingOn: 'client-read' });
    assert.deepEqual(
      lines.records().map((r) => [r['event'], r['level']]),
      [
        ['client-idle-timeout', 20],
        ['client-idle-timeout', 30],
        ['slot-hold-exceeded', 40],
      ],
    );
    assert.equal(await sample(metrics, METRIC_NAME.clientTimeouts, 'kind="idle"'), 2);
    assert.equal(await sample(metrics, METRIC_NAME.slotHoldExceeded, 'waiting_on="client-read"'), 1);
    assert.equal(await sample(metrics, METRIC_NAME.slotHoldExceeded, 'waiting_on="upstream"'), 0);
  });
});
