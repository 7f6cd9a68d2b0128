// run-tests: in-process
/**
 * The request target read without the URL parser (src/proxy/canonical-target.ts, issue 11) gives
 * exactly what `new URL` gives: every target it accepts is one whose WHATWG serialization is the
 * target itself, and each part the proxy reads is the URL's; `parseProxyTarget` answers as the URL
 * parser alone does (`parseProxyTargetByUrl`) on generated and hand-picked targets, and the port a
 * connection uses (`connectionPortOf`) is the URL's port or the scheme's default. A robots
 * decision is made on these parts (origin, path), so a difference is a wrong decision.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalTargetOf, connectionPortOf, type TargetUrl } from '../../src/proxy/canonical-target.js';
import { parseProxyTarget, parseProxyTargetByUrl } from '../../src/proxy/proxy-target.js';
import { withQueryAsSent } from '../../src/proxy/query-as-sent.js';

const PARTS = ['href', 'protocol', 'host', 'hostname', 'port', 'pathname', 'search', 'origin'] as const;

/** The parts of `url` the proxy reads, as plain values. */
function partsOf(url: TargetUrl): Record<(typeof PARTS)[number], string> {
  return Object.fromEntries(PARTS.map((name) => [name, url[name]])) as Record<(typeof PARTS)[number], string>;
}

/** `parseProxyTarget(raw)` answers as the URL parser alone does; when the canonical reading took it, its parts are the URL's and its href is `raw`. */
function assertAgrees(raw: string): void {
  const fast = parseProxyTarget(raw);
  // The URL parser's reading, a query's `'` kept as written as parseProxyTarget keeps it (query-as-sent.ts).
  const byUrl = parseProxyTargetByUrl(raw);
  const reference = typeof byUrl === 'string' ? byUrl : withQueryAsSent(byUrl, raw);
  if (typeof reference === 'string') {
    assert.equal(fast, reference, `${JSON.stringify(raw)}: the reference refuses it`);
    return;
  }
  assert.notEqual(typeof fast, 'string', `${JSON.stringify(raw)}: the reference reads it`);
  assert.deepEqual(partsOf(fast as TargetUrl), partsOf(reference), JSON.stringify(raw));
  assert.equal(connectionPortOf(fast as TargetUrl), Number(reference.port) || (reference.protocol === 'https:' ? 443 : 80), JSON.stringify(raw));
  assert.equal(connectionPortOf(reference), connectionPortOf(fast as TargetUrl), JSON.stringify(raw));
  const canonical = canonicalTargetOf(raw);
  if (canonical !== undefined) {
    assert.equal(canonical.href, raw, JSON.stringify(raw));
    assert.equal(new URL(raw).href, raw, JSON.stringify(raw));
  }
}

/** Targets that crawlers send, each read by the canonical reading (else the speed-up would be dead code). */
const COMMON = [
  'http://127.0.0.1:8080/page/1?q=1',
  'http://example.com/',
  'https://example.com/robots.txt',
  'https://www.example.co.uk:8443/a/b/c.html?x=1&y=%20z',
  'http://a-b.example/path%20with%2Fencoded?q=%E2%9C%93',
  'http://255.255.255.255:65535/',
  'http://0.0.0.0:1/x',
  'http://1a.example/...',
  'http://example.com/a/.b/..c/b../?q=./../',
  'http://example.com/~user/a;b,c=d@e:f!$&\'()*+[]',
  'http://example.com/?',
  'http://example.com/x?a=b?c=/./..&d=\\|^`{}',
  'http://localhost:3000/.well-known/x',
];

