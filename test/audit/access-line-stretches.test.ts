// run-tests: in-process
/**
 * Differential tests of the access line's cached stretches (src/audit/access-line.ts, line-stretch.ts):
 * the encoder copies the bytes of a stretch of the last line when the new entry's values are the same,
 * so every line of a sequence (an entry, another sharing some of its values and not others, the first
 * again, the first with an array or an object changed in place, ...) must still be the reference's line,
 * `JSON.stringify(toAccessLogRecord(entry))` between pino's head and `msg`, byte for byte. The sequences
 * are generated (fast-check, a fixed seed) from the awkward values of access-line-arbitraries.ts: cut
 * values, NaN and ±Infinity, lone surrogates, absent and null fields.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fc from 'fast-check';
import { encodeAccessLine } from '../../src/audit/access-line.js';
import { ConstantBytes, LONG_CONSTANT_BYTES, LineBuffer } from '../../src/audit/line-buffer.js';
import { ACCESS_LOG_LIMITS as L, toAccessLogRecord } from '../../src/audit/access-log.js';
import { createIsoFormatter } from '../../src/audit/iso-time.js';
import type { AccessEntry } from '../../src/audit/access-entry.js';
import type { Decision, MatchedRule, PacingFacts, SnapshotInfo, UpstreamFacts } from '../../src/policy/decision.js';
import { anyEntry, anyNumber, anyUnit, text } from './access-line-arbitraries.js';
import { makeDecision, makeEntry } from './factories.js';

const NOW_MS = 1_700_000_000_123;
const BINDINGS = ',"pid":1,"hostname":"vm"';
const iso = createIsoFormatter();

/** The reference line of `entry`, as UTF-8 (read now: the entry may be changed in place later). */
function referenceLine(entry: AccessEntry): Buffer {
  const fields = JSON.stringify(toAccessLogRecord(entry)).slice(1, -1);
  return Buffer.from(`{"level":"info","time":${JSON.stringify(iso(NOW_MS))}${BINDINGS},${fields},"msg":"request"}\n`, 'utf8');
}

/**
 * Encodes `entry` into `out` (after what it holds, or from its start when `fromStart`) and checks the line is
 * the reference's, byte for byte.
 */
function assertLine(out: LineBuffer, entry: AccessEntry, fromStart: boolean, what: string): void {
  if (fromStart) out.length = 0;
  const start = out.length;
  encodeAccessLine(out, entry, BINDINGS, NOW_MS);
  const got = out.buf.subarray(start, out.length);
  const want = referenceLine(entry);
  if (!got.equals(want)) assert.fail(`${what}\n got: ${got.toString('utf8')}\nwant: ${want.toString('utf8')}`);
}

/** A string equal to `value` but another string object (the proxy's values are new strings on every request). */
const copyOf = (value: string): string => (value.length === 0 ? value : `${value.slice(0, 1)}${value.slice(1)}`);

