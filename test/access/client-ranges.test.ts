// run-tests: in-process
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClientRanges, normaliseClientRange } from '../../src/access/client-ranges.js';

test('ranges are normalised to their network; a bare address is a /32 or /128; mapped IPv6 ranges become IPv4', () => {
  assert.deepEqual(normaliseClientRange('10.1.2.3/16'), { ok: true, range: '10.1.0.0/16' });
  assert.deepEqual(normaliseClientRange('192.0.2.7'), { ok: true, range: '192.0.2.7/32' });
  assert.deepEqual(normaliseClientRange('2001:db8::1'), { ok: true, range: '2001:db8::1/128' });
  assert.deepEqual(normaliseClientRange('::ffff:10.0.0.0/104'), { ok: true, range: '10.0.0.0/8' });
  for (const bad of ['10.0.0.0/33', 'example.com', '', '10.0.0/8', '010.0.0.1', '0x0a.0.0.0/8', '::1/129']) {
    const result = normaliseClientRange(bad);
    assert.equal(result.ok, false, bad);
  }
});

test('an address is allowed by the most specific range that contains it, with that range\'s identity', () => {
  const ranges = new ClientRanges([{ range: '10.0.0.0/8' }, { range: '10.1.0.0/16', identity: 'lab-scrapers' }, { range: '::1/128' }, { range: '127.0.0.1/32' }]);
  assert.deepEqual(ranges.match('10.9.9.9'), { isAllowed: true, range: '10.0.0.0/8', identity: undefined, isBinding: false });
  assert.deepEqual(ranges.match('10.1.200.3'), { isAllowed: true, range: '10.1.0.0/16', identity: 'lab-scrapers', isBinding: false });
  assert.deepEqual(ranges.match('::1'), { isAllowed: true, range: '::1/128', identity: undefined, isBinding: false });
  assert.deepEqual(ranges.match('11.0.0.1'), { isAllowed: false });
  assert.deepEqual(ranges.match('127.0.0.2'), { isAllowed: false });
  assert.deepEqual(ranges.match(''), { isAllowed: false });
  assert.deepEqual(ranges.match('not an address'), { isAllowed: false });
});

test('an IPv4-mapped IPv6 client address (a dual-stack listener) is matched as IPv4', () => {
  const ranges = new ClientRanges([{ range: '127.0.0.1/32' }, { range: '10.1.0.0/16', identity: 'lab' }]);
  assert.equal(ranges.match('::ffff:127.0.0.1').isAllowed, true);
  assert.deepEqual(ranges.match('::ffff:10.1.0.5'), { isAllowed: true, range: '10.1.0.0/16', identity: 'lab', isBinding: false });
  assert.equal(ranges.match('::ffff:127.0.0.2').isAllowed, false);
  // An IPv6 range does not admit IPv4 clients, nor the reverse.
  assert.equal(new ClientRanges([{ range: '::/0' }]).match('10.0.0.1').isAllowed, false);
  assert.equal(new ClientRanges([{ range: '0.0.0.0/0' }]).match('2001:db8::1').isAllowed, false);
});
