/**
 * Fairness between identities at one origin (issue 8, "Fairness between
 * clients"), on the fake clock: round-robin between identities, FIFO within
 * one, the per-identity queue cap, aborts from the middle of the queue, a
 * 200-request flood against light clients, and the wait estimate taken from
 * the round-robin position.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Harness, type Trace } from './pacing-harness.js';

const A = 'http://a.test';

/** The identities of the granted requests to `origin`, in start order (ties: grant order). */
function startOrder(h: Harness, origin = A): string[] {
  return h.traces
    .filter((t) => t.origin === origin && t.startMs !== undefined)
    .map((t, i) => ({ t, i }))
    .sort((x, y) => (x.t.startMs as number) - (y.t.startMs as number) || x.i - y.i)
    .map(({ t }) => t.identity);
}

function refusalOf(trace: Trace): unknown {
  return trace.outcome && !trace.outcome.granted ? trace.outcome.refusal : undefined;
}

describe('Pacer fairness: round-robin between identities', () => {
  it('serves waiting identities in turn, each one in arrival order, with the delay between every start', async () => {
    const h = new Harness();
    const requests = [
      ...['a1', 'a2', 'a3', 'a4'].map((name) => ({ name, identity: 'a' })),
      ...['b1', 'b2'].map((name) => ({ name, identity: 'b' })),
      { name: 'c1', identity: 'c' },
    ];
    const traces = new Map(requests.map((r) => [r.name, h.request(A, 100, { serviceMs: 0, identity: r.identity })]));
    await h.clock.advance(10_000);
    const startOf = (name: string): number | undefined => traces.get(name)?.startMs;
    // a1 starts at once; the queue then holds a2 a3 a4 | b1 b2 | c1, served a, b, c, a, b, a.
    assert.deepEqual(
      ['a1', 'a2', 'b1', 'c1', 'a3', 'b2', 'a4'].map(startOf),
      [0, 100, 200, 300, 400, 500, 600],
    );
  });

  it('lets an identity that starts waiting in after one turn of each identity already waiting', async () => {
    const h = new Harness();
    for (let i = 0; i < 6; i++) h.request(A, 100, { serviceMs: 0, identity: 'a' });
    for (let i = 0; i < 6; i++) h.request(A, 100, { serviceMs: 0, identity: 'b' });
    await h.clock.advance(150); // a@0, a@100 started; b's turn is next
    const late = h.request(A, 100, { serviceMs: 0, identity: 'c' });
    await h.clock.advance(10_000);
    // b (whose turn it was), then a (the rest of the round), then c.
    assert.equal(late.startMs, 400);
    assert.deepEqual(startOrder(h), ['a', 'a', 'b', 'a', 'c', 'b', 'a', 'b', 'a', 'b', 'a', 'b', 'b']);
  });

  it('applies round-robin to undelayed requests under maxConcurrency too', async () => {
    const h = new Harness({ maxConcurrency: 2 });
    for (let i = 0; i < 6; i++) h.request(A, 0, { serviceMs: 100, identity: 'a' });
    for (let i = 0; i < 2; i++) h.request(A, 0, { serviceMs: 100, identity: 'b' });
    await h.clock.advance(10_000);
    assert.deepEqual(h.starts(A), [0, 0, 100, 100, 200, 200, 300, 300]);
    // a a start at once; then a b, a b, a a.
    assert.deepEqual(startOrder(h), ['a', 'a', 'a', 'b', 'a', 'b', 'a', 'a']);
    assert.equal(h.maxInFlight.get(A), 2);
  });

  it('keeps FIFO within an identity: an undelayed request waits behind its identity\'s delayed one', async () => {
    const h = new Harness();
    h.request(A, 100, { serviceMs: 0, identity: 'a' });
    const delayed = h.request(A, 100, { serviceMs: 0, identity: 'a' });
    const free = h.request(A, 0, { serviceMs: 0, identity: 'a' });
    await h.clock.advance(1000);
    assert.deepEqual([delayed.startMs, free.startMs], [100, 100]);
  });
});

