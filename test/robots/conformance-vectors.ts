/**
 * The reference matcher's test vectors (github.com/google/robotstxt @ 22b355f,
 * Apache-2.0; see test/fixtures/conformance/README.md) and the project's one
 * skip table. Read by the tests from test/fixtures/conformance/ and by
 * `npm run sweep` from the shared conformance directory.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { evaluate, extractPathAndQuery, isValidProductToken, normaliseOctets, parseRobotsTxt } from '../../src/robots/index.js';

/** The copies kept in the repository. */
export const CONFORMANCE_FIXTURES_DIR = fileURLToPath(new URL('../fixtures/conformance/', import.meta.url));

/** Allowed/disallowed vectors. */
export const MATCH_VECTORS_FILE = 'google-robotstxt.jsonl';
/** Token, URL-path, pattern and parse-report vectors. */
export const OTHER_VECTORS_FILE = 'google-robotstxt-other.jsonl';

/** One allowed/disallowed vector. */
export interface MatchCase {
  id: string;
  robots: string;
  agent: string;
  url: string;
  allowed: boolean;
}

/** One vector of another shape; `kind` names the reference function it tests. */
export interface OtherCase {
  id: string;
  kind: string;
  input?: string;
  expected: unknown;
}

/** Reads a JSON-lines file of `dir`. Throws when it is missing or a line is not JSON. */
export function readVectors<T>(dir: string, file: string): T[] {
  return readFileSync(join(dir, file), 'utf8')
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => JSON.parse(line) as T);
}

/**
 * The one skip table: vectors where this project deliberately differs from
 * the reference. Each entry gives the verdict we give and why.
 */
export const DEVIATIONS: Record<string, { allowed: boolean; reason: string }> = {
  'ID_Encoding#3': {
    allowed: true,
    reason: 'RFC 9309 §2.2.2: raw non-ASCII in the URL is percent-encoded as UTF-8 before matching, so /foo/bar/ツ matches the allow rule; the reference compares raw bytes with the encoded pattern',
  },
  'ID_Encoding#5': {
    allowed: true,
    reason: 'RFC 9309 §2.2.2: the URL /foo/bar/ツ is encoded to /foo/bar/%E3%83%84 before matching, which equals the allow pattern',
  },
  'ID_Encoding#6': {
    allowed: true,
    reason: 'RFC 9309 §2.2.2: %62%61%7A encodes unreserved octets, which are decoded on both sides, so the pattern is /foo/bar/baz; the reference keeps them encoded',
  },
};

/** The number of allowed/disallowed vectors in the set. */
export const MATCH_VECTOR_COUNT = 145;

/** The verdict this project must give for `c`: the reference's, unless the skip table says otherwise. */
export function expectedVerdict(c: MatchCase): boolean {
  return DEVIATIONS[c.id]?.allowed ?? c.allowed;
}

/** Asserts the engine's verdict on one allowed/disallowed vector. */
export function assertMatchCase(c: MatchCase): void {
  const expected = expectedVerdict(c);
  const result = evaluate(parseRobotsTxt(c.robots), [c.agent], extractPathAndQuery(c.url));
  assert.equal(result.allowed, expected, `${c.id}: expected ${expected ? 'allowed' : 'disallowed'} for ${c.url}`);
}

/** Asserts that every skip-table entry names a vector that exists and differs from the reference. */
export function assertDeviationsExist(cases: readonly MatchCase[]): void {
  for (const [id, deviation] of Object.entries(DEVIATIONS)) {
    const c = cases.find((x) => x.id === id);
    assert.ok(c, `${id} is in the skip table but not in the vectors`);
    assert.notEqual(c.allowed, deviation.allowed, `${id} is in the skip table but agrees with the reference`);
  }
}

/** The kinds of {@link OtherCase} that {@link assertOtherCase} checks. */
export const CHECKED_OTHER_KINDS = ['GetPathParamsQuery', 'MaybeEscapePattern', 'IsValidUserAgentToObey'] as const;

/** Asserts one vector of a kind in {@link CHECKED_OTHER_KINDS}; throws for any other kind. */
export function assertOtherCase(c: OtherCase): void {
  const input = c.input ?? '';
  switch (c.kind) {
    case 'GetPathParamsQuery':
      return assert.equal(extractPathAndQuery(input), c.expected, c.id);
    case 'MaybeEscapePattern':
      return assert.equal(normaliseOctets(Buffer.from(input, 'utf8').toString('latin1')), c.expected, c.id);
    case 'IsValidUserAgentToObey':
      return assert.equal(isValidProductToken(input), c.expected, c.id);
    default:
      throw new Error(`${c.id}: vectors of kind ${c.kind} are not checked`);
  }
}
