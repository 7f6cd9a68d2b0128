/** The deadline for the final response head across 1xx heads (src/proxy/final-head-deadline.ts), on real timers. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { HEADERS_TIMEOUT_CODE, startFinalHeadDeadline } from '../../src/proxy/final-head-deadline.js';

/** Resolves with when `onExpired` ran (ms after the start) and its error, or undefined after `waitMs`. */
function expiry(sentAgoMs: number, timeoutMs: number, waitMs: number, cancelAfterMs?: number): Promise<{ afterMs: number; code: unknown } | undefined> {
  return new Promise((resolve) => {
    const started = Date.now();
    const deadline = startFinalHeadDeadline(started - sentAgoMs, started, timeoutMs, (error) => resolve({ afterMs: Date.now() - started, code: (error as NodeJS.ErrnoException).code }));
    if (cancelAfterMs !== undefined) setTimeout(() => deadline.cancel(), cancelAfterMs);
    setTimeout(() => resolve(undefined), waitMs);
  });
}

describe('startFinalHeadDeadline', () => {
  it('fires at sentAt + timeout, not timeout after the first 1xx, with undici\'s headers-timeout code', async () => {
    const fired = await expiry(200, 300, 1000);
    assert.equal(fired?.code, HEADERS_TIMEOUT_CODE);
    assert.ok(fired.afterMs >= 90 && fired.afterMs < 290, `fired ${fired.afterMs} ms after the first 1xx`);
  });

  it('fires at once when the time has passed already; never when cancelled or when there is no timeout', async () => {
    const late = await expiry(500, 300, 1000);
    assert.ok(late !== undefined && late.afterMs < 100);
    assert.equal(await expiry(0, 100, 300, 50), undefined);
    assert.equal(await expiry(0, 0, 200), undefined);
  });
});
