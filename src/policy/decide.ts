/**
 * Robots snapshot + request -> {@link Decision}. Pure: no I/O, no clock.
 * The only place where a robots.txt outcome becomes a verdict and a reason.
 */
import { evaluate } from '../robots/match.js';
import { holdsOriginDecodedEscape, normalisePath, originDecodedPath, originResolvedPath } from '../robots/encoding.js';
import type { Rule } from '../robots/types.js';
import { ROBOTS_REASONS, type Decision, type DecisionIdentity, type DecisionReason } from './decision.js';
import type { PolicyMatch } from './operator-policy.js';
import type { RobotsSnapshot } from './snapshot.js';

/** What {@link decide} needs to know about one request. */
export interface DecisionRequest {
  /** `scheme://host[:port]`, default port elided. */
  origin: string;
  /** Path plus query of the target URL (no fragment), raw or encoded. */
  pathAndQuery: string;
  /** Candidate product tokens of the client, best first (from the User-Agent, `extractProductTokens`); the first one a group names decides. */
  productTokens: readonly string[];
  /** Who the client is (see `identifyAgent`), copied to `Decision.identity`. @default null */
  identity?: DecisionIdentity | null;
}

/**
 * Decides one request against the origin's robots snapshot.
 * - `ok`: the rules decide (RFC 9309 §2.2.2); `/robots.txt` is always allowed.
 * - `unavailable` (4xx): allow all (§2.3.1.3), reason `robots-unavailable`.
 * - `unreachable` (5xx, 429, network): disallow all (§2.3.1.4), reason
 *   `robots-unreachable`, except `/robots.txt` itself.
 * Crawl-delay comes from the group that applied (extension, §2.2.4).
 * An allowed path is also decided as an origin may resolve it
 * (`originResolvedPath`: encoded slashes, `//`, dot segments) and then decode
 * it (`originDecodedPath`: `%3A` -> `:`, `%40` -> `@`, ...); when that is
 * disallowed, so is the request, and `path` names the spelling decided, except
 * that an `allow` written with the escaped spelling, at least as long as the
 * refusing rule, keeps the request allowed ({@link isEscapedSpellingAllowed}).
 * Pure; never throws.
 */
export function decide(snapshot: RobotsSnapshot, request: DecisionRequest): Decision {
  // Every field written out, no `{ ...base, more }`: on Node 20's V8 each property after a spread
  // in an object literal is defined through a slow runtime call (about 0.7 us each; issue 11).
  const identity = request.identity ?? null;
  if (snapshot.info.state === 'ok' && snapshot.robots !== null) {
    let r = evaluate(snapshot.robots, request.productTokens, request.pathAndQuery);
    // An allowed path that an origin may resolve to another one (`/private%2Fx`, `//private/x`,
    // `/a/..%2Fprivate`) is decided on that one too: enforcement must not be bypassable by encoding.
    const resolved = r.allowed ? originResolvedPath(r.path) : undefined;
    if (resolved !== undefined) {
      const alternative = evaluate(snapshot.robots, request.productTokens, resolved);
      if (!alternative.allowed) r = alternative;
    }
    // `/wiki/Special%3ASearch` is served as `/wiki/Special:Search`: decided as that spelling too,
    // unless the site allowed the escaped spelling itself, at least as specifically.
    const decoded = r.allowed ? originDecodedPath(resolved ?? r.path) : undefined;
    if (decoded !== undefined) {
      const alternative = evaluate(snapshot.robots, request.productTokens, decoded);
      if (!alternative.allowed && !isEscapedSpellingAllowed(r.rule, alternative.rule)) r = alternative;
    }
    return {
      origin: request.origin,
      snapshot: snapshot.info,
      agentTokens: request.productTokens,
      identity,
      verdict: r.allowed ? 'allow' : 'deny',
      reason: r.outcome,
      path: r.path,
      productToken: r.productToken ?? null,
      group: r.group?.productToken ?? null,
      rule: r.rule ? { kind: r.rule.kind, pattern: r.rule.pattern, line: r.rule.line } : null,
      crawlDelaySeconds: r.group?.crawlDelaySeconds ?? null,
    };
  }
  const path = normalisePath(request.pathAndQuery.length === 0 ? '/' : request.pathAndQuery);
  const isRobotsTxt = path === '/robots.txt' || path.startsWith('/robots.txt?');
  const reason: DecisionReason = isRobotsTxt ? 'robots-txt-itself' : snapshot.info.state === 'unreachable' ? 'robots-unreachable' : 'robots-unavailable';
  return {
    origin: request.origin,
    snapshot: snapshot.info,
    agentTokens: request.productTokens,
    identity,
    verdict: reason === 'robots-unreachable' ? 'deny' : 'allow',
    reason,
    path,
    productToken: null,
    group: null,
    rule: null,
    crawlDelaySeconds: null,
  };
}

