// run-tests: in-process
/**
 * Reading a report query with plain values: presets, durations, custom ranges,
 * filters and limits; every bad value is refused with a message, never thrown.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseReportQuery } from '../../../src/audit/report/report-query.js';

const NOW = Date.parse('2026-01-10T12:00:00Z');
const read = (qs: string) => parseReportQuery(new URLSearchParams(qs), NOW);

describe('parseReportQuery', () => {
  it('defaults to the last 24 hours without filters', () => {
    assert.deepEqual(read(''), { ok: true, query: { fromMs: NOW - 86_400_000, toMs: NOW, limit: 200 } });
  });

  it('reads presets, durations, custom ranges and filters', () => {
    assert.deepEqual(read('range=7d&token=GPTBot&origin=https://a.example&identity='), {
      ok: true,
      query: { fromMs: NOW - 7 * 86_400_000, toMs: NOW, token: 'GPTBot', origin: 'https://a.example', identity: '', limit: 200 },
    });
    const r = read('range=90m');
    assert.ok(r.ok && r.query.fromMs === NOW - 5_400_000);
    const custom = read('from=2026-01-01T00:00:00Z&to=1767312000000&limit=50');
    assert.ok(custom.ok);
    assert.deepEqual([custom.query.fromMs, custom.query.toMs, custom.query.limit], [Date.parse('2026-01-01T00:00:00Z'), 1_767_312_000_000, 50]);
  });

  it('refuses a to without a from, rather than ending the range now (it was ignored)', () => {
    for (const qs of ['to=2026-01-05T00:00:00Z', 'range=7d&to=2026-01-05T00:00:00Z', 'from=&to=1767312000000']) {
      assert.deepEqual(read(qs), { ok: false, message: 'to needs from: a range (range=) always ends now' }, qs);
    }
    // An empty to is no to: the preset range, as before.
    assert.deepEqual(read('range=1h&to='), { ok: true, query: { fromMs: NOW - 3_600_000, toMs: NOW, limit: 200 } });
  });

  it('reads the origin filter as the ledger keys origins', () => {
    const originOf = (value: string) => {
      const r = read(`origin=${encodeURIComponent(value)}`);
      return r.ok ? r.query.origin : r.message;
    };
    assert.equal(originOf('https://A.example/'), 'https://a.example');
    assert.equal(originOf('https://a.example:443'), 'https://a.example');
    assert.equal(originOf('http://a.example:8080/'), 'http://a.example:8080');
    assert.equal(originOf('http://[::ffff:7f00:1]:8080'), 'http://127.0.0.1:8080');
    assert.equal(originOf('https://bücher.example'), 'https://xn--bcher-kva.example');
    assert.equal(originOf('not an origin'), 'not an origin', 'no URL: compared as written');
    assert.match(originOf('https://a.example/x') ?? '', /^origin must be scheme:\/\/host\[:port\] without a path or query/);
    assert.match(originOf('https://a.example/?q') ?? '', /^origin must be/);
  });

  it('refuses bad ranges, times and limits with a message', () => {
    for (const qs of ['range=soon', 'range=0', 'from=yesterday', 'from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', 'limit=0', 'limit=99999', 'limit=1e3', `token=${'x'.repeat(3000)}`]) {
      const r = read(qs);
      assert.equal(r.ok, false, qs);
      assert.ok(!r.ok && r.message.length > 0);
    }
  });
});
