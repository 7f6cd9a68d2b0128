/**
 * The fleet pacer (issue 10) on a fake clock: three instances (three local
 * pacers) sharing one in-process slot store with the Redis store's semantics.
 * Spacing and concurrency are fleet-wide, a pause set by one instance holds
 * the others, and while the store is unavailable `local` multiplies the delay
 * by fleetSize and `deny` refuses.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FleetPacer } from '../../src/pacing/fleet-pacer.js';
import { Pacer } from '../../src/pacing/pacer.js';
import type { AcquireOutcome, PacingOptions, Slot } from '../../src/pacing/index.js';
import { MemorySlotStore } from '../../src/state/memory.js';
import type { SlotStore } from '../../src/state/types.js';
import { FakeClock, flushMicrotasks } from './fake-clock.js';

const ORIGIN = 'https://a.example';
const OPTIONS: PacingOptions = { maxConcurrency: 4, maxWaitMs: 60_000, maxQueue: 100 };

function fleetOf(clock: FakeClock, slots: SlotStore, count = 3, extra: Partial<ConstructorParameters<typeof FleetPacer>[1]> = {}): FleetPacer[] {
  return Array.from({ length: count }, () => new FleetPacer(new Pacer(OPTIONS, clock), { slots, fleetSize: count, onUnavailable: 'local', pacing: OPTIONS, clock, ...extra }));
}

/** Two instances sharing a slot store (lease 30 s), with `maxWaitMs`. */
function twoWithMaxWait(clock: FakeClock, maxWaitMs: number): FleetPacer[] {
  const pacing: PacingOptions = { ...OPTIONS, maxWaitMs };
  const slots = new MemorySlotStore(clock, 30_000);
  return Array.from({ length: 2 }, () => new FleetPacer(new Pacer(pacing, clock), { slots, fleetSize: 2, onUnavailable: 'local', pacing, clock }));
}

/** Acquires, records the grant time, holds the slot `holdMs`, releases with `status`. */
async function run(clock: FakeClock, pacer: FleetPacer, delayMs: number, starts: number[], holdMs = 10, status = 200): Promise<AcquireOutcome> {
  const outcome = await pacer.acquire(ORIGIN, delayMs, { identity: 'bot' });
  if (!outcome.granted) return outcome;
  starts.push(clock.nowMs());
  const slot: Slot = outcome.slot;
  slot.markSent();
  clock.setTimer(() => slot.release({ status }), holdMs);
  return outcome;
}

async function settle(clock: FakeClock, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 5) {
    await clock.advance(5);
    await flushMicrotasks();
  }
}

