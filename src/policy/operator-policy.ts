/**
 * The operator's policy on top of robots.txt: an ordered list of rules, the
 * first that matches a request decides (deny, allow, report, or pace).
 * Compiled once per configuration load ({@link compilePolicy}), with an index
 * (see {@link RuleIndexes}): matching a request ({@link CompiledPolicy.match})
 * tests only the rules that can match its origin, tokens, identity or method,
 * and those that name none of them, each with a few set lookups and at most
 * one path-index walk. Pure: no I/O, no clock. Extension, not in RFC 9309.
 */
import { hostGlobsFor } from '../config/host-overrides.js';
import type { PolicyAction, PolicyRuleConfig } from '../config/types.js';
import type { PolicyFacts } from './decision.js';
import { normalisePath, originResolvedPath } from '../robots/encoding.js';
import { buildRuleIndex, findRule, type RuleIndex } from '../robots/rule-index.js';

/** What a rule is matched against: the facts known about a request before robots.txt. */
export interface PolicyRequest {
  /** The identity's name (proxy credentials or a client range), or null when none applies. */
  identity: string | null;
  /** The request's candidate (or bound) product tokens, any case. */
  productTokens: readonly string[];
  /** `scheme://host[:port]`, default port elided, host lower case (RFC 9309 §2.3). */
  origin: string;
  /** Path plus query of the target, raw or encoded. */
  pathAndQuery: string;
  /** HTTP method, any case. */
  method: string;
}

/** The pacing a matched rule asks for; fields it does not set come from `pacing`. */
export interface RulePacing {
  /** Replaces `pacing.minDelay`, ms. */
  minDelayMs?: number;
  /** Replaces `pacing.maxConcurrency`. */
  maxConcurrency?: number;
  /** The rate cap as a minimum delay between starts, ms (`periodMs / requests`). */
  rateDelayMs?: number;
}

/** The rule that matched a request. */
export interface PolicyMatch {
  /** The rule's name. */
  name: string;
  action: PolicyAction;
  pacing: RulePacing;
  /**
   * What a Decision carries of the rule (`Decision.policy`): built once per rule and frozen, so
   * every request it matches shares it (no object per request).
   */
  facts: Readonly<PolicyFacts>;
}

/**
 * Origins whose match keys ({@link RequestView.hostKeys}) a compiled policy keeps: a crawl sends
 * request after request to the same origins, and an origin's keys (itself, its hostname, the
 * globs that cover it) never change. Past the bound the kept keys are dropped and built anew.
 */
export const HOST_KEYS_KEPT = 1000;

/** A compiled policy. */
export interface CompiledPolicy {
  /** Number of rules. */
  readonly size: number;
  /**
   * The first rule (in order) that matches `request`, or undefined when none does. Pure; never throws.
   */
  match(request: PolicyRequest): PolicyMatch | undefined;
}

/** One compiled rule: each present matcher must accept the request. */
interface CompiledRule {
  result: PolicyMatch;
  identities: ReadonlySet<string> | undefined;
  tokens: ReadonlySet<string> | undefined;
  /** Exact origins, bare hostnames and host globs, one set (their spellings cannot collide). */
  hosts: ReadonlySet<string> | undefined;
  paths: RuleIndex | undefined;
  methods: ReadonlySet<string> | undefined;
}

/**
 * What a compiled policy derives from requests and keeps across them: each origin's match keys
 * (bounded, {@link HOST_KEYS_KEPT}), and the latest token list and method with their matching
 * forms (the pipeline passes the same token array for every request of one User-Agent). Saves
 * each request the strings and arrays of deriving them again (issue 8). Not shared between policies.
 */
class DerivedFacts {
  readonly hostKeys = new Map<string, readonly string[]>();
  lastTokens: readonly string[] | undefined = undefined;
  lastLowerTokens: readonly string[] = [];
  lastMethod: string | undefined = undefined;
  lastUpperMethod = '';

  /** The origin, its hostname, then the globs that cover it (`hostGlobsFor`). */
  hostKeysOf(origin: string): readonly string[] {
    let keys = this.hostKeys.get(origin);
    if (keys === undefined) {
      const hostname = hostnameOf(origin);
      keys = hostname === undefined ? [origin] : [origin, hostname, ...hostGlobsFor(hostname)];
      if (this.hostKeys.size >= HOST_KEYS_KEPT) this.hostKeys.clear();
      this.hostKeys.set(origin, keys);
    }
    return keys;
  }

  /** The tokens in lower case (rule tokens are lower-cased at compile time). */
  lowerTokensOf(tokens: readonly string[]): readonly string[] {
    if (tokens !== this.lastTokens) {
      this.lastLowerTokens = tokens.map((t) => t.toLowerCase());
      this.lastTokens = tokens;
    }
    return this.lastLowerTokens;
  }

  upperMethodOf(method: string): string {
    if (method !== this.lastMethod) {
      this.lastUpperMethod = method.toUpperCase();
      this.lastMethod = method;
    }
    return this.lastUpperMethod;
  }
}

