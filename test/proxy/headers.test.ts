// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendedVia, forwardableHeaders, forwardableResponseFields, hasVisitedProxy, upstreamRequestFields } from '../../src/proxy/headers.js';

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

describe('forwardableResponseFields (a raw response head, RFC 9110 §7.6)', () => {
  /** A raw head as undici hands it: `Buffer`s, name and value in turn. */
  const rawOf = (...fields: string[]): Buffer[] => fields.map((f) => Buffer.from(f, 'latin1'));

  it("keeps the origin's names, values, order and repetitions; drops hop-by-hop fields in any spelling; adds Via", () => {
    const raw = rawOf('Content-Type', 'text/plain', 'CONNECTION', 'Keep-Alive', 'keep-alive', 'timeout=5', 'Set-Cookie', 'a=1', 'Transfer-Encoding', 'chunked', 'set-cookie', 'b=2', 'TE', 'trailers', 'X-Latin1', 'caf\xe9');
    assert.deepEqual(forwardableResponseFields(raw, '1.1', 'robots-proxy-test'), ['Content-Type', 'text/plain', 'Set-Cookie', 'a=1', 'set-cookie', 'b=2', 'X-Latin1', 'caf\xe9', 'via', '1.1 robots-proxy-test']);
  });

  it('drops the fields every Connection field names, before or after it', () => {
    const raw = rawOf('X-A', '1', 'Connection', 'x-a, close', 'X-B', '2', 'connection', 'X-C', 'X-C', '3', 'X-D', '4');
    assert.deepEqual(forwardableResponseFields(raw, '1.1', 'p'), ['X-B', '2', 'X-D', '4', 'via', '1.1 p']);
  });

  it("makes the Via fields one, at the first one's place, the hop appended; a Via named in Connection is replaced by the hop alone", () => {
    assert.deepEqual(forwardableResponseFields(rawOf('Via', '1.0 a', 'X-B', '1', 'VIA', '1.1 b'), '1.1', 'p'), ['Via', '1.0 a, 1.1 b, 1.1 p', 'X-B', '1']);
    assert.deepEqual(forwardableResponseFields(rawOf('Connection', 'via', 'Via', '1.0 a', 'X-B', '1'), '1.1', 'p'), ['X-B', '1', 'via', '1.1 p']);
  });

  it('leaves the first Retry-After in the sink, in any spelling', () => {
    const sink = { retryAfter: undefined as string | undefined };
    const fields = forwardableResponseFields(rawOf('RETRY-AFTER', '60', 'Retry-After', '5'), '1.1', 'p', sink);
    assert.equal(sink.retryAfter, '60');
    assert.deepEqual(fields, ['RETRY-AFTER', '60', 'Retry-After', '5', 'via', '1.1 p']);
    const none = { retryAfter: undefined as string | undefined };
    forwardableResponseFields(rawOf('X-A', '1'), '1.1', 'p', none);
    assert.equal(none.retryAfter, undefined);
  });

  it('takes strings as well as Buffers', () => {
    assert.deepEqual(forwardableResponseFields(['Keep-Alive', 'timeout=5', 'X-A', '1'], '1.1', 'p'), ['X-A', '1', 'via', '1.1 p']);
  });

  it('gives the same answer when names and values come back (reused), when they change, and past the bound of names kept', () => {
    for (let round = 0; round < 3; round++) {
      assert.deepEqual(forwardableResponseFields(rawOf('Date', 'Tue, 01 Dec 2026 00:00:00 GMT', 'Content-Length', '96'), '1.1', 'p'), ['Date', 'Tue, 01 Dec 2026 00:00:00 GMT', 'Content-Length', '96', 'via', '1.1 p']);
      assert.deepEqual(forwardableResponseFields(rawOf('Date', 'Tue, 01 Dec 2026 00:00:01 GMT', 'Content-Length', '97'), '1.1', 'p'), ['Date', 'Tue, 01 Dec 2026 00:00:01 GMT', 'Content-Length', '97', 'via', '1.1 p']);
      // Same length, another spelling: a name of its own (the spelling is relayed as received).
      assert.deepEqual(forwardableResponseFields(rawOf('DATE', 'x', 'content-length', '1'), '1.1', 'p'), ['DATE', 'x', 'content-length', '1', 'via', '1.1 p']);
    }
    // 30 names of one length (past the 8 kept per length), hop-by-hop ones among them, each twice.
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 30; i++) {
        const name = `X-Name-${String(i).padStart(2, '0')}`;
        assert.deepEqual(forwardableResponseFields(rawOf(name, `v${i}`, 'Keep-Alive', 'timeout=5', 'Upgrade', 'h2c'), '1.1', 'p'), [name, `v${i}`, 'via', '1.1 p']);
      }
    }
    // A long name and a long value (not kept) are relayed as they are.
    const long = `X-${'n'.repeat(60)}`;
    const value = 'v'.repeat(500);
    assert.deepEqual(forwardableResponseFields(rawOf(long, value), '1.1', 'p'), [long, value, 'via', '1.1 p']);
  });

  it('tells names and values apart that differ in one byte anywhere (case only, a latin1 byte, the last of a partial word), at every length', () => {
    // The names and values met are compared four bytes at a time (headers.ts); every byte counts,
    // the high bit of each word's top byte and the bytes of a last, partial word included.
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const variantsOf = (base: string): string[] => {
      const out = [base];
      for (let at = 0; at < base.length; at++) {
        const code = base.charCodeAt(at);
        const upper = String.fromCharCode(code).toUpperCase();
        for (const c of [upper === base[at] ? String.fromCharCode(code).toLowerCase() : upper, '\xe9', '\xff', '\x80', String.fromCharCode(code ^ 0x80)]) {
          if (c !== base[at]) out.push(base.slice(0, at) + c + base.slice(at + 1));
        }
      }
      return out;
    };
    for (let length = 1; length <= 44; length++) {
      // Names that are never hop-by-hop (`x` first), of one length; values of the same length as each other.
      const name = `x${'abcdefghijklmnopqrstuvwxyz0123456789-abcdefghij'.slice(0, length - 1)}`;
      const names = variantsOf(name).filter((n) => n[0] === 'x' || n[0] === 'X' || n[0] === '\xe9' || n[0] === '\xff' || n[0] === '\x80');
      const values = variantsOf(`v${'0123456789 abcdefghijklmnopqrstuvwxyz/;=,.'.slice(0, length - 1)}`);
      for (let step = 0; step < 3 * names.length; step++) {
        const n = names[random(names.length)] as string;
        const m = names[random(names.length)] as string;
        const v = values[random(values.length)] as string;
        const w = values[random(values.length)] as string;
        assert.deepEqual(forwardableResponseFields(rawOf(n, v, m, w), '1.1', 'p'), [n, v, m, w, 'via', '1.1 p'], `length ${length}: ${n}: ${v}, ${m}: ${w}`);
      }
    }
    // Values that are prefixes of each other (cut at every length, so at and between word boundaries), in any order.
    const long = 'max-age=600, public, stale-while-revalidate=30, must-revalidate';
    for (let step = 0; step < 400; step++) {
      const v = long.slice(0, 1 + random(long.length));
      assert.deepEqual(forwardableResponseFields(rawOf('Cache-Control', v), '1.1', 'p'), ['Cache-Control', v, 'via', '1.1 p']);
    }
    // Names of one length, hop-by-hop or not, in turn: `Connection`/`Keep-Alive`/`X-Abcdefgh` (10), `TE`/`te`/`XY` (2).
    for (let round = 0; round < 3; round++) {
      assert.deepEqual(forwardableResponseFields(rawOf('Keep-Alive', 'timeout=5', 'X-Abcdefgh', 'keep-alive', 'Connection', 'X-Abcdefgh', 'XY', '1', 'te', 'trailers', 'TE', 'x'), '1.1', 'p'), ['XY', '1', 'via', '1.1 p']);
      assert.deepEqual(forwardableResponseFields(rawOf('X-Abcdefgh', 'keep-alive', 'Connection', 'keep-alive', 'Xy', 'timeout=5'), '1.1', 'p'), ['X-Abcdefgh', 'keep-alive', 'Xy', 'timeout=5', 'via', '1.1 p']);
    }
  });
});

