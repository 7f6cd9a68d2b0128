// run-tests: in-process
/**
 * Conformance with the reference matcher's test vectors, every one of them,
 * read from test/fixtures/conformance (copies of the shared set; see its
 * README). `npm run sweep` runs the same checks over the shared originals.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  CHECKED_OTHER_KINDS,
  CONFORMANCE_FIXTURES_DIR,
  DEVIATIONS,
  MATCH_VECTORS_FILE,
  MATCH_VECTOR_COUNT,
  OTHER_VECTORS_FILE,
  assertDeviationsExist,
  assertMatchCase,
  assertOtherCase,
  readVectors,
  type MatchCase,
  type OtherCase,
} from './conformance-vectors.js';

describe(`conformance: ${MATCH_VECTORS_FILE}`, () => {
  const cases = readVectors<MatchCase>(CONFORMANCE_FIXTURES_DIR, MATCH_VECTORS_FILE);

  it(`has all ${MATCH_VECTOR_COUNT} vectors`, () => {
    assert.equal(cases.length, MATCH_VECTOR_COUNT);
  });

  for (const c of cases) {
    it(`${c.id}${DEVIATIONS[c.id] ? ' (deviation: RFC 9309)' : ''}`, () => assertMatchCase(c));
  }

  it('every deviation names a vector that exists and differs from the reference', () => {
    assertDeviationsExist(cases);
  });
});

describe(`conformance: ${OTHER_VECTORS_FILE}`, () => {
  const cases = readVectors<OtherCase>(CONFORMANCE_FIXTURES_DIR, OTHER_VECTORS_FILE);

  for (const kind of ['GetPathParamsQuery', 'MaybeEscapePattern'] as const) {
    const ofKind = cases.filter((x) => x.kind === kind);
    it(`has ${kind} vectors`, () => assert.ok(ofKind.length > 0));
    for (const c of ofKind) it(`${c.id}: ${JSON.stringify(c.input)}`, () => assertOtherCase(c));
  }

  it('checks every kind it claims to', () => {
    for (const kind of CHECKED_OTHER_KINDS) assert.ok(cases.some((c) => c.kind === kind), kind);
  });
});