/**
 * The request's facts, derived once per match and only when a rule needs them. One per compiled
 * policy, reset for each match ({@link RequestView.reset}) rather than made per request (issue 8):
 * matching is synchronous and never re-entered, and no view outlives its match.
 */
class RequestView {
  #request: PolicyRequest | undefined = undefined;
  #hostKeys: readonly string[] | undefined = undefined;
  #path: string | undefined = undefined;
  /** The path as an origin may resolve it, null when it is the path itself (see `originResolvedPath`). */
  #resolvedPath: string | null | undefined = undefined;
  #method: string | undefined = undefined;
  #tokens: readonly string[] | undefined = undefined;

  constructor(private readonly derived: DerivedFacts) {}

  /** Makes this the view of `request`, forgetting what was derived for the last one. */
  reset(request: PolicyRequest): void {
    this.#request = request;
    this.#hostKeys = undefined;
    this.#path = undefined;
    this.#resolvedPath = undefined;
    this.#method = undefined;
    this.#tokens = undefined;
  }

  /** The request being matched (set by {@link RequestView.reset}). */
  get request(): PolicyRequest {
    return this.#request!;
  }

  /** The origin, its hostname, then the globs that cover it (`hostGlobsFor`). */
  get hostKeys(): readonly string[] {
    return (this.#hostKeys ??= this.derived.hostKeysOf(this.request.origin));
  }

  get path(): string {
    return (this.#path ??= normalisePath(this.request.pathAndQuery.length === 0 ? '/' : this.request.pathAndQuery));
  }

  /** {@link RequestView.path} as a lenient origin may resolve it (`//a`, `%2F`, dot segments), or null when it is the same. */
  get resolvedPath(): string | null {
    return (this.#resolvedPath ??= originResolvedPath(this.path) ?? null);
  }

  get method(): string {
    return (this.#method ??= this.derived.upperMethodOf(this.request.method));
  }

  get tokens(): readonly string[] {
    return (this.#tokens ??= this.derived.lowerTokensOf(this.request.productTokens));
  }
}

/** True when `set` holds one of `values` (a loop: no closure per call, unlike `values.some`). */
function hasAny(set: ReadonlySet<string>, values: readonly string[]): boolean {
  for (let i = 0; i < values.length; i++) if (set.has(values[i]!)) return true;
  return false;
}

/** The hostname of `scheme://host[:port]` (brackets kept for IPv6), or undefined when it is not one. */
function hostnameOf(origin: string): string | undefined {
  const start = origin.indexOf('://');
  if (start === -1) return undefined;
  const rest = origin.slice(start + 3);
  if (rest.startsWith('[')) {
    const end = rest.indexOf(']');
    return end === -1 ? undefined : rest.slice(0, end + 1);
  }
  const colon = rest.indexOf(':');
  return colon === -1 ? rest : rest.slice(0, colon);
}

function setOf(values: readonly string[] | undefined): ReadonlySet<string> | undefined {
  return values === undefined ? undefined : new Set(values);
}

/** The path patterns as a robots.txt rule index: the same `*`, `$` and encoding semantics (RFC 9309 §2.2.2, §2.2.3). */
function pathIndexOf(patterns: readonly string[] | undefined): RuleIndex | undefined {
  if (patterns === undefined) return undefined;
  return buildRuleIndex(patterns.map((pattern, i) => ({ kind: 'disallow' as const, pattern, priority: pattern.length, line: i + 1 })));
}

function compileRule(rule: PolicyRuleConfig): CompiledRule {
  const pacing: RulePacing = {
    ...(rule.minDelayMs !== undefined ? { minDelayMs: rule.minDelayMs } : {}),
    ...(rule.maxConcurrency !== undefined ? { maxConcurrency: rule.maxConcurrency } : {}),
    ...(rule.rate !== undefined ? { rateDelayMs: rule.rate.periodMs / rule.rate.requests } : {}),
  };
  return {
    result: { name: rule.name, action: rule.action, pacing, facts: Object.freeze({ rule: rule.name, action: rule.action }) },
    identities: setOf(rule.identities),
    tokens: setOf(rule.tokens?.map((t) => t.toLowerCase())),
    hosts: setOf(rule.origins),
    paths: pathIndexOf(rule.paths),
    methods: setOf(rule.methods?.map((m) => m.toUpperCase())),
  };
}

/**
 * Each rule filed once, under the first of these fields it sets: origin (each of its exact
 * origins, hostnames and globs), else product token, else identity, else method; a rule that
 * sets none of them (paths only, or nothing) is in `unkeyed`. A rule can only match a request
 * whose origin keys, tokens, identity or method meet its key, so the rules to test for a request
 * are those under its own keys and the unkeyed ones. Lists hold rule positions in ascending order.
 */
interface RuleIndexes {
  byHost: Map<string, number[]>;
  byToken: Map<string, number[]>;
  byIdentity: Map<string, number[]>;
  byMethod: Map<string, number[]>;
  unkeyed: number[];
}

function indexRules(rules: readonly CompiledRule[]): RuleIndexes {
  const indexes: RuleIndexes = { byHost: new Map(), byToken: new Map(), byIdentity: new Map(), byMethod: new Map(), unkeyed: [] };
  const file = (map: Map<string, number[]>, keys: ReadonlySet<string>, position: number): void => {
    for (const key of keys) {
      const list = map.get(key);
      if (list === undefined) map.set(key, [position]);
      else list.push(position);
    }
  };
  rules.forEach((rule, position) => {
    if (rule.hosts !== undefined) file(indexes.byHost, rule.hosts, position);
    else if (rule.tokens !== undefined) file(indexes.byToken, rule.tokens, position);
    else if (rule.identities !== undefined) file(indexes.byIdentity, rule.identities, position);
    else if (rule.methods !== undefined) file(indexes.byMethod, rule.methods, position);
    else indexes.unkeyed.push(position);
  });
  return indexes;
}

/** The position of the first rule of `positions` (ascending) before `before` that matches, else `before`. */
function firstMatchIn(rules: readonly CompiledRule[], positions: readonly number[] | undefined, view: RequestView, before: number): number {
  if (positions === undefined) return before;
  for (const position of positions) {
    if (position >= before) return before;
    if (matches(rules[position]!, view)) return position;
  }
  return before;
}

function matches(rule: CompiledRule, view: RequestView): boolean {
  if (rule.methods !== undefined && !rule.methods.has(view.method)) return false;
  if (rule.identities !== undefined && (view.request.identity === null || !rule.identities.has(view.request.identity))) return false;
  if (rule.hosts !== undefined && !hasAny(rule.hosts, view.hostKeys)) return false;
  if (rule.tokens !== undefined && !hasAny(rule.tokens, view.tokens)) return false;
  if (rule.paths !== undefined && !pathMatches(rule.result.action, rule.paths, view)) return false;
  return true;
}

/**
 * A rule's paths against the request's path and the path an origin may resolve it to
 * (`//admin/x`, `/%2Fadmin/x`, `/x/..%2Fadmin/x` reach `/admin/x`), so that no spelling escapes a
 * rule: a rule that restrains (`deny`, `pace`) matches when either matches; one that exempts from
 * robots.txt (`allow`, `report`) only when both do, so `/public/..%2Fprivate` is not exempted by
 * a rule for `/public/`.
 */
function pathMatches(action: PolicyAction, paths: RuleIndex, view: RequestView): boolean {
  const isMatch = findRule(paths, view.path) !== undefined;
  const resolved = view.resolvedPath;
  if (resolved === null) return isMatch;
  const isExempting = action === 'allow' || action === 'report';
  if (isMatch !== isExempting) return isMatch;
  return findRule(paths, resolved) !== undefined;
}

/**
 * Compiles validated rules (see `PolicyRuleConfig`; the schema normalised origins, paths and
 * tokens) for {@link CompiledPolicy.match}, in order. Pure; never throws for validated input.
 * Extension, not in RFC 9309.
 */
export function compilePolicy(rules: readonly PolicyRuleConfig[]): CompiledPolicy {
  const compiled = rules.map(compileRule);
  const { byHost, byToken, byIdentity, byMethod, unkeyed } = indexRules(compiled);
  // The lowest position filed in each map (Infinity for an empty one).
  const lowest = (map: Map<string, number[]>): number => Math.min(...[...map.values()].map((list) => list[0]!));
  const firstOf = { byHost: lowest(byHost), byToken: lowest(byToken), byIdentity: lowest(byIdentity), byMethod: lowest(byMethod) };
  const view = new RequestView(new DerivedFacts());
  return {
    size: compiled.length,
    match(request: PolicyRequest): PolicyMatch | undefined {
      if (compiled.length === 0) return undefined;
      view.reset(request);
      // The first match overall is the lowest position matching in any list the request meets;
      // each list is read only up to the best position found so far.
      // A list is skipped whole (and the request's keys for it not derived) when it starts at or after that position.
      let first = firstMatchIn(compiled, unkeyed, view, compiled.length);
      if (first > firstOf.byHost) for (const key of view.hostKeys) first = firstMatchIn(compiled, byHost.get(key), view, first);
      if (first > firstOf.byToken) for (const token of view.tokens) first = firstMatchIn(compiled, byToken.get(token), view, first);
      if (first > firstOf.byIdentity && request.identity !== null) first = firstMatchIn(compiled, byIdentity.get(request.identity), view, first);
      if (first > firstOf.byMethod) first = firstMatchIn(compiled, byMethod.get(view.method), view, first);
      return first < compiled.length ? compiled[first]!.result : undefined;
    },
  };
}

/** A policy with no rules. */
export const EMPTY_POLICY: CompiledPolicy = compilePolicy([]);