describe('Pacer fairness: per-identity queue cap (maxQueuePerIdentity)', () => {
  it('refuses an identity\'s request over the cap with Retry-After, while others still queue', async () => {
    const h = new Harness({ maxQueuePerIdentity: 3, maxQueue: 10 });
    const a = [0, 1, 2, 3, 4].map(() => h.request(A, 1000, { serviceMs: 0, identity: 'a' }));
    const b = h.request(A, 1000, { serviceMs: 0, identity: 'b' });
    await h.clock.advance(0);
    assert.equal(a[0]?.startMs, 0);
    assert.deepEqual(refusalOf(a[4]!), {
      reason: 'queue-full',
      limit: 'max-queue-per-identity',
      // The 4th waiting request of a: its 3 waiting requests first (the head ready at 1000 ms), then its own 1000 ms.
      retryAfterSeconds: 4,
      queueLength: 3,
      identityQueueLength: 3,
      delayMs: 1000,
      expectedWaitMs: 4000,
    });
    assert.equal(b.outcome, undefined, 'another identity still queues');
    assert.equal(h.pacer.originStats(A)?.queued, 4);
    await h.clock.advance(10_000);
    assert.deepEqual(startOrder(h), ['a', 'a', 'b', 'a', 'a']);
  });

  it('names the identity cap first when the origin\'s queue is full as well', async () => {
    const h = new Harness({ maxQueuePerIdentity: 2, maxQueue: 2, maxConcurrency: 1 });
    for (let i = 0; i < 3; i++) h.request(A, 0, { serviceMs: 100, identity: 'a' });
    const overIdentity = h.request(A, 0, { identity: 'a' });
    const overOrigin = h.request(A, 0, { identity: 'b' });
    await h.clock.advance(0);
    assert.equal((refusalOf(overIdentity) as { limit: string }).limit, 'max-queue-per-identity');
    assert.equal((refusalOf(overOrigin) as { limit: string }).limit, 'max-queue');
  });

  it('with a cap of 0 an identity never waits', async () => {
    const h = new Harness({ maxQueuePerIdentity: 0, maxConcurrency: 1 });
    const first = h.request(A, 0, { serviceMs: 100, identity: 'a' });
    const second = h.request(A, 0, { serviceMs: 100, identity: 'b' });
    await h.clock.advance(0);
    assert.equal(first.startMs, 0);
    assert.equal((refusalOf(second) as { limit: string }).limit, 'max-queue-per-identity');
  });

  it('rejects a cap that is not an integer >= 0', () => {
    assert.throws(() => new Harness({ maxQueuePerIdentity: -1 }), RangeError);
    assert.throws(() => new Harness({ maxQueuePerIdentity: 1.5 }), RangeError);
  });
});

describe('Pacer fairness: abort from the middle of a round-robin queue', () => {
  it('takes the request out; the others keep their order and turns', async () => {
    const h = new Harness();
    const controllers = new Map<string, AbortController>();
    const traces = new Map<string, Trace>();
    for (const [name, identity] of [['a0', 'a'], ['a1', 'a'], ['a2', 'a'], ['a3', 'a'], ['b1', 'b'], ['b2', 'b'], ['c1', 'c']] as const) {
      const controller = new AbortController();
      controllers.set(name, controller);
      traces.set(name, h.request(A, 100, { serviceMs: 0, identity, signal: controller.signal }));
    }
    await h.clock.advance(50); // a0 started; a1 a2 a3 | b1 b2 | c1 wait
    assert.deepEqual([h.pacer.originStats(A)?.queued, h.pacer.originStats(A)?.queuedIdentities], [6, 3]);
    controllers.get('a2')?.abort(); // the middle of a's line
    controllers.get('c1')?.abort(); // c's only request: c leaves the round
    await h.clock.advance(0);
    assert.deepEqual(traces.get('a2')?.outcome, { granted: false, refusal: { reason: 'aborted' } });
    assert.deepEqual(traces.get('c1')?.outcome, { granted: false, refusal: { reason: 'aborted' } });
    assert.deepEqual([h.pacer.originStats(A)?.queued, h.pacer.originStats(A)?.queuedIdentities], [4, 2]);
    await h.clock.advance(10_000);
    const startOf = (name: string): number | undefined => traces.get(name)?.startMs;
    assert.deepEqual(['a0', 'a1', 'b1', 'a3', 'b2'].map(startOf), [0, 100, 200, 300, 400]);
    assert.equal(startOf('a2'), undefined);
    assert.equal(startOf('c1'), undefined);
  });

  it('gives the turn to the next identity when the request whose turn it is aborts', async () => {
    const h = new Harness();
    const controller = new AbortController();
    h.request(A, 1000, { serviceMs: 0, identity: 'a' });
    h.request(A, 1000, { serviceMs: 0, identity: 'a', signal: controller.signal });
    const b = h.request(A, 200, { serviceMs: 0, identity: 'b' });
    await h.clock.advance(500);
    controller.abort();
    await h.clock.advance(0);
    assert.equal(b.startMs, 500, 'b\'s own 200 ms since the last start have passed');
  });
});

