/**
 * Golden tests of the access line's encoder (src/audit/access-line.ts): its
 * bytes are those of the line the string serializer it replaced wrote
 * (test/audit/old-access-line.ts, itself JSON.stringify's, byte for byte),
 * over generated entries (every reason, absent optional fields, any UTF-16
 * including lone surrogates and control characters, quotes, long values, any
 * number, capped values), through a logger's real file destination too; and
 * the line written through a logger is the line pino's generic path wrote.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import * as fc from 'fast-check';
import { readFileSync, mkdtempSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeAccessLine, writeAccessLog } from '../../src/audit/access-line.js';
import { LineBuffer } from '../../src/audit/line-buffer.js';
import { serializeAccessRecord } from './old-access-line.js';
import { ACCESS_LOG_LIMITS, toAccessLogRecord } from '../../src/audit/access-log.js';
import type { AccessEntry } from '../../src/audit/access-entry.js';
import { createIsoFormatter, createIsoWriter } from '../../src/audit/iso-time.js';
import { SAFE_RECORD, createLogger } from '../../src/audit/logger.js';
import { DECISION_REASONS, type Decision, type MatchedRule, type SnapshotInfo } from '../../src/policy/decision.js';
import { CapturedLines, makeDecision, makeEntry, makeSnapshot } from './factories.js';
import { anyBindings, anyEntry, anyNowMs, anyNumber, anyRecord, anySnapshotInfo, oldLine, text } from './access-line-arbitraries.js';

describe('serializeAccessRecord (the old serializer, the reference below)', () => {
  it('writes JSON.stringify(record), byte for byte, for any record of the declared types', () => {
    fc.assert(
      fc.property(anyRecord, (record) => {
        assert.equal(serializeAccessRecord(record), JSON.stringify(record));
      }),
      { numRuns: 3000 },
    );
  });

  it('writes JSON.stringify of the record toAccessLogRecord builds from any entry', () => {
    fc.assert(
      fc.property(anyEntry, (entry) => {
        const record = toAccessLogRecord(entry);
        assert.equal(serializeAccessRecord(record), JSON.stringify(record));
      }),
      { numRuns: 2000 },
    );
  });

  it('covers every reason, absent optional facts and capped values in hand-picked entries', () => {
    const entries: AccessEntry[] = [];
    for (const reason of DECISION_REASONS) {
      entries.push(makeEntry({ decision: makeDecision({ reason, verdict: reason === 'rule-allow' ? 'allow' : 'deny' }) }));
    }
    entries.push(
      makeEntry({ decision: makeDecision({ rule: null, group: null, productToken: null, snapshot: null, agentTokens: [] }), productTokens: [] }),
      makeEntry({ decision: makeDecision({ snapshot: makeSnapshot({ status: undefined, error: 'ECONNREFUSED', state: 'unreachable' }) }) }),
      makeEntry({
        decision: makeDecision({
          reason: 'queue-full',
          detail: 'queue "full" \\ at\u0000 origin\n',
          pacing: { delayMs: 1000, waitedMs: 0, queueLength: 64, identityQueueLength: 12, limit: 'max-queue', retryAfterSeconds: 3 },
        }),
      }),
      makeEntry({ decision: makeDecision({ reason: 'upstream-error', upstream: { error: 'UND_ERR_HEADERS_TIMEOUT', timedOut: true }, pacing: { delayMs: 0, waitedMs: 0.25 } }) }),
      makeEntry({ decision: makeDecision({ reason: 'rule-allow', upstream: {} }) }),
      {
        ...makeEntry({
          request: { url: `http://xn--bcher-kva.example/${'ä'.repeat(5000)}?q="x"`, userAgent: 'Bot\u2028/1 "quoted" \u{1F600}', clientRequestId: 'id\t1' },
          error: 'E\u0007',
          timings: { queueWaitMs: 0.1 + 0.2, upstreamMs: 1e21, durationMs: NaN, upstreamStartedAtMs: 1_700_000_000_123.999 },
          response: { status: 200, upstreamStatus: 200, bytesSent: Number.MAX_SAFE_INTEGER, bytesReceived: -0, clientAborted: true },
        }),
        identity: 'team "a"',
      },
      makeEntry({ startedAtMs: -1, decision: makeDecision({ snapshot: makeSnapshot({ fetchedAtMs: 8.64e15 + 1, expiresAtMs: Infinity }) }) }),
    );
    for (const entry of entries) {
      const record = toAccessLogRecord(entry);
      assert.equal(serializeAccessRecord(record), JSON.stringify(record));
    }
    const long = toAccessLogRecord(entries[entries.length - 2] as AccessEntry);
    assert.equal(long.url.length, ACCESS_LOG_LIMITS.urlChars);
    assert.deepEqual(long.truncated, ['url']);
  });

  it('writes the same JSON value whatever the key order of the nested facts', () => {
    const record = toAccessLogRecord(
      makeEntry({ decision: { upstream: { timedOut: false, status: 502 }, pacing: { waitedMs: 3, delayMs: 10 }, ...makeDecision({ detail: 'd' }) } }),
    );
    assert.deepEqual(JSON.parse(serializeAccessRecord(record)), JSON.parse(JSON.stringify(record)));
  });
});

describe('writeAccessLog', () => {
  /** The line pino's generic path writes for the same record (the pre-serializer way), and the new one. */
  function bothLines(entry: AccessEntry): [string, string] {
    const viaPino = new CapturedLines();
    const generic = createLogger({ level: 'info', destination: viaPino });
    generic.info({ ...toAccessLogRecord(entry), [SAFE_RECORD]: true }, 'request');
    const viaSerializer = new CapturedLines();
    writeAccessLog(createLogger({ level: 'info', destination: viaSerializer }), entry);
    const time = /"time":"[^"]*"/;
    return [viaPino.text.replace(time, '"time":"T"'), viaSerializer.text.replace(time, '"time":"T"')];
  }

  it("writes the line pino's generic path wrote (level, time, pid, hostname, fields, msg), for any entry without lone surrogates", () => {
    fc.assert(
      fc.property(anyEntry, (entry) => {
        // JSON.stringify writes a lone surrogate, and only that, as a \udXXX escape.
        fc.pre(!/\\u[dD][89a-fA-F]/.test(JSON.stringify(entry)));
        const [viaPino, viaSerializer] = bothLines(entry);
        assert.equal(viaSerializer, viaPino);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps a lone surrogate as a JSON escape, where pino wrote it raw and UTF-8 turned it into U+FFFD', () => {
    const entry = makeEntry({ requestId: 'id-\ud800' });
    const [viaPino, viaSerializer] = bothLines(entry);
    assert.equal((JSON.parse(viaSerializer) as { requestId: string }).requestId, 'id-\ud800');
    assert.equal((JSON.parse(viaPino) as { requestId: string }).requestId, 'id-\ufffd');
  });

  it('writes an ISO time and the bindings of a child logger', () => {
    const out = new CapturedLines();
    const before = Date.now();
    writeAccessLog(createLogger({ level: 'info', destination: out }).child({ component: 'proxy "x"' }), makeEntry());
    const [line] = out.records();
    assert.equal(line?.component, 'proxy "x"');
    assert.equal(line?.pid, process.pid);
    const time = Date.parse(line?.time as string);
    assert.ok(time >= before - 1 && time <= Date.now() + 1, `time ${String(line?.time)}`);
    assert.equal(line?.msg, 'request');
  });

  it('writes nothing below info, and falls back to logger.info for a logger createLogger did not make', () => {
    const silent = new CapturedLines();
    writeAccessLog(createLogger({ level: 'warn', destination: silent }), makeEntry());
    assert.equal(silent.text, '');
    const foreign = new CapturedLines();
    writeAccessLog(pino({ level: 'info' }, foreign), makeEntry());
    const [line] = foreign.records();
    assert.equal(line?.level, 30, "the foreign logger's own format");
    assert.equal(line?.msg, 'request');
    assert.equal((line?.decision as { reason: string }).reason, 'rule-disallow');
  });

  it('follows each logger\'s level as it is set (a config reload), and writes to each logger its own lines and bindings, loggers in turn', () => {
    // The logger's level and destination are read once per logger (access-line.ts), the level again at each `level-change`.
    const a = new CapturedLines();
    const b = new CapturedLines();
    const parent = createLogger({ level: 'info', destination: a });
    const child = parent.child({ component: 'c' });
    const other = createLogger({ level: 'warn', destination: b });
    const foreign = new CapturedLines();
    const plain = pino({ level: 'info' }, foreign);
    const count = (lines: CapturedLines): number => lines.records().length;
    const levels = ['info', 'warn', 'debug', 'error', 'silent', 'info', 'trace'];
    let expectA = 0;
    let expectB = 0;
    let expectForeign = 0;
    for (let step = 0; step < 28; step++) {
      const level = levels[step % levels.length] as string;
      const enabled = level === 'info' || level === 'debug' || level === 'trace';
      if (step % 4 === 0) parent.level = level;
      if (step % 4 === 1) child.level = level;
      if (step % 4 === 2) other.level = level;
      if (step % 4 === 3) plain.level = level;
      for (const logger of [parent, child, other, plain, child]) writeAccessLog(logger, makeEntry({ requestId: `r${step}` }));
      expectA += (parent.isLevelEnabled('info') ? 1 : 0) + (child.isLevelEnabled('info') ? 2 : 0);
      expectB += other.isLevelEnabled('info') ? 1 : 0;
      expectForeign += plain.isLevelEnabled('info') ? 1 : 0;
      assert.equal(count(a), expectA, `step ${step}, level ${level} (${String(enabled)})`);
      assert.equal(count(b), expectB, `step ${step}`);
      assert.equal(count(foreign), expectForeign, `step ${step}`);
    }
    assert.ok(expectA > 0 && expectB > 0 && expectForeign > 0 && expectA < 28 * 3);
    // Each line carries its own logger's bindings and the request's id.
    assert.ok(a.records().every((line) => line.msg === 'request' && (line.component === undefined || line.component === 'c')));
    assert.ok(a.records().some((line) => line.component === 'c') && a.records().some((line) => line.component === undefined));
    assert.ok(b.records().every((line) => line.component === undefined && typeof line.requestId === 'string'));
  });
});

describe('createIsoFormatter', () => {
  it('writes what Date#toISOString writes, or "invalid", for any ms value, in any order', () => {
    const iso = createIsoFormatter();
    const ms = fc.oneof(
      fc.integer({ min: 0, max: 4_102_444_800_000 }),
      fc.double({ min: -1e16, max: 1e16 }),
      fc.constantFrom(0, 999, 1000, 253_402_300_799_999, 253_402_300_800_000, 8.64e15, 8.64e15 + 1, -1, -0.5, NaN, Infinity, 1_700_000_000_999.9),
    );
    fc.assert(
      fc.property(fc.array(ms, { minLength: 1, maxLength: 20 }), (values) => {
        for (const value of values) {
          const date = new Date(value);
          assert.equal(iso(value), Number.isFinite(date.getTime()) ? date.toISOString() : 'invalid', String(value));
        }
      }),
      { numRuns: 2000 },
    );
  });
});


describe('encodeAccessLine', () => {
  it("writes the old serializer's line, byte for byte, for any entry, bindings and time", () => {
    fc.assert(
      fc.property(anyEntry, anyBindings, anyNowMs, (entry, bindings, nowMs) => {
        const out = new LineBuffer(64);
        encodeAccessLine(out, entry, bindings, nowMs);
        assert.deepEqual(out.buf.subarray(0, out.length), oldLine(entry, bindings, nowMs));
      }),
      { numRuns: 3000 },
    );
  });

  it('writes JSON.stringify(toAccessLogRecord(entry)) between pino\'s head and msg, for any entry, with any value in the fields the encoder copies as runs', () => {
    // method, via, verdict, reason and the rule's kind are copied as pre-encoded runs when they are the usual values;
    // any other string (outside their types too) takes the generic path, which must give the same bytes.
    const closedOrAny = <T extends string>(values: readonly T[]): fc.Arbitrary<string> => fc.oneof(fc.constantFrom(...values), text);
    const anyRunEntry = fc
      .record({
        entry: anyEntry,
        method: closedOrAny(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'CONNECT', 'get', 'GET ']),
        via: closedOrAny(['http', 'https-intercepted', 'http-tunnelled', 'connect']),
        verdict: closedOrAny(['allow', 'deny']),
        reason: closedOrAny(DECISION_REASONS),
        ruleKind: closedOrAny(['allow', 'disallow']),
        url: text,
        clientAborted: fc.boolean(),
      })
      .map(({ entry, method, via, verdict, reason, ruleKind, url, clientAborted }) => ({
        ...entry,
        request: { ...entry.request, method, url, via: via as AccessEntry['request']['via'] },
        response: { ...entry.response, clientAborted },
        decision: {
          ...entry.decision,
          verdict: verdict as Decision['verdict'],
          reason: reason as Decision['reason'],
          rule: entry.decision.rule === null ? null : { ...entry.decision.rule, kind: ruleKind as MatchedRule['kind'] },
        },
      }));
    fc.assert(
      fc.property(anyRunEntry, anyNowMs, (entry, nowMs) => {
        const out = new LineBuffer(32);
        encodeAccessLine(out, entry, ',"pid":1', nowMs);
        const fields = JSON.stringify(toAccessLogRecord(entry)).slice(1, -1);
        const expected = `{"level":"info","time":${JSON.stringify(createIsoFormatter()(nowMs))},"pid":1,${fields},"msg":"request"}\n`;
        assert.equal(out.buf.toString('latin1', 0, out.length), Buffer.from(expected, 'utf8').toString('latin1'));
      }),
      { numRuns: 3000 },
    );
  });

  it("writes the old serializer's line for frozen identities and policy facts (encoded once, then copied), every time, for any entry", () => {
    // identifyAgent and compilePolicy freeze what a Decision shares between requests; the encoder keeps their bytes.
    fc.assert(
      fc.property(anyEntry, anyBindings, anyNowMs, (entry, bindings, nowMs) => {
        const d = entry.decision;
        const frozen = { ...entry, decision: { ...d, identity: d.identity === null ? null : Object.freeze({ ...d.identity }), ...(d.policy === undefined ? {} : { policy: Object.freeze({ ...d.policy }) }) } };
        for (let round = 0; round < 2; round++) {
          const out = new LineBuffer(64);
          encodeAccessLine(out, frozen, bindings, nowMs);
          assert.deepEqual(out.buf.subarray(0, out.length), oldLine(frozen, bindings, nowMs));
        }
      }),
      { numRuns: 1000 },
    );
    // Two frozen identities with other names, one after the other, and the top-level name changing back and forth.
    const one = Object.freeze({ name: 'one', source: 'credentials' as const, boundTokens: ['A'], claimedTokens: ['B'], isMismatch: true });
    const two = Object.freeze({ name: 'two "2"', source: 'client-range' as const, boundTokens: [], claimedTokens: [], isMismatch: false });
    const rule = Object.freeze({ rule: 'r1', action: 'pace' as const });
    for (const [identity, name] of [[one, ''], [one, 'one'], [two, 'two "2"'], [one, 'one'], [two, null], [two, '']] as const) {
      const entry = { ...makeEntry({ decision: makeDecision({ identity, policy: rule }) }), identity: name };
      const out = new LineBuffer(16);
      encodeAccessLine(out, entry, '', 1_700_000_000_000);
      assert.deepEqual(out.buf.subarray(0, out.length), oldLine(entry, '', 1_700_000_000_000));
    }
  });

  it("writes the old serializer's line for origins met again (their bytes kept from the first line), in any order, past the kept table's bound too", () => {
    const origins = [
      'http://127.0.0.1:41000', 'http://a.example', 'https://www.a-rather-long-host-name.example:8443', 'http://"quoted"\\', 'http://exämple.test',
      'http://\u0001ctl', 'http://lone\ud800', '', `http://${'x'.repeat(ACCESS_LOG_LIMITS.urlChars + 10)}`, `http://${'y'.repeat(300)}`,
    ];
    const check = (origin: string, buffer: LineBuffer): void => {
      const entry = makeEntry({ decision: makeDecision({ origin }) });
      const start = buffer.length;
      encodeAccessLine(buffer, entry, ',"pid":1', 1_700_000_000_000);
      assert.deepEqual(buffer.buf.subarray(start, buffer.length), oldLine(entry, ',"pid":1', 1_700_000_000_000), origin.slice(0, 40));
    };
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constantFrom(...origins), text), { minLength: 1, maxLength: 30 }), (sequence) => {
        const buffer = new LineBuffer(16);
        for (const origin of sequence) check(origin, buffer);
      }),
      { numRuns: 300 },
    );
    // More origins than the table keeps, then the first ones again (the table started again in between).
    const buffer = new LineBuffer(16);
    for (let round = 0; round < 2; round++) for (let i = 0; i < 1500; i += 7) check(`http://h${i}.example:${1000 + i}`, buffer);
  });

  it('writes JSON.stringify of the record toAccessLogRecord builds, caps and truncated list included, in hand-picked entries', () => {
    const long = (unit: string, n: number): string => unit.repeat(n);
    const entries: AccessEntry[] = [];
    for (const reason of DECISION_REASONS) entries.push(makeEntry({ decision: makeDecision({ reason }) }));
    entries.push(
      makeEntry({ decision: makeDecision({ rule: null, group: null, productToken: null, snapshot: null, agentTokens: [] }), productTokens: [] }),
      makeEntry({
        requestId: 'r\u0000"\\\u2028\u{1F600}\ud800',
        productTokens: Array.from({ length: 20 }, (_, i) => (i === 3 ? long('t', 200) : `bot${i}`)),
        request: {
          method: long('M', 40),
          url: `http://h/${long('\u{1F600}', 1500)}`,
          userAgent: `${long('a', 511)}\u{1F600}`,
          clientRequestId: long('é', 129),
        },
        error: long('\u0007', 300),
        decision: makeDecision({
          origin: long('o', 3000),
          path: long('p', 2047) + '\u{1F600}',
          productToken: long('x', 129),
          group: long('"', 1025),
          rule: { kind: 'disallow', pattern: long('\\', 1025), line: 1e21 },
          snapshot: makeSnapshot({ url: long('u', 1025), error: 'E\n', status: undefined, fetchedAtMs: -5, expiresAtMs: 8.64e15 + 1 }),
          detail: long('d', 2000),
          policy: { rule: 'r "1"', action: 'report' },
          wouldDeny: 'rule-disallow',
          proxyAuthenticate: 'Basic realm="x"',
          retryAfterSeconds: 0.5,
          identity: { name: 'n', source: 'credentials', boundTokens: ['a'], claimedTokens: [], isMismatch: true },
          pacing: { delayMs: 1.5, waitedMs: 2.5, queueLength: 3, identityQueueLength: 0, limit: 'max-wait', retryAfterSeconds: -0 },
          upstream: { error: 'ECONNRESET', timedOut: false },
        }),
        timings: { queueWaitMs: -0.4, upstreamMs: NaN, durationMs: Infinity, upstreamStartedAtMs: 0 },
        response: { status: -1, upstreamStatus: 2 ** 53, bytesSent: 2 ** 53 - 1, bytesReceived: 0.1, clientAborted: true },
      }),
    );
    for (const entry of entries) {
      const out = new LineBuffer(16);
      encodeAccessLine(out, entry, '', 1_700_000_000_000);
      const line = out.buf.toString('utf8', 0, out.length);
      const parsed = JSON.parse(line) as Record<string, unknown>;
      delete parsed['level'];
      delete parsed['time'];
      delete parsed['msg'];
      assert.equal(JSON.stringify(parsed), JSON.stringify(toAccessLogRecord(entry)));
      assert.deepEqual(out.buf.subarray(0, out.length), oldLine(entry, '', 1_700_000_000_000));
    }
    const cut = JSON.parse(new TextDecoder().decode((() => {
      const out = new LineBuffer(16);
      encodeAccessLine(out, entries[entries.length - 1] as AccessEntry, '', 0);
      return out.buf.subarray(0, out.length);
    })())) as { truncated: string[] };
    assert.deepEqual(cut.truncated, [
      'productTokens', 'clientRequestId', 'userAgent', 'productTokens.3', 'method', 'url', 'error',
      'decision.origin', 'decision.path', 'decision.productToken', 'decision.group', 'decision.rule.pattern', 'decision.snapshot.url', 'decision.detail',
    ]);
  });

  it("writes the old serializer's line for a snapshot shared by many entries, also after the shared object changed in place", () => {
    fc.assert(
      fc.property(anyEntry, anyEntry, fc.array(anySnapshotInfo, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 3 }), (entry, other, versions, uses) => {
        const shared: SnapshotInfo = { ...(versions[0] as SnapshotInfo) };
        const sharing: AccessEntry = { ...entry, decision: { ...entry.decision, snapshot: shared } };
        // One buffer, emptied after each line and overwritten by another entry's line in between, as a destination's batch is.
        const out = new LineBuffer(64);
        for (const version of versions) {
          Object.assign(shared, version);
          for (let i = 0; i < uses; i++) {
            out.length = 0;
            encodeAccessLine(out, sharing, '', 1_700_000_000_000);
            assert.deepEqual(out.buf.subarray(0, out.length), oldLine(sharing, '', 1_700_000_000_000));
            out.length = 0;
            encodeAccessLine(out, other, '', 1_700_000_000_000);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('lists a shared snapshot\'s cut url under truncated in every line that logs it, and not once the url is short', () => {
    const snapshot = makeSnapshot({ url: `http://h/${'u'.repeat(1100)}` });
    const truncatedOf = (entry: AccessEntry): unknown => {
      const out = new LineBuffer(64);
      encodeAccessLine(out, entry, '', 0);
      return (JSON.parse(out.buf.toString('utf8', 0, out.length)) as { truncated?: string[] }).truncated;
    };
    const first = makeEntry({ decision: makeDecision({ snapshot }) });
    const second = makeEntry({ requestId: 'other', decision: makeDecision({ snapshot, path: '/other' }) });
    assert.deepEqual(truncatedOf(first), ['decision.snapshot.url']);
    assert.deepEqual(truncatedOf(second), ['decision.snapshot.url']);
    assert.deepEqual(truncatedOf(first), ['decision.snapshot.url']);
    snapshot.url = 'http://h/robots.txt';
    assert.equal(truncatedOf(second), undefined);
  });

  it('appends after what the buffer holds, growing it, and leaves the earlier bytes alone', () => {
    const out = new LineBuffer(8);
    out.utf8('kept é\n');
    const entries = [makeEntry(), makeEntry({ requestId: 'x'.repeat(5000) }), makeEntry({ request: { userAgent: null } })];
    for (const entry of entries) encodeAccessLine(out, entry, ',"pid":1', 1_700_000_000_000);
    const expected = Buffer.concat([Buffer.from('kept é\n'), ...entries.map((entry) => oldLine(entry, ',"pid":1', 1_700_000_000_000))]);
    assert.deepEqual(out.buf.subarray(0, out.length), expected);
  });
});

describe('LineBuffer', () => {
  it('writes any string as JSON.stringify then UTF-8 would, cut where access-log caps cut', () => {
    fc.assert(
      fc.property(text, fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }), (value, maxChars) => {
        const out = new LineBuffer(4);
        const isCut = out.string(value, maxChars);
        let end = value.length;
        if (maxChars !== undefined && end > maxChars) {
          const last = value.charCodeAt(maxChars - 1);
          end = last >= 0xd800 && last <= 0xdbff ? maxChars - 1 : maxChars;
        }
        assert.equal(isCut, end < value.length);
        assert.deepEqual(out.buf.subarray(0, out.length), Buffer.from(JSON.stringify(value.slice(0, end)), 'utf8'));
      }),
      { numRuns: 5000 },
    );
  });

  it('writes any number and boolean as JSON.stringify does', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(anyNumber, fc.boolean(), fc.constant(null)), { maxLength: 20 }), (values) => {
        const out = new LineBuffer(2);
        for (const value of values) {
          if (typeof value === 'boolean') out.boolean(value);
          else out.numberOrNull(value);
          out.byte(0x2c);
        }
        assert.equal(out.buf.toString('utf8', 0, out.length), values.map((value) => `${JSON.stringify(value)},`).join(''));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('createIsoWriter', () => {
  it('writes Date#toISOString of every value of generated walks through time (new seconds, minutes, hours, days, years; back and forth)', () => {
    const start = fc.oneof(fc.integer({ min: 0, max: 253_402_300_700_000 }), fc.constantFrom(0, 59_999, 1_767_225_599_000, 951_782_399_500, 253_402_300_799_000));
    const step = fc.oneof(fc.integer({ min: 0, max: 1500 }), fc.integer({ min: -1500, max: 61_000 }), fc.constantFrom(1, 999, 1000, 59_000, 60_000, 3_600_000, 86_400_000, -1, -60_000), fc.double({ min: 0, max: 2000, noNaN: true }));
    fc.assert(
      fc.property(start, fc.array(step, { minLength: 1, maxLength: 200 }), (first, steps) => {
        const write = createIsoWriter();
        const out = new LineBuffer(1);
        let ms = first;
        for (const delta of [0, ...steps]) {
          ms += delta;
          out.length = 0;
          write(out, ms);
          const want = ms >= 0 && ms < 253_402_300_800_000 ? JSON.stringify(new Date(ms).toISOString()) : null;
          if (want !== null && out.buf.toString('latin1', 0, out.length) !== want) assert.fail(`${ms}: got ${out.buf.toString('latin1', 0, out.length)}, want ${want}`);
        }
      }),
      { seed: 20261202, numRuns: 500 },
    );
  });

  it('writes the JSON string of what the formatter writes, for any ms value, in any order', () => {
    const write = createIsoWriter();
    const format = createIsoFormatter();
    const ms = fc.oneof(fc.integer({ min: 0, max: 4_102_444_800_000 }), fc.double({ min: -1e16, max: 1e16 }), fc.constantFrom(0, 999, 253_402_300_799_999, 253_402_300_800_000, NaN, -0.5));
    // The largest double below a whole second: its second and its 999 ms, not the next second (no rounding up).
    const below = (value: number): number => {
      const bits = new Float64Array([value]);
      new BigInt64Array(bits.buffer)[0]! -= 1n;
      return bits[0]!;
    };
    const nearSecond = fc.integer({ min: 1, max: 4_102_444_800 }).map((s) => below(s * 1000));
    fc.assert(
      fc.property(nearSecond, (value) => {
        const out = new LineBuffer(1);
        write(out, value);
        assert.equal(out.buf.toString('latin1', 0, out.length), JSON.stringify(format(value)), String(value));
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.array(ms, { minLength: 1, maxLength: 20 }), (values) => {
        for (const value of values) {
          const out = new LineBuffer(1);
          write(out, value);
          assert.equal(out.buf.toString('latin1', 0, out.length), JSON.stringify(format(value)), String(value));
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe('writeAccessLog on a file (the destination serve uses)', () => {
  it("appends the old serializer's lines, in order with the logger's other lines, once flushed", () => {
    const path = join(mkdtempSync(join(tmpdir(), 'access-line-')), 'out.log');
    const logger = createLogger({ level: 'info', file: path });
    const entries = Array.from({ length: 300 }, (_, i) => makeEntry({ requestId: `id-${i}-é\u{1F600}`, request: { url: `http://h/${'x'.repeat(i * 7)}` } }));
    const expected: Buffer[] = [];
    entries.forEach((entry, i) => {
      writeAccessLog(logger, entry);
      expected.push(oldLine(entry, `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`, 0));
      if (i % 50 === 0) {
        logger.info({ n: i }, 'between');
        expected.push(Buffer.from('BETWEEN\n'));
      }
    });
    logger.flush();
    const time = /"time":"[^"]*"/;
    const lines = readFileSync(path, 'utf8').split('\n');
    const wanted = Buffer.concat(expected).toString('utf8').split('\n');
    assert.equal(lines.length, wanted.length);
    lines.forEach((line, i) => {
      const want = wanted[i] as string;
      if (want === 'BETWEEN') assert.match(line, /"msg":"between"/);
      else assert.equal(line.replace(time, '"time":"T"'), want.replace(time, '"time":"T"'));
    });
  });
});

describe('writeAccessLog with a malformed entry', () => {
  it('throws and leaves no partial line: the next line is whole', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'access-line-')), 'out.log');
    const logger = createLogger({ level: 'info', file: path });
    writeAccessLog(logger, makeEntry({ requestId: 'before' }));
    const broken = makeEntry({ decision: { ...makeDecision(), snapshot: undefined as unknown as null, identity: undefined as unknown as null } });
    assert.throws(() => writeAccessLog(logger, broken), TypeError);
    writeAccessLog(logger, makeEntry({ requestId: 'after' }));
    logger.flush();
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    assert.deepEqual(lines.map((line) => (JSON.parse(line) as { requestId: string }).requestId), ['before', 'after']);
  });
});
