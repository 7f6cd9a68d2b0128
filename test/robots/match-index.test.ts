// run-tests: in-process
/**
 * Differential test of the indexed matcher (src/robots/rule-index.ts via
 * `matchRule`) against the slow linear reference in ./reference-matcher.ts.
 * Paths are built from the rules of every curated real file in
 * test/fixtures/robots (`npm run sweep` does the same over the whole shared
 * corpus) and from fast-check's random patterns and paths.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { matchRule } from '../../src/robots/index.js';
import type { Rule } from '../../src/robots/index.js';
import { ROBOTS_FIXTURES_DIR, robotsFilesIn } from './corpus-checks.js';
import { compareWithReference, groupOf, prng, referenceMatches, referenceRule } from './reference-matcher.js';

/** Floors that keep the fixture comparison from going vacuous (the 76 files give ~46,000 decisions, ~1,000 won by a wildcard). */
const DECISIONS_MIN = 30_000;
const WILDCARD_WINS_MIN = 500;

describe('matchRule agrees with a linear reference scan (RFC 9309 §2.2.2, §2.2.3)', () => {
  it('on paths made from the rules of every curated real file (sampled)', () => {
    const files = robotsFilesIn(ROBOTS_FIXTURES_DIR);
    assert.ok(files.length >= 40, `fixtures have ${files.length} files`);
    const { decisions, decided, wildcardWins, differences } = compareWithReference(ROBOTS_FIXTURES_DIR, files);
    assert.deepEqual(differences, []);
    // The comparison is not vacuous: most paths were decided by some rule, many by a wildcard rule.
    assert.ok(decisions > DECISIONS_MIN, `${decisions} decisions`);
    assert.ok(decided > decisions / 2, `${decided} of ${decisions} decided by a rule`);
    assert.ok(wildcardWins > WILDCARD_WINS_MIN, `${wildcardWins} won by a wildcard rule`);
  });

  it('on random patterns and paths (fast-check)', () => {
    const piece = fc.constantFrom('a', 'b', 'ab', '/', '*', '$', '%2F', '?', '=', 'index.html', 'index.htm');
    const pattern = fc.oneof(
      fc.array(piece, { maxLength: 7 }).map((parts) => '/' + parts.join('')),
      fc.array(piece, { maxLength: 5 }).map((parts) => parts.join('')), // not starting with `/`, or empty
    );
    const rule = fc.record({ kind: fc.constantFrom<Rule['kind']>('allow', 'disallow'), pattern });
    const path = fc.array(fc.constantFrom('a', 'b', '/', '$', '*', '%2F', '?', '=', 'index.html'), { maxLength: 12 }).map((parts) => '/' + parts.join(''));
    fc.assert(
      fc.property(fc.array(rule, { minLength: 1, maxLength: 12 }), fc.array(path, { minLength: 1, maxLength: 8 }), (specs, paths) => {
        const rules = specs.map((spec, i) => ({ ...spec, priority: spec.pattern.length, line: i + 2 }));
        const group = groupOf(rules);
        for (const p of paths) assert.equal(matchRule(group, p), referenceRule(rules, p), `path ${p}`);
      }),
      { numRuns: 3000 },
    );
  });

  it('on a tiny alphabet, where segments overlap and anchors bite (fast-check)', () => {
    const pattern = fc.array(fc.constantFrom('a', 'b', '*', '$'), { maxLength: 6 }).map((parts) => '/' + parts.join(''));
    const rule = fc.record({ kind: fc.constantFrom<Rule['kind']>('allow', 'disallow'), pattern });
    const path = fc.array(fc.constantFrom('a', 'b'), { maxLength: 6 }).map((parts) => '/' + parts.join(''));
    fc.assert(
      fc.property(fc.array(rule, { minLength: 1, maxLength: 6 }), fc.array(path, { minLength: 1, maxLength: 8 }), (specs, paths) => {
        const rules = specs.map((spec, i) => ({ ...spec, priority: spec.pattern.length, line: i + 2 }));
        const group = groupOf(rules);
        for (const p of paths) assert.equal(matchRule(group, p), referenceRule(rules, p), `path ${p}`);
      }),
      { numRuns: 3000 },
    );
  });

  it('on many rules sharing prefixes and wildcard runs at one node', () => {
    const rand = prng(7);
    const alphabet = ['a', 'b', '/', '*', '%E5', '%E6', '&id=', '.pdf', '$'];
    const rules: Rule[] = Array.from({ length: 400 }, (_, i) => {
      let pattern = '/';
      const n = 1 + Math.floor(rand() * 6);
      for (let k = 0; k < n; k++) pattern += alphabet[Math.floor(rand() * alphabet.length)];
      return { kind: rand() < 0.5 ? 'allow' : 'disallow', pattern, priority: pattern.length, line: i + 2 };
    });
    const group = groupOf(rules);
    let decided = 0;
    for (let i = 0; i < 3000; i++) {
      let p = '/';
      const n = Math.floor(rand() * 8);
      for (let k = 0; k < n; k++) p += ['a', 'b', '/', '%E5', '%E6', '&id=', '.pdf', 'x'][Math.floor(rand() * 8)];
      const expected = referenceRule(rules, p);
      if (expected !== undefined) decided++;
      assert.equal(matchRule(group, p), expected, p);
    }
    assert.ok(decided > 1000, `${decided} decided`);
  });

  it('on paths longer than 256 chars, where the char pre-check is skipped', () => {
    const rand = prng(11);
    const pieces = ['a', 'b', '/', '*', '%E5', '&id=', '.pdf', '$'];
    const rules: Rule[] = Array.from({ length: 60 }, (_, i) => {
      let pattern = '/';
      for (let k = 0, n = 1 + Math.floor(rand() * 5); k < n; k++) pattern += pieces[Math.floor(rand() * pieces.length)];
      return { kind: rand() < 0.5 ? 'allow' : 'disallow', pattern, priority: pattern.length, line: i + 2 };
    });
    const group = groupOf(rules);
    let decided = 0;
    for (let i = 0; i < 200; i++) {
      let p = '/';
      while (p.length <= 256) p += ['a', 'b', '/', '%E5', '&id=', '.pdf', 'xyz'][Math.floor(rand() * 7)];
      const expected = referenceRule(rules, p);
      if (expected !== undefined) decided++;
      assert.equal(matchRule(group, p), expected, p);
    }
    assert.ok(decided > 50, `${decided} decided`);
  });

  it('the reference itself follows RFC 9309 on known cases', () => {
    assert.equal(referenceMatches('/a*b$', '/axxb'), true);
    assert.equal(referenceMatches('/a*b$', '/axxbc'), false);
    assert.equal(referenceMatches('/a$b', '/a$b/c'), true, '$ inside is literal');
    assert.equal(referenceMatches('/*.pdf$', '/x.pdf'), true);
    assert.equal(referenceMatches('/fish*', '/fish.html'), true);
    assert.equal(referenceMatches('/fish/', '/fish'), false);
    const rules: Rule[] = [
      { kind: 'disallow', pattern: '/page', priority: 5, line: 2 },
      { kind: 'allow', pattern: '/page', priority: 5, line: 3 },
      { kind: 'allow', pattern: '/d/index.html', priority: 13, line: 4 },
      { kind: 'disallow', pattern: '/d/', priority: 3, line: 5 },
    ];
    assert.equal(referenceRule(rules, '/page')?.line, 3, 'allow wins a tie');
    assert.equal(referenceRule(rules, '/d/')?.line, 4, 'index.html allows its directory');
    assert.equal(referenceRule(rules, '/d/x')?.line, 5);
  });
});
