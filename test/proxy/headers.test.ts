import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendedVia, forwardableHeaders, hasVisitedProxy } from '../../src/proxy/headers.js';

describe('forwardableHeaders (RFC 9110 §7.6)', () => {
  it('drops hop-by-hop fields and those named in Connection, and appends Via', () => {
    const out = forwardableHeaders(
      { connection: 'keep-alive, X-Secret', 'x-secret': '1', 'keep-alive': 'timeout=5', 'proxy-authorization': 'Basic x', te: 'trailers', 'transfer-encoding': 'chunked', upgrade: 'h2c', 'proxy-connection': 'keep-alive', 'x-keep': 'yes', via: '1.0 other' },
      '1.1',
      'robots-proxy-test',
    );
    assert.deepEqual(out, { 'x-keep': 'yes', via: '1.0 other, 1.1 robots-proxy-test' });
  });

  it('drops the fields named in Connection the same way every time a value comes back (names cached per value), and past the cache bound', () => {
    for (let round = 0; round < 3; round++) {
      const first = forwardableHeaders({ connection: 'Keep-Alive, X-A', 'x-a': '1', 'x-b': '2' }, '1.1', 'p');
      assert.deepEqual(first, { 'x-b': '2', via: '1.1 p' });
      // The same value, another message: only its own fields are affected.
      const second = forwardableHeaders({ connection: 'Keep-Alive, X-A', 'x-b': '3', 'x-c': '4' }, '1.1', 'p');
      assert.deepEqual(second, { 'x-b': '3', 'x-c': '4', via: '1.1 p' });
    }
    // More distinct values than the cache holds, and one too long to cache: each still parsed right.
    for (let i = 0; i < 100; i++) {
      const name = `x-n${i}`;
      assert.deepEqual(forwardableHeaders({ connection: name, [name]: 'v', 'x-keep': 'k' }, '1.1', 'p'), { 'x-keep': 'k', via: '1.1 p' });
    }
    const long = Array.from({ length: 20 }, (_, i) => `x-long-${i}`).join(', ');
    assert.deepEqual(forwardableHeaders({ connection: long, 'x-long-19': 'v', 'x-keep': 'k' }, '1.1', 'p'), { 'x-keep': 'k', via: '1.1 p' });
  });

  it('recognises its own pseudonym in Via (loop)', () => {
    assert.equal(hasVisitedProxy({ via: '1.1 a, 1.1 robots-proxy-abc' }, 'robots-proxy-abc'), true);
    assert.equal(hasVisitedProxy({ via: '1.1 robots-proxy-xyz' }, 'robots-proxy-abc'), false);
    assert.equal(hasVisitedProxy({}, 'robots-proxy-abc'), false);
  });
});

describe('appendedVia (RFC 9110 §7.6.3)', () => {
  it('appends the hop of the version and pseudonym given, whichever came before (the last hop is reused)', () => {
    for (let round = 0; round < 2; round++) {
      assert.equal(appendedVia(undefined, '1.1', 'robots-proxy-aaaaaa'), '1.1 robots-proxy-aaaaaa');
      assert.equal(appendedVia(undefined, '1.0', 'robots-proxy-aaaaaa'), '1.0 robots-proxy-aaaaaa');
      assert.equal(appendedVia(undefined, '1.0', 'robots-proxy-bbbbbb'), '1.0 robots-proxy-bbbbbb');
      assert.equal(appendedVia('1.1 upstream', '1.0', 'robots-proxy-bbbbbb'), '1.1 upstream, 1.0 robots-proxy-bbbbbb');
      assert.equal(appendedVia(['1.1 a', '1.0 b'], '1.1', 'robots-proxy-aaaaaa'), '1.1 a, 1.0 b, 1.1 robots-proxy-aaaaaa');
    }
  });
});

describe('forwardableHeaders with names known to be lower case', () => {
  it('drops the same fields and keeps the same values as with names lower-cased one by one', () => {
    const headers = { host: 'a.example', connection: 'keep-alive, x-trace', 'keep-alive': 'timeout=5', 'x-trace': '1', 'proxy-authorization': 'Basic x', te: 'trailers', accept: '*/*', via: '1.0 other' };
    const expected = { host: 'a.example', accept: '*/*', via: '1.0 other, 1.1 robots-proxy-cccccc' };
    assert.deepEqual(forwardableHeaders(headers, '1.1', 'robots-proxy-cccccc', true), expected);
    assert.deepEqual(forwardableHeaders(headers, '1.1', 'robots-proxy-cccccc'), expected);
    // Mixed case is lower-cased only when the caller does not vouch for the names.
    assert.deepEqual(forwardableHeaders({ Connection: 'close', Accept: '*/*' }, '1.1', 'robots-proxy-cccccc'), { accept: '*/*', via: '1.1 robots-proxy-cccccc' });
  });
});