/** Targets near the canonical form that the URL parser rewrites, refuses, or reads apart: all left to it, and answered as it answers. */
const TRICKY = [
  'HTTP://example.com/', 'http://Example.com/', 'http://EXAMPLE.COM/', 'hTtp://example.com/',
  'http://example.com', 'http://example.com?x', 'http://example.com#f', 'http://example.com/#f', 'http://example.com/x#', 'http://example.com/x?y#z',
  'http://example.com./', 'http://example.com../', 'http://.example.com/', 'http://a..b/', 'http://./', 'http://../', 'http://-/', 'http://a-/', 'http://-a/',
  'http://xn--nxasmq6b.example/', 'http://xn--a.example/', 'http://XN--a/', 'http://ab--c.example/', 'http://a.xn--/',
  'http://127.1/', 'http://127.0.1/', 'http://0x7f.0.0.1/', 'http://0x7f000001/', 'http://2130706433/', 'http://010.0.0.1/', 'http://127.0.0.01/',
  'http://256.0.0.1/', 'http://1.2.3.4.5/', 'http://1.2.3/', 'http://1.2.3.4./', 'http://1.2.3.0x4/', 'http://a.1/', 'http://a.0x1/', 'http://a.0x/', 'http://a.09/',
  'http://1.com/', 'http://1e5/', 'http://a.1e5/', 'http://999/', 'http://0/', 'http://00/',
  'http://example.com:/', 'http://example.com:0/', 'http://example.com:00/', 'http://example.com:080/', 'http://example.com:80/', 'https://example.com:443/',
  'http://example.com:443/', 'https://example.com:80/', 'http://example.com:65535/', 'http://example.com:65536/', 'http://example.com:99999/', 'http://example.com:123456/',
  'http://example.com:8080', 'http://example.com:8080?x', 'http://example.com:-1/', 'http://example.com:1a/', 'http://example.com::80/',
  'http://user@example.com/', 'http://user:pass@example.com/', 'http://:@example.com/', 'http://@example.com/', 'http://example.com@evil.example/',
  'http://example.com:80@evil.example/', 'http://a%40b@example.com/',
  'http://example.com/./', 'http://example.com/../', 'http://example.com/a/./b', 'http://example.com/a/../b', 'http://example.com/a/.', 'http://example.com/a/..',
  'http://example.com/a/.?x', 'http://example.com/a/..?x', 'http://example.com/%2e/', 'http://example.com/%2E%2e/', 'http://example.com/.%2e/', 'http://example.com/a/%2e',
  'http://example.com/%', 'http://example.com/%2', 'http://example.com/%zz', 'http://example.com/%g0', 'http://example.com/%0g', 'http://example.com/%41%42',
  'http://example.com/a\\b', 'http://example.com\\a', 'http:\\\\example.com/', 'http://example.com/\\..\\x',
  'http://example.com/ a', 'http://example.com/a b', 'http://example.com/a\tb', 'http://example.com/a\nb', 'http://example.com/\u0000', 'http://example.com/\u007f',
  'http://example.com/é', 'http://example.com/?é', 'http://exämple.com/', 'http://example.com/\ud800', 'http://example.com/\u{1f600}',
  'http://example.com/"<>', 'http://example.com/?"', 'http://example.com/?\'', 'http://example.com/?<>', 'http://example.com/^', 'http://example.com/`', 'http://example.com/{}',
  'http://example.com/|', 'http://example.com/?^`{}|\\',
  ' http://example.com/', 'http://example.com/ ', 'http://example.com/\t', '\thttp://example.com/', 'http://exa\tmple.com/', 'http://example.com/x\r',
  'http:///x', 'http:x', 'http:/x', 'http:', 'http://', 'https://', 'ftp://example.com/', 'ws://example.com/', 'file:///etc/passwd', 'http//example.com/',
  'http://[::1]/', 'http://[::1]:8080/', 'http://[::ffff:127.0.0.1]/', 'http://[::1/', 'http://exa_mple.com/', 'http://ex*ample.com/', 'http://ex%41mple.com/',
  '/path', '/', '*', 'example.com:443', '',
];

/** One of `good` mostly (weight 6), else one of `bad`. */
const mostly = <T,>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<T>): fc.Arbitrary<T> => fc.oneof({ weight: 6, arbitrary: good }, { weight: 1, arbitrary: bad });

