/**
 * The pacer on the real clock and real timers: gaps never shorter than the
 * delay. No upper speed bound is asserted (the machine may be slow).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { systemClock } from '../../src/clock.js';
import { Pacer } from '../../src/pacing/pacer.js';

describe('Pacer on the system clock', () => {
  it('spaces 10 starts by at least 20 ms each', { timeout: 30_000 }, async () => {
    const pacer = new Pacer({ maxConcurrency: 4, maxWaitMs: 60_000, maxQueue: 100 }, systemClock);
    // systemClock's timers are unref'd (a server keeps the process alive); here nothing else does.
    const keepAlive = setInterval(() => {}, 1000);
    try {
      const outcomes = await Promise.all(
        Array.from({ length: 10 }, () =>
          Promise.resolve(pacer.acquire('http://127.0.0.1:1', 20, { identity: 'client' })).then((outcome) => {
            if (!outcome.granted) throw new Error(`refused: ${outcome.refusal.reason}`);
            const observedMs = systemClock.nowMs();
            outcome.slot.release({ status: 200 });
            return { startedAtMs: outcome.slot.startedAtMs, observedMs };
          }),
        ),
      );
      for (let i = 1; i < outcomes.length; i++) {
        const previous = outcomes[i - 1];
        const current = outcomes[i];
        assert.ok(previous && current);
        assert.ok(current.startedAtMs - previous.startedAtMs >= 20, `gap ${i}: ${current.startedAtMs - previous.startedAtMs} ms`);
        assert.ok(current.observedMs >= current.startedAtMs, 'granted no earlier than its recorded start');
      }
    } finally {
      clearInterval(keepAlive);
      pacer.close();
    }
  });
});