describe('FleetPacer over a shared slot store', () => {
  it('spaces three instances\' requests by the delay fleet-wide, one in flight at a time', async () => {
    const clock = new FakeClock();
    const fleet = fleetOf(clock, new MemorySlotStore(clock, 30_000));
    const starts: number[] = [];
    const all = fleet.flatMap((p) => [0, 1, 2, 3].map(() => run(clock, p, 100, starts, 30)));
    await settle(clock, 1_500);
    const outcomes = await Promise.all(all);
    assert.equal(outcomes.filter((o) => o.granted).length, 12);
    starts.sort((a, b) => a - b);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    assert.ok(gaps.every((g) => g >= 100), `gaps ${gaps.join(' ')}`);
    // Not three times slower: the fleet shares one rate.
    assert.ok(starts.at(-1)! - starts[0]! <= 11 * 100 + 11 * 10, `12 starts over ${starts.at(-1)! - starts[0]!} ms`);
  });

  it('spaces the next instance\'s start a full delay after a late-sent request\'s real start', async () => {
    const clock = new FakeClock();
    const [a, b] = fleetOf(clock, new MemorySlotStore(clock, 30_000), 2);
    const first = await a!.acquire(ORIGIN, 100, { identity: 'bot' });
    assert.ok(first.granted);
    // Sent 150 ms after its grant (a new connection, a busy event loop), answered 20 ms later.
    await clock.advance(150);
    const sentAtMs = clock.nowMs();
    first.slot.markSent();
    clock.setTimer(() => first.slot.release({ status: 200 }), 20);
    const starts: number[] = [];
    const next = run(clock, b!, 100, starts);
    await settle(clock, 400);
    assert.ok((await next).granted);
    assert.ok(starts[0]! - sentAtMs >= 100, `the next start ${starts[0]! - sentAtMs} ms after the real start of the one before`);
  });

  it('keeps maxConcurrency fleet-wide for an undelayed origin', async () => {
    const clock = new FakeClock();
    const fleet = fleetOf(clock, new MemorySlotStore(clock, 30_000));
    const starts: number[] = [];
    const all = fleet.flatMap((p) => [0, 1, 2].map(() => run(clock, p, 0, starts, 100)));
    await flushMicrotasks();
    await flushMicrotasks();
    assert.equal(starts.length, 4, 'maxConcurrency 4 for the three together');
    await settle(clock, 400);
    assert.equal((await Promise.all(all)).filter((o) => o.granted).length, 9);
  });

  it('pauses every instance when one of them sees a 429 with Retry-After', async () => {
    const clock = new FakeClock();
    const [a, b] = fleetOf(clock, new MemorySlotStore(clock, 30_000), 2);
    const starts: number[] = [];
    const limitedAtMs = clock.nowMs();
    const outcome = await a!.acquire(ORIGIN, 0, { identity: 'bot' });
    assert.ok(outcome.granted);
    outcome.slot.release({ status: 429, retryAfter: '3' });
    const later = run(clock, b!, 0, starts);
    await settle(clock, 3_100);
    assert.ok((await later).granted);
    assert.ok(starts[0]! - limitedAtMs >= 3_000, `started ${starts[0]! - limitedAtMs} ms after the 429`);
  });

  it('pauses every instance when one of them fetched a robots.txt answered 503 with Retry-After', async () => {
    const clock = new FakeClock();
    const [a, b] = fleetOf(clock, new MemorySlotStore(clock, 30_000), 2);
    const starts: number[] = [];
    const answeredAtMs = clock.nowMs();
    assert.equal(a!.applyOverload(ORIGIN, { status: 503, retryAfter: '2' }), answeredAtMs + 2_000);
    assert.equal(a!.applyOverload(ORIGIN, { status: 500, retryAfter: '2' }), undefined, 'a 500 pauses nothing');
    const later = run(clock, b!, 0, starts);
    await settle(clock, 2_100);
    assert.ok((await later).granted);
    assert.ok(starts[0]! - answeredAtMs >= 2_000, `B started ${starts[0]! - answeredAtMs} ms after the 503`);
  });

  it('maxWait: a slot another instance holds is waited for up to maxWait (its lease end is no estimate), a pause past it is refused at once', async () => {
    const clock = new FakeClock();
    const [a, b] = twoWithMaxWait(clock, 500);
    // Held 300 ms (lease 30 s): granted once released, not refused at once.
    const starts: number[] = [];
    const held = await run(clock, a!, 100, starts, 300);
    assert.ok(held.granted);
    const waiting = run(clock, b!, 100, starts);
    await settle(clock, 450);
    const outcome = await waiting;
    assert.ok(outcome.granted, `refused: ${JSON.stringify(outcome.granted ? undefined : outcome.refusal)}`);
    assert.ok(starts[1]! - starts[0]! >= 300);
    // Held 2 s: refused queue-full (max-wait) once 500 ms have passed.
    await settle(clock, 200);
    const long = await a!.acquire(ORIGIN, 100, { identity: 'bot' });
    assert.ok(long.granted);
    long.slot.markSent();
    const askedAtMs = clock.nowMs();
    let refusedAtMs: number | undefined;
    const refused = b!.acquire(ORIGIN, 100, { identity: 'bot' }).then((o) => ((refusedAtMs = clock.nowMs()), o));
    await settle(clock, 700);
    const late = await refused;
    assert.ok(!late.granted && late.refusal.reason === 'queue-full' && late.refusal.limit === 'max-wait', JSON.stringify(late));
    assert.ok(refusedAtMs! - askedAtMs >= 500 && refusedAtMs! - askedAtMs <= 520, `refused after ${refusedAtMs! - askedAtMs} ms`);
    long.slot.release({ status: 429, retryAfter: '5' });
    // Paused 5 s, past maxWait: refused at once.
    const paused = await b!.acquire(ORIGIN, 100, { identity: 'bot' });
    assert.ok(!paused.granted && paused.refusal.reason === 'queue-full' && paused.refusal.retryAfterSeconds >= 4, JSON.stringify(paused));
  });

  it('maxWait: a start the fleet can give no sooner than maxWait is refused at once, and takes no start from the others', async () => {
    const clock = new FakeClock();
    const [a, b] = twoWithMaxWait(clock, 1_000);
    const starts: number[] = [];
    assert.ok((await run(clock, a!, 3_000, starts, 10)).granted);
    await settle(clock, 20);
    // b's own queue is empty, but the fleet's next start is 3 s after a's: past b's maxWait.
    let answeredAtMs: number | undefined;
    const asked = b!.acquire(ORIGIN, 3_000, { identity: 'bot' }).then((o) => ((answeredAtMs = clock.nowMs()), o));
    await settle(clock, 3_000);
    const refused = await asked;
    assert.ok(!refused.granted && refused.refusal.reason === 'queue-full' && refused.refusal.limit === 'max-wait' && refused.refusal.retryAfterSeconds === 3, JSON.stringify(refused));
    assert.equal(answeredAtMs! - starts[0]!, 20, 'at once');
    // The refused request took nothing: a's next request, asked 3 s after its first, starts at once (not 3 s later).
    const askedAtMs = clock.nowMs();
    const next = run(clock, a!, 3_000, starts, 10);
    await settle(clock, 100);
    assert.ok((await next).granted);
    assert.equal(starts[1]! - askedAtMs, 0);
  });

  it('maxWait bounds the whole wait: a request that waited in its instance\'s queue has only the rest of it for the fleet\'s slot', async () => {
    const clock = new FakeClock();
    const [a, b] = twoWithMaxWait(clock, 1_000);
    // a holds the origin for 5 s; b's two requests queue behind it (b's own queue: one ahead, 100 ms).
    const held = await a!.acquire(ORIGIN, 100, { identity: 'bot' });
    assert.ok(held.granted);
    held.slot.markSent();
    const answeredAtMs: number[] = [];
    const askedAtMs = clock.nowMs();
    const asked = [0, 1].map(() => b!.acquire(ORIGIN, 100, { identity: 'bot' }).then((o) => (answeredAtMs.push(clock.nowMs() - askedAtMs), o)));
    await settle(clock, 2_500);
    const outcomes = await Promise.all(asked);
    assert.deepEqual(outcomes.map((o) => (o.granted ? 'granted' : o.refusal.reason)), ['queue-full', 'queue-full']);
    assert.ok(answeredAtMs.every((t) => t <= 1_000 + 10), `answered after ${answeredAtMs.join(', ')} ms: maxWait is 1000 ms (the second waited 2000 ms before)`);
    held.slot.release({ status: 200 });
  });
});

