/**
 * Group selection and rule matching (RFC 9309 §2.2.1-§2.2.3). Pure; never
 * throws. No regular expressions: patterns are compiled once per group into
 * literal segments matched with `startsWith` / `indexOf`, so the worst case is
 * linear-ish in the path per segment and there is no backtracking.
 */
import { normalisePath } from './encoding.js';
import type { MergedGroup, RobotsTxt, Rule } from './types.js';

/** A rule compiled for matching. */
interface CompiledRule {
  rule: Rule;
  /** Octet length of the pattern: the match priority (§2.2.2). */
  priority: number;
  isAllow: boolean;
  matches(path: string): boolean;
}

const compiledByGroup = new WeakMap<MergedGroup, CompiledRule[]>();

/**
 * Compiles a pattern with `*` wildcards and an optional final `$` (§2.2.3)
 * into a predicate on normalised paths. The pattern is anchored at the start.
 */
function compilePattern(pattern: string): (path: string) => boolean {
  const anchored = pattern.endsWith('$');
  const body = anchored ? pattern.slice(0, -1) : pattern;
  if (!body.includes('*')) {
    return anchored ? (path) => path === body : (path) => path.startsWith(body);
  }
  const segments = body.split('*');
  const first = segments[0] ?? '';
  const last = segments[segments.length - 1] ?? '';
  const middle = segments.slice(1, -1).filter((s) => s.length > 0);
  const minLength = segments.reduce((sum, s) => sum + s.length, 0);
  return (path) => {
    if (path.length < minLength || !path.startsWith(first)) return false;
    let cursor = first.length;
    // Leftmost placement of each literal segment is optimal for `*` globs.
    for (const segment of middle) {
      const at = path.indexOf(segment, cursor);
      if (at === -1) return false;
      cursor = at + segment.length;
    }
    if (anchored) return path.length - last.length >= cursor && path.endsWith(last);
    return last.length === 0 || path.indexOf(last, cursor) !== -1;
  };
}

/**
 * The reference matcher's leniency: an `allow` for `.../index.htm[l]` also
 * allows the directory itself (`.../$`).
 */
function indexDirectoryPattern(rule: Rule): string | undefined {
  if (rule.kind !== 'allow') return undefined;
  const slash = rule.pattern.lastIndexOf('/');
  if (slash === -1 || !rule.pattern.startsWith('/index.htm', slash)) return undefined;
  return rule.pattern.slice(0, slash + 1) + '$';
}

/**
 * Rules of a merged group, compiled and ordered so the first match is the
 * winner: longest pattern first, allow before disallow on a tie (§2.2.2).
 * Empty patterns never decide and are left out.
 */
function compiledRules(group: MergedGroup): CompiledRule[] {
  let compiled = compiledByGroup.get(group);
  if (compiled !== undefined) return compiled;
  compiled = [];
  for (const rule of group.rules) {
    if (rule.pattern.length === 0) continue;
    compiled.push({ rule, priority: rule.pattern.length, isAllow: rule.kind === 'allow', matches: compilePattern(rule.pattern) });
    const directory = indexDirectoryPattern(rule);
    if (directory !== undefined) {
      compiled.push({ rule, priority: directory.length, isAllow: true, matches: compilePattern(directory) });
    }
  }
  compiled.sort((a, b) => b.priority - a.priority || Number(b.isAllow) - Number(a.isAllow) || a.rule.line - b.rule.line);
  compiledByGroup.set(group, compiled);
  return compiled;
}

/**
 * Finds the rule that governs `path` in `group`: the longest matching pattern
 * in octets; on a tie, allow wins (RFC 9309 §2.2.2).
 * `path` must already be normalised (see `normalisePath`). Pure; never throws.
 * @returns the winning rule, or `undefined` if none matches.
 */
export function matchRule(group: MergedGroup, path: string): Rule | undefined {
  for (const candidate of compiledRules(group)) {
    if (candidate.matches(path)) return candidate.rule;
  }
  return undefined;
}

/** The group that applies to a request, and which product token chose it. */
export interface GroupSelection {
  /** The merged group, or undefined when the file has neither a group for the tokens nor a `*` group. */
  group: MergedGroup | undefined;
  /** The candidate token that named the group; undefined when the `*` group (or none) applied. */
  productToken: string | undefined;
}

/**
 * Chooses the group for a request (RFC 9309 §2.2.1): the first candidate
 * product token that a group names (case-insensitive, exact); else the `*`
 * group; else none. Pure; never throws.
 */
export function selectGroup(robots: RobotsTxt, productTokens: readonly string[]): GroupSelection {
  for (const token of productTokens) {
    if (token.length === 0 || token === '*') continue;
    const group = robots.groupsByToken.get(token.toLowerCase());
    if (group !== undefined) return { group, productToken: token };
  }
  return { group: robots.groupsByToken.get('*'), productToken: undefined };
}

/** Outcome of {@link evaluate}: the subset of decision reasons the robots file itself can give. */
export type RobotsOutcome = 'rule-allow' | 'rule-disallow' | 'no-matching-rule' | 'robots-txt-itself';

/** The answer of {@link evaluate}. */
export interface RobotsEvaluation {
  allowed: boolean;
  outcome: RobotsOutcome;
  /** The normalised path plus query that was tested. */
  path: string;
  /** Token that chose the group; undefined for the `*` group or none. */
  productToken: string | undefined;
  group: MergedGroup | undefined;
  /** The winning rule (for an index.html directory match, an `allow` with the original pattern and line). */
  rule: Rule | undefined;
}

/**
 * Decides whether `pathAndQuery` may be crawled by an agent whose candidate
 * product tokens are `productTokens`, under `robots`.
 * `pathAndQuery` is the path plus query of the URL (no fragment), raw or
 * encoded; it is normalised here (§2.2.2). `/robots.txt` is always allowed
 * (§2.2.2, "implicitly allowed"). Pure; never throws.
 */
export function evaluate(robots: RobotsTxt, productTokens: readonly string[], pathAndQuery: string): RobotsEvaluation {
  const path = normalisePath(pathAndQuery.length === 0 ? '/' : pathAndQuery);
  const { group, productToken } = selectGroup(robots, productTokens);
  if (path === '/robots.txt' || path.startsWith('/robots.txt?')) {
    return { allowed: true, outcome: 'robots-txt-itself', path, productToken, group, rule: undefined };
  }
  const rule = group === undefined ? undefined : matchRule(group, path);
  if (rule === undefined) return { allowed: true, outcome: 'no-matching-rule', path, productToken, group, rule };
  const allowed = rule.kind === 'allow';
  return { allowed, outcome: allowed ? 'rule-allow' : 'rule-disallow', path, productToken, group, rule };
}