/** Generated targets: the canonical grammar's parts, each now and then replaced by a spelling that breaks it. */
const targets = (): fc.Arbitrary<string> => {
  const scheme = mostly(fc.constantFrom('http://', 'https://'), fc.constantFrom('HTTP://', 'Https://', 'http:/', 'http:', 'http:///', 'ftp://', 'http:\\\\'));
  const label = mostly(
    fc.string({ unit: fc.constantFrom(...'abcxyz019-'), minLength: 1, maxLength: 6 }),
    fc.constantFrom('xn--nxasmq6b', 'xn--a', 'ab--c', 'localhost', 'Example', 'EXAMPLE', 'a_b', 'é', '0x7f', '0x', '08', '255', '256', '0', '1e5', '%41', ''),
  );
  const name = fc.array(label, { minLength: 1, maxLength: 4 }).chain((labels) => mostly(fc.constant(labels.join('.')), fc.constant(`${labels.join('.')}.`)));
  const octet = mostly(fc.integer({ min: 0, max: 255 }).map(String), fc.constantFrom('256', '010', '00', '0x7f', '1000', ''));
  const quad = mostly(fc.array(octet, { minLength: 4, maxLength: 4 }), fc.array(octet, { minLength: 1, maxLength: 5 })).map((parts) => parts.join('.'));
  const host = fc.oneof({ weight: 6, arbitrary: name }, { weight: 4, arbitrary: quad }, { weight: 1, arbitrary: fc.constantFrom('[::1]', '[::ffff:7f00:1]', 'user@example.com', 'a:b@c', '') });
  const port = fc.oneof(
    { weight: 3, arbitrary: fc.constant('') },
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 70000 }).map((p) => `:${p}`) },
    { weight: 1, arbitrary: fc.constantFrom(':', ':80', ':443', ':080', ':0', ':00080', ':65535', ':65536', ':1a', '::1') },
  );
  const segment = mostly(
    fc.oneof(
      { weight: 4, arbitrary: fc.string({ unit: fc.constantFrom(...'abcXYZ019-._~!$&\'()*+,;=:@[]'), maxLength: 6 }) },
      { weight: 1, arbitrary: fc.constantFrom('%41', '%2f', '%E2%9C%93', '...', 'a.', '.a', '..a', '.b.') },
    ),
    fc.oneof(
      fc.constantFrom('.', '..', '%2e', '%2E', '.%2e', '%2e.', '%zz', '%', '%4', '%g1'),
      fc.string({ unit: fc.constantFrom(...' "#<>\\^`{|}%\t\n\u0000\u007fé\ud83d\ude00?'), maxLength: 2 }),
    ),
  );
  const path = mostly(fc.array(segment, { maxLength: 5 }).map((segments) => `/${segments.join('/')}`), fc.constantFrom('', '?x', '#x', '\\x'));
  const query = fc.oneof(
    { weight: 2, arbitrary: fc.constant('') },
    { weight: 3, arbitrary: fc.string({ unit: mostly(fc.constantFrom(...'abc019=&?/.%2eE^`{|}\\'), fc.constantFrom(...'\'"<># é\t')), maxLength: 8 }).map((q) => `?${q}`) },
  );
  return fc.tuple(scheme, host, port, path, query).map((parts) => parts.join(''));
};

describe('parseProxyTarget: the canonical reading against the URL parser', () => {
  it('reads the targets crawlers send without the URL parser, with the parts URL gives', () => {
    for (const raw of COMMON) {
      const read = canonicalTargetOf(raw);
      assert.ok(read !== undefined, raw);
      assert.ok(!(parseProxyTarget(raw) instanceof URL), raw);
      assertAgrees(raw);
    }
  });

  it('agrees with the URL parser on hand-picked targets it leaves to it (case, IDNA, IPv4 shorthand, ports, user information, dot segments, encodings)', () => {
    for (const raw of TRICKY) assertAgrees(raw);
    // Every one of them is left to the URL parser except those already canonical.
    for (const raw of TRICKY) {
      const read = canonicalTargetOf(raw);
      if (read !== undefined) assert.equal(new URL(raw).href, raw, raw);
    }
  });

  it('agrees with the URL parser for every ASCII character in a host, a path and a query', () => {
    for (let c = 0; c < 0x80; c++) {
      const ch = String.fromCharCode(c);
      for (const raw of [`http://a${ch}b.example/`, `http://example.com/a${ch}b`, `http://example.com/${ch}`, `http://example.com/x?a${ch}b`, `http://example.com/x?${ch}`]) assertAgrees(raw);
    }
    // The characters the canonical reading keeps in a path and a query: all of them read by it.
    for (const ch of '!$&\'()*+,-.:;=@[]_~') assert.ok(canonicalTargetOf(`http://example.com/a${ch}b`) !== undefined, ch);
    for (const ch of '!$&()*+,-./:;=?@[\\]^_`{|}~') assert.ok(canonicalTargetOf(`http://example.com/x?a${ch}b`) !== undefined, ch);
  });

  it('agrees with the URL parser on generated targets, and reads many of them itself (property)', () => {
    let read = 0;
    let runs = 0;
    fc.assert(
      fc.property(targets(), (raw) => {
        runs++;
        if (canonicalTargetOf(raw) !== undefined) read++;
        assertAgrees(raw);
      }),
      { numRuns: 20_000 },
    );
    // The generator reaches the canonical reading often, so the comparison above is not vacuous.
    assert.ok(read > runs / 10, `${read} of ${runs} read by the canonical reading`);
  });

  it('agrees with the URL parser on arbitrary strings after a scheme (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom('http://', 'https://'), fc.string({ maxLength: 30 }), (scheme, rest) => assertAgrees(scheme + rest)),
      { numRuns: 5000 },
    );
  });
});
