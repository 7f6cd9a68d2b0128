/**
 * The origin and the path-plus-query a request is keyed, matched and forwarded by, spelt as
 * `URL` spells them (they are built flat for speed, issue 11: the spelling must not change).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { originOf, pathAndQueryOf } from '../../src/proxy/proxied-exchange.js';

describe('originOf and pathAndQueryOf', () => {
  it('spell the origin as URL.origin, and the path plus query as pathname + search, for http and https targets', () => {
    const urls = [
      'http://a.example/page/1?q=1',
      'http://A.Example:80/x',
      'http://a.example:8080/x',
      'https://a.example:443/',
      'https://a.example:8443/a/b?c=d&e=f',
      'http://127.0.0.1:41234/page/1?q=1',
      'http://[::1]:8080/x?y',
      'http://[2001:DB8::1]/',
      'https://bücher.example/ä?ö=ü',
      'http://user:pw@a.example/p',
      'http://a.example',
      'http://a.example/?',
      'http://a.example/a%2Fb/../c?x=//y#frag',
      `http://a.example/${'long-segment/'.repeat(20)}?${'k=v&'.repeat(20)}`,
    ];
    for (const text of urls) {
      const url = new URL(text);
      assert.equal(originOf(url), url.origin, text);
      assert.equal(pathAndQueryOf(url), (url.pathname || '/') + url.search, text);
    }
  });
});
