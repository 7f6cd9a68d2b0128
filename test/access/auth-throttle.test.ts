// run-tests: in-process
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
  assert.equal(throttleKeyOf('192.0.2.1'), '192.0.2.1');
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

test('no other /64 can spend a /64\'s budget: not its neighbours, not a whole /48 of guessers, not IPv4 clients', () => {
  const throttle = new AuthThrottle({ maxFailures: 3, windowMs: 60_000 });
  const host = '2001:db8:aa:1::10';
  throttle.recordFailure(host, 0);
  // Every other /64 of 2001:db8:aa::/48 fails, and fails again, and has checks in flight.
  for (let subnet = 2; subnet < 500; subnet++) {
    const guesser = `2001:db8:aa:${subnet.toString(16)}::1`;
    for (let i = 0; i < 5; i++) throttle.recordFailure(guesser, 1);
    throttle.begin(guesser, 1);
  }
  for (let i = 0; i < 5; i++) throttle.recordFailure('10.0.0.1', 1);
  for (let i = 0; i < 5; i++) throttle.recordFailure('::ffff:10.0.0.2', 1);
  assert.equal(throttle.retryAfterMs('2001:db8:aa:2::1', 2), 59_999, 'the guessers are throttled');
  assert.equal(throttle.retryAfterMs(host, 2), undefined);
  assert.equal(throttle.begin(host, 2), undefined, 'the host\'s /64 has two of its three checks left');
  throttle.settle(host, 2, true);
  assert.equal(throttle.begin('2001:db8:aa:1::77', 3), undefined);
  throttle.settle('2001:db8:aa:1::77', 3, true);
  assert.equal(throttle.begin(host, 4), 59_996, 'its own three failures (from two addresses of the /64) spend it');
  assert.equal(throttle.retryAfterMs('::ffff:10.0.0.3', 4), undefined, 'IPv4-mapped clients are counted per IPv4 address, not as one ::/64');
});

test('verified credentials are remembered per exact address, not per /64, bounded per address', () => {
  const throttle = new AuthThrottle({ maxFailures: 1, windowMs: 60_000 });
  const alice = { user: 'alice', hash: '$2b$04$aaaa' };
  throttle.recordVerified('2001:db8:aa:1::10', alice);
  assert.equal(throttle.hasVerified('2001:db8:aa:1::10', alice), true);
  assert.equal(throttle.hasVerified('2001:db8:aa:1::11', alice), false, 'a neighbour in the same /64 did not verify them');
  assert.equal(throttle.hasVerified('2001:db8:aa:1::10', { user: 'alice', hash: '$2b$04$bbbb' }), false, 'a changed password is not remembered');
  for (let i = 0; i < 40; i++) throttle.recordVerified('10.0.0.1', { user: `u${i}`, hash: 'h' });
  assert.equal(throttle.hasVerified('10.0.0.1', { user: 'u39', hash: 'h' }), true);
  assert.equal(throttle.hasVerified('10.0.0.1', { user: 'u0', hash: 'h' }), false, 'the oldest user of a crowded address is dropped');
  throttle.forgetVerified('2001:db8:aa:1::10', 'alice');
  assert.equal(throttle.hasVerified('2001:db8:aa:1::10', alice), false, 'a wrong password for alice from there forgets her');
  assert.equal(throttle.hasVerified('10.0.0.1', { user: 'u39', hash: 'h' }), true);
});

test('hasBudget answers what begin would, without starting a check: failures in the window and checks in flight both count', () => {
  const throttle = new AuthThrottle({ maxFailures: 2, windowMs: 60_000 });
  assert.equal(throttle.hasBudget('10.0.0.1', 0), true, 'nothing tracked');
  assert.equal(throttle.begin('10.0.0.1', 0), undefined);
  assert.equal(throttle.hasBudget('10.0.0.1', 0), true, 'one check in flight of two allowed');
  assert.equal(throttle.hasBudget('10.0.0.1', 0), true, 'asking starts nothing');
  assert.equal(throttle.begin('10.0.0.1', 0), undefined);
  assert.equal(throttle.hasBudget('10.0.0.1', 0), false, 'two checks in flight use the whole budget');
  assert.equal(throttle.hasBudget('10.0.0.2', 0), true, 'another address has its own');
  throttle.settle('10.0.0.1', 10, true);
  assert.equal(throttle.hasBudget('10.0.0.1', 10), false, 'one failure and one check in flight');
  throttle.settle('10.0.0.1', 20, false);
  assert.equal(throttle.hasBudget('10.0.0.1', 20), true, 'one failure of two');
  throttle.recordFailure('10.0.0.1', 30);
  assert.equal(throttle.hasBudget('10.0.0.1', 30), false, 'two failures');
  assert.equal(throttle.begin('10.0.0.1', 30) !== undefined, true, 'begin agrees');
  assert.equal(throttle.hasBudget('10.0.0.1', 60_010), true, 'the window ended');
  throttle.recordFailure('2001:db8:1:2::1', 0);
  throttle.recordFailure('2001:db8:1:2::2', 0);
  assert.equal(throttle.hasBudget('2001:db8:1:2::ffff', 5), false, 'counted per /64');
  assert.equal(throttle.hasBudget('2001:db8:1:3::1', 5), true);
});
