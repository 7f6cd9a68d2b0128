/**
 * `Pacer.acquireFor` takers and `Pacer.acquire` promises waiting on one origin, under storms:
 * many clients leaving while queued, clients leaving in the same turn their slot was granted
 * (before the delivery), slots released from inside a taker's `takeSlot`, `maxConcurrency`
 * changed by `reconfigure` while requests wait, and `close` with requests still waiting. After
 * every turn the pacer's in-flight count must be the number of slots the requests hold (no slot
 * leaked to a request that left, none double-counted), every request is told exactly once, and
 * at the end nothing is queued or in flight. A fixed-seed generator drives the order; real Pacer,
 * fake clock.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Pacer } from '../../src/pacing/pacer.js';
import { CancelSignal } from '../../src/pacing/cancel-signal.js';
import type { AcquireOutcome, Slot, SlotTaker } from '../../src/pacing/types.js';
import { FakeClock, flushMicrotasks } from './fake-clock.js';

const A = 'http://storm.test';

/** A deterministic generator in [0, 1) (a 32-bit LCG). */
function randomFrom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** One request: how it waits, what it was told, the slot it holds. */
class Request implements SlotTaker {
  readonly signal = new CancelSignal();
  told: AcquireOutcome[] = [];
  slot: Slot | undefined = undefined;
  /** Release the slot from inside `takeSlot` (re-entering the pacer during its delivery). */
  releaseAtOnce = false;
  constructor(readonly index: number) {}

  takeSlot(outcome: AcquireOutcome): void {
    this.told.push(outcome);
    if (!outcome.granted) return;
    if (this.releaseAtOnce) outcome.slot.release();
    else this.slot = outcome.slot;
  }

  release(): void {
    const slot = this.slot;
    this.slot = undefined;
    slot?.release();
  }
}

function options(max: number) {
  return { maxConcurrency: max, maxQueue: 10_000, maxWaitMs: 600_000 };
}

async function storm(seed: number, endWithClose: boolean, identities: number): Promise<void> {
  const random = randomFrom(seed);
  let max = 2;
  const pacer = new Pacer(options(max), new FakeClock());
  const requests: Request[] = [];
  /** Requests whose client left after the slot reached them. */
  const leftHolding = new Set<Request>();
  const inFlight = (): number => pacer.originStats(A)?.inFlight ?? 0;
  const queued = (): number => pacer.originStats(A)?.queued ?? 0;
  const holding = (): number => requests.filter((r) => r.slot !== undefined).length;
  const check = (when: string): void => {
    for (const r of requests) assert.ok(r.told.length <= 1, `request ${r.index} told ${r.told.length} times (${when})`);
    assert.equal(inFlight(), holding(), `in flight vs slots held (${when})`);
  };

  for (let turn = 0; turn < 60; turn++) {
    // New requests: takers, and promises (one in three), from `identities` identities in turn.
    const arriving = Math.floor(random() * 8);
    for (let k = 0; k < arriving; k++) {
      const r = new Request(requests.length);
      requests.push(r);
      r.releaseAtOnce = random() < 0.2;
      const opts = { identity: `id${r.index % identities}`, signal: r.signal };
      if (r.index % 3 === 0) {
        const answer = pacer.acquire(A, 0, opts);
        if (answer instanceof Promise) void answer.then((o) => r.takeSlot(o));
        else r.takeSlot(answer);
      } else {
        const answer = pacer.acquireFor(A, 0, opts, r);
        if (answer !== undefined) r.takeSlot(answer);
      }
    }
    // Slots released (grants decided now, delivered in the next microtask) ...
    for (const r of requests) if (r.slot !== undefined && random() < 0.4) r.release();
    // ... and clients leaving in the same turn: queued ones, and ones granted but not yet told.
    for (const r of requests) if (r.told.length === 0 && !r.signal.aborted && random() < 0.25) r.signal.abort();
    // Clients leaving after their slot reached them: they keep it until they release it.
    for (const r of requests) {
      if (r.slot !== undefined && !r.signal.aborted && random() < 0.1) {
        leftHolding.add(r);
        r.signal.abort();
      }
    }
    if (random() < 0.15) {
      max = 1 + Math.floor(random() * 3);
      pacer.reconfigure(options(max));
    }
    await flushMicrotasks();
    check(`turn ${turn}`);
  }

  if (endWithClose) {
    pacer.close();
    await flushMicrotasks();
    for (const r of requests) r.release();
    await flushMicrotasks();
  } else {
    // Drain: release everything until every request was told.
    for (let round = 0; round < 10_000 && requests.some((r) => r.told.length === 0 || r.slot !== undefined); round++) {
      for (const r of requests) r.release();
      await flushMicrotasks();
      check(`drain ${round}`);
    }
  }
  for (const r of requests) assert.equal(r.told.length, 1, `request ${r.index} told ${r.told.length} times at the end`);
  const aborted = requests.filter((r) => r.signal.aborted);
  for (const r of aborted) {
    const outcome = r.told[0] as AcquireOutcome;
    // A client that left before its answer was delivered is told aborted (or closed), never handed a slot.
    if (outcome.granted && !leftHolding.has(r)) assert.fail(`request ${r.index} left and was still handed a slot`);
  }
  assert.equal(inFlight(), 0, 'a slot leaked');
  assert.equal(queued(), 0, 'a request left in the queue');
  assert.ok(requests.length > 100, `only ${requests.length} requests`);
  assert.ok(aborted.length > 20, `only ${aborted.length} aborts`);
  if (!endWithClose) pacer.close();
}

describe('Pacer takers and promises under abort storms, re-entrant releases and reconfiguration', () => {
  for (const identities of [1, 4]) {
    for (const seed of [1, 7, 42, 2026]) {
      it(`${identities} identities, seed ${seed}: drained, every request told once, no slot leaked`, async () => storm(seed, false, identities));
      it(`${identities} identities, seed ${seed}: closed with requests waiting, every request told once, no slot leaked`, async () => storm(seed, true, identities));
    }
  }
});