/** Every value a stretch depends on (and the per-request values between them), by name: the value of `b` put into a copy of `a`. */
const FIELDS: Record<string, (a: AccessEntry, b: AccessEntry) => AccessEntry> = {
  requestId: (a, b) => ({ ...a, requestId: b.requestId }),
  address: (a, b) => ({ ...a, client: { ...a.client, address: b.client.address } }),
  port: (a, b) => ({ ...a, client: { ...a.client, port: b.client.port } }),
  identity: (a, b) => {
    const { identity: _dropped, ...rest } = a;
    return 'identity' in b ? { ...rest, identity: b.identity } : rest;
  },
  userAgent: (a, b) => ({ ...a, request: { ...a.request, userAgent: b.request.userAgent } }),
  productTokens: (a, b) => ({ ...a, productTokens: b.productTokens }),
  method: (a, b) => ({ ...a, request: { ...a.request, method: b.request.method } }),
  url: (a, b) => ({ ...a, request: { ...a.request, url: b.request.url } }),
  via: (a, b) => ({ ...a, request: { ...a.request, via: b.request.via } }),
  status: (a, b) => ({ ...a, response: { ...a.response, status: b.response.status } }),
  upstreamStatus: (a, b) => ({ ...a, response: { ...a.response, upstreamStatus: b.response.upstreamStatus } }),
  bytesSent: (a, b) => ({ ...a, response: { ...a.response, bytesSent: b.response.bytesSent } }),
  bytesReceived: (a, b) => ({ ...a, response: { ...a.response, bytesReceived: b.response.bytesReceived } }),
  clientAborted: (a, b) => ({ ...a, response: { ...a.response, clientAborted: b.response.clientAborted } }),
  queueWaitMs: (a, b) => ({ ...a, timings: { ...a.timings, queueWaitMs: b.timings.queueWaitMs } }),
  upstreamMs: (a, b) => ({ ...a, timings: { ...a.timings, upstreamMs: b.timings.upstreamMs } }),
  error: (a, b) => ({ ...a, error: b.error }),
  verdict: (a, b) => decisionWith(a, { verdict: b.decision.verdict }),
  reason: (a, b) => decisionWith(a, { reason: b.decision.reason }),
  origin: (a, b) => decisionWith(a, { origin: b.decision.origin }),
  path: (a, b) => decisionWith(a, { path: b.decision.path }),
  productToken: (a, b) => decisionWith(a, { productToken: b.decision.productToken }),
  agentTokens: (a, b) => decisionWith(a, { agentTokens: b.decision.agentTokens }),
  group: (a, b) => decisionWith(a, { group: b.decision.group }),
  rule: (a, b) => decisionWith(a, { rule: b.decision.rule }),
  crawlDelaySeconds: (a, b) => decisionWith(a, { crawlDelaySeconds: b.decision.crawlDelaySeconds }),
  snapshot: (a, b) => decisionWith(a, { snapshot: b.decision.snapshot }),
  wouldDeny: (a, b) => decisionWith(a, { wouldDeny: b.decision.wouldDeny }),
  detail: (a, b) => decisionWith(a, { detail: b.decision.detail }),
  proxyAuthenticate: (a, b) => decisionWith(a, { proxyAuthenticate: b.decision.proxyAuthenticate }),
  retryAfterSeconds: (a, b) => decisionWith(a, { retryAfterSeconds: b.decision.retryAfterSeconds }),
  pacing: (a, b) => decisionWith(a, { pacing: b.decision.pacing }),
  upstream: (a, b) => decisionWith(a, { upstream: b.decision.upstream }),
};
const FIELD_NAMES = Object.keys(FIELDS);

/** A copy of `entry` with some decision fields replaced (an absent field stays absent when its value is undefined). */
function decisionWith(entry: AccessEntry, fields: Partial<Decision>): AccessEntry {
  const decision: Record<string, unknown> = { ...entry.decision };
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) delete decision[name];
    else decision[name] = value;
  }
  return { ...entry, decision: decision as unknown as Decision };
}

/** A copy of `entry` with every string and array of the stretches' values a new object with the same content (must give the same line). */
function sameValuesNewObjects(entry: AccessEntry): AccessEntry {
  const d = entry.decision;
  return {
    ...entry,
    client: { ...entry.client, address: copyOf(entry.client.address) },
    request: { ...entry.request, userAgent: entry.request.userAgent === null ? null : copyOf(entry.request.userAgent), method: copyOf(entry.request.method) },
    productTokens: entry.productTokens.map(copyOf),
    decision: {
      ...d,
      agentTokens: d.agentTokens.map(copyOf),
      group: d.group === null ? null : copyOf(d.group),
      rule: d.rule === null ? null : { ...d.rule, pattern: copyOf(d.rule.pattern) },
      ...(d.pacing === undefined ? {} : { pacing: { ...d.pacing } }),
      ...(d.upstream === undefined ? {} : { upstream: { ...d.upstream } }),
      ...(d.detail === undefined ? {} : { detail: copyOf(d.detail) }),
    },
  };
}

/**
 * Sets a key the object has (a key added would come last in the reference's JSON.stringify, where the encoder writes
 * the facts' keys in their declared order: the same JSON value, other bytes; access-line.test.ts covers that).
 */
function setIfPresent<T extends object>(facts: T | undefined, key: keyof T, value: unknown): void {
  if (facts !== undefined && key in facts) (facts as Record<keyof T, unknown>)[key] = value;
}