/**
 * Whether `allowed`, the rule that allowed a request as sent, keeps it allowed although its
 * origin-decoded spelling is refused by `refusing`: when it is an `allow` whose pattern is written
 * with an escape origins decode (`Allow: /wiki/Special%3ARandom` beside `Disallow: /wiki/Special:`)
 * and at least as long (§2.2.2: the longest match wins, allow wins a tie). The site named that
 * escaped spelling on purpose, and RFC 9309 allows it; a pattern without such an escape
 * (`Allow: /`) says nothing about the spelling, so the decoded one decides (README "No bypass
 * by encoding"). Pure.
 */
function isEscapedSpellingAllowed(allowed: Rule | undefined, refusing: Rule | undefined): boolean {
  if (allowed === undefined || allowed.kind !== 'allow' || refusing === undefined) return false;
  return holdsOriginDecodedEscape(allowed.pattern) && allowed.priority >= refusing.priority;
}

/**
 * A decision made before any robots.txt is consulted (bad request, private
 * target, client not allowed, queue full, ...). Pure.
 */
export function decideWithoutRobots(
  reason: DecisionReason,
  fields: {
    origin?: string;
    path?: string;
    detail?: string;
    verdict?: 'allow' | 'deny';
    agentTokens?: readonly string[];
    identity?: DecisionIdentity | null;
    proxyAuthenticate?: string;
  } = {},
): Decision {
  return {
    verdict: fields.verdict ?? 'deny',
    reason,
    origin: fields.origin ?? '',
    path: fields.path ?? '',
    productToken: null,
    agentTokens: fields.agentTokens ?? [],
    group: null,
    rule: null,
    crawlDelaySeconds: null,
    snapshot: null,
    identity: fields.identity ?? null,
    ...(fields.detail !== undefined ? { detail: fields.detail } : {}),
    ...(fields.proxyAuthenticate !== undefined ? { proxyAuthenticate: fields.proxyAuthenticate } : {}),
  };
}

/** {@link ROBOTS_REASONS} as a set. */
const IS_ROBOTS_REASON: ReadonlySet<DecisionReason> = new Set(ROBOTS_REASONS);

/**
 * The refusal by an operator rule with action `deny`, decided before robots.txt is fetched
 * (nothing is sent upstream): reason `operator-policy`, the rule named in `policy` and `detail`.
 * Extension, not in RFC 9309. Pure; never throws.
 */
export function decidePolicyDenial(
  rule: PolicyMatch,
  fields: { origin: string; path: string; agentTokens: readonly string[]; identity?: DecisionIdentity | null },
): Decision {
  const path = normalisePath(fields.path.length === 0 ? '/' : fields.path);
  const denial = decideWithoutRobots('operator-policy', { origin: fields.origin, path, agentTokens: fields.agentTokens, identity: fields.identity ?? null, detail: `policy rule "${rule.name}" (action deny)` });
  denial.policy = rule.facts;
  return denial;
}

/**
 * Puts the operator's policy on top of a robots.txt decision (a fresh one, from {@link decide}),
 * completing it in place and returning it:
 * - no rule: the robots.txt decision, unless `enforcement` is `report`;
 * - `allow`: allowed, reason `operator-allow`, whatever robots.txt said (its crawl-delay kept, for pacing);
 * - `deny` (reached here only in report mode): forwarded, reason `report-only`, `wouldDeny: operator-policy`;
 * - `report`, or `enforcement: report`: a robots.txt refusal (`rule-disallow`, `robots-unreachable`)
 *   becomes reason `report-only`, verdict allow, with `wouldDeny` set to it; the rule and group stay;
 * - `pace`: the robots.txt decision.
 * The rule that matched is recorded in `policy`. Decisions not made by robots.txt (a private
 * network reached by the robots.txt fetch, an untrusted certificate) keep their verdict and
 * reason: they protect the proxy, not the site. In place rather than `{ ...decision, more }`:
 * on Node 20 every property after a spread is a slow runtime call (issue 11). Never throws.
 * Extension, not in RFC 9309.
 */
export function applyPolicy(decision: Decision, rule: PolicyMatch | undefined, enforcement: 'enforce' | 'report'): Decision {
  // The rule's facts (name and action) are shared, frozen: its pacing is read again by the pacer.
  if (rule !== undefined) decision.policy = rule.facts;
  if (!IS_ROBOTS_REASON.has(decision.reason)) return decision;
  if (rule?.action === 'allow') {
    decision.verdict = 'allow';
    decision.reason = 'operator-allow';
  } else if (rule?.action === 'deny') {
    // Only in report mode: an enforced deny never fetches robots.txt (decidePolicyDenial).
    decision.verdict = 'allow';
    decision.reason = 'report-only';
    decision.wouldDeny = 'operator-policy';
    decision.detail = `policy rule "${rule.name}" (action deny) would refuse it`;
  } else if ((enforcement === 'report' || rule?.action === 'report') && decision.verdict === 'deny') {
    decision.wouldDeny = decision.reason;
    decision.verdict = 'allow';
    decision.reason = 'report-only';
  }
  return decision;
}
