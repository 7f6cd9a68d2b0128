// run-tests: in-process
/**
 * The ledger's in-memory aggregation, with plain values: what one request adds
 * to its cell, and the bounds that keep memory flat (keys per minute, pending
 * cells, pending refusals) without losing a request from the totals.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fc from 'fast-check';
import { OTHER_ORIGIN, RollupAggregator, WAIT_BUCKET_BOUNDS_MS, type RollupCell } from '../../../src/audit/ledger/index.js';
import { makeDecision, makeEntry, T0_MS } from '../factories.js';

const big = { maxKeysPerMinute: 1000, maxPendingCells: 1000, maxPendingRefusals: 1000 };
const allow = makeDecision({ verdict: 'allow', reason: 'rule-allow', rule: { kind: 'allow', pattern: '/', line: 1 } });

function only(cells: Iterable<RollupCell>): RollupCell {
  const list = [...cells];
  assert.equal(list.length, 1, 'one cell');
  return list[0]!;
}

describe('RollupAggregator', () => {
  it('adds requests, bytes, queue waits, status classes, backoffs and the delay to one cell per minute and key', () => {
    const a = new RollupAggregator(big);
    const paced = { ...allow, pacing: { delayMs: 2000, waitedMs: 0 } };
    a.add(makeEntry({ decision: paced, timings: { queueWaitMs: 0 }, response: { status: 200, upstreamStatus: 200, bytesSent: 100, bytesReceived: 5 } }));
    a.add(makeEntry({ decision: paced, startedAtMs: T0_MS + 1_000, timings: { queueWaitMs: 1_900 }, response: { status: 429, upstreamStatus: 429, bytesSent: 10 } }));
    a.add(makeEntry({ decision: paced, startedAtMs: T0_MS + 2_000, timings: { queueWaitMs: 70_000 }, response: { status: 503, upstreamStatus: 503, bytesSent: 0 } }));
    const c = only(a.cells());
    assert.equal(c.minute, Math.floor(T0_MS / 60_000));
    assert.deepEqual([c.token, c.origin, c.verdict, c.reason, c.identity], ['gptbot', 'http://127.0.0.1:8081', 'allow', 'rule-allow', '']);
    assert.equal(c.requests, 3);
    assert.equal(c.bytesOut, 110);
    assert.equal(c.bytesIn, 5);
    assert.equal(c.queued, 3);
    assert.equal(c.waitSumMs, 71_900);
    assert.equal(c.waitMaxMs, 70_000);
    const expected = new Array<number>(WAIT_BUCKET_BOUNDS_MS.length + 1).fill(0);
    expected[0] = 1; // 0 ms
    expected[WAIT_BUCKET_BOUNDS_MS.indexOf(2_500)] = 1; // 1.9 s
    expected[WAIT_BUCKET_BOUNDS_MS.length] = 1; // past the last bound
    assert.deepEqual(c.waitBuckets, expected);
    assert.deepEqual([c.s2xx, c.s4xx, c.s5xx, c.sError], [1, 1, 1, 0]);
    assert.equal(c.backoffs, 2, 'the 429 and the 503 paused the origin');
    assert.equal(c.delayMaxMs, 2000);
  });

  it('counts an upstream error without status as sError, and keys a request of the next minute apart', () => {
    const a = new RollupAggregator(big);
    const failed = makeDecision({ verdict: 'allow', reason: 'upstream-error', rule: null });
    a.add(makeEntry({ decision: failed, timings: { upstreamMs: 5 }, response: { status: 502, upstreamStatus: null } }));
    a.add(makeEntry({ decision: failed, startedAtMs: T0_MS + 60_000, response: { status: 502, upstreamStatus: null } }));
    const cells = [...a.cells()];
    assert.equal(cells.length, 2);
    assert.deepEqual(cells.map((c) => c.sError), [1, 1]);
    assert.deepEqual(cells.map((c) => c.minute - cells[0]!.minute), [0, 1]);
  });

  it('keys on the identity, and on the best candidate token when no group named the bot', () => {
    const a = new RollupAggregator(big);
    a.add({ ...makeEntry({ decision: { ...allow, productToken: null }, productTokens: ['ExampleBot', 'python-requests'] }), identity: 'crawler-team' });
    const c = only(a.cells());
    assert.equal(c.token, 'ExampleBot');
    assert.equal(c.identity, 'crawler-team');
  });

  it('keeps each refusal with its rule, line and robots.txt URL, and one sample User-Agent per token', () => {
    const a = new RollupAggregator(big);
    a.add(makeEntry());
    a.add(makeEntry({ decision: allow, response: { status: 200 } }));
    assert.equal(a.refusals().length, 1, 'only the deny');
    const r = a.refusals()[0]!;
    assert.deepEqual([r.reason, r.ruleKind, r.rulePattern, r.ruleLine, r.robotsUrl, r.group, r.status], ['rule-disallow', 'disallow', '/private/', 3, 'http://127.0.0.1:8081/robots.txt', 'GPTBot', 403]);
    assert.deepEqual([...a.bots()].map((b) => [b.token, b.userAgent]), [['gptbot', 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)']]);
  });

  it('counts keys past maxKeysPerMinute under origin (other), losing no request', () => {
    const a = new RollupAggregator({ ...big, maxKeysPerMinute: 2 });
    for (const host of ['a', 'b', 'c', 'd', 'c']) a.add(makeEntry({ decision: { ...allow, origin: `http://${host}.example` } }));
    const cells = [...a.cells()];
    assert.deepEqual(cells.map((c) => [c.origin, c.requests]), [
      ['http://a.example', 1],
      ['http://b.example', 1],
      [OTHER_ORIGIN, 3],
    ]);
    assert.equal(a.stats().foldedRequests, 3);
    // A written key of the minute is still known after the write: it keeps its own row.
    a.clear(T0_MS);
    a.add(makeEntry({ decision: { ...allow, origin: 'http://a.example' } }));
    a.add(makeEntry({ decision: { ...allow, origin: 'http://e.example' } }));
    assert.deepEqual([...a.cells()].map((c) => c.origin), ['http://a.example', OTHER_ORIGIN]);
  });

  it('folds everything into one (other) key per verdict and reason once maxPendingCells wait (a database down for long)', () => {
    const a = new RollupAggregator({ ...big, maxPendingCells: 2 });
    for (let i = 0; i < 5; i++) a.add(makeEntry({ decision: { ...allow, origin: `http://h${i}.example` }, productTokens: [`bot${i}`] }));
    const cells = [...a.cells()];
    assert.equal(cells.length, 3);
    assert.deepEqual([cells[2]!.identity, cells[2]!.token, cells[2]!.origin, cells[2]!.requests], [OTHER_ORIGIN, OTHER_ORIGIN, OTHER_ORIGIN, 3]);
    assert.equal(cells.reduce((n, c) => n + c.requests, 0), 5);
  });

  it('drops refusals past maxPendingRefusals from the drill-down only, and counts them', () => {
    const a = new RollupAggregator({ ...big, maxPendingRefusals: 2 });
    for (let i = 0; i < 5; i++) a.add(makeEntry());
    assert.equal(a.refusals().length, 2);
    assert.equal(a.stats().droppedRefusals, 3);
    assert.equal(only(a.cells()).requests, 5);
  });

  it('caps the values a client controls', () => {
    const a = new RollupAggregator(big);
    a.add(makeEntry({ decision: { ...makeDecision(), productToken: 'B'.repeat(5000) }, request: { url: `http://127.0.0.1:8081/${'x'.repeat(10_000)}` } }));
    assert.equal(only(a.cells()).token.length, 128);
    assert.equal(a.refusals()[0]!.url.length, 2048);
  });

  it('counts every request in the cell of its own key, whatever the interleaving of origins, minutes, bots and verdicts, across flushes and caps', () => {
    const deny = makeDecision({ verdict: 'deny', reason: 'rule-disallow' });
    const requestArb = fc.record({
      origin: fc.constantFrom('http://a.test', 'http://b.test', 'http://c.test'),
      minute: fc.integer({ min: 0, max: 2 }),
      identity: fc.constantFrom(null, 'crawler-1'),
      agent: fc.constantFrom('gptbot', 'ccbot'),
      isDenied: fc.boolean(),
    });
    const stepArb = fc.oneof({ weight: 12, arbitrary: requestArb }, { weight: 1, arbitrary: fc.constant('flush' as const) });
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 120 }), fc.constantFrom(2, 4, 1000), (steps, maxKeysPerMinute) => {
        const a = new RollupAggregator({ maxKeysPerMinute, maxPendingCells: 6, maxPendingRefusals: 1000 });
        const written = new Map<string, number>();
        const drain = (): void => {
          for (const c of a.cells()) {
            const key = [c.minute, c.identity, c.token, c.origin, c.verdict, c.reason].join('|');
            written.set(key, (written.get(key) ?? 0) + c.requests);
          }
          a.clear(T0_MS);
        };
        let requests = 0;
        for (const step of steps) {
          if (step === 'flush') {
            drain();
            continue;
          }
          requests++;
          const decision = { ...(step.isDenied ? deny : allow), origin: step.origin, productToken: step.agent };
          a.add({ ...makeEntry({ decision, startedAtMs: T0_MS + step.minute * 60_000 }), identity: step.identity });
        }
        drain();
        const counted = [...written.values()].reduce((sum, n) => sum + n, 0);
        assert.equal(counted, requests, 'no request lost or counted twice');
        // With room for every key, each request is in the cell of exactly its own key.
        if (maxKeysPerMinute === 1000 && a.stats().foldedRequests === 0) {
          const expected = new Map<string, number>();
          for (const step of steps) {
            if (step === 'flush') continue;
            const verdict = step.isDenied ? 'deny' : 'allow';
            const key = [Math.floor((T0_MS + step.minute * 60_000) / 60_000), step.identity ?? '', step.agent, step.origin, verdict, step.isDenied ? 'rule-disallow' : 'rule-allow'].join('|');
            expected.set(key, (expected.get(key) ?? 0) + 1);
          }
          assert.deepEqual(new Map([...written].sort()), new Map([...expected].sort()));
        }
      }),
      { numRuns: 300 },
    );
  });
});