/** A store that does not answer (Redis down). */
class DownStore extends MemorySlotStore {
  override get isAvailable(): boolean {
    return false;
  }
}

describe('FleetPacer while the store is unavailable', () => {
  it('local: paces alone with the delay multiplied by fleetSize, and counts it', async () => {
    const clock = new FakeClock();
    const fallbacks: string[] = [];
    const [pacer] = fleetOf(clock, new DownStore(clock, 30_000), 3, { onFallback: (kind) => fallbacks.push(kind) });
    const starts: number[] = [];
    const all = [0, 1, 2].map(() => run(clock, pacer!, 100, starts));
    await settle(clock, 800);
    const outcomes = await Promise.all(all);
    assert.ok(outcomes.every((o) => o.granted && o.slot.delayMs === 300));
    assert.deepEqual(starts.slice(1).map((t, i) => t - starts[i]! >= 300), [true, true]);
    assert.deepEqual(fallbacks, ['local', 'local', 'local']);
  });

  it('deny: refuses at once with fleet-unavailable and a Retry-After', async () => {
    const clock = new FakeClock();
    const [pacer] = fleetOf(clock, new DownStore(clock, 30_000), 3, { onUnavailable: 'deny' });
    const outcome = await pacer!.acquire(ORIGIN, 100, { identity: 'bot' });
    assert.equal(outcome.granted, false);
    assert.deepEqual(outcome.granted ? undefined : outcome.refusal.reason, 'fleet-unavailable');
    assert.ok(!outcome.granted && outcome.refusal.reason === 'fleet-unavailable' && outcome.refusal.retryAfterSeconds >= 1);
  });
});
