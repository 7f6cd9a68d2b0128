/**
 * A prefix index over one group's rules, so a decision tests only the rules
 * whose literal prefix the path begins with (RFC 9309 §2.2.2, §2.2.3). Pure.
 *
 * Each pattern splits into its literal prefix (the text before the first `*`,
 * or before a final `$`) and a tail. The prefixes go into a radix tree
 * (path-compressed: a node per rule prefix or branching point, so at most two
 * per pattern; children in small arrays, no per-char nodes); each node holds
 * the rules whose prefix ends there, strongest first. A lookup walks the path
 * down the tree once and, at each node on the way, checks the tails of that
 * node's rules until one matches or the rest cannot beat the best so far.
 * Wildcard tails are literal segments found with `indexOf` (leftmost
 * placement is optimal for `*` globs), after a pre-check on the chars they
 * need: no regular expressions, no backtracking.
 */
import { indexHtmlSlash } from './encoding.js';
import type { Rule } from './types.js';

/*
 * CharSet: a lossy set of chars in two 32-bit words, `low` for codes 0-63
 * and `high` for 64-127, bit `code & 31` (so `E` and `e` share a bit; codes
 * from 128 on fold in too). A text holding every char of a tail has all of
 * the tail's bits, so a missing bit proves that the tail cannot match.
 */

/** Bit of `code` in its CharSet word. */
const charBit = (code: number): number => 1 << (code & 31);
/** -1 when `code` goes in the `high` word, else 0. */
const highMask = (code: number): number => -((code >> 6) & 1);

/** The part of a pattern after its literal prefix, when it holds a non-empty literal after a `*`. */
interface WildcardTail {
  /** Shortest path that can match. */
  minLength: number;
  /** Non-empty literal segments between `*`s, in order. */
  middle: string[];
  /** Literal segment after the last `*` (may be empty). */
  last: string;
  /** True when the pattern ends in `$` (§2.2.3). */
  isAnchored: boolean;
  /** CharSet of the segments. */
  needLow: number;
  needHigh: number;
  /**
   * CharSet that every wildcard rule of the run starting at this rule needs
   * (zero when no run starts here): if the path lacks one of its chars, the
   * lookup jumps to `runEnd`, the index in the node's `rules` after the run.
   */
  runNeedLow: number;
  runNeedHigh: number;
  runEnd: number;
}

interface IndexedRule {
  rule: Rule;
  /** Position in the winning order: longest pattern first, allow before disallow, then line (§2.2.2). */
  rank: number;
  /** The match priority of the indexed pattern (`Rule.priority`, or a directory twin's own), times two, plus one for allow: the order across indexes. */
  priority: number;
  /** True for `<prefix>$`: the path must end where the prefix does. */
  isExact: boolean;
  /** What the path must hold past the prefix; undefined when the prefix (and `isExact`) decide, as for `/a`, `/a$`, `/a*`. */
  wildcard: WildcardTail | undefined;
}

interface PrefixNode {
  /** Text of the edge from the parent to this node (empty only for the root). */
  label: string;
  /** Rules whose literal prefix ends at this node, by rank. */
  rules: IndexedRule[];
  /** First char codes of the children's labels, parallel to `children`; undefined for a leaf. */
  codes: number[] | undefined;
  children: PrefixNode[] | undefined;
}

/** The compiled form of a group's rules; build with {@link buildRuleIndex}, query with {@link findRule}. */
export interface RuleIndex {
  readonly root: PrefixNode;
}

const NO_RANK = Number.MAX_SAFE_INTEGER;
/** Longest path (chars) whose CharSet a lookup builds; longer paths skip the pre-check. */
const CHARSET_MAX_PATH_LENGTH = 256;
const NO_RULES: IndexedRule[] = [];

/**
 * The reference matcher's leniency (extension, not in RFC 9309): an `allow`
 * for `.../index.htm[l]` also allows the directory itself (`.../$`).
 */
function indexDirectoryPattern(rule: Rule): string | undefined {
  if (rule.kind !== 'allow') return undefined;
  const slash = indexHtmlSlash(rule.pattern);
  return slash === -1 ? undefined : rule.pattern.slice(0, slash + 1) + '$';
}

/** The literal prefix of `pattern`: the text before the first `*`, or before a final `$` (§2.2.3). */
function literalPrefix(pattern: string): string {
  const star = pattern.indexOf('*');
  if (star !== -1) return pattern.slice(0, star);
  return pattern.endsWith('$') ? pattern.slice(0, -1) : pattern;
}

