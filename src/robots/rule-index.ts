/**
 * A prefix index over one group's rules, so a decision tests only the rules
 * whose literal prefix the path begins with (RFC 9309 §2.2.2, §2.2.3). Pure.
 *
 * Each pattern splits into its literal prefix (the text before the first `*`,
 * or before a final `$`) and a tail. The prefixes go into a radix tree
 * (path-compressed: one node per branching point or rule, so at most two nodes
 * per rule); each node holds the rules whose prefix ends there, strongest
 * first. A lookup walks the path down the tree once and, at each node on the
 * way, checks the tails of that node's rules until one matches or the rest
 * cannot beat the best match so far. Tails are literal segments found with
 * `indexOf` (leftmost placement is optimal for `*` globs): no regular
 * expressions, no backtracking.
 */
import type { Rule } from './types.js';

/** What must still hold once a rule's literal prefix has matched. */
const TAIL_NONE = 0; // nothing: the prefix decides
const TAIL_END = 1; // a `$` right after the prefix: the path must end there
const TAIL_WILDCARD = 2; // `*` segments, maybe a final `$`

interface IndexedRule {
  rule: Rule;
  /** Position in the winning order: longest pattern first, allow before disallow, then line (§2.2.2). */
  rank: number;
  tail: typeof TAIL_NONE | typeof TAIL_END | typeof TAIL_WILDCARD;
  prefixLength: number;
  /** Shortest path that can match. */
  minLength: number;
  /** Non-empty literal segments between `*`s after the prefix, in order. */
  middle: string[];
  /** Literal segment after the last `*` (may be empty). */
  last: string;
  /** True when the pattern ends in `$` (§2.2.3). */
  isAnchored: boolean;
  /** ASCII chars the tail needs, as a 128-bit set in four words; a cheap pre-check before `indexOf`. */
  need0: number;
  need1: number;
  need2: number;
  need3: number;
}

interface PrefixNode {
  /** Text of the edge from the parent to this node (empty only for the root). */
  label: string;
  /** Rules whose literal prefix ends at this node, by rank. */
  rules: IndexedRule[];
  /** Children by the char code that starts their label. */
  children: Map<number, PrefixNode> | undefined;
}

/** The compiled form of a group's rules; build with {@link buildRuleIndex}, query with {@link findRule}. */
export interface RuleIndex {
  readonly root: PrefixNode;
  /** Number of indexed patterns (empty ones left out; index.html twins counted). */
  readonly patternCount: number;
}

const NO_RANK = Number.MAX_SAFE_INTEGER;

/**
 * The reference matcher's leniency (extension, not in RFC 9309): an `allow`
 * for `.../index.htm[l]` also allows the directory itself (`.../$`).
 */
function indexDirectoryPattern(rule: Rule): string | undefined {
  if (rule.kind !== 'allow') return undefined;
  const slash = rule.pattern.lastIndexOf('/');
  if (slash === -1 || !rule.pattern.startsWith('/index.htm', slash)) return undefined;
  return rule.pattern.slice(0, slash + 1) + '$';
}

/** Splits `pattern` into its literal prefix and tail (§2.2.3: `*` anywhere, `$` only at the end). */
function indexRule(rule: Rule, pattern: string, rank: number): { prefix: string; entry: IndexedRule } {
  const isAnchored = pattern.endsWith('$');
  const body = isAnchored ? pattern.slice(0, -1) : pattern;
  const star = body.indexOf('*');
  const prefix = star === -1 ? body : body.slice(0, star);
  const entry: IndexedRule = {
    rule, rank, tail: isAnchored ? TAIL_END : TAIL_NONE, prefixLength: prefix.length, minLength: prefix.length,
    middle: [], last: '', isAnchored, need0: 0, need1: 0, need2: 0, need3: 0,
  };
  if (star === -1) return { prefix, entry };
  const segments = body.slice(star + 1).split('*');
  const last = segments.pop() ?? '';
  const middle = segments.filter((s) => s.length > 0);
  // `/a*`, `/a*$`, `/a**`: any path with the prefix matches.
  if (middle.length === 0 && last.length === 0) return { prefix, entry: { ...entry, tail: TAIL_NONE } };
  const need = [0, 0, 0, 0];
  let minLength = prefix.length;
  for (const segment of [...middle, last]) {
    minLength += segment.length;
    for (let i = 0; i < segment.length; i++) {
      const c = segment.charCodeAt(i);
      if (c < 128) need[c >> 5]! |= 1 << (c & 31);
    }
  }
  return {
    prefix,
    entry: { ...entry, tail: TAIL_WILDCARD, minLength, middle, last, need0: need[0]!, need1: need[1]!, need2: need[2]!, need3: need[3]! },
  };
}

