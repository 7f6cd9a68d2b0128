/**
 * Random traffic against the pacer on a fake clock; every run must keep the
 * politeness invariants, whatever the model, delays, response times, aborts,
 * overload answers and identities: spacing, exclusivity, concurrency, FIFO
 * within an identity, round-robin turns between identities, pauses, aborts,
 * liveness and cleanup.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Pacer } from '../../src/pacing/pacer.js';
import { windowLimitFor, type PacingModel } from '../../src/pacing/pacing-options.js';
import type { AcquireOutcome } from '../../src/pacing/types.js';
import { FakeClock } from './fake-clock.js';

const ORIGINS = ['http://a.test', 'http://b.test', 'http://c.test'];

interface Plan {
  atMs: number;
  origin: number;
  identity: number;
  delayMs: number;
  serviceMs: number;
  abortAtMs: number | null;
  answer: 'ok' | 'ra0' | 'ra1' | 'backoff' | 'none';
  maxConcurrency: number | null;
}

interface Scenario {
  model: PacingModel;
  maxConcurrency: number;
  windowMs: number;
  plans: Plan[];
}

const planArb = fc.record<Plan>({
  atMs: fc.integer({ min: 0, max: 400 }),
  origin: fc.integer({ min: 0, max: ORIGINS.length - 1 }),
  identity: fc.integer({ min: 0, max: 2 }),
  delayMs: fc.constantFrom(0, 0, 10, 12.5, 25, 50, 100, 333),
  serviceMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 150 })),
  abortAtMs: fc.option(fc.integer({ min: 0, max: 600 }), { freq: 4 }),
  answer: fc.constantFrom('ok', 'ok', 'ok', 'ra0', 'ra1', 'backoff', 'none'),
  maxConcurrency: fc.option(fc.integer({ min: 1, max: 3 }), { freq: 3 }),
});

const scenarioArb = fc.record<Scenario>({
  model: fc.constantFrom<PacingModel>('start-to-start', 'end-to-start', 'window'),
  maxConcurrency: fc.integer({ min: 1, max: 4 }),
  windowMs: fc.constantFrom(100, 250, 1000),
  plans: fc.array(planArb, { minLength: 1, maxLength: 30, size: 'max' }),
});

interface Event {
  kind: 'start' | 'end';
  id: number;
  atMs: number;
}

interface Record {
  id: number;
  plan: Plan;
  acquiredAtMs: number;
  /** Position in the sequence of acquires and starts (all origins): orders events at one instant. */
  acquiredSeq: number;
  startedSeq: number | undefined;
  outcome: AcquireOutcome | undefined;
  abortedAtMs: number | undefined;
  startMs: number | undefined;
  endMs: number | undefined;
}