/** Indexes `pattern`, whose literal prefix has `prefixLength` chars (§2.2.3: `*` anywhere, `$` only at the end). */
function indexRule(rule: Rule, rank: number, pattern: string, prefixLength: number, matchPriority: number, isAllow: boolean): IndexedRule {
  const isAnchored = pattern.endsWith('$');
  const priority = matchPriority * 2 + (isAllow ? 1 : 0);
  if (prefixLength === pattern.length - (isAnchored ? 1 : 0)) return { rule, rank, priority, isExact: isAnchored, wildcard: undefined }; // no `*`
  const segments = pattern.slice(prefixLength + 1, isAnchored ? -1 : undefined).split('*');
  const last = segments.pop() ?? '';
  const middle = segments.filter((s) => s.length > 0);
  if (middle.length === 0 && last.length === 0) return { rule, rank, priority, isExact: false, wildcard: undefined }; // `/a*`, `/a*$`, `/a**`
  const tail: WildcardTail = { minLength: prefixLength, middle, last, isAnchored, needLow: 0, needHigh: 0, runNeedLow: 0, runNeedHigh: 0, runEnd: 0 };
  for (const segment of [...middle, last]) {
    tail.minLength += segment.length;
    for (let i = 0; i < segment.length; i++) {
      const c = segment.charCodeAt(i);
      tail.needLow |= charBit(c) & ~highMask(c);
      tail.needHigh |= charBit(c) & highMask(c);
    }
  }
  return { rule, rank, priority, isExact: false, wildcard: tail };
}

/** Adds `entry` under `prefix`, splitting an edge where the prefix leaves it. */
function insert(root: PrefixNode, prefix: string, entry: IndexedRule): void {
  let node = root;
  let at = 0;
  while (at < prefix.length) {
    const code = prefix.charCodeAt(at);
    const slot = node.codes === undefined ? -1 : node.codes.indexOf(code);
    const child = slot === -1 ? undefined : node.children?.[slot];
    if (child === undefined || node.children === undefined) {
      const leaf: PrefixNode = { label: prefix.slice(at), rules: NO_RULES, codes: undefined, children: undefined };
      (node.codes ??= []).push(code);
      (node.children ??= []).push(leaf);
      node = leaf;
      break;
    }
    const label = child.label;
    const max = Math.min(label.length, prefix.length - at);
    let common = 1;
    while (common < max && label.charCodeAt(common) === prefix.charCodeAt(at + common)) common++;
    if (common < label.length) {
      const split: PrefixNode = { label: label.slice(0, common), rules: NO_RULES, codes: [label.charCodeAt(common)], children: [child] };
      child.label = label.slice(common);
      node.children[slot] = split;
      node = split;
    } else {
      node = child;
    }
    at += common;
  }
  if (node.rules === NO_RULES) node.rules = [entry];
  else node.rules.push(entry);
}

/**
 * Finishes every node: trims the arrays that grew by `push` to their length
 * (V8 over-allocates them), and marks runs of consecutive wildcard rules that
 * share needed chars, so one check can skip a whole run (e.g. forty
 * `/*%E5%...` rules for a path without `%`). Greedy: a run grows while its
 * common set is not empty.
 */
function finishNodes(root: PrefixNode): void {
  const stack = [root];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (node.codes !== undefined && node.children !== undefined) {
      if (node.codes.length > 1) [node.codes, node.children] = [node.codes.slice(), node.children.slice()];
      for (const child of node.children) stack.push(child);
    }
    if (node.rules.length > 1) node.rules = node.rules.slice();
    const rules = node.rules;
    for (let start = 0; start < rules.length; ) {
      const first = rules[start]!.wildcard;
      if (first === undefined) {
        start++;
        continue;
      }
      let low = first.needLow;
      let high = first.needHigh;
      let end = start + 1;
      for (let next = rules[end]?.wildcard; next !== undefined; next = rules[++end]?.wildcard) {
        if (((low & next.needLow) | (high & next.needHigh)) === 0) break;
        low &= next.needLow;
        high &= next.needHigh;
      }
      if (end - start > 1) {
        first.runNeedLow = low;
        first.runNeedHigh = high;
        first.runEnd = end;
      }
      start = end;
    }
  }
}

/**
 * Compiles a group's rules (in file order) into a {@link RuleIndex}.
 * Empty patterns never decide and are left out (§2.2.2); an `allow` for
 * `.../index.htm[l]` also indexes `.../$` (extension, not in RFC 9309; the
 * reference matcher's leniency). Time O(n log n) in the rule count plus the
 * total pattern length; memory linear in both (about 5 MB, built in 10-25 ms
 * here, for the 19,125 rules in 500 KiB of docs.oracle.com). Pure; never
 * throws. RFC 9309 §2.2.2, §2.2.3.
 */
