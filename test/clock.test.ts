/**
 * The system clock's timers (src/clock.ts): never early, and a wait longer
 * than Node's 32-bit timer limit is chained instead of overflowing (Node fires
 * an overflowing setTimeout after 1 ms, and the clock would spin until due).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { createSystemClock, epochAheadOfMonotonicMs, MAX_TIMEOUT_MS, monotonicToEpochMs, systemClock, type TimerPrimitives } from '../src/clock.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Runs `script` (ES module source, importing `./src/...` through tsx) in a fresh Node process in the repository; returns its stdout. Throws when it fails or takes over 20 s. */
function runInFreshProcess(script: string): string {
  return execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 20_000 });
}

/**
 * Timer primitives on a virtual time line: records every setTimeout delay
 * and setImmediate, and runs them only when the test says so.
 */
class RecordingTimers implements TimerPrimitives {
  now = 1_000_000;
  readonly timeoutDelays: number[] = [];
  immediates = 0;
  #queue: Array<{ atMs: number; fn: () => void; id: number; cleared: boolean }> = [];
  #nextId = 1;

  nowMs = (): number => this.now;
  setTimeout = (fn: () => void, delayMs: number) => {
    this.timeoutDelays.push(delayMs);
    // Node fires an overflowing delay after 1 ms: so does this fake, to make overflow visible.
    const effective = delayMs > MAX_TIMEOUT_MS || delayMs < 1 ? 1 : delayMs;
    const entry = { atMs: this.now + effective, fn, id: this.#nextId++, cleared: false };
    this.#queue.push(entry);
    return { unref: () => entry };
  };
  clearTimeout = (handle: unknown): void => {
    const entry = (handle as { unref(): { cleared: boolean } }).unref();
    entry.cleared = true;
  };
  setImmediate = (fn: () => void): unknown => {
    this.immediates++;
    // One turn of the event loop takes a little time.
    const entry = { atMs: this.now + 0.25, fn, id: this.#nextId++, cleared: false };
    this.#queue.push(entry);
    return entry;
  };
  clearImmediate = (handle: unknown): void => {
    (handle as { cleared: boolean }).cleared = true;
  };

  /** Runs callbacks in time order up to `untilMs` (at most `maxSteps`), moving `now` to each. */
  runUntil(untilMs: number, maxSteps = 10_000): void {
    for (let step = 0; step < maxSteps; step++) {
      this.#queue = this.#queue.filter((e) => !e.cleared);
      this.#queue.sort((a, b) => a.atMs - b.atMs || a.id - b.id);
      const next = this.#queue[0];
      if (next === undefined || next.atMs > untilMs) break;
      this.#queue.shift();
      this.now = Math.max(this.now, next.atMs);
      next.fn();
    }
    this.now = Math.max(this.now, untilMs);
  }

  get pending(): number {
    return this.#queue.filter((e) => !e.cleared).length;
  }
}

describe('createSystemClock', () => {
  it('a wait longer than 2^31-1 ms is chained out of timers no longer than that, and fires when due', () => {
    const timers = new RecordingTimers();
    const clock = createSystemClock(timers);
    const delayMs = 2_147_484_000; // Crawl-delay: 2147484 (seconds), in ms
    let firedAtMs: number | undefined;
    const start = timers.now;
    clock.setTimer(() => (firedAtMs = timers.now), delayMs);
    timers.runUntil(start + MAX_TIMEOUT_MS + 10);
    assert.equal(firedAtMs, undefined, 'not fired after the first 2^31-1 ms');
    timers.runUntil(start + delayMs + 5);
    assert.ok(firedAtMs !== undefined && firedAtMs >= start + delayMs, `fired at +${(firedAtMs ?? 0) - start} ms`);
    assert.ok(timers.timeoutDelays.every((d) => d <= MAX_TIMEOUT_MS), `delays ${timers.timeoutDelays.join(', ')}`);
    assert.ok(timers.timeoutDelays.length <= 4, `a handful of timers, not a spin: ${timers.timeoutDelays.length}`);
    assert.ok(timers.immediates <= 10, `${timers.immediates} immediates`);
  });

  it('an infinite wait never fires and re-arms once per 2^31-1 ms', () => {
    const timers = new RecordingTimers();
    const clock = createSystemClock(timers);
    let fired = false;
    clock.setTimer(() => (fired = true), Infinity);
    timers.runUntil(timers.now + 5 * MAX_TIMEOUT_MS);
    assert.equal(fired, false);
    assert.ok(timers.timeoutDelays.length >= 5 && timers.timeoutDelays.length <= 7, `${timers.timeoutDelays.length} timers`);
    assert.ok(timers.timeoutDelays.every((d) => d === MAX_TIMEOUT_MS));
    assert.equal(timers.immediates, 0);
  });

  for (const delayMs of [NaN, -5, 0]) {
    it(`a delay of ${delayMs} fires at once`, () => {
      const timers = new RecordingTimers();
      const clock = createSystemClock(timers);
      let fired = false;
      clock.setTimer(() => (fired = true), delayMs);
      timers.runUntil(timers.now + 2);
      assert.equal(fired, true);
      assert.ok(timers.timeoutDelays.every((d) => Number.isFinite(d) && d >= 0));
    });
  }

  it('a timer cleared in the middle of a chain never fires and leaves nothing pending', () => {
    const timers = new RecordingTimers();
    const clock = createSystemClock(timers);
    let fired = false;
    const handle = clock.setTimer(() => (fired = true), 3 * MAX_TIMEOUT_MS);
    timers.runUntil(timers.now + MAX_TIMEOUT_MS + 1);
    clock.clearTimer(handle);
    timers.runUntil(timers.now + 4 * MAX_TIMEOUT_MS);
    assert.equal(fired, false);
    assert.equal(timers.pending, 0);
  });

  it('a short timer is never early', () => {
    const timers = new RecordingTimers();
    const clock = createSystemClock(timers);
    let firedAtMs: number | undefined;
    const start = timers.now;
    clock.setTimer(() => (firedAtMs = timers.now), 50);
    timers.runUntil(start + 100);
    assert.ok(firedAtMs !== undefined && firedAtMs >= start + 50, `fired at +${(firedAtMs ?? 0) - start}`);
  });
});

describe('systemClock (real timers)', () => {
  it('a timer past the 32-bit limit neither fires early nor burns the CPU', async () => {
    let fired = false;
    const handle = systemClock.setTimer(() => (fired = true), MAX_TIMEOUT_MS + 5_000);
    const cpuBefore = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const cpu = process.cpuUsage(cpuBefore);
    systemClock.clearTimer(handle);
    assert.equal(fired, false);
    // A spinning clock (setImmediate until due) uses about all of the 300 ms; an idle one almost none.
    // A loaded machine can only lower a spin's share, never raise an idle one's.
    assert.ok(cpu.user + cpu.system < 150_000, `${(cpu.user + cpu.system) / 1000} ms of CPU in 300 ms`);
  });

  it('fires a short timer no earlier than asked', async () => {
    const start = systemClock.nowMs();
    const firedAt = await new Promise<number>((resolve) => {
      const keepAlive = setTimeout(() => undefined, 1000);
      systemClock.setTimer(() => {
        clearTimeout(keepAlive);
        resolve(systemClock.nowMs());
      }, 20);
    });
    assert.ok(firedAt - start >= 20, `${firedAt - start} ms`);
  });
});

describe('the epoch scale of the monotonic clock', () => {
  it('puts performance.now() on the wall clock to within the wall clock\'s own millisecond', () => {
    // In a fresh process, bracketed by samples just before and just after the clock module is
    // loaded: the wall clock may be slewed against the monotonic one (this test machine's ran 5 ms
    // a second fast, session 28), so this process's origin, measured at its start, is no measure of
    // the wall clock seconds later (92 ms apart in a loaded run). Reading the monotonic clock and
    // then the wall clock bounds the origin from above (the wall time was below the next
    // millisecond); reading the wall clock's change and then the monotonic clock, from below.
    const script = [
      "const { performance } = await import('node:perf_hooks');",
      'function bracket() {',
      '  let upper = Infinity;',
      '  let lower = -Infinity;',
      '  for (let i = 0; i < 3; i++) {',
      '    const before = Date.now();',
      '    let wall = before;',
      '    while (wall === before) {',
      '      const monotonic = performance.now();',
      '      wall = Date.now();',
      '      upper = Math.min(upper, wall + 1 - monotonic);',
      '    }',
      '    lower = Math.max(lower, wall - performance.now());',
      '  }',
      '  return [lower, upper];',
      '}',
      'const before = bracket();',
      "const { monotonicToEpochMs, systemClock } = await import('./src/clock.ts');",
      'const wallBefore = Date.now();',
      'const now = systemClock.nowMs();',
      'const wallAfter = Date.now();',
      'const after = bracket();',
      'process.stdout.write(JSON.stringify({ origin: monotonicToEpochMs(0), before, after, wallBefore, now, wallAfter }));',
    ].join('\n');
    const out = runInFreshProcess(script);
    const { origin, before, after, wallBefore, now, wallAfter } = JSON.parse(out) as { origin: number; before: [number, number]; after: [number, number]; wallBefore: number; now: number; wallAfter: number };
    // Each bracket holds the origin of its moment; the one measured in between lies between them.
    const lower = Math.min(before[0], after[0]);
    const upper = Math.max(before[1], after[1]);
    assert.ok(origin >= lower - 0.05 && origin <= upper + 0.05, `origin ${origin} outside [${lower}, ${upper}]`);
    // Bracketed by two wall readings, not compared with one: a process preempted between the two
    // reads (a loaded machine) would put any distance between them.
    assert.ok(now >= wallBefore - 0.05 - (upper - lower) && now < wallAfter + 1.05 + (upper - lower), `${now} outside the wall clock's [${wallBefore}, ${wallAfter + 1})`);
  });

  it('is not thrown off by a process descheduled between its wall and monotonic readings', () => {
    // A child whose clocks both jump 50 ms (a deschedule) right after the first change of the wall
    // clock's millisecond is read, before the monotonic clock is: that sample's lower bound is 50 ms
    // early. Four fixed samples within a 5 ms budget returned it; the bracket takes more samples.
    const script = [
      "const { performance } = await import('node:perf_hooks');",
      'const realNow = performance.now.bind(performance);',
      'const realDate = Date.now;',
      'let skewMs = 0;',
      'let last;',
      'let jumped = false;',
      'Date.now = () => {',
      '  const wall = realDate() + skewMs;',
      '  if (!jumped && last !== undefined && wall !== last) { jumped = true; skewMs += 50; }',
      '  last = wall;',
      '  return wall;',
      '};',
      'performance.now = () => realNow() + skewMs;',
      "const { monotonicToEpochMs } = await import('./src/clock.ts');",
      'let estimate = -Infinity;',
      'for (let i = 0; i < 20; i++) { const wall = Date.now(); estimate = Math.max(estimate, wall - performance.now()); }',
      'process.stdout.write(JSON.stringify([monotonicToEpochMs(0), estimate, jumped]));',
    ].join('\n');
    const out = runInFreshProcess(script);
    const [origin, estimate, jumped] = JSON.parse(out) as [number, number, boolean];
    assert.equal(jumped, true, 'the deschedule was simulated');
    // `estimate` is a lower bound within a millisecond (the wall clock's granularity) of the origin.
    // The simulated 50 ms uses up the calibration's budget, after which it settles for a bracket of
    // the wall clock's own millisecond (CALIBRATION_FALLBACK_WIDTH_MS): on a loaded machine the
    // samples after the jump can be that loose (0.77 ms seen in CI), never 50 ms.
    assert.ok(origin >= estimate - 1.05 && origin < estimate + 1.05, `origin ${(origin - estimate).toFixed(3)} ms from the wall clock's`);
  });

  it('tells how far it reads ahead of the host\'s monotonic clock, which tracks where a process put its origin', () => {
    const aheadMs = epochAheadOfMonotonicMs();
    const before = process.hrtime.bigint();
    const nowMs = systemClock.nowMs();
    const after = process.hrtime.bigint();
    assert.ok(nowMs - Number(after) / 1e6 <= aheadMs + 0.01 && aheadMs - 0.01 <= nowMs - Number(before) / 1e6, 'the clock less the monotonic one');
    assert.equal(epochAheadOfMonotonicMs(), aheadMs, 'a constant');
    // Two instances of the module (two processes, in effect) calibrated a few ms apart, the second
    // with the wall clock reading 50 ms later (a wall clock slewed between two starts): the second
    // puts its origin 50 ms later, and says so, so times less this value are on one clock.
    const script = [
      'const realDate = Date.now;',
      "const first = await import('./src/clock.ts?first');",
      'Date.now = () => realDate() + 50;',
      "const second = await import('./src/clock.ts?second');",
      'process.stdout.write(JSON.stringify([first.epochAheadOfMonotonicMs(), second.epochAheadOfMonotonicMs()]));',
    ].join('\n');
    const out = runInFreshProcess(script);
    const [first, second] = JSON.parse(out) as [number, number];
    assert.ok(Math.abs(second - first - 50) < 0.1, `the second clock ${(second - first).toFixed(3)} ms ahead of the first`);
  });

  it('falls back to performance.timeOrigin when the wall clock does not move (a mocked Date)', () => {
    const script = [
      'Date.now = () => 1_000;',
      "const { monotonicToEpochMs } = await import('./src/clock.ts');",
      "const { performance } = await import('node:perf_hooks');",
      'process.stdout.write(JSON.stringify([monotonicToEpochMs(0), performance.timeOrigin]));',
    ].join('\n');
    const out = runInFreshProcess(script);
    const [origin, nodeOrigin] = JSON.parse(out) as [number, number];
    assert.equal(origin, nodeOrigin);
  });
});
