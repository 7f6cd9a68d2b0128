/**
 * Group selection and rule matching (RFC 9309 §2.2.1-§2.2.3). Pure; never
 * throws. No regular expressions: a group's patterns are compiled once into a
 * prefix index (see rule-index.ts) whose tails are literal segments matched
 * with `indexOf`, so there is no backtracking.
 */
import { normalisePath } from './encoding.js';
import { buildRuleIndex, findMatch, type RuleIndex, type RuleMatch } from './rule-index.js';
import type { Group, MergedGroup, RobotsTxt, Rule } from './types.js';

const indexByGroup = new WeakMap<Group, RuleIndex>();

/**
 * The prefix index of one group as written, built on first use and cached per
 * group object. One index per written group, shared by every token the group
 * names: the indexes of a file cost what its rules do, however many tokens
 * name them.
 */
export function ruleIndexOf(group: Group): RuleIndex {
  let index = indexByGroup.get(group);
  if (index === undefined) {
    index = buildRuleIndex(group.rules);
    indexByGroup.set(group, index);
  }
  return index;
}

/**
 * Finds the rule that governs `path` in `group`: the longest matching pattern
 * in octets; on a tie, allow wins (RFC 9309 §2.2.2). An empty pattern never
 * decides; an `allow` for `.../index.htm[l]` also matches `.../` (the
 * reference matcher's leniency, extension, not in RFC 9309).
 * `path` must already be normalised (see `normalisePath`). Each group as
 * written is compiled into a prefix index on first use ({@link ruleIndexOf}),
 * so a decision costs about the path's length plus the rules whose literal
 * prefix (the text before the first `*`) the path begins with, not the
 * group's rule count, once per written group merged into `group`; the best
 * of their winners is the winner (§2.2.1: merged groups' rules combine).
 * Pure; never throws.
 * @returns the winning rule, or `undefined` if none matches.
 */
export function matchRule(group: MergedGroup, path: string): Rule | undefined {
  let best: RuleMatch | undefined;
  for (const written of group.groups) {
    const found = findMatch(ruleIndexOf(written), path);
    if (found !== undefined && (best === undefined || found.priority > best.priority || (found.priority === best.priority && found.rule.line < best.rule.line))) best = found;
  }
  return best?.rule;
}

/** The group that applies to a request, and which product token chose it. */
export interface GroupSelection {
  /** The merged group, or undefined when the file has neither a group for the tokens nor a `*` group. */
  group: MergedGroup | undefined;
  /** The candidate token that named the group; undefined when the `*` group (or none) applied. */
  productToken: string | undefined;
}

/** How many product tokens {@link lowerCaseToken} keeps (a power of two): a few bots' tokens in turn. */
const LOWER_CASE_SLOTS = 8;
/** The tokens lower-cased lately, each beside its lower case; '' in an empty slot (an empty token is never looked up). */
const tokensKept: string[] = new Array<string>(LOWER_CASE_SLOTS).fill('');
const lowerCasesKept: string[] = new Array<string>(LOWER_CASE_SLOTS).fill('');
let nextTokenSlot = 0;

/**
 * `token.toLowerCase()`, and for a token met lately (the same string, or an equal one) the same
 * string object as before: a request's tokens come from a User-Agent the pipeline parses once
 * (the same strings on every request), and a lower case made once keeps the hash V8 computed at
 * its first `groupsByToken` look-up, where a fresh one is lowered and hashed again on every
 * request (issue 11). Bounded: {@link LOWER_CASE_SLOTS} tokens, the oldest replaced.
 */
function lowerCaseToken(token: string): string {
  for (let i = 0; i < LOWER_CASE_SLOTS; i++) if (tokensKept[i] === token) return lowerCasesKept[i] as string;
  const lower = token.toLowerCase();
  const slot = nextTokenSlot;
  tokensKept[slot] = token;
  lowerCasesKept[slot] = lower;
  nextTokenSlot = (slot + 1) & (LOWER_CASE_SLOTS - 1);
  return lower;
}

/**
 * Chooses the group for a request (RFC 9309 §2.2.1): the first candidate
 * product token, in the order given, that a group names; else the `*`
 * group; else none. A candidate names a group when it equals the group's
 * whole name (`productTokenOf`: the `[A-Za-z0-9_-]` run a `User-agent:`
 * value starts with), ignoring case: no prefix match and no cut form, so
 * `ExampleBotNews` never takes `ExampleBot`'s group nor the reverse, and
 * `MJ12bot` takes `User-agent: MJ12bot`'s. For a candidate that is a valid
 * RFC 9309 token this is the RFC's comparison (see product-token.ts).
 * Candidates come best first from `extractProductTokens`, so the order is
 * the documented preference (a crawler's own name over a library's). Pure;
 * never throws.
 */
export function selectGroup(robots: RobotsTxt, productTokens: readonly string[]): GroupSelection {
  for (const token of productTokens) {
    if (token.length === 0 || token === '*') continue;
    const group = robots.groupsByToken.get(lowerCaseToken(token));
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