async function run(scenario: Scenario): Promise<void> {
  const clock = new FakeClock(0);
  const pacer = new Pacer(
    {
      model: scenario.model,
      maxConcurrency: scenario.maxConcurrency,
      windowMs: scenario.windowMs,
      maxWaitMs: 1e12,
      maxQueue: 1e6,
      backoffBaseMs: 100,
      backoffCapMs: 400,
      random: () => 0.5,
    },
    clock,
  );
  const events: Event[] = [];
  const records: Record[] = [];
  let seq = 0;
  /** Pause ends the pacer reported after each release, per origin index. */
  const pauseEnds: number[][] = ORIGINS.map(() => []);
  const plans = [...scenario.plans].sort((a, b) => a.atMs - b.atMs);
  for (const plan of plans) {
    await clock.advanceTo(plan.atMs);
    const record: Record = {
      id: records.length, plan, acquiredAtMs: clock.nowMs(), acquiredSeq: seq++, startedSeq: undefined, outcome: undefined, abortedAtMs: undefined, startMs: undefined, endMs: undefined,
    };
    records.push(record);
    const controller = new AbortController();
    if (plan.abortAtMs !== null) {
      clock.setTimer(() => {
        record.abortedAtMs = clock.nowMs();
        controller.abort();
      }, plan.abortAtMs);
    }
    const options = { identity: `client-${plan.identity}`, signal: controller.signal, ...(plan.maxConcurrency !== null ? { maxConcurrency: plan.maxConcurrency } : {}) };
    void Promise.resolve(pacer.acquire(ORIGINS[plan.origin] ?? '', plan.delayMs, options)).then((outcome) => {
      record.outcome = outcome;
      if (!outcome.granted) return;
      record.startMs = clock.nowMs();
      record.startedSeq = seq++;
      events.push({ kind: 'start', id: record.id, atMs: record.startMs });
      clock.setTimer(() => {
        record.endMs = clock.nowMs();
        events.push({ kind: 'end', id: record.id, atMs: record.endMs });
        const status = { ok: 200, ra0: 429, ra1: 503, backoff: 429, none: undefined }[plan.answer];
        const retryAfter = { ok: null, ra0: '0', ra1: '1', backoff: 'later', none: null }[plan.answer];
        outcome.slot.release(status === undefined ? undefined : { status, retryAfter });
        const pausedUntilMs = pacer.originStats(ORIGINS[plan.origin] ?? '')?.pausedUntilMs;
        if (pausedUntilMs !== undefined) pauseEnds[plan.origin]?.push(pausedUntilMs);
      }, plan.serviceMs);
    });
  }
  await clock.advance(10_000);
  check(scenario, records, events, pauseEnds);
  await clock.advance(60_000);
  assert.equal(pacer.stats().origins, 0, 'idle origins dropped');
  assert.equal(clock.pendingTimers, 0, 'no timer left behind');
  pacer.close();
}

function check(scenario: Scenario, records: Record[], events: Event[], pauseEnds: number[][]): void {
  for (const r of records) {
    const wasAbortedFirst = r.abortedAtMs !== undefined && (r.startMs === undefined || r.abortedAtMs < r.startMs);
    if (wasAbortedFirst) {
      assert.deepEqual(r.outcome, { granted: false, refusal: { reason: 'aborted' } }, `request ${r.id}: aborted while queued`);
      assert.equal(r.startMs, undefined);
    } else {
      assert.equal(r.outcome?.granted, true, `request ${r.id}: granted eventually`);
      assert.ok(r.startMs !== undefined && r.startMs >= r.acquiredAtMs);
      assert.ok(r.endMs !== undefined);
    }
  }
  for (let origin = 0; origin < ORIGINS.length; origin++) {
    const mine = new Set(records.filter((r) => r.plan.origin === origin).map((r) => r.id));
    const own = events.filter((e) => mine.has(e.id));
    checkOrigin(scenario, records, own);
    checkRoundRobin(records.filter((r) => mine.has(r.id)));
    checkNoStall(scenario, records.filter((r) => mine.has(r.id)), own, pauseEnds[origin] ?? []);
  }
}

/**
 * Work conservation (weak form): every start happens at a moment something could have made it
 * possible: its own arrival, an event at its origin (start, end, abort: the head or concurrency
 * changed), an event plus its own delay or window (spacing satisfied), or a pause end. A missed
 * wake-up shows as a start at some unrelated later moment.
 */
function checkNoStall(scenario: Scenario, records: Record[], events: Event[], pauseEnds: number[]): void {
  for (const r of records) {
    if (r.startMs === undefined) continue;
    const eventTimes = [
      ...events.filter((e) => !(e.kind === 'start' && e.id === r.id)).map((e) => e.atMs),
      ...records.flatMap((other) => (other.abortedAtMs !== undefined ? [other.abortedAtMs] : [])),
    ];
    const d = r.plan.delayMs;
    const lengthMs = d > 0 && scenario.model === 'window' ? windowLimitFor(d, scenario.windowMs).lengthMs : d;
    const candidates = new Set([r.acquiredAtMs, ...pauseEnds, ...eventTimes, ...eventTimes.map((t) => t + d), ...eventTimes.map((t) => t + lengthMs)]);
    assert.ok(candidates.has(r.startMs), `request ${r.id} (delay ${d}) started at ${r.startMs}, a moment nothing happened`);
  }
}