/** Changes of an entry's arrays and nested objects in place, as a caller that reuses them would make. */
type InPlace = (entry: AccessEntry, value: string, n: number, other: AccessEntry) => void;
const IN_PLACE: Record<string, InPlace> = {
  productTokenSet: (e, value, _n, o) => void ((e.productTokens as string[])[0] = o.productTokens[0] ?? value),
  productTokenPush: (e, value) => void (e.productTokens as string[]).push(value),
  productTokenPop: (e) => void (e.productTokens as string[]).pop(),
  agentTokenSet: (e, value, _n, o) => void ((e.decision.agentTokens as string[])[0] = o.decision.agentTokens[0] ?? value),
  agentTokenPush: (e, value) => void (e.decision.agentTokens as string[]).push(value),
  agentTokenPop: (e) => void (e.decision.agentTokens as string[]).pop(),
  rulePattern: (e, value) => void (e.decision.rule !== null && ((e.decision.rule as MatchedRule).pattern = value)),
  ruleLine: (e, _value, n) => void (e.decision.rule !== null && ((e.decision.rule as MatchedRule).line = n)),
  ruleKind: (e) => void (e.decision.rule !== null && ((e.decision.rule as MatchedRule).kind = e.decision.rule.kind === 'allow' ? 'disallow' : 'allow')),
  pacingWaited: (e, _value, n) => setIfPresent(e.decision.pacing, 'waitedMs', n),
  pacingDelay: (e, _value, n) => setIfPresent(e.decision.pacing, 'delayMs', n),
  pacingQueue: (e, _value, n) => setIfPresent(e.decision.pacing, 'queueLength', n),
  upstreamStatus: (e, _value, n) => setIfPresent(e.decision.upstream, 'status', n),
  upstreamError: (e, value) => setIfPresent(e.decision.upstream, 'error', value),
  responseBytes: (e, _value, n) => void ((e.response as { bytesSent: number }).bytesSent = n),
  responseStatus: (e, _value, n) => void ((e.response as { status: number }).status = n),
  timingsQueue: (e, _value, n) => void ((e.timings as { queueWaitMs: number | null }).queueWaitMs = n),
  userAgent: (e, value) => void ((e.request as { userAgent: string | null }).userAgent = value),
  address: (e, value) => void ((e.client as { address: string }).address = value),
  error: (e, value) => void ((e as { error: string | null }).error = value),
  // A snapshot not frozen may change in place (its cached bytes are then stale); a frozen one cannot (copied without a look).
  snapshotExpires: (e, _value, n) => setIfThawed(e.decision.snapshot, 'expiresAtMs', n),
  snapshotUrl: (e, value) => setIfThawed(e.decision.snapshot, 'url', value),
  snapshotState: (e) => setIfThawed(e.decision.snapshot, 'state', e.decision.snapshot?.state === 'ok' ? 'unreachable' : 'ok'),
  snapshotFreeze: (e) => void (e.decision.snapshot !== null && Object.freeze(e.decision.snapshot)),
  snapshotFrozenCopy: (e, _value, _n, o) => void ((e.decision as { snapshot: SnapshotInfo | null }).snapshot = o.decision.snapshot === null ? null : Object.freeze({ ...o.decision.snapshot })),
};

/** Sets a field of a snapshot that is not frozen (a frozen one, as the robots cache makes them, never changes). */
function setIfThawed(snapshot: SnapshotInfo | null, key: keyof SnapshotInfo, value: unknown): void {
  if (snapshot !== null && !Object.isFrozen(snapshot)) (snapshot as unknown as Record<string, unknown>)[key] = value;
}

/** Values at a cap, by the field that caps them: a copy of the entry with `value` (its length around the cap) put in. */
const LONG: Record<string, [cap: number, put: (entry: AccessEntry, value: string) => AccessEntry]> = {
  userAgent: [L.userAgentChars, (e, value) => ({ ...e, request: { ...e.request, userAgent: value } })],
  method: [L.methodChars, (e, value) => ({ ...e, request: { ...e.request, method: value } })],
  productTokenItem: [L.productTokenChars, (e, value) => ({ ...e, productTokens: [...e.productTokens.slice(0, 2), value, ...e.productTokens.slice(3)] })],
  productTokenCount: [L.productTokens, (e, value) => ({ ...e, productTokens: Array.from({ length: value.length }, (_, i) => `t${i}`) })],
  error: [L.errorChars, (e, value) => ({ ...e, error: value })],
  productToken: [L.productTokenChars, (e, value) => decisionWith(e, { productToken: value })],
  group: [L.otherChars, (e, value) => decisionWith(e, { group: value })],
  rulePattern: [L.otherChars, (e, value) => decisionWith(e, { rule: { kind: 'allow', pattern: value, line: 1 } })],
  detail: [L.otherChars, (e, value) => decisionWith(e, { detail: value })],
};

type Step =
  | { kind: 'again'; i: number; fromStart: boolean }
  | { kind: 'mix'; i: number; j: number; take: boolean[]; fromStart: boolean; keep: boolean }
  | { kind: 'copies'; i: number; fromStart: boolean }
  | { kind: 'inPlace'; i: number; j: number; change: string; value: string; n: number; fromStart: boolean }
  | { kind: 'long'; i: number; field: string; over: number; unit: string; fromStart: boolean };