/** Adds `entry` under `prefix`, splitting an edge where the prefix leaves it. */
function insert(root: PrefixNode, prefix: string, entry: IndexedRule): void {
  let node = root;
  let at = 0;
  while (at < prefix.length) {
    const code = prefix.charCodeAt(at);
    node.children ??= new Map();
    const child = node.children.get(code);
    if (child === undefined) {
      const leaf: PrefixNode = { label: prefix.slice(at), rules: [], children: undefined };
      node.children.set(code, leaf);
      node = leaf;
      break;
    }
    const label = child.label;
    const max = Math.min(label.length, prefix.length - at);
    let common = 1;
    while (common < max && label.charCodeAt(common) === prefix.charCodeAt(at + common)) common++;
    if (common < label.length) {
      const split: PrefixNode = { label: label.slice(0, common), rules: [], children: new Map([[label.charCodeAt(common), child]]) };
      child.label = label.slice(common);
      node.children.set(code, split);
      node = split;
    } else {
      node = child;
    }
    at += common;
  }
  node.rules.push(entry);
}

/**
 * Compiles a group's rules (in file order) into a {@link RuleIndex}.
 * Empty patterns never decide and are left out (§2.2.2); an `allow` for
 * `.../index.htm[l]` also indexes `.../$` (extension, not in RFC 9309; the
 * reference matcher's leniency). Memory is linear in the total pattern length.
 * Pure; never throws. RFC 9309 §2.2.2, §2.2.3.
 */
export function buildRuleIndex(rules: readonly Rule[]): RuleIndex {
  const entries: { rule: Rule; pattern: string; isAllow: boolean }[] = [];
  for (const rule of rules) {
    if (rule.pattern.length === 0) continue;
    entries.push({ rule, pattern: rule.pattern, isAllow: rule.kind === 'allow' });
    const directory = indexDirectoryPattern(rule);
    if (directory !== undefined) entries.push({ rule, pattern: directory, isAllow: true });
  }
  // Array#sort is stable, so twins keep file order: the same order as a linear scan.
  entries.sort((a, b) => b.pattern.length - a.pattern.length || Number(b.isAllow) - Number(a.isAllow) || a.rule.line - b.rule.line);
  const root: PrefixNode = { label: '', rules: [], children: undefined };
  entries.forEach(({ rule, pattern }, rank) => {
    const { prefix, entry } = indexRule(rule, pattern, rank);
    insert(root, prefix, entry);
  });
  return { root, patternCount: entries.length };
}

/** Whether the tail of a wildcard rule matches `path`, whose first `prefixLength` chars already matched. */
function tailMatches(entry: IndexedRule, path: string): boolean {
  let cursor = entry.prefixLength;
  for (const segment of entry.middle) {
    const at = path.indexOf(segment, cursor);
    if (at === -1) return false;
    cursor = at + segment.length;
  }
  const last = entry.last;
  if (entry.isAnchored) return path.length - last.length >= cursor && path.endsWith(last);
  return last.length === 0 || path.indexOf(last, cursor) !== -1;
}

/**
 * Finds the rule that governs `path`: the longest matching pattern in octets;
 * on a tie, allow wins, then the earlier line (RFC 9309 §2.2.2). `path` should
 * be normalised (`normalisePath`); patterns are compared char by char.
 * Cost: one walk of the path down the tree plus the tails of the rules met on
 * the way. Pure; never throws.
 * @returns the winning rule, or `undefined` if none matches.
 */
export function findRule(index: RuleIndex, path: string): Rule | undefined {
  let best: IndexedRule | undefined;
  let bestRank = NO_RANK;
  // The path's ASCII char set, computed on the first wildcard tail met.
  let hasSet = false;
  let has0 = 0;
  let has1 = 0;
  let has2 = 0;
  let has3 = 0;
  let node = index.root;
  let depth = 0;
  for (;;) {
    for (const entry of node.rules) {
      if (entry.rank >= bestRank) break;
      if (entry.tail === TAIL_END) {
        if (path.length !== depth) continue;
      } else if (entry.tail === TAIL_WILDCARD) {
        if (path.length < entry.minLength) continue;
        if (!hasSet) {
          hasSet = true;
          for (let i = 0; i < path.length; i++) {
            const c = path.charCodeAt(i);
            const bit = 1 << (c & 31);
            const word = c >> 5;
            if (word === 0) has0 |= bit;
            else if (word === 1) has1 |= bit;
            else if (word === 2) has2 |= bit;
            else if (word === 3) has3 |= bit;
          }
        }
        if ((entry.need0 & ~has0) | (entry.need1 & ~has1) | (entry.need2 & ~has2) | (entry.need3 & ~has3)) continue;
        if (!tailMatches(entry, path)) continue;
      }
      best = entry;
      bestRank = entry.rank;
      break;
    }
    const child = node.children?.get(path.charCodeAt(depth));
    if (child === undefined || !path.startsWith(child.label, depth)) break;
    depth += child.label.length;
    node = child;
  }
  return best?.rule;
}