export function buildRuleIndex(rules: readonly Rule[]): RuleIndex {
  const entries: { rule: Rule; pattern: string; priority: number; isAllow: boolean }[] = [];
  for (const rule of rules) {
    if (rule.pattern.length === 0) continue;
    entries.push({ rule, pattern: rule.pattern, priority: rule.priority, isAllow: rule.kind === 'allow' });
    const directory = indexDirectoryPattern(rule);
    // `/d/index.html` also allows `/d/` with the priority of `/d/$`, as the reference counts it.
    if (directory !== undefined) entries.push({ rule, pattern: directory, priority: rule.directoryPriority ?? directory.length, isAllow: true });
  }
  // Array#sort is stable, so twins keep file order: the same order as a linear scan.
  entries.sort((a, b) => b.priority - a.priority || Number(b.isAllow) - Number(a.isAllow) || a.rule.line - b.rule.line);
  const root: PrefixNode = { label: '', rules: NO_RULES, codes: undefined, children: undefined };
  entries.forEach(({ rule, pattern, priority, isAllow }, rank) => {
    const prefix = literalPrefix(pattern);
    insert(root, prefix, indexRule(rule, rank, pattern, prefix.length, priority, isAllow));
  });
  finishNodes(root);
  return { root };
}

/** Whether `tail` matches `path`, whose first `from` chars matched the literal prefix. */
function tailMatches(tail: WildcardTail, path: string, from: number): boolean {
  let cursor = from;
  for (const segment of tail.middle) {
    const at = path.indexOf(segment, cursor);
    if (at === -1) return false;
    cursor = at + segment.length;
  }
  const last = tail.last;
  if (tail.isAnchored) return path.length - last.length >= cursor && path.endsWith(last);
  return last.length === 0 || path.indexOf(last, cursor) !== -1;
}

/**
 * Finds the rule that governs `path`: the longest matching pattern in octets;
 * on a tie, allow wins, then the earlier line (RFC 9309 §2.2.2). `path` should
 * be normalised (`normalisePath`); patterns are compared char by char.
 * Cost: one walk of the path down the tree plus the tails of the rules met on
 * the way (at worst every rule, when all patterns start with `/*`, each
 * pre-checked in O(1) and matched in O(path) with `indexOf`). Pure; never
 * throws.
 * @returns the winning rule, or `undefined` if none matches.
 */
export function findRule(index: RuleIndex, path: string): Rule | undefined {
  return findMatch(index, path)?.rule;
}

/** The winner of {@link findRule} with what orders it against the winners of other indexes. */
export interface RuleMatch {
  rule: Rule;
  /**
   * Twice the match priority of the pattern that matched (`Rule.priority`;
   * for an index.html directory twin, the twin's), plus one for allow: the
   * larger wins; on equal priority, the earlier `rule.line` (RFC 9309 §2.2.2).
   */
  priority: number;
}

/**
 * Like {@link findRule}, with the winner's priority, so that the winners of
 * several indexes (the groups merged for one product token) can be compared:
 * the best of them is what one index over all their rules would find.
 * Pure; never throws.
 */
export function findMatch(index: RuleIndex, path: string): RuleMatch | undefined {
  let best: IndexedRule | undefined;
  let bestRank = NO_RANK;
  // The path's CharSet, made when the first wildcard tail is met.
  let hasSet = false;
  let hasLow = 0;
  let hasHigh = 0;
  let node = index.root;
  let depth = 0;
  for (;;) {
    const rules = node.rules;
    for (let i = 0; i < rules.length; i++) {
      const entry = rules[i]!;
      if (entry.rank >= bestRank) break;
      const tail = entry.wildcard;
      if (tail !== undefined) {
        if (!hasSet) {
          hasSet = true;
          if (path.length > CHARSET_MAX_PATH_LENGTH) {
            // `indexOf` alone is cheaper here than building the set: claim every char.
            hasLow = -1;
            hasHigh = -1;
          } else {
            for (let at = 0; at < path.length; at++) {
              const c = path.charCodeAt(at);
              hasLow |= charBit(c) & ~highMask(c);
              hasHigh |= charBit(c) & highMask(c);
            }
          }
        }
        if ((tail.runNeedLow & ~hasLow) | (tail.runNeedHigh & ~hasHigh)) {
          i = tail.runEnd - 1; // every rule of the run needs a char the path lacks
          continue;
        }
        if (path.length < tail.minLength || (tail.needLow & ~hasLow) | (tail.needHigh & ~hasHigh)) continue;
        if (!tailMatches(tail, path, depth)) continue;
      } else if (entry.isExact && path.length !== depth) {
        continue;
      }
      best = entry;
      bestRank = entry.rank;
      break;
    }
    const codes = node.codes;
    if (depth === path.length || codes === undefined) break;
    const slot = codes.indexOf(path.charCodeAt(depth));
    const child = slot === -1 ? undefined : node.children?.[slot];
    if (child === undefined || !path.startsWith(child.label, depth)) break;
    depth += child.label.length;
    node = child;
  }
  return best;
}