const ENTRIES = 3;
const index = fc.nat(ENTRIES - 1);
const anyStep: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('again' as const), i: index, fromStart: fc.boolean() }),
  fc.record({
    kind: fc.constant('mix' as const), i: index, j: index,
    // Each field from the other entry one time in six: mostly one entry with a few of the other's values.
    take: fc.array(fc.nat(5).map((n) => n === 0), { minLength: FIELD_NAMES.length, maxLength: FIELD_NAMES.length }), fromStart: fc.boolean(), keep: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('long' as const), i: index, field: fc.constantFrom(...Object.keys(LONG)), over: fc.constantFrom(-1, 0, 1, 2),
    unit: fc.constantFrom('x', 'é', '\u{1F600}', '"', '\ud800'), fromStart: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('copies' as const), i: index, fromStart: fc.boolean() }),
  fc.record({
    kind: fc.constant('inPlace' as const), i: index, j: index, change: fc.constantFrom(...Object.keys(IN_PLACE)),
    value: text, n: fc.oneof(anyNumber, fc.constantFrom(0, 0.4, 0.5, -0.4, 1, 200)), fromStart: fc.boolean(),
  }),
);

describe('encodeAccessLine with cached stretches', () => {
  it('writes the reference line, byte for byte, at every step of generated sequences of entries sharing some values', () => {
    fc.assert(
      fc.property(fc.array(anyEntry, { minLength: ENTRIES, maxLength: ENTRIES }), fc.array(anyStep, { minLength: 1, maxLength: 40 }), (initial, steps) => {
        const entries = [...initial];
        const out = new LineBuffer(64);
        // Each entry once, then the steps: the same entry again, a mix of two, the same values in new objects, a change in place.
        entries.forEach((entry, i) => assertLine(out, entry, true, `entry ${i}`));
        steps.forEach((step, n) => {
          const what = `step ${n} ${JSON.stringify(step)}`;
          const a = entries[step.i] as AccessEntry;
          if (step.kind === 'again') assertLine(out, a, step.fromStart, what);
          else if (step.kind === 'copies') assertLine(out, sameValuesNewObjects(a), step.fromStart, what);
          else if (step.kind === 'mix') {
            const b = entries[step.j] as AccessEntry;
            let mixed = a;
            FIELD_NAMES.forEach((name, k) => {
              if (step.take[k] === true) mixed = (FIELDS[name] as (a: AccessEntry, b: AccessEntry) => AccessEntry)(mixed, b);
            });
            assertLine(out, mixed, step.fromStart, what);
            if (step.keep) entries[step.i] = mixed;
          } else if (step.kind === 'long') {
            // A value cut to its cap (or just not), kept: the steps after copy its stretch, cut names included.
            const [cap, put] = LONG[step.field] as [number, (entry: AccessEntry, value: string) => AccessEntry];
            const value = step.unit.repeat(cap + step.over).slice(0, cap + step.over);
            entries[step.i] = put(a, value);
            assertLine(out, entries[step.i] as AccessEntry, step.fromStart, what);
          } else {
            (IN_PLACE[step.change] as InPlace)(a, step.value, step.n, entries[step.j] as AccessEntry);
            assertLine(out, a, step.fromStart, what);
          }
          if (out.length > 1 << 20) out.length = 0;
        });
      }),
      // No shrinking (minutes for 40-step sequences): the message names the first wrong step and both lines.
      { seed: 20261202, numRuns: 400, endOnFailure: true },
    );
  });

  it('writes A, B (some values shared), A, A with its token arrays and rule changed in place, A with cut values, byte for byte', () => {
    const out = new LineBuffer(16);
    const a = makeEntry({
      productTokens: ['gptbot', 'other'],
      decision: makeDecision({ pacing: { delayMs: 1000, waitedMs: 0.4 }, upstream: { status: 200 }, agentTokens: ['gptbot'] }),
    });
    const b = makeEntry({
      requestId: 'b',
      client: { address: '10.0.0.2', port: 1 },
      request: { userAgent: 'OtherBot/1' },
      response: { bytesSent: 251 },
      decision: makeDecision({ group: '*', pacing: { delayMs: 1000, waitedMs: 0.6 }, upstream: { status: 200 }, agentTokens: ['gptbot'] }),
    });
    assertLine(out, a, true, 'A');
    assertLine(out, b, true, 'B');
    assertLine(out, a, false, 'A again');
    assertLine(out, a, false, 'A a third time (every stretch copied)');
    (a.productTokens as string[])[1] = 'changed';
    assertLine(out, a, true, 'A, a product token changed in place');
    (a.productTokens as string[]).push('third');
    assertLine(out, a, true, 'A, a product token pushed');
    (a.decision.agentTokens as string[])[0] = 'other';
    assertLine(out, a, true, 'A, an agent token changed in place');
    (a.decision.rule as MatchedRule).pattern = '/other/';
    assertLine(out, a, true, 'A, its rule changed in place');
    (a.decision.pacing as PacingFacts).waitedMs = 0.49; // still 0 ms: the same bytes
    assertLine(out, a, true, 'A, waited 0.49 ms');
    (a.decision.pacing as PacingFacts).waitedMs = 0.5;
    assertLine(out, a, true, 'A, waited 0.5 ms (1 when rounded)');
    (a.decision.pacing as PacingFacts).waitedMs = NaN;
    assertLine(out, a, true, 'A, waited NaN ms');
    assertLine(out, a, true, 'A, waited NaN ms again');
    const cut = { ...a, request: { ...a.request, userAgent: `${'u'.repeat(600)}\ud800`, method: 'M'.repeat(40) }, productTokens: Array.from({ length: 25 }, (_, i) => (i === 2 ? 't'.repeat(200) : `bot${i}`)) };
    assertLine(out, cut, true, 'A with cut values');
    assertLine(out, cut, true, 'A with cut values again (the cut names listed again)');
    (cut.productTokens as string[])[24] = 'past the cap';
    assertLine(out, cut, true, 'A with a token past the cap changed');
    assertLine(out, { ...cut, decision: decisionWith(cut, { pacing: undefined, upstream: undefined, detail: 'd', wouldDeny: 'rule-disallow' }).decision }, true, 'absent pacing and upstream');
    assertLine(out, { ...cut, decision: decisionWith(cut, { pacing: undefined, upstream: {} }).decision }, true, 'an empty upstream');
    assertLine(out, { ...cut, decision: decisionWith(cut, { pacing: { delayMs: Infinity, waitedMs: -Infinity } }).decision }, true, '±Infinity');
    assertLine(out, { ...a, identity: undefined }, true, 'identity undefined');
    assertLine(out, { ...a, identity: null }, true, 'identity null');
    assertLine(out, { ...a, identity: 'team' }, true, 'identity named');
  });
});

