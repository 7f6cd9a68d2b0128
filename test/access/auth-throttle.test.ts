import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthThrottle, throttleKeyOf } from '../../src/access/auth-throttle.js';

test('an address past its failure budget waits until the window ends; other addresses are not affected', () => {
  const throttle = new AuthThrottle({ maxFailures: 3, windowMs: 60_000 });
  for (let i = 0; i < 3; i++) {
    assert.equal(throttle.retryAfterMs('10.0.0.1', 1_000 + i), undefined);
    throttle.recordFailure('10.0.0.1', 1_000 + i);
  }
  assert.equal(throttle.retryAfterMs('10.0.0.1', 2_000), 59_000);
  assert.equal(throttle.retryAfterMs('10.0.0.2', 2_000), undefined);
  assert.equal(throttle.retryAfterMs('10.0.0.1', 61_000), undefined);
  throttle.recordFailure('10.0.0.1', 61_000);
  assert.equal(throttle.retryAfterMs('10.0.0.1', 61_001), undefined, 'a new window starts with one failure');
});

test('IPv6 clients are counted per /64, IPv4-mapped ones as IPv4', () => {
  assert.equal(throttleKeyOf('2001:db8:1:2:aaaa::1'), throttleKeyOf('2001:db8:1:2:bbbb::9'));
  assert.notEqual(throttleKeyOf('2001:db8:1:2::1'), throttleKeyOf('2001:db8:1:3::1'));
  assert.equal(throttleKeyOf('::ffff:10.0.0.1'), '10.0.0.1');
  const throttle = new AuthThrottle({ maxFailures: 1, windowMs: 1_000 });
  throttle.recordFailure('2001:db8:1:2::1', 0);
  assert.equal(throttle.retryAfterMs('2001:db8:1:2::ffff', 10), 990);
});

test('the tracked addresses are bounded', () => {
  const throttle = new AuthThrottle({ maxFailures: 1, windowMs: 1_000, maxAddresses: 100 });
  for (let i = 0; i < 1_000; i++) throttle.recordFailure(`10.0.${i >> 8}.${i & 255}`, 0);
  assert.equal(throttle.size, 100);
});

test('checks in flight count against the budget until they settle; a success frees its place', () => {
  const throttle = new AuthThrottle({ maxFailures: 2, windowMs: 60_000 });
  assert.equal(throttle.begin('10.0.0.1', 0), undefined);
  assert.equal(throttle.begin('10.0.0.1', 0), undefined);
  assert.equal(throttle.begin('10.0.0.1', 0), 60_000, 'two checks in flight use the whole budget');
  assert.equal(throttle.begin('10.0.0.2', 0), undefined, 'another address has its own');
  throttle.settle('10.0.0.1', 5, false);
  throttle.settle('10.0.0.1', 5, true);
  assert.equal(throttle.begin('10.0.0.1', 10), undefined, 'one failure recorded, one place free');
  throttle.settle('10.0.0.1', 10, true);
  assert.equal(throttle.begin('10.0.0.1', 20), 59_985, 'two failures: wait until the window that began at 5 ends');
});
