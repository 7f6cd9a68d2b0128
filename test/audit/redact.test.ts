// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { REDACT_MAX_DEPTH, REDACTED_VALUE, redactSecrets } from '../../src/audit/redact.js';

describe('redactSecrets', () => {
  it('returns the same reference when there is nothing secret', () => {
    const value = { a: 1, b: { c: ['x', { d: 'e' }] }, headers: { accept: '*/*' } };
    assert.equal(redactSecrets(value), value);
  });

  it('replaces secret values at any key, in nested objects and arrays, copying on write', () => {
    const first = { headers: { Cookie: 'k=v' } };
    const value = { list: [first, { other: 1 }], keep: { x: 1 } };
    const out = redactSecrets(value);
    assert.notEqual(out, value);
    assert.deepEqual(out, { list: [{ headers: { Cookie: REDACTED_VALUE } }, { other: 1 }], keep: { x: 1 } });
    assert.equal(out.keep, value.keep, 'untouched branches are shared');
    assert.equal(first.headers.Cookie, 'k=v', 'the input is not modified');
  });

  it('redacts the value after a secret name in rawHeaders', () => {
    const out = redactSecrets({ rawHeaders: ['Host', 'a.test', 'Authorization', 'Basic x', 'Cookie'] });
    assert.deepEqual(out.rawHeaders, ['Host', 'a.test', 'Authorization', REDACTED_VALUE, 'Cookie']);
  });

  it('keeps null and undefined values, and leaves class instances alone', () => {
    const map = new Map([['authorization', 'secret']]);
    const out = redactSecrets({ authorization: null, cookie: undefined, map });
    assert.equal(out.authorization, null);
    assert.equal(out.cookie, undefined);
    assert.equal(out.map, map);
  });

  it('stops below the depth bound and survives cycles', () => {
    let deep: Record<string, unknown> = { authorization: 'too-deep' };
    for (let i = 0; i <= REDACT_MAX_DEPTH; i++) deep = { next: deep };
    assert.equal(redactSecrets(deep), deep);
    const cyclic: Record<string, unknown> = { cookie: 'c' };
    cyclic.self = cyclic;
    const out = redactSecrets(cyclic);
    assert.equal(out.cookie, REDACTED_VALUE);
  });
});
