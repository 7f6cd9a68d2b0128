// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LogThrottle } from '../../src/audit/log-throttle.js';

describe('LogThrottle', () => {
  it('admits one line per key per interval and counts the rest in the next line', () => {
    let now = 0;
    const throttle = new LogThrottle({ nowMs: () => now, intervalMs: 1000 });
    assert.equal(throttle.admit('a'), 0);
    for (let i = 0; i < 500; i += 1) assert.equal(throttle.admit('a'), undefined);
    assert.equal(throttle.admit('b'), 0, 'keys are throttled apart');
    now = 999;
    assert.equal(throttle.admit('a'), undefined);
    now = 1000;
    assert.equal(throttle.admit('a'), 501);
    assert.equal(throttle.admit('a'), undefined);
  });

  it('remembers at most maxKeys keys', () => {
    const throttle = new LogThrottle({ nowMs: () => 0, maxKeys: 3 });
    for (let i = 0; i < 1000; i += 1) assert.equal(throttle.admit(`k${i}`), 0);
    assert.equal(throttle.admit('k999'), undefined, 'the newest keys are kept');
    assert.equal(throttle.admit('k0'), 0, 'the oldest were forgotten');
  });
});
