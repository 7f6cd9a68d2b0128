/**
 * The histograms of /metrics, counted in the proxy's own arrays (batched-histogram.ts), read
 * exactly as prom-client's own Histogram would have written them for the same requests: real
 * requests through a real proxy, the same finished requests fed to a reference registry.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Histogram, Registry } from 'prom-client';
import type { AccessEntry } from '../../src/audit/access-entry.js';
import { METRIC_NAME } from '../../src/audit/metrics.js';
import { NONE_LABEL } from '../../src/audit/bot-metrics.js';
import { ledgerTokenOf } from '../../src/audit/ledger/rollup.js';
import { startOrigin, siteHandler, startTestProxy, proxyGet, type TestOrigin } from '../helpers/harness.js';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const WAIT_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120];

/** The sample lines (no comments) of one metric family in an exposition text. */
function familyLines(text: string, name: string): string[] {
  return text.split('\n').filter((line) => line.startsWith(`${name}_bucket`) || line.startsWith(`${name}_sum`) || line.startsWith(`${name}_count`));
}

/** What prom-client's Histogram writes for these finished requests, as the proxy observed them before issue 11. */
async function referenceText(entries: readonly AccessEntry[]): Promise<string> {
  const registry = new Registry();
  const duration = new Histogram({ name: METRIC_NAME.requestDuration, help: 'h', labelNames: ['verdict'], buckets: DURATION_BUCKETS, registers: [registry] });
  for (const verdict of ['allow', 'deny'] as const) duration.zero({ verdict });
  const wait = new Histogram({ name: METRIC_NAME.queueWait, help: 'h', buckets: WAIT_BUCKETS, registers: [registry] });
  const botWait = new Histogram({ name: METRIC_NAME.botQueueWait, help: 'h', labelNames: ['token'], buckets: WAIT_BUCKETS, registers: [registry] });
  for (const entry of entries) {
    duration.observe({ verdict: entry.decision.verdict }, Math.max(0, entry.timings.durationMs) / 1000);
    if (entry.timings.queueWaitMs !== null) {
      wait.observe(Math.max(0, entry.timings.queueWaitMs) / 1000);
      // Fewer tokens than `metrics.tokenLabels`: each keeps its own label.
      botWait.observe({ token: ledgerTokenOf(entry) || NONE_LABEL }, Math.max(0, entry.timings.queueWaitMs) / 1000);
    }
  }
  return registry.metrics();
}

describe('/metrics histograms', () => {
  let origin: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  const entries: AccessEntry[] = [];

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private/\nCrawl-delay: 0.02\n', pageDelayMs: 3 }));
    proxy = await startTestProxy();
    // Every finished request reaches metrics.observe from the one onFinished hook: keep each entry too.
    const observe = proxy.metrics.observe.bind(proxy.metrics);
    proxy.metrics.observe = (entry: AccessEntry): void => {
      entries.push(entry);
      observe(entry);
    };
  });

  after(async () => {
    await proxy.close();
    await origin.close();
  });

  it('are the text prom-client wrote for the same requests: allowed, denied, queued, three bots', async () => {
    const agents = ['ExampleBot/1.0', 'Mozilla/5.0 (compatible; GPTBot/1.1)', undefined];
    const sends: Array<Promise<{ status: number }>> = [];
    for (let i = 0; i < 12; i++) {
      const userAgent = agents[i % agents.length];
      const path = i % 4 === 3 ? `/private/${i}` : `/page/${i}`;
      // Sent together: the crawl-delay queues most of them, so the waits differ.
      sends.push(proxyGet(proxy.proxyAddress.port, `${origin.url}${path}`, userAgent === undefined ? {} : { headers: { 'user-agent': userAgent } }));
    }
    const statuses = (await Promise.all(sends)).map((r) => r.status);
    assert.deepEqual([...new Set(statuses)].sort(), [200, 403]);
    // The access entry is finished once the response is flushed: wait for all of them.
    for (let i = 0; i < 100 && entries.length < sends.length; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(entries.length, sends.length);
    assert.ok(entries.some((e) => (e.timings.queueWaitMs ?? 0) > 0), 'some requests waited');

    const scraped = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    const expected = await referenceText(entries);
    for (const name of [METRIC_NAME.requestDuration, METRIC_NAME.queueWait, METRIC_NAME.botQueueWait]) {
      const lines = familyLines(scraped, name);
      assert.ok(lines.length > 0, `${name} is exposed`);
      assert.deepEqual(lines, familyLines(expected, name), name);
    }
  });
});