describe('upstreamRequestFields (the request head sent upstream)', () => {
  /** What the pipeline sent before (issue 11): the object copy, then its edits by name, flattened in its order. */
  function byObject(headers: Record<string, string | string[]>, host: string, maxForwards: string | undefined, userAgent: string | undefined): string[] {
    const out = forwardableHeaders(headers, '1.1', 'robots-proxy-test', true);
    delete out['expect'];
    out['host'] = host;
    if (maxForwards !== undefined) out['max-forwards'] = maxForwards;
    if (userAgent === undefined) delete out['user-agent'];
    else out['user-agent'] = userAgent;
    return Object.entries(out).flatMap(([name, value]) => (Array.isArray(value) ? value.flatMap((v) => [name, v]) : [name, value]));
  }

  const cases: Array<[string, Record<string, string | string[]>, string | undefined, string | undefined]> = [
    ['a plain GET', { host: 'a.example', 'user-agent': 'Bot/1', accept: '*/*' }, undefined, 'Bot/1'],
    ['hop-by-hop and listed fields, Expect, a Via', { host: 'a.example', connection: 'keep-alive, x-trace', 'x-trace': '1', 'keep-alive': 'timeout=5', expect: '100-continue', te: 'trailers', via: '1.0 other', 'content-length': '3', 'user-agent': 'Bot/1' }, undefined, 'Bot/1'],
    ['Max-Forwards decremented in place, the User-Agent rewritten', { 'max-forwards': '5', host: 'a.example', 'user-agent': 'Mozilla/5.0', cookie: 'a=1; b=2' }, '4', 'Mozilla/5.0 Bot'],
    ['a Max-Forwards not counted (kept as sent), the User-Agent removed', { host: 'a.example', 'max-forwards': 'x', 'user-agent': 'Bot/1' }, undefined, undefined],
    ['no Host (HTTP/1.0), no User-Agent but one set, Max-Forwards added', { accept: 'text/html' }, '0', 'Bot/2'],
    ['Host, User-Agent, Max-Forwards and Via named in Connection', { connection: 'host, user-agent, max-forwards, via', host: 'a.example', 'user-agent': 'Bot/1', 'max-forwards': '3', via: '1.0 x', accept: '*/*' }, '2', 'Bot/1'],
    ['a field Node keeps as an array', { host: 'a.example', 'set-cookie': ['a=1', 'b=2'], 'user-agent': 'Bot/1' }, undefined, 'Bot/1'],
  ];
  for (const [what, headers, maxForwards, userAgent] of cases) {
    it(`sends what the object copy sent, in its order: ${what}`, () => {
      assert.deepEqual(upstreamRequestFields(headers, '1.1', 'robots-proxy-test', 'b.example:8080', maxForwards, userAgent), byObject(headers, 'b.example:8080', maxForwards, userAgent));
    });
  }
});