describe('LineBuffer constants and captured stretches, words up to LONG_CONSTANT_BYTES and one set past it', () => {
  it('appends a constant, and a stretch captured into a reused target, as their UTF-8 bytes after any content', () => {
    const anyText = fc.oneof(fc.string({ unit: anyUnit, maxLength: 2 * LONG_CONSTANT_BYTES }), fc.string({ unit: 'grapheme', maxLength: 3 * LONG_CONSTANT_BYTES }));
    fc.assert(
      fc.property(fc.array(fc.tuple(anyText, fc.nat(9)), { minLength: 1, maxLength: 8 }), (steps) => {
        const out = new LineBuffer(4);
        const target = new ConstantBytes('');
        for (const [value, before] of steps) {
          const want = Buffer.from(value, 'utf8');
          out.length = 0;
          for (let i = 0; i < before; i++) out.byte(0x2e);
          out.constant(new ConstantBytes(value));
          assert.deepEqual(out.buf.subarray(before, out.length), want, `constant of ${want.length} bytes after ${before}`);
          // The same bytes written raw, captured into the one target (grown, shrunk, across the threshold), then copied twice.
          const start = out.length;
          out.utf8(value);
          out.capture(target, start);
          assert.equal(target.byteLength, want.length);
          out.byte(0x7c);
          out.constant(target);
          out.constant(target);
          assert.deepEqual(out.buf.subarray(start, out.length), Buffer.concat([want, Buffer.from('|'), want, want]), `stretch of ${want.length} bytes captured at ${start}`);
        }
      }),
      { seed: 20261202, numRuns: 300 },
    );
  });
});

describe('LineBuffer.number from its digit tables', () => {
  it('writes every integer below 1,100,000 (one table word, two, then divisions), and the edges, as JSON.stringify does', () => {
    const out = new LineBuffer(4);
    const check = (value: number): void => {
      out.length = 0;
      out.byte(0x2c);
      out.number(value);
      out.byte(0x2c);
      const got = out.buf.toString('latin1', 0, out.length);
      if (got !== `,${JSON.stringify(value)},`) assert.fail(`${value}: got ${got}`);
    };
    for (let value = 0; value < 1_100_000; value++) check(value);
    for (const value of [-0, -1, 0.5, 999.5, 999_999.9, 2 ** 31 - 1, 2 ** 31, 1_764_547_200_000, Number.MAX_SAFE_INTEGER, NaN, Infinity]) check(value);
  });
});