describe('Pacer fairness under a 200-request flood', () => {
  it('a light identity waits about one start per other waiting identity, not for the flood', async () => {
    const h = new Harness({ maxQueue: 1000, maxQueuePerIdentity: 500 });
    for (let i = 0; i < 200; i++) h.request(A, 100, { serviceMs: 5, identity: 'flood' });
    await h.clock.advance(250); // flood started at 0, 100, 200
    const light = h.request(A, 100, { serviceMs: 5, identity: 'light' });
    await h.clock.advance(5_000);
    const second = h.request(A, 100, { serviceMs: 5, identity: 'other' });
    const third = h.request(A, 100, { serviceMs: 5, identity: 'light' });
    await h.clock.advance(30_000);
    // The flood's next request (its turn), then light: 150 ms after it asked, 2 slots of 100 ms at most.
    assert.equal(light.startMs, 400);
    // Two identities arriving together while the flood waits: flood, other, light (each joins the end of the round).
    const floodStartsBetween = (t: Trace): number => h.traces.filter((x) => x.identity === 'flood' && x.startMs! > 5250 && x.startMs! < t.startMs!).length;
    assert.deepEqual([second.startMs, third.startMs], [5400, 5500]);
    assert.deepEqual([floodStartsBetween(second), floodStartsBetween(third)], [1, 1]);
    // Nobody was refused, the flood was served to the end, and every start kept the delay.
    assert.equal(h.traces.filter((t) => t.startMs === undefined).length, 0);
    const starts = h.starts(A);
    assert.equal(starts.length, 203);
    for (let i = 1; i < starts.length; i++) assert.ok(starts[i]! - starts[i - 1]! >= 100, `gap ${i}`);
  });

  it('refuses the flood\'s next request by maxWait while a light identity\'s request is queued (the estimate follows the round-robin position)', async () => {
    const h = new Harness({ maxWaitMs: 1000, maxQueue: 1000, maxQueuePerIdentity: 1000 });
    for (let i = 0; i < 11; i++) h.request(A, 100, { serviceMs: 0, identity: 'flood' });
    await h.clock.advance(50);
    // In FIFO order light would wait behind all 10 (1050 ms, over maxWait); in round-robin order, behind one.
    const light = h.request(A, 100, { serviceMs: 0, identity: 'light' });
    const floodMore = h.request(A, 100, { serviceMs: 0, identity: 'flood' });
    await h.clock.advance(0);
    assert.equal(light.outcome, undefined, 'light: the flood\'s head (ready in 50 ms), then its own 100 ms: queued');
    // The flood's 11th waiting request: its 10 waiting (the head ready in 50 ms) and light's one go first.
    assert.deepEqual(refusalOf(floodMore), {
      reason: 'queue-full',
      limit: 'max-wait',
      retryAfterSeconds: 2,
      queueLength: 11,
      identityQueueLength: 10,
      delayMs: 100,
      expectedWaitMs: 50 + 9 * 100 + 100 + 100,
    });
    await h.clock.advance(2000);
    assert.equal(light.startMs, 200);
  });

  it('estimates a new identity\'s wait from one request per waiting identity, each its own delay', async () => {
    for (const [maxWaitMs, isRefused] of [[650, false], [649, true]] as const) {
      const h = new Harness({ maxWaitMs });
      for (let i = 0; i < 4; i++) h.request(A, 100, { serviceMs: 0, identity: 'a' });
      h.request(A, 300, { serviceMs: 0, identity: 'b' });
      await h.clock.advance(50);
      assert.deepEqual([h.pacer.originStats(A)?.queued, h.pacer.originStats(A)?.queuedIdentities], [4, 2]);
      // a's head ready in 50 ms, then b's one (300 ms), then this one's own 300 ms; not a's other two.
      const trace = h.request(A, 300, { serviceMs: 0, identity: 'c' });
      await h.clock.advance(0);
      if (!isRefused) {
        assert.equal(trace.outcome, undefined, `maxWait ${maxWaitMs}: queued`);
        continue;
      }
      assert.deepEqual(refusalOf(trace), {
        reason: 'queue-full', limit: 'max-wait', retryAfterSeconds: 1, queueLength: 4, identityQueueLength: 0, delayMs: 300, expectedWaitMs: 650,
      });
    }
  });
});

describe('Pacer fairness across a reconfiguration (reload)', () => {
  it('keeps every identity\'s turn and order, re-reads delays, and applies a new per-identity cap to later arrivals', async () => {
    const h = new Harness({ maxQueuePerIdentity: 10 });
    let minDelayMs = 100;
    const limits = (): { delayMs: number } => ({ delayMs: minDelayMs });
    for (let i = 0; i < 4; i++) h.request(A, 100, { serviceMs: 0, identity: 'a', limits });
    for (let i = 0; i < 2; i++) h.request(A, 100, { serviceMs: 0, identity: 'b', limits });
    await h.clock.advance(150); // a@0, a@100; b's turn next
    minDelayMs = 300;
    h.pacer.reconfigure({ maxConcurrency: 4, maxWaitMs: 1e9, maxQueue: 1000, maxQueuePerIdentity: 1 });
    assert.deepEqual([h.pacer.originStats(A)?.queued, h.pacer.originStats(A)?.queuedIdentities], [4, 2]);
    const overCap = h.request(A, 300, { identity: 'a' });
    await h.clock.advance(0);
    assert.equal((refusalOf(overCap) as { limit: string }).limit, 'max-queue-per-identity');
    await h.clock.advance(10_000);
    assert.deepEqual(startOrder(h), ['a', 'a', 'b', 'a', 'b', 'a']);
    assert.deepEqual(h.starts(A), [0, 100, 400, 700, 1000, 1300], 'each start 300 ms after the previous one once the delay was raised');
  });
});
