// run-tests: in-process
/**
 * The origin and the path-plus-query a request is keyed, matched and forwarded by, spelt as
 * `URL` spells them (they are built flat for speed, issue 11: the spelling must not change), but
 * an IPv4-mapped IPv6 host keyed by its IPv4 address (one origin however the client spells it).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hostKeyOf, originOf, pathAndQueryOf } from '../../src/proxy/target-origin.js';

describe('originOf and pathAndQueryOf', () => {
  it('spell the origin as URL.origin, and the path plus query as pathname + search (an empty query with its ?), for http and https targets', () => {
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
      // Path plus query around 13 characters, where it stops being joined by `+` (target-origin.ts).
      'http://a.example/abcdefghijk',
      'http://a.example/abcdefghijkl',
      'http://a.example/abcdefghijklm',
      'http://a.example/abcdefgh?q=1',
      'http://a.example/abcdefgh?q=12',
      'http://a.example/abcdefgh?q=123',
      'http://a.example/?abcdefghijkl',
      'http://a.example/?abcdefghijk',
      'http://a.example/p?',
    ];
    for (const text of urls) {
      const url = new URL(text);
      assert.equal(originOf(url), url.origin, text);
      // An empty query keeps its `?` (`/p?`), which `search` does not show (RFC 9110 §7.7: forwarded as sent).
      assert.equal(pathAndQueryOf(url), (url.pathname || '/') + (url.search || (url.href.endsWith('?') ? '?' : '')), text);
    }
  });

  it('spell every origin as URL.origin through the bounded origin table: thousands of origins (more than its slots), collisions, prefixes, user information', () => {
    const hosts = ['a.example', 'a.example.org', 'b.a.example', 'xn--bcher-kva.example', '127.0.0.1', '10.0.0.1', '[::1]', '[2001:db8::1]', 'A.EXAMPLE', 'a.example.'];
    const ports = ['', ':80', ':443', ':8', ':8080', ':808', ':1', ':65535'];
    const texts: string[] = [];
    for (let i = 0; i < 600; i++) for (const scheme of ['http', 'https']) texts.push(`${scheme}://h${i}.example:${1000 + (i % 97)}/p${i}`);
    for (const scheme of ['http', 'https']) {
      for (const host of hosts) {
        for (const port of ports) {
          texts.push(`${scheme}://${host}${port}/x`, `${scheme}://${host}${port}`, `${scheme}://${host}${port}?q#f`);
          // User information: never part of the origin, and an origin a URL's href does not begin with.
          texts.push(`${scheme}://u@${host}${port}/x`, `${scheme}://u:p@${host}${port}/`, `${scheme}://:p@${host}${port}/`, `${scheme}://${host}@${host}${port}/x`);
          texts.push(`${scheme}://a.example${port}@${host}${port}/x`, `${scheme}://${host}${port}@a.example/x`);
        }
      }
      for (let port = 1; port < 6000; port += 1) texts.push(`${scheme}://127.0.0.1:${port}/page/1?q=1`);
    }
    // An origin of the same length and slot as a kept one, whose path holds the kept one: not taken for it.
    for (let round = 0; round < 2; round++) {
      for (const text of ['http://a.example:8080/x', 'http://b.example:8080/http://a.example:8080/', 'http://b.example:8080/?http://a.example:8080']) {
        const url = new URL(text);
        assert.equal(originOf(url), url.origin, text);
      }
    }
    // Three passes in different orders: each origin met first, again, and after others took its slot.
    for (const pass of [texts, [...texts].reverse(), texts.filter((_, i) => i % 3 === 0).concat(texts.filter((_, i) => i % 3 !== 0))]) {
      for (const text of pass) {
        const url = new URL(text);
        assert.equal(originOf(url), url.origin, text);
      }
    }
  });

  it('key an IPv4-mapped IPv6 host by its IPv4 address, before and after its IPv4 origin took the table slot, and no other IPv6 host', () => {
    const mapped: Array<[string, string]> = [
      ['http://[::ffff:127.0.0.1]:8080/x', 'http://127.0.0.1:8080'],
      ['http://[::ffff:7f00:1]:8080/x', 'http://127.0.0.1:8080'],
      ['http://[0:0:0:0:0:FFFF:7F00:0001]:8080/x?q', 'http://127.0.0.1:8080'],
      ['https://[::ffff:192.0.2.200]/', 'https://192.0.2.200'],
      ['https://[::ffff:c000:2c8]:443/', 'https://192.0.2.200'],
      ['http://[::ffff:0:0]:1/', 'http://0.0.0.0:1'],
      ['http://[::ffff:ffff:ffff]:65535/', 'http://255.255.255.255:65535'],
      ['http://[::ffff:a00:1]', 'http://10.0.0.1'],
    ];
    for (let pass = 0; pass < 2; pass++) {
      for (const [text, origin] of mapped) {
        assert.equal(originOf(new URL(text)), origin, text);
        assert.equal(originOf(new URL(origin + '/y')), origin, origin);
      }
    }
    // Other IPv6 addresses that embed an IPv4 address are other addresses (translated, compatible, NAT64, a mapped prefix elsewhere).
    for (const text of ['http://[::ffff:0:7f00:1]:8/x', 'http://[::127.0.0.1]:8/x', 'http://[64:ff9b::7f00:1]:8/x', 'http://[::1:ffff:7f00:1]:8/x', 'http://[::ffff:1]:8/x', 'http://[1::ffff:7f00:1]/x']) {
      const url = new URL(text);
      assert.equal(originOf(url), url.origin, text);
    }
    assert.equal(hostKeyOf('[::ffff:7f00:1]:8080'), '127.0.0.1:8080');
    assert.equal(hostKeyOf('[::ffff:7f00:1]'), '127.0.0.1');
    assert.equal(hostKeyOf('example.com:8080'), 'example.com:8080');
    assert.equal(hostKeyOf('[::ffff:0:7f00:1]'), '[::ffff:0:7f00:1]');
  });
});
