// run-tests: in-process
/**
 * The round-robin queue of one origin (issue 8, "Fairness between clients"):
 * service order, removal from anywhere, and the lower bound on the delays ahead
 * of a new entry, checked against a plain simulation of the service order.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FairQueue, UNLINKED, type QueueEntry } from '../../src/pacing/fair-queue.js';

interface Entry extends QueueEntry {
  name: string;
}

function entry(name: string, delayMs = 0): Entry {
  return { name, delayMs, ...UNLINKED };
}

/** Shifts everything; returns the names in service order. */
function serveAll(queue: FairQueue<Entry>): string[] {
  const order: string[] = [];
  for (let e = queue.shift(); e; e = queue.shift()) order.push(e.name);
  return order;
}

describe('FairQueue service order', () => {
  it('serves identities round-robin, each one FIFO', () => {
    const q = new FairQueue<Entry>();
    for (const name of ['a1', 'a2', 'a3', 'a4']) q.push('a', entry(name));
    for (const name of ['b1', 'b2']) q.push('b', entry(name));
    q.push('c', entry('c1'));
    assert.equal(q.size, 7);
    assert.equal(q.identities, 3);
    assert.deepEqual(serveAll(q), ['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
    assert.equal(q.size, 0);
    assert.equal(q.identities, 0);
    assert.equal(q.peek(), undefined);
  });

  it('puts an identity that starts waiting at the end of the current round', () => {
    const q = new FairQueue<Entry>();
    for (const name of ['a1', 'a2', 'a3']) q.push('a', entry(name));
    for (const name of ['b1', 'b2', 'b3']) q.push('b', entry(name));
    assert.equal(q.shift()?.name, 'a1'); // b's turn next, then a's
    q.push('c', entry('c1'));
    // c joins after a (the end of the round that started at b): b1, a2, c1.
    assert.deepEqual(serveAll(q), ['b1', 'a2', 'c1', 'b2', 'a3', 'b3']);
  });

  it('keeps one identity alone FIFO, and an identity that empties and returns rejoins at the end', () => {
    const q = new FairQueue<Entry>();
    q.push('a', entry('a1'));
    q.push('b', entry('b1'));
    q.push('b', entry('b2'));
    assert.equal(q.shift()?.name, 'a1');
    q.push('a', entry('a2')); // a left the ring when it emptied: it joins after b
    assert.deepEqual(serveAll(q), ['b1', 'a2', 'b2']);
  });

  it('removes an entry from the middle in O(1), and an identity whose last entry leaves', () => {
    const q = new FairQueue<Entry>();
    const a = ['a1', 'a2', 'a3'].map((n) => entry(n));
    for (const e of a) q.push('a', e);
    const b1 = entry('b1');
    q.push('b', b1);
    q.push('c', entry('c1'));
    assert.equal(q.remove(a[1]!), true);
    assert.equal(q.remove(a[1]!), false, 'twice');
    assert.equal(q.remove(b1), true);
    assert.equal(q.identities, 2);
    assert.equal(q.sizeOf('b'), 0);
    assert.deepEqual(serveAll(q), ['a1', 'c1', 'a3']);
  });

  it('moves the turn on when the identity whose turn it is leaves', () => {
    const q = new FairQueue<Entry>();
    const a1 = entry('a1');
    q.push('a', a1);
    q.push('b', entry('b1'));
    assert.equal(q.peek(), a1);
    q.remove(a1);
    assert.equal(q.peek()?.name, 'b1');
  });

  it('drains everything (close) and can be used again', () => {
    const q = new FairQueue<Entry>();
    const e = entry('a1', 5);
    q.push('a', e);
    q.push('b', entry('b1', 7));
    assert.deepEqual(q.drain().map((x) => x.name).sort(), ['a1', 'b1']);
    assert.equal(q.size, 0);
    assert.equal(q.delaySumMs, 0);
    assert.equal(q.remove(e), false);
    q.push('b', entry('b2'));
    assert.deepEqual(serveAll(q), ['b2']);
  });
});

describe('FairQueue.entriesAheadDelayMs', () => {
  it('counts one entry per waiting identity for a new identity', () => {
    const q = new FairQueue<Entry>();
    for (let i = 0; i < 200; i++) q.push('heavy', entry(`h${i}`, 100));
    q.push('other', entry('o1', 300));
    assert.equal(q.entriesAheadDelayMs('light'), 100 + 300);
    assert.equal(q.delaySumMs, 200 * 100 + 300);
  });

  it('counts the identity\'s own entries and as many of the others\' as take their turns first', () => {
    const q = new FairQueue<Entry>();
    for (let i = 0; i < 3; i++) q.push('a', entry(`a${i}`, 10));
    for (let i = 0; i < 5; i++) q.push('b', entry(`b${i}`, 20));
    q.push('c', entry('c0', 40));
    // A new b entry is b's 6th: a (before b in the round) gets all 3 turns, c (after b) its only one.
    assert.equal(q.entriesAheadDelayMs('b'), 3 * 10 + 5 * 20 + 40);
    // A new a entry is a's 4th: b and c come after a, so they get 3 turns each at most.
    assert.equal(q.entriesAheadDelayMs('a'), 3 * 10 + 3 * 20 + 40);
    // A new c entry is c's 2nd: a and b are before c, so 2 turns each.
    assert.equal(q.entriesAheadDelayMs('c'), 2 * 10 + 2 * 20 + 40);
  });

  it('is a lower bound, exact when each identity\'s delays are equal, whatever the mix (property)', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('push' as const), identity: fc.integer({ min: 0, max: 4 }), delayMs: fc.constantFrom(0, 10, 25, 100, 333) }),
      fc.record({ kind: fc.constant('shift' as const) }),
      fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), fc.integer({ min: 0, max: 5 }), fc.boolean(), (ops, probe, isUniform) => {
        const q = new FairQueue<Entry>();
        const live: Entry[] = [];
        for (const o of ops) {
          if (o.kind === 'push') {
            const e = entry(`${o.identity}`, isUniform ? (o.identity + 1) * 10 : o.delayMs);
            q.push(`${o.identity}`, e);
            live.push(e);
          } else if (o.kind === 'shift') {
            const e = q.shift();
            if (e) live.splice(live.indexOf(e), 1);
          } else if (live.length > 0) {
            const e = live[o.pick % live.length]!;
            q.remove(e);
            live.splice(live.indexOf(e), 1);
          }
        }
        const identity = `${probe}`;
        const estimate = q.entriesAheadDelayMs(identity);
        // The truth: push a marker, serve in order until it comes out, sum the delays before it.
        const marker = entry('marker', 0);
        q.push(identity, marker);
        let actual = 0;
        for (let e = q.shift(); e && e !== marker; e = q.shift()) actual += e.delayMs;
        assert.ok(estimate <= actual + 1e-9, `estimate ${estimate} > actual ${actual}`);
        if (isUniform) assert.ok(Math.abs(estimate - actual) < 1e-9, `uniform delays: estimate ${estimate} != actual ${actual}`);
      }),
      { numRuns: 500 },
    );
  });
});
