// run-tests: in-process
/**
 * The CONNECT target and how it binds the requests inside the tunnel
 * (issue 7, item 0): one origin, whatever the spelling; another origin or
 * scheme is 421; what cannot be parsed is 400, never a throw.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isTunnelRefusal, parseConnectTarget, relayedTunnelScheme, resolveTunnelRequest, tunnelOrigin, type TunnelTarget } from '../../src/proxy/tunnel-target.js';

function target(raw: string): TunnelTarget {
  const t = parseConnectTarget(raw);
  assert.notEqual(typeof t, 'string', `${raw}: ${String(t)}`);
  return t as TunnelTarget;
}

describe('parseConnectTarget', () => {
  it('normalises host:port: lower case, trailing dot dropped, IPv6 in brackets, IDN in punycode', () => {
    assert.deepEqual(parseConnectTarget('Example.COM.:8443'), { authority: 'example.com:8443', hostname: 'example.com', port: 8443 });
    assert.deepEqual(parseConnectTarget('localhost.:443'), { authority: 'localhost:443', hostname: 'localhost', port: 443 });
    assert.deepEqual(parseConnectTarget('[::1]:443'), { authority: '[::1]:443', hostname: '[::1]', port: 443 });
    assert.equal(target('bücher.example:443').hostname, 'xn--bcher-kva.example');
  });

  it('refuses what is not host:port with a reason', () => {
    for (const raw of [undefined, '', 'example.com', 'example.com:', 'example.com:0', 'example.com:65536', 'http://example.com:443', 'a@b:443', 'a/b:443', 'x?y:443', '[::1:443', ':443', '.:443']) {
      assert.equal(typeof parseConnectTarget(raw), 'string', String(raw));
    }
  });
});

describe('relayedTunnelScheme', () => {
  it('a relayed tunnel to port 80 is the http origin; any other port the https one', () => {
    assert.equal(tunnelOrigin(target('example.com:80'), relayedTunnelScheme(target('example.com:80'))), 'http://example.com');
    for (const raw of ['example.com:443', 'example.com:8443', 'example.com:8080', '[::1]:443']) assert.equal(relayedTunnelScheme(target(raw)), 'https', raw);
  });
});

describe('resolveTunnelRequest', () => {
  const t = target('localhost:8443');

  it('origin-form is a path on the tunnel origin, for https and http tunnels', () => {
    assert.equal((resolveTunnelRequest(t, 'https', '/a?b=1', 'localhost:8443') as URL).href, 'https://localhost:8443/a?b=1');
    assert.equal((resolveTunnelRequest(t, 'http', '/a', 'localhost:8443') as URL).href, 'http://localhost:8443/a');
    assert.equal((resolveTunnelRequest(t, 'https', '//evil.example/x', undefined) as URL).href, 'https://localhost:8443//evil.example/x');
  });

  it('a Host naming the same origin in another spelling is that origin (trailing dot, case, default port)', () => {
    for (const host of ['localhost.:8443', 'LOCALHOST:8443', 'Localhost.:8443']) {
      assert.ok(resolveTunnelRequest(t, 'https', '/x', host) instanceof URL, host);
    }
    const https443 = target('example.com:443');
    assert.ok(resolveTunnelRequest(https443, 'https', '/x', 'example.com') instanceof URL);
    assert.ok(resolveTunnelRequest(https443, 'https', '/x', 'example.com.:443') instanceof URL);
    const http80 = target('example.com:80');
    assert.ok(resolveTunnelRequest(http80, 'http', '/x', 'example.com') instanceof URL);
    // An explicit :80 in an https tunnel to :443 is another port, not the default.
    assert.deepEqual(resolveTunnelRequest(https443, 'https', '/x', 'example.com:80'), {
      reason: 'misdirected',
      detail: 'Host "example.com:80" is not the tunnel\'s target example.com:443',
    });
  });

  it('an IPv4-mapped IPv6 host and its IPv4 address are one origin, in Host and in absolute-form, either way round (hostKeyOf)', () => {
    const mapped = target('[::ffff:127.0.0.1]:8443');
    const v4 = target('127.0.0.1:8443');
    for (const host of ['127.0.0.1:8443', '127.1:8443', '[::ffff:7f00:1]:8443', '[::ffff:127.0.0.1]:8443']) {
      assert.ok(!isTunnelRefusal(resolveTunnelRequest(mapped, 'https', '/x', host)), `Host ${host} in a tunnel to [::ffff:127.0.0.1]:8443`);
      assert.ok(!isTunnelRefusal(resolveTunnelRequest(v4, 'https', '/x', host)), `Host ${host} in a tunnel to 127.0.0.1:8443`);
      assert.ok(!isTunnelRefusal(resolveTunnelRequest(mapped, 'http', `http://${host}/x`, undefined)), `http://${host}/x in a tunnel to [::ffff:127.0.0.1]:8443`);
      assert.ok(!isTunnelRefusal(resolveTunnelRequest(v4, 'http', `http://${host}/x`, undefined)), `http://${host}/x in a tunnel to 127.0.0.1:8443`);
    }
    // Another address, another port, or an embedded IPv4 that is not IPv4-mapped stays another origin.
    for (const host of ['127.0.0.2:8443', '[::ffff:127.0.0.2]:8443', '127.0.0.1:8444', '[::127.0.0.1]:8443', '[64:ff9b::127.0.0.1]:8443']) {
      assert.equal((resolveTunnelRequest(mapped, 'https', '/x', host) as { reason: string }).reason, 'misdirected', host);
      assert.equal((resolveTunnelRequest(v4, 'https', `https://${host}/x`, undefined) as { reason: string }).reason, 'misdirected', host);
    }
  });

  it('a Host for another host or port is misdirected (421); an unparsable Host is a bad request (400)', () => {
    assert.equal((resolveTunnelRequest(t, 'https', '/x', 'other.example:8443') as { reason: string }).reason, 'misdirected');
    assert.equal((resolveTunnelRequest(t, 'https', '/x', 'localhost:8444') as { reason: string }).reason, 'misdirected');
    for (const host of ['[::1', 'a b', 'user@localhost:8443', 'localhost:8443/x', 'localhost:99999', '']) {
      assert.equal((resolveTunnelRequest(t, 'https', '/x', host) as { reason: string }).reason, 'bad-request', host);
    }
  });

  it('absolute-form binds by its own authority and scheme: another origin, or http in a TLS tunnel, is 421', () => {
    assert.equal((resolveTunnelRequest(t, 'https', 'https://localhost.:8443/x', 'ignored.example') as URL).href, 'https://localhost:8443/x');
    assert.equal((resolveTunnelRequest(t, 'https', 'http://localhost:8443/x', undefined) as { reason: string }).reason, 'misdirected');
    assert.equal((resolveTunnelRequest(t, 'https', 'https://other.example:8443/x', undefined) as { reason: string }).reason, 'misdirected');
    assert.equal((resolveTunnelRequest(t, 'http', 'https://localhost:8443/x', undefined) as { reason: string }).reason, 'misdirected');
    const bound = resolveTunnelRequest(t, 'http', 'http://localhost:8443/x', undefined);
    assert.ok(!isTunnelRefusal(bound));
    assert.equal(bound.href, 'http://localhost:8443/x');
  });

  it('the issue\'s input, "http://[::1/x", and other non-URLs are bad requests, not throws', () => {
    for (const raw of ['http://[::1/x', '*', 'localhost:8443', 'ftp://localhost:8443/', 'https://user@localhost:8443/', '', undefined]) {
      assert.equal((resolveTunnelRequest(t, 'https', raw, 'localhost:8443') as { reason: string }).reason, 'bad-request', String(raw));
    }
  });

  it('never throws, and whatever it returns is on the tunnel origin or a refusal (property)', () => {
    const raw = fc.oneof(fc.string(), fc.string().map((s) => `/${s}`), fc.string().map((s) => `https://${s}`), fc.string().map((s) => `http://${s}`));
    fc.assert(
      fc.property(fc.constantFrom('https', 'http') as fc.Arbitrary<'https' | 'http'>, raw, fc.option(fc.string(), { nil: undefined }), (scheme, rawTarget, host) => {
        const bound = resolveTunnelRequest(t, scheme, rawTarget, host);
        if (!isTunnelRefusal(bound)) assert.equal(bound.origin, tunnelOrigin(t, scheme));
        else assert.ok(bound.reason === 'bad-request' || bound.reason === 'misdirected');
      }),
      { numRuns: 2000 },
    );
  });
});
