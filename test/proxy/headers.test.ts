import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forwardableHeaders, hasVisitedProxy } from '../../src/proxy/headers.js';

describe('forwardableHeaders (RFC 9110 §7.6)', () => {
  it('drops hop-by-hop fields and those named in Connection, and appends Via', () => {
    const out = forwardableHeaders(
      { connection: 'keep-alive, X-Secret', 'x-secret': '1', 'keep-alive': 'timeout=5', 'proxy-authorization': 'Basic x', te: 'trailers', 'transfer-encoding': 'chunked', upgrade: 'h2c', 'proxy-connection': 'keep-alive', 'x-keep': 'yes', via: '1.0 other' },
      '1.1',
      'robots-proxy-test',
    );
    assert.deepEqual(out, { 'x-keep': 'yes', via: '1.0 other, 1.1 robots-proxy-test' });
  });

  it('recognises its own pseudonym in Via (loop)', () => {
    assert.equal(hasVisitedProxy({ via: '1.1 a, 1.1 robots-proxy-abc' }, 'robots-proxy-abc'), true);
    assert.equal(hasVisitedProxy({ via: '1.1 robots-proxy-xyz' }, 'robots-proxy-abc'), false);
    assert.equal(hasVisitedProxy({}, 'robots-proxy-abc'), false);
  });
});
