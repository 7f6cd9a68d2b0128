/**
 * Conformance with the reference matcher's test vectors, read by path from
 * ../shared/conformance (never copied into the repo).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { evaluate, extractPathAndQuery, normaliseOctets, parseRobotsTxt } from '../../src/robots/index.js';

const conformanceDir = fileURLToPath(new URL('../../../shared/conformance/', import.meta.url));

interface MatchCase {
  id: string;
  robots: string;
  agent: string;
  url: string;
  allowed: boolean;
}

function readJsonl<T>(name: string): T[] {
  return readFileSync(conformanceDir + name, 'utf8')
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => JSON.parse(line) as T);
}

/**
 * The one skip table: vectors where this project deliberately differs from
 * the reference. Each entry gives the verdict we give and why.
 */
const DEVIATIONS: Record<string, { allowed: boolean; reason: string }> = {
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

describe('conformance: google-robotstxt.jsonl', () => {
  const cases = readJsonl<MatchCase>('google-robotstxt.jsonl');

  it('has all 145 vectors', () => {
    assert.equal(cases.length, 145);
  });

  for (const c of cases) {
    const deviation = DEVIATIONS[c.id];
    const expected = deviation ? deviation.allowed : c.allowed;
    it(`${c.id}${deviation ? ' (deviation: RFC 9309)' : ''}`, () => {
      const robots = parseRobotsTxt(c.robots);
      const result = evaluate(robots, [c.agent], extractPathAndQuery(c.url));
      assert.equal(result.allowed, expected, `expected ${expected ? 'allowed' : 'disallowed'} for ${c.url}`);
    });
  }

  it('every deviation names a vector that exists and differs from the reference', () => {
    for (const id of Object.keys(DEVIATIONS)) {
      const c = cases.find((x) => x.id === id);
      assert.ok(c, `${id} is in the skip table but not in the vectors`);
      assert.notEqual(c.allowed, DEVIATIONS[id]!.allowed);
    }
  });
});

interface OtherCase {
  id: string;
  kind: string;
  input?: string;
  expected: unknown;
}

describe('conformance: google-robotstxt-other.jsonl', () => {
  const cases = readJsonl<OtherCase>('google-robotstxt-other.jsonl');

  for (const c of cases.filter((x) => x.kind === 'GetPathParamsQuery')) {
    it(`${c.id}: ${JSON.stringify(c.input)}`, () => {
      assert.equal(extractPathAndQuery(c.input ?? ''), c.expected);
    });
  }

  for (const c of cases.filter((x) => x.kind === 'MaybeEscapePattern')) {
    it(`${c.id}: ${JSON.stringify(c.input)}`, () => {
      const octets = Buffer.from(c.input ?? '', 'utf8').toString('latin1');
      assert.equal(normaliseOctets(octets), c.expected);
    });
  }
});
