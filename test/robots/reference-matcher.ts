/**
 * A slow reference for the indexed matcher (src/robots/rule-index.ts via
 * `matchRule`): every rule tested in turn with a position-set matcher like the
 * reference implementation's `Matches` (RFC 9309 §2.2.2, §2.2.3), longest
 * pattern wins, allow wins a tie, then the earlier line. Used by
 * test/robots/match-index.test.ts and by `npm run sweep` (over every corpus file).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { matchRule, normalisePath, parseRobotsTxt } from '../../src/robots/index.js';
import type { Group, MergedGroup, Rule } from '../../src/robots/index.js';

/**
 * Whether `pattern` matches `path` from its start: `*` matches any run, a `$`
 * that ends the pattern anchors it, any other char (a `$` inside included) is
 * literal. Keeps the set of path positions reachable so far (no backtracking).
 */
export function referenceMatches(pattern: string, path: string): boolean {
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
export function referenceRule(rules: readonly Rule[], path: string): Rule | undefined {
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
      const priority = pattern === rule.pattern ? rule.priority : (rule.directoryPriority ?? pattern.length);
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
 * A merged `*` group of `rules`, written as 1 to 3 groups (by the rule count)
 * of consecutive rules: the matcher indexes each written group and compares
 * their winners, which must equal one scan over all the rules.
 */
export function groupOf(rules: Rule[]): MergedGroup {
  const parts = 1 + (rules.length % 3);
  const size = Math.ceil(rules.length / parts) || 1;
  const groups: Group[] = [];
  for (let at = 0; at < rules.length || groups.length === 0; at += size) {
    groups.push({ productTokens: ['*'], rules: rules.slice(at, at + size), crawlDelaySeconds: undefined, crawlDelayByToken: new Map(), requestRate: undefined, requestRateByToken: new Map(), line: at + 1 });
  }
  return { productToken: '*', groups, rules, crawlDelaySeconds: undefined, requestRate: undefined, lines: groups.map((g) => g.line) };
}

/** Deterministic PRNG (mulberry32). */
export function prng(seed: number): () => number {
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
export function pathsNear(pattern: string, rand: () => number): string[] {
  const fill = (): string => ['', 'x', 'a/b', '%E5', 'index.html', '?q=1&sid=2'][Math.floor(rand() * 6)]!;
  const body = pattern.replace(/\$$/, '').replace(/\*/g, fill);
  const base = body.startsWith('/') ? body : '/' + body;
  const cut = base.slice(0, 1 + Math.floor(rand() * base.length));
  const directory = base.replace(/index\.html?$/, '');
  return [base, base + fill(), cut, directory, base + '/' + fill(), base + '?' + fill(), pattern];
}

/** What {@link compareWithReference} went through, and where the two disagreed (the first 10). */
export interface ReferenceComparison {
  files: number;
  decisions: number;
  /** Decisions some rule decided (the rest fell through to "no rule"). */
  decided: number;
  /** Decisions won by a rule with a `*`. */
  wildcardWins: number;
  differences: string[];
}

/**
 * For every group with rules in every file of `dir`: paths made from two or
 * three of its rules (sampled with a fixed seed) plus `/`, `/index.html` and
 * `/robots.txt`, each decided by `matchRule` and by {@link referenceRule}.
 */
export function compareWithReference(dir: string, files: readonly string[], seed = 0x1dec): ReferenceComparison {
  const rand = prng(seed);
  const out: ReferenceComparison = { files: 0, decisions: 0, decided: 0, wildcardWins: 0, differences: [] };
  for (const file of files) {
    const robots = parseRobotsTxt(readFileSync(join(dir, file)));
    out.files++;
    for (const group of robots.groupsByToken.values()) {
      if (group.rules.length === 0) continue;
      // Two or three rules per group keep the reference's rules x paths work to a few seconds over the corpus.
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
        out.decisions++;
        if (expected !== undefined) out.decided++;
        if (expected?.pattern.includes('*')) out.wildcardWins++;
        if (actual !== expected && out.differences.length < 10) {
          out.differences.push(`${file} ${group.productToken} ${path}: got ${actual?.kind} ${actual?.pattern} (line ${actual?.line}), want ${expected?.kind} ${expected?.pattern} (line ${expected?.line})`);
        }
      }
    }
  }
  return out;
}