/**
 * Round-robin turns: while an identity has a request waiting, every other identity starts at
 * most once between two of its starts. (The request of its second start waited through the
 * interval when it was acquired before the first start.)
 */
function checkRoundRobin(records: Record[]): void {
  const started = records.filter((r) => r.startedSeq !== undefined).sort((a, b) => (a.startedSeq ?? 0) - (b.startedSeq ?? 0));
  for (let identity = 0; identity <= 2; identity++) {
    const own = started.filter((r) => r.plan.identity === identity);
    for (let i = 1; i < own.length; i++) {
      const first = own[i - 1]!;
      const second = own[i]!;
      if (second.acquiredSeq > (first.startedSeq ?? 0)) continue; // it did not wait through the interval
      const between = started.filter((r) => r.startedSeq! > first.startedSeq! && r.startedSeq! < second.startedSeq!);
      for (let other = 0; other <= 2; other++) {
        const turns = between.filter((r) => r.plan.identity === other).length;
        assert.ok(
          other === identity || turns <= 1,
          `identity ${other} started ${turns} requests between requests ${first.id} and ${second.id} of identity ${identity}, which waited throughout`,
        );
      }
    }
  }
}

function checkOrigin(scenario: Scenario, records: Record[], events: Event[]): void {
  const inFlight = new Set<number>();
  const starts: number[] = [];
  let lastEndMs = -Infinity;
  let pausedUntilMs = -Infinity;
  /** Per identity: the latest request started. */
  const lastStartedId: number[] = [];
  for (const e of events) {
    const r = records[e.id];
    assert.ok(r);
    if (e.kind === 'end') {
      inFlight.delete(e.id);
      lastEndMs = Math.max(lastEndMs, e.atMs);
      if (r.plan.answer === 'ra0') pausedUntilMs = Math.max(pausedUntilMs, e.atMs);
      if (r.plan.answer === 'ra1') pausedUntilMs = Math.max(pausedUntilMs, e.atMs + 1000);
      continue;
    }
    const d = r.plan.delayMs;
    const where = `request ${e.id} (identity ${r.plan.identity}, delay ${d}) started at ${e.atMs}`;
    assert.ok(e.id > (lastStartedId[r.plan.identity] ?? -1), `${where}: FIFO within its identity`);
    lastStartedId[r.plan.identity] = e.id;
    assert.ok(e.atMs >= pausedUntilMs, `${where}: inside a Retry-After pause until ${pausedUntilMs}`);
    for (const other of inFlight) {
      assert.ok(d === 0 && records[other]?.plan.delayMs === 0, `${where}: overlaps ${other} while a delay is in force`);
    }
    const cap = r.plan.maxConcurrency ?? scenario.maxConcurrency;
    assert.ok(inFlight.size < cap, `${where}: ${inFlight.size} already in flight, cap ${cap}`);
    if (d > 0) {
      const previousStart = starts[starts.length - 1] ?? -Infinity;
      if (scenario.model === 'start-to-start') assert.ok(e.atMs >= previousStart + d, `${where}: previous start ${previousStart}`);
      if (scenario.model === 'end-to-start') assert.ok(e.atMs >= lastEndMs + d, `${where}: previous end ${lastEndMs}`);
      if (scenario.model === 'window') {
        const limit = windowLimitFor(d, scenario.windowMs);
        const inWindow = starts.filter((s) => s > e.atMs - limit.lengthMs).length + 1;
        assert.ok(inWindow <= limit.starts, `${where}: ${inWindow} starts within ${limit.lengthMs} ms, limit ${limit.starts}`);
      }
    }
    starts.push(e.atMs);
    inFlight.add(e.id);
  }
}

describe('Pacer invariants under random traffic', () => {
  it('spacing, exclusivity, concurrency, FIFO within an identity, round-robin turns, pauses, aborts, liveness and cleanup hold', async () => {
    const details = await fc.check(fc.asyncProperty(scenarioArb, run), { numRuns: 300 });
    if (details.failed) {
      assert.fail(`seed ${details.seed}, counterexample ${JSON.stringify(details.counterexample)}: ${String(details.errorInstance)}`);
    }
  });
});
