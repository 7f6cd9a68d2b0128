/**
 * The operator's policy on top of robots.txt: an ordered list of rules, the
 * first that matches a request decides (deny, allow, report, or pace).
 * Compiled once per configuration load ({@link compilePolicy}); matching a
 * request ({@link CompiledPolicy.match}) costs a few set lookups and at most one
 * path-index walk per rule. Pure: no I/O, no clock. Extension, not in RFC 9309.
 */
import { hostGlobsFor } from '../config/host-overrides.js';
import type { PolicyAction, PolicyRuleConfig } from '../config/types.js';
import { normalisePath } from '../robots/encoding.js';
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
}

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

/** The request's facts, derived once per match and only when a rule needs them. */
class RequestView {
  #hostKeys: string[] | undefined;
  #path: string | undefined;
  #method: string | undefined;
  #tokens: string[] | undefined;

  constructor(readonly request: PolicyRequest) {}

  /** The origin, its hostname, then the globs that cover it (`hostGlobsFor`). */
  get hostKeys(): string[] {
    if (this.#hostKeys === undefined) {
      const { origin } = this.request;
      const hostname = hostnameOf(origin);
      this.#hostKeys = hostname === undefined ? [origin] : [origin, hostname, ...hostGlobsFor(hostname)];
    }
    return this.#hostKeys;
  }

  get path(): string {
    return (this.#path ??= normalisePath(this.request.pathAndQuery.length === 0 ? '/' : this.request.pathAndQuery));
  }

  get method(): string {
    return (this.#method ??= this.request.method.toUpperCase());
  }

  get tokens(): string[] {
    return (this.#tokens ??= this.request.productTokens.map((t) => t.toLowerCase()));
  }
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
    result: { name: rule.name, action: rule.action, pacing },
    identities: setOf(rule.identities),
    tokens: setOf(rule.tokens?.map((t) => t.toLowerCase())),
    hosts: setOf(rule.origins),
    paths: pathIndexOf(rule.paths),
    methods: setOf(rule.methods?.map((m) => m.toUpperCase())),
  };
}

function matches(rule: CompiledRule, view: RequestView): boolean {
  if (rule.methods !== undefined && !rule.methods.has(view.method)) return false;
  if (rule.identities !== undefined && (view.request.identity === null || !rule.identities.has(view.request.identity))) return false;
  if (rule.hosts !== undefined && !view.hostKeys.some((k) => rule.hosts!.has(k))) return false;
  if (rule.tokens !== undefined && !view.tokens.some((t) => rule.tokens!.has(t))) return false;
  if (rule.paths !== undefined && findRule(rule.paths, view.path) === undefined) return false;
  return true;
}

/**
 * Compiles validated rules (see `PolicyRuleConfig`; the schema normalised origins, paths and
 * tokens) for {@link CompiledPolicy.match}, in order. Pure; never throws for validated input.
 * Extension, not in RFC 9309.
 */
export function compilePolicy(rules: readonly PolicyRuleConfig[]): CompiledPolicy {
  const compiled = rules.map(compileRule);
  return {
    size: compiled.length,
    match(request: PolicyRequest): PolicyMatch | undefined {
      if (compiled.length === 0) return undefined;
      const view = new RequestView(request);
      for (const rule of compiled) if (matches(rule, view)) return rule.result;
      return undefined;
    },
  };
}

/** A policy with no rules. */
export const EMPTY_POLICY: CompiledPolicy = compilePolicy([]);
