/**
 * Differential test of the indexed matcher (src/robots/rule-index.ts via
 * `matchRule`) against a slow reference written here: every rule tested in
 * turn with a position-set matcher like the reference implementation's
 * `Matches` (RFC 9309 §2.2.2, §2.2.3), longest pattern wins, allow wins a
 * tie, then the earlier line. Paths are built from the rules of every corpus
 * file (sampled) and from fast-check's random patterns and paths.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { matchRule, normalisePath, parseRobotsTxt } from '../../src/robots/index.js';
import type { Group, MergedGroup, Rule } from '../../src/robots/index.js';

const corpusDir = fileURLToPath(new URL('../../../shared/corpus/robots/', import.meta.url));

/**
 * Whether `pattern` matches `path` from its start: `*` matches any run, a `$`
 * that ends the pattern anchors it, any other char (a `$` inside included) is
 * literal. Keeps the set of path positions reachable so far (no backtracking).
 */
function referenceMatches(pattern: string, path: string): boolean {
  let positions = [0];
  for (let j = 0; j < pattern.length; j++) {
    const c = pattern[j];
    if (c === '$' && j === pattern.length - 1) return positions.includes(path.length);
    if (c === '*') {
      const from = positions[0]!;
      positions = Array.from({ length: path.length - from + 1 }, (_, k) => from + k);
    } else {
      positions = positions.filter((p) => p < path.length && path[p] === c).map((p) => p + 1);
      if (positions.length === 0) return false;
    }
  }
  return true;
}

/** The winner by a linear scan: longest matching pattern, allow on a tie, then the earlier line; empty patterns never decide. */
function referenceRule(rules: readonly Rule[], path: string): Rule | undefined {
  let best: { rule: Rule; priority: number; isAllow: boolean } | undefined;
  for (const rule of rules) {
    if (rule.pattern.length === 0) continue;
    const candidates = [rule.pattern];
    // The reference matcher's leniency: `allow: /d/index.html` also allows `/d/` (as the pattern `/d/$`).
    const slash = rule.pattern.lastIndexOf('/');
    if (rule.kind === 'allow' && slash !== -1 && rule.pattern.startsWith('/index.htm', slash)) candidates.push(rule.pattern.slice(0, slash + 1) + '$');
    for (const pattern of candidates) {
      if (!referenceMatches(pattern, path)) continue;
      // The rule's own priority (the written pattern's octets, RFC 9309 §2.2.2); the `/d/$` form counts as the reference counts it.
      const priority = pattern === rule.pattern ? rule.priority : rule.priority - (rule.pattern.length - pattern.length);
      const candidate = { rule, priority, isAllow: rule.kind === 'allow' };
      const isBetter =
        best === undefined ||
        candidate.priority > best.priority ||
        (candidate.priority === best.priority && candidate.isAllow && !best.isAllow) ||
        (candidate.priority === best.priority && candidate.isAllow === best.isAllow && rule.line < best.rule.line);
      if (isBetter) best = candidate;
    }
  }
  return best?.rule;
}

/**
 * A merged group of `rules`, written as 1 to 3 groups (by the rule count) of
 * consecutive rules: the matcher indexes each written group and compares
 * their winners, which must equal one scan over all the rules.
 */
function groupOf(rules: Rule[]): MergedGroup {
  const parts = 1 + (rules.length % 3);
  const size = Math.ceil(rules.length / parts) || 1;
  const groups: Group[] = [];
  for (let at = 0; at < rules.length || groups.length === 0; at += size) {
    groups.push({ productTokens: ['*'], rules: rules.slice(at, at + size), crawlDelaySeconds: undefined, crawlDelayByToken: new Map(), requestRate: undefined, line: at + 1 });
  }
  return { productToken: '*', groups, rules, crawlDelaySeconds: undefined, requestRate: undefined, lines: groups.map((g) => g.line) };
}

/** Deterministic PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Paths near `pattern`: wildcards filled or emptied, `$` dropped, cut short, extended, with a query. */
function pathsNear(pattern: string, rand: () => number): string[] {
  const fill = (): string => ['', 'x', 'a/b', '%E5', 'index.html', '?q=1&sid=2'][Math.floor(rand() * 6)]!;
  const body = pattern.replace(/\$$/, '').replace(/\*/g, fill);
  const base = body.startsWith('/') ? body : '/' + body;
  const cut = base.slice(0, 1 + Math.floor(rand() * base.length));
  const directory = base.replace(/index\.html?$/, '');
  return [base, base + fill(), cut, directory, base + '/' + fill(), base + '?' + fill(), pattern];
}

describe('matchRule agrees with a linear reference scan (RFC 9309 §2.2.2, §2.2.3)', () => {
  it('on paths made from the rules of every corpus file (sampled)', () => {
    const rand = prng(0x1dec);
    const files = readdirSync(corpusDir).filter((f) => f.endsWith('.txt')).sort();
    assert.ok(files.length > 1000, `corpus has ${files.length} files`);
    let decisions = 0;
    let decided = 0;
    let wildcardWins = 0;
    const differences: string[] = [];
    for (const file of files) {
      const robots = parseRobotsTxt(readFileSync(corpusDir + file));
      for (const group of robots.groupsByToken.values()) {
        if (group.rules.length === 0) continue;
        // Two or three rules per group keep the reference's rules x paths work to a few seconds.
        const sampleSize = group.rules.length > 200 ? 3 : 2;
        const paths = ['/', '/index.html', '/robots.txt'];
        for (let i = 0; i < sampleSize; i++) {
          const rule = group.rules[Math.floor(rand() * group.rules.length)]!;
          paths.push(...pathsNear(rule.pattern, rand));
        }
        for (const raw of paths) {
          const path = normalisePath(raw);
          const expected = referenceRule(group.rules, path);
          const actual = matchRule(group, path);
          decisions++;
          if (expected !== undefined) decided++;
          if (expected?.pattern.includes('*')) wildcardWins++;
          if (actual !== expected && differences.length < 10) {
            differences.push(`${file} ${group.productToken} ${path}: got ${actual?.kind} ${actual?.pattern} (line ${actual?.line}), want ${expected?.kind} ${expected?.pattern} (line ${expected?.line})`);
          }
        }
      }
    }
    assert.deepEqual(differences, []);
    // The comparison is not vacuous: most paths were decided by some rule, many by a wildcard rule.
    assert.ok(decisions > 100_000, `${decisions} decisions`);
    assert.ok(decided > decisions / 2, `${decided} of ${decisions} decided by a rule`);
    assert.ok(wildcardWins > 1000, `${wildcardWins} won by a wildcard rule`);
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
