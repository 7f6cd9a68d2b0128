/**
 * The pipeline reports its own bugs to the listener's error boundary (issue 11:
 * the listener attaches no rejection handler per request): a throw while the
 * request asks for its slot, and one when the pacer's answer comes back later
 * (through the exchange, the pacer's taker) are both answered 500 `internal-error`,
 * logged with `where: proxy-request` and audited, the request no longer counts
 * in flight, and the proxy keeps serving. A real proxy and origin on loopback;
 * the fault is injected into the running pacer on purpose.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { captureLogs, siteHandler, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest } from '../helpers/proxy-client.js';
import type { AcquireOutcome, RequestPacer } from '../../src/pacing/types.js';

describe('pipeline failures reach the error boundary', () => {
  let origin: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;
  let port: number;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    logs = captureLogs();
    proxy = await startTestProxy({}, { logger: logs.logger });
    port = proxy.proxyAddress.port;
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  const cases: Array<[string, string, RequestPacer['acquireFor']]> = [
    [
      'a synchronous throw',
      'injected throw',
      () => {
        throw new TypeError('injected throw');
      },
    ],
    [
      'a throw after the wait',
      'injected late throw',
      (_origin, _delayMs, _options, taker) => {
        // The answer comes back later, as for a queued request, and reading it throws in the pipeline.
        const broken = {
          get granted(): boolean {
            throw new RangeError('injected late throw');
          },
        } as unknown as AcquireOutcome;
        setImmediate(() => taker.takeSlot(broken));
        return undefined;
      },
    ],
  ];
  for (const [name, message, fault] of cases) {
    it(`answers ${name} in the pipeline 500 internal-error, logs and audits it, and keeps serving`, { timeout: 20_000 }, async () => {
      const pacer = proxy.pacer;
      const acquireFor = pacer.acquireFor;
      pacer.acquireFor = fault;
      let answer;
      try {
        answer = await proxyRequest(port, `${origin.url}/page/${name.replace(/ /g, '-')}`, { headers: { 'user-agent': 'ExampleBot/1.0' } });
      } finally {
        pacer.acquireFor = acquireFor;
      }
      assert.equal(answer.status, 500);
      assert.match(answer.body.toString('utf8'), /internal-error/);
      const logged = logs.lines.filter((l) => l['event'] === 'internal-error' && l['error'] === message);
      assert.equal(logged.length, 1, JSON.stringify(logs.lines.filter((l) => l['event'] === 'internal-error')));
      assert.equal(logged[0]?.['where'], 'proxy-request');
      assert.ok(
        logs.lines.some((l) => l['event'] !== 'internal-error' && JSON.stringify(l).includes('INTERNAL_ERROR') && JSON.stringify(l).includes(`/page/${name.replace(/ /g, '-')}`)),
        'the failed request was not audited',
      );
      assert.equal(proxy.pipeline.requestsInFlight, 0, 'the failed request still counts in flight');
      const next = await proxyRequest(port, `${origin.url}/page/after`, { headers: { 'user-agent': 'ExampleBot/1.0' } });
      assert.equal(next.status, 200);
    });
  }
});
