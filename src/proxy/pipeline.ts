/**
 * The request pipeline shared by plain HTTP proxy requests and the requests
 * inside an intercepted TLS tunnel: identify -> decide -> pace -> forward ->
 * audit (DESIGN.md "Request flow"). One {@link Decision} travels through it and
 * reaches the response, the log line and the metrics unchanged.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock.js';
import type { Config } from '../config/index.js';
import { hostOverrideRules } from '../config/index.js';
import { crawlDelayMsOf, type AbortSignalLike, type AcquireOptions, type AcquireOutcome, type RequestPacer, type Refusal, type RequestLimits, type Slot } from '../pacing/index.js';
import { applyPolicy, decide, decidePolicyDenial, decideWithoutRobots } from '../policy/decide.js';
import type { Decision, DecisionIdentity } from '../policy/decision.js';
import { identifyAgent, outgoingUserAgent, type AgentIdentification, type Identity } from '../policy/identity.js';
import type { AccessControl, Admission, AdmissionContext, AdmittedClient } from '../access/access-control.js';
import { throttleKeyOf } from '../access/auth-throttle.js';
import { clientPeerOf } from '../access/client-peer.js';
import { compilePolicy, type CompiledPolicy, type PolicyMatch, type PolicyRequest } from '../policy/operator-policy.js';
import type { RobotsSnapshot } from '../policy/snapshot.js';
import { extractProductTokens, USER_AGENT_SCAN_LIMIT_CHARS } from '../robots/agent.js';
import type { AccessEntry } from '../audit/access-entry.js';
import type { LimitEvent } from '../audit/limit-events.js';
import { awaitsContinue, upstreamRequestFields } from './headers.js';
import { CLIENT_WRITE_TIMEOUT, isTimeoutCode, type RelayOutcome, type UpstreamForwarder } from './forwarder.js';
import { CLIENT_BODY_TIMEOUT, watchRequestBody } from './body-watchdog.js';
import { certificateFaultWords, isCertificateError, renderProxyResponse } from './responses.js';
import { InFlightList } from './in-flight-list.js';
import { answerAsFinalRecipient, maxForwardsOf } from './max-forwards.js';
import { ByteCounter, ProxiedExchange, recordPacing } from './proxied-exchange.js';
import { originOf, pathAndQueryOf } from './target-origin.js';
import { connectionPortOf as portOf, type TargetUrl } from './canonical-target.js';
import { requestIdOf } from './request-id.js';
import type { TargetCheck, TargetGuard } from './target-guard.js';
import { NON_PUBLIC_ADDRESS, OWN_LISTENER_CODE, PRIVATE_TARGET_CODE } from './target-guard.js';
import type { RequestBoundary } from './error-boundary.js';

/** Where robots snapshots come from (the robots cache). */
export interface SnapshotSource {
  /** The origin's current robots snapshot; fetched at most once at a time per origin. Never rejects. */
  get(origin: string): Promise<RobotsSnapshot>;
  /**
   * The origin's snapshot at once, when it is cached, fresh and the store answers synchronously
   * (counted as a cache hit); undefined otherwise: then call `get`. Spares a fresh entry's
   * request the promises of `get` (issue 11). Never throws.
   */
  getFresh?(origin: string): RobotsSnapshot | undefined;
}

/** Collaborators of the pipeline. */
export interface PipelineDeps {
  /** The configuration at start; {@link RequestPipeline.setConfig} replaces it on a reload. */
  config: Config;
  robots: SnapshotSource;
  pacer: RequestPacer;
  forwarder: UpstreamForwarder;
  guard: TargetGuard;
  clock: Clock;
  /** `Via` pseudonym of this instance. */
  viaPseudonym: string;
  /** Called once per request, whatever the outcome (access log + metrics). */
  onFinished: (entry: AccessEntry) => void;
  /** Told when a request holds its slot past `pacing.maxSlotHold` (counted and logged). */
  onLimit?: (event: LimitEvent) => void;
  /** Admission: client ranges and proxy credentials -> identity (src/access/). */
  access: Pick<AccessControl, 'admit'>;
}

/**
 * The policy rule a request matched in {@link RequestPipeline.decideFor} (undefined: none), with
 * the compiled policy it was matched against: {@link RequestPipeline.waitForSlot} paces by it
 * without matching again, unless a reload has put another policy in force since.
 */
export interface MatchedPolicy {
  readonly policy: CompiledPolicy;
  readonly rule: PolicyMatch | undefined;
}

/** One request to handle. */
export interface ProxiedRequest {
  req: IncomingMessage;
  res: ServerResponse;
  /** The absolute target URL (http: or https:). */
  target: TargetUrl;
  /** `http` (absolute-form), `https-intercepted` (TLS inside CONNECT) or `http-tunnelled` (plain HTTP inside CONNECT). */
  via: 'http' | 'https-intercepted' | 'http-tunnelled';
  /** The CONNECT's admission, for a request inside a tunnel (it covers every request in the tunnel). */
  tunnel?: AdmittedClient;
  /** The listener's error boundary: {@link RequestPipeline.handle} reports a bug there and never rejects. */
  boundary: RequestBoundary;
}


/**
 * Who a request is to the pacer's fairness (the origin's queue serves identities round-robin,
 * `pacing.maxQueuePerIdentity` bounds each one's waiting requests): the name of the identity its
 * proxy credentials or client range establish (`decision.identity`, issue 8), so every
 * connection and address of one identity shares its turn; else the client's address as the
 * failure throttle keys it with a prefix length: `a.b.c.d/32`, or an IPv6 client's `/64` (one
 * host commonly holds a whole /64, and would otherwise take one turn and one queue budget per
 * address it sends from). The `/` keeps anonymous keys apart from identity names, which cannot
 * contain it (a valid name such as `10.0.0.5` is not the anonymous client 10.0.0.5). Never throws.
 * @returns the fairness key; '' when there is no identity and the address is unknown (the socket already closed).
 */
export function identityOf(req: IncomingMessage, decision?: Pick<Decision, 'identity'>): string {
  const name = decision?.identity?.name;
  if (name !== undefined) return name;
  const address = clientPeerOf(req.socket).address;
  if (address === '') return '';
  // A crawler's requests come from a few addresses: the last one's key is kept (one string compare, no concatenation per request, issue 11).
  if (address === lastIdentityAddress) return lastIdentityKey;
  const key = throttleKeyOf(address);
  lastIdentityKey = key.includes('/') ? key : `${key}/32`;
  lastIdentityAddress = address;
  return lastIdentityKey;
}

/** The address {@link identityOf} last keyed, and its key. */
let lastIdentityAddress: string | undefined;
let lastIdentityKey = '';

/** Compiles the configured policy: `policy.rules`, then the deprecated `hosts` entries as `pace` rules. */
function compileConfiguredPolicy(config: Config): CompiledPolicy {
  return compilePolicy([...config.policy.rules, ...hostOverrideRules(config.hosts)]);
}

/** True for the error codes of connections the target guard refused. */
function isGuardRefusal(code: string | undefined): boolean {
  return code === PRIVATE_TARGET_CODE || code === OWN_LISTENER_CODE;
}

/** What {@link RequestPipeline.decideFor} answers. */
export interface DecidedRequest {
  /** The decision (its `identity` filled in); fresh per request: the caller may add pacing and upstream facts. */
  decision: Decision;
  /** The User-Agent's candidate product tokens. */
  productTokens: string[];
  /** The facts the policy matched (for {@link RequestPipeline.waitForSlot}). */
  policyRequest: PolicyRequest;
  /** Once the policy was matched (the request was not refused before it), the rule, for {@link RequestPipeline.waitForSlot}. */
  matched?: MatchedPolicy;
}

/** What a decision carries from one step to the next while the guard or the robots cache is awaited. */
interface DecideFacts {
  target: TargetUrl;
  userAgent: string | undefined;
  productTokens: string[];
  identified: AgentIdentification;
  policyRequest: PolicyRequest;
}

/** The shared request pipeline (identify, decide, pace, forward, audit). One per proxy. */
export class RequestPipeline {
  /** Candidate tokens per User-Agent header: bots send the same few headers over and over. */
  private readonly tokensByUserAgent = new LRUCache<string, string[]>({ max: 1000 });
  /** The configuration in force (`pacing.minDelay` and `enforcement` are read per request). */
  private config: Config;
  /** The configuration's policy rules, compiled once per load. */
  private policy: CompiledPolicy;
  private isDraining = false;
  /** Requests between arrival and their access line; each entry ends one of them early with an error code. */
  private readonly inFlight = new InFlightList();
  /** The User-Agent header of the latest request and its candidate tokens (see {@link RequestPipeline.tokensOf}). */
  #lastUserAgent: string | undefined = undefined;
  #lastTokens: string[] | undefined = undefined;

  constructor(private readonly deps: PipelineDeps) {
    this.config = deps.config;
    this.policy = compileConfiguredPolicy(deps.config);
  }

  /**
   * Swaps in a reloaded configuration: requests decided from now on, and those still queued
   * (see {@link RequestPipeline.waitForSlot}), use its policy rules, enforcement and pacing minimums.
   * The rules are compiled here, once.
   */
  setConfig(config: Config): void {
    this.config = config;
    this.policy = compileConfiguredPolicy(config);
  }

  /**
   * Starts a drain: from now on every new request is answered at once with 503
   * `proxy-shutting-down` (no robots.txt fetch, nothing upstream); requests already
   * in the pipeline go on. Irreversible.
   */
  beginDrain(): void {
    this.isDraining = true;
  }

  /** Requests that arrived and have not yet written their access line (queued ones included). */
  get requestsInFlight(): number {
    return this.inFlight.size;
  }

  /**
   * Writes the access line of every request still in flight now, with `error` (e.g.
   * `PROXY_DRAIN_TIMEOUT`), before their connections are cut or the process exits, so no
   * request goes unaudited. Their own ending later writes nothing more. Never throws.
   * @returns how many requests were ended.
   */
  abandonInFlight(error: string): number {
    const pending = this.inFlight.toArray();
    for (const request of pending) {
      try {
        request.end(error);
      } catch {
        // One broken entry must not keep the others from their access line.
      }
    }
    return pending.length;
  }

  private tokensOf(userAgent: string | undefined): string[] {
    // Bots send the same header request after request: the last one answers without the LRU's bookkeeping.
    if (userAgent === this.#lastUserAgent && this.#lastTokens !== undefined) return this.#lastTokens;
    // Extraction reads only the first USER_AGENT_SCAN_LIMIT_CHARS characters (and whether there are
    // more), so that prefix is the key: headers that differ later share one entry, and a cache entry
    // costs at most the limit however long the header.
    const header = userAgent ?? '';
    const key = header.length > USER_AGENT_SCAN_LIMIT_CHARS ? header.slice(0, USER_AGENT_SCAN_LIMIT_CHARS + 1) : header;
    let tokens = this.tokensByUserAgent.get(key);
    if (tokens === undefined) {
      tokens = extractProductTokens(key);
      this.tokensByUserAgent.set(key, tokens);
    }
    this.#lastUserAgent = userAgent;
    this.#lastTokens = tokens;
    return tokens;
  }

  /**
   * Admits a request, CONNECT or Upgrade (client range, proxy credentials -> identity, see
   * `src/access/access-control.ts`), before anything is fetched or sent upstream. Never rejects.
   */
  admit(req: IncomingMessage, context: AdmissionContext): Admission | Promise<Admission> {
    return this.deps.access.admit(req, context);
  }

  /**
   * Decides a request without forwarding it: the identity's binding (a bound identity is
   * decided for its bound tokens; a mismatching User-Agent with `onMismatch: deny` is refused
   * `identity-mismatch`), the private-network guard, then the operator's policy rules
   * (`policy.rules`, matched on the identity's name, the tokens the request is decided for, the
   * origin, path and `method`): an enforced `deny` is answered before robots.txt is fetched, so
   * nothing reaches the origin; otherwise robots.txt decides, with the rule and `enforcement` on
   * top ({@link applyPolicy}). The identity check and the private-network guard refuse in every
   * enforcement mode: they protect the proxy. Used by the pipeline, by tunnel-mode CONNECT, by
   * Upgrades and by the admin `explain` endpoint. Never rejects; answers at once (no promise)
   * when the guard and the robots cache can (an IP literal or a cached name, a fresh snapshot),
   * so `await` it.
   * @param identity who the client is (admission, `src/access/`), or null for none.
   * @param method the request's method (`CONNECT` for a tunnel-mode CONNECT), for `method:` rules.
   * @returns the decision (its `identity` filled in), the User-Agent's candidate product tokens,
   *   the facts the policy matched and, once matched, the rule (both for {@link RequestPipeline.waitForSlot}).
   */
  decideFor(target: TargetUrl, userAgent: string | undefined, identity: Identity | null = null, method = 'GET'): DecidedRequest | Promise<DecidedRequest> {
    return this.#decide(target, originOf(target), pathAndQueryOf(target), userAgent, this.tokensOf(userAgent), identity, method);
  }

  /** {@link RequestPipeline.decideFor} with the origin, path and tokens the caller already has. */
  #decide(
    target: TargetUrl,
    origin: string,
    path: string,
    userAgent: string | undefined,
    productTokens: string[],
    identity: Identity | null,
    method: string,
  ): DecidedRequest | Promise<DecidedRequest> {
    const identified = identifyAgent(identity, productTokens);
    // Rules match the tokens the request is decided for: a bound identity's, whatever its User-Agent claims.
    const policyRequest: PolicyRequest = { identity: identified.identity?.name ?? null, productTokens: identified.productTokens, origin, pathAndQuery: path, method };
    if (identified.isRefused) {
      const detail = `identity ${identified.identity?.name} is bound to ${identified.identity?.boundTokens.join(', ')}; the User-Agent names ${productTokens.length > 0 ? productTokens.join(', ') : 'no product token'} (onMismatch: deny)`;
      return { decision: decideWithoutRobots('identity-mismatch', { origin, path, agentTokens: identified.productTokens, identity: identified.identity, detail }), productTokens, policyRequest };
    }
    const facts: DecideFacts = { target, userAgent, productTokens, identified, policyRequest };
    // Judged at once for IP literals and cached names; a name to resolve waits for the resolver.
    const port = portOf(target);
    const guarded = this.deps.guard.checkNow(target.hostname, port);
    if (guarded === undefined) return this.deps.guard.check(target.hostname, port).then((checked) => this.#decideGuarded(facts, checked));
    return this.#decideGuarded(facts, guarded);
  }

  /** The decision once the target guard has answered: its refusal, an enforced policy `deny`, or robots.txt's. */
  #decideGuarded(facts: DecideFacts, guarded: TargetCheck): DecidedRequest | Promise<DecidedRequest> {
    const { target, userAgent, productTokens, identified, policyRequest } = facts;
    if (!guarded.allowed) return { decision: this.#targetRefusal(guarded, target, userAgent, identified.identity), productTokens, policyRequest };
    const policy = this.policy;
    const rule = policy.match(policyRequest);
    if (rule?.action === 'deny' && this.config.enforcement === 'enforce') {
      const denial = decidePolicyDenial(rule, { origin: policyRequest.origin, path: policyRequest.pathAndQuery, agentTokens: identified.productTokens, identity: identified.identity });
      return { decision: denial, productTokens, policyRequest };
    }
    // A fresh cached snapshot is read at once; otherwise the cache fetches (once per origin at a time).
    const snapshot = this.deps.robots.getFresh?.(policyRequest.origin);
    const matched: MatchedPolicy = { policy, rule };
    if (snapshot === undefined) return this.deps.robots.get(policyRequest.origin).then((fetched) => this.#decideByRobots(facts, matched, fetched));
    return this.#decideByRobots(facts, matched, snapshot);
  }

  /** robots.txt's decision (RFC 9309 §2.2.2), a refused robots.txt fetch named for what refused it, then the policy rule on top. */
  #decideByRobots(facts: DecideFacts, matched: MatchedPolicy, snapshot: RobotsSnapshot): DecidedRequest {
    const { productTokens, identified, policyRequest } = facts;
    const origin = policyRequest.origin;
    const decision = decide(snapshot, { origin, pathAndQuery: policyRequest.pathAndQuery, productTokens: identified.productTokens, identity: identified.identity });
    if (decision.reason === 'robots-unreachable' && isCertificateError(snapshot.info.error)) {
      decision.reason = 'upstream-error';
      decision.upstream = { error: snapshot.info.error };
      decision.detail = `fetching ${origin}/robots.txt: the upstream TLS certificate ${certificateFaultWords(snapshot.info.error)}`;
    } else if (decision.reason === 'robots-unreachable' && isGuardRefusal(snapshot.info.error)) {
      // The robots.txt fetch (or one of its redirects) was refused by the target guard at connect time.
      decision.reason = 'target-private-network';
      decision.detail =
        snapshot.info.error === OWN_LISTENER_CODE
          ? `fetching ${origin}/robots.txt led to a listener of this proxy; refused`
          : `fetching ${origin}/robots.txt led to ${NON_PUBLIC_ADDRESS}; refused`;
    }
    return { decision: applyPolicy(decision, matched.rule, this.config.enforcement), productTokens, policyRequest, matched };
  }

  /**
   * The private-network guard alone (no robots.txt): what can be known about a
   * target before any request to it, e.g. at CONNECT time. Never rejects.
   * @param identity the identity facts to carry on a refusal (see {@link Decision.identity}).
   * @returns the `target-private-network` refusal, or undefined when the target may be contacted.
   */
  async checkTarget(target: TargetUrl, userAgent: string | undefined, identity: DecisionIdentity | null = null): Promise<Decision | undefined> {
    const guarded = await this.deps.guard.check(target.hostname, portOf(target));
    return guarded.allowed ? undefined : this.#targetRefusal(guarded, target, userAgent, identity);
  }

  /** The refusal of a target the guard refused: `bad-request` for this proxy's own listener, else `target-private-network`. */
  #targetRefusal(guarded: Extract<TargetCheck, { allowed: false }>, target: TargetUrl, userAgent: string | undefined, identity: DecisionIdentity | null): Decision {
    const fields = { origin: target.origin, path: pathAndQueryOf(target), agentTokens: this.tokensOf(userAgent), identity };
    const at = target.hostname === guarded.address ? guarded.address : `${target.hostname} (${guarded.address})`;
    return guarded.code === OWN_LISTENER_CODE
      ? decideWithoutRobots('bad-request', { ...fields, detail: `${at} port ${guarded.port} is this proxy's own listener (forwarding loop)` })
      : decideWithoutRobots('target-private-network', { ...fields, detail: `${at} is ${NON_PUBLIC_ADDRESS}` });
  }

  /**
   * Waits in the origin's queue for a start slot, with the delay of
   * {@link RequestPipeline.delayFor}. Records the pacing facts on `decision`;
   * when the queue refuses (`queue-full`), turns it into that refusal. Shared
   * by plain requests, tunnel-mode CONNECTs and Upgrades. Never rejects.
   * @param policyRequest what the policy rules match (from {@link RequestPipeline.decideFor}): the
   *   pacing of the rule that matches it now, and again after a reload while it waits.
   * @param identity whose turn the request waits for in the origin's round-robin ({@link identityOf}).
   * @param onHoldExceeded called if the pacer reclaims the slot at `pacing.maxSlotHold` (ms held).
   * @param matched the rule `decideFor` matched, so the policy is not matched again (unless reloaded since).
   * @returns the slot, or why there is none (`aborted`: the client left while queued).
   */
  async waitForSlot(
    decision: Decision,
    policyRequest: PolicyRequest,
    identity: string,
    signal: AbortSignalLike,
    onHoldExceeded?: (heldMs: number) => void,
    matched?: MatchedPolicy,
  ): Promise<{ slot: Slot } | { refusal: Refusal['reason'] }> {
    const limits = this.delayFor(decision, policyRequest, matched);
    const startedAtMs = this.deps.clock.nowMs();
    const options = this.#acquireOptions(decision, policyRequest, limits, identity, signal, onHoldExceeded);
    const outcome = await this.deps.pacer.acquire(decision.origin, limits.delayMs, options);
    recordPacing(decision, outcome, limits.delayMs, startedAtMs, this.deps.clock);
    return outcome.granted ? { slot: outcome.slot } : { refusal: outcome.refusal.reason };
  }

  /** The pacer's options for a request with `limits` ({@link RequestPipeline.delayFor}). */
  #acquireOptions(
    decision: Decision,
    policyRequest: PolicyRequest,
    limits: RequestLimits & { maxConcurrency: number | undefined },
    identity: string,
    signal: AbortSignalLike,
    onHoldExceeded: ((heldMs: number) => void) | undefined,
  ): AcquireOptions {
    const maxConcurrency = limits.maxConcurrency;
    // A reload while this request waits re-reads the policy rules and operator minimums through `limits`.
    const options: AcquireOptions = { identity, signal, limits: () => this.delayFor(decision, policyRequest) };
    // Written only when set (the pacer tells an absent field from an undefined one nowhere, but its
    // options stay as they were); plain writes, no conditional spreads: each spread made an object (issue 11).
    if (maxConcurrency !== undefined) options.maxConcurrency = maxConcurrency;
    if (onHoldExceeded !== undefined) options.onHoldExceeded = onHoldExceeded;
    return options;
  }

  /**
   * The delay before this request may start, ms: its group's crawl-delay, clamped to
   * `pacing.maxCrawlDelay`, raised to the minimum of the policy rule that matches
   * `policyRequest` (else `pacing.minDelay`) and to the rule's rate cap (`periodMs / requests`):
   * a rule never lowers the site's Crawl-delay. 0 with `pacing.enabled: false`. The rule's
   * `maxConcurrency` replaces `pacing.maxConcurrency`. Always finite.
   * @param matched the rule already matched, used while its policy is still the one in force.
   */
  private delayFor(decision: Decision, policyRequest: PolicyRequest, matched?: MatchedPolicy): RequestLimits & { maxConcurrency: number | undefined } {
    const rule = matched !== undefined && matched.policy === this.policy ? matched.rule : this.policy.match(policyRequest);
    const { pacing } = this.config;
    const maxConcurrency = rule?.pacing.maxConcurrency;
    if (!pacing.enabled) return { delayMs: 0, maxConcurrency };
    const crawlDelayMs = crawlDelayMsOf(decision.crawlDelaySeconds, pacing.maxCrawlDelayMs);
    const delayMs = Math.max(crawlDelayMs, rule?.pacing.minDelayMs ?? pacing.minDelayMs, rule?.pacing.rateDelayMs ?? 0);
    return { delayMs, maxConcurrency };
  }

  /**
   * Handles one proxied request end to end: admit, decide, pace, forward, audit. The request is
   * one {@link ProxiedExchange} record carried through the steps below, each called at once when
   * the one before answers at once, else from its promise: the admission's (only when credentials
   * are verified), the decision's (only when the guard or the robots cache must wait), the
   * pacer's (only when the request must wait for its slot); the relay's end comes back through
   * the exchange ({@link RelayHooks.onSettled}). No async frame, promise or microtask per request
   * when nothing waits (issue 11). Never throws: a bug is reported to `p.boundary` (500 or a
   * close, logged and audited), once the request no longer counts in flight; so the listener
   * attaches no rejection handler (no closure, no promise per request).
   */
  handle(p: ProxiedRequest): void {
    let exchange: ProxiedExchange | undefined;
    try {
      const userAgent = p.req.headers['user-agent'];
      const x = new ProxiedExchange(p, this.deps, this.inFlight, userAgent, this.tokensOf(userAgent), this.#relayed);
      exchange = x;
      // Admission first (src/access/): a client that may not use the proxy costs no robots.txt fetch.
      const admitted = this.isDraining ? undefined : this.admit(p.req, p.tunnel ? { origin: x.origin, tunnel: p.tunnel } : { origin: x.origin });
      // Admission answers at once unless credentials are verified.
      if (admitted instanceof Promise) admitted.then((a) => this.#decideAdmitted(x, a), (err: unknown) => this.#fail(x.p, x, err));
      else this.#decideAdmitted(x, admitted);
    } catch (err) {
      this.#fail(p, exchange, err);
    } finally {
      // What runs from now on (after an await, a queue, the relay) reads the clock itself.
      if (exchange !== undefined) exchange.isArrivalTurn = false;
    }
  }

  /** {@link RequestPipeline.handle}'s second step: the decision (undefined: draining, nothing decided). Never throws. */
  #decideAdmitted(x: ProxiedExchange, admitted: Admission | undefined): void {
    try {
      if (admitted === undefined) x.decision = x.shuttingDown();
      else if (!admitted.isAdmitted) x.decision = admitted.refusal;
      else {
        x.identity = admitted.identity;
        // RFC 9110 §7.6.2: a TRACE or OPTIONS with Max-Forwards: 0 is the proxy's to answer.
        if (maxForwardsOf(x.p.req) === 0) return this.#answerMaxForwards(x, admitted.identity);
        // #decide returns a fresh Decision per request: the pipeline owns it and fills in pacing and upstream facts.
        const decided = this.#decide(x.p.target, x.origin, x.path, x.userAgent, x.productTokens, admitted.identity, x.p.req.method ?? 'GET');
        if (decided instanceof Promise) decided.then((d) => this.#pace(x, d), (err: unknown) => this.#fail(x.p, x, err));
        else this.#pace(x, decided);
        return;
      }
      this.#pace(x, undefined);
    } catch (err) {
      this.#fail(x.p, x, err);
    }
  }

  /** {@link RequestPipeline.handle}'s third step: the refusal answered, or the wait for a start slot. Never throws. */
  #pace(x: ProxiedExchange, decided: DecidedRequest | undefined): void {
    try {
      if (x.isFinished) return; // cut (drain timeout, fatal error) while robots.txt was fetched
      if (decided !== undefined) x.decision = decided.decision;
      const decision = x.decision as Decision;
      const { req, res } = x.p;
      if (decision.verdict === 'deny' || decision.reason === 'upstream-error' || decided === undefined) {
        x.status = this.respond(res, req, decision);
        return x.finish();
      }
      const limits = this.delayFor(decision, decided.policyRequest, decided.matched);
      x.delayMs = limits.delayMs;
      x.waitStartedAtMs = x.nowMs();
      const options = this.#acquireOptions(decision, decided.policyRequest, limits, identityOf(req, decision), x.abort, x.onHoldExceeded);
      // A free slot is granted synchronously; a request that waits is a record in the origin's
      // queue, and the exchange is told the answer (x.takeSlot, then #paced): no promise (issue 11).
      x.onPaced = this.#paced;
      const outcome = this.deps.pacer.acquireFor(decision.origin, limits.delayMs, options, x);
      if (outcome !== undefined) this.#forward(x, outcome);
    } catch (err) {
      this.#fail(x.p, x, err);
    }
  }

  /** {@link RequestPipeline.handle}'s fourth step: the pacer's answer recorded, then the refusal answered or the request relayed. Never throws. */
  #forward(x: ProxiedExchange, outcome: AcquireOutcome): void {
    try {
      const decision = x.decision as Decision;
      recordPacing(decision, outcome, x.delayMs, x.waitStartedAtMs, this.deps.clock);
      if (!outcome.granted) {
        // Refused by the queue (429) or by the drain (503); a client that left while queued gets nothing.
        if (outcome.refusal.reason === 'aborted') x.error = 'CLIENT_ABORTED';
        else x.status = this.respond(x.p.res, x.p.req, decision);
        return x.finish();
      }
      this.#sendUpstream(x, outcome.slot, x.identity);
    } catch (err) {
      this.#fail(x.p, x, err);
    }
  }

  /** {@link RequestPipeline.handle}'s fourth step for a request that waited, told by the exchange (the pacer's taker). Never throws. */
  readonly #paced = (x: ProxiedExchange, outcome: AcquireOutcome): void => this.#forward(x, outcome);

  /** {@link RequestPipeline.handle}'s last step, told by the exchange when the relay ends: the outcome recorded, the access entry written. Never throws. */
  readonly #relayed = (x: ProxiedExchange, relayed: RelayOutcome): void => {
    try {
      this.#settleRelay(x, relayed);
      x.finish();
    } catch (err) {
      this.#fail(x.p, x, err);
    }
  };

  /** A bug while handling `p`: the request leaves the in-flight list and goes to the listener's error boundary. Never throws. */
  #fail(p: ProxiedRequest, x: ProxiedExchange | undefined, err: unknown): void {
    if (x !== undefined) this.inFlight.delete(x);
    p.boundary.fail(p.req, p.res, x?.startedAtMs ?? this.deps.clock.nowMs(), err);
  }

  /**
   * A TRACE or OPTIONS with `Max-Forwards: 0` (RFC 9110 §7.6.2): answered by the proxy as the
   * final recipient, after admission and before robots.txt (nothing reaches the origin).
   */
  #answerMaxForwards(x: ProxiedExchange, identity: Identity | null): void {
    const { req, res } = x.p;
    const identified = identifyAgent(identity, x.productTokens);
    const decision = decideWithoutRobots('max-forwards', {
      verdict: 'allow',
      origin: x.origin,
      path: x.path,
      agentTokens: identified.productTokens,
      identity: identified.identity,
      detail: `${req.method} with Max-Forwards: 0 answered by the proxy`,
    });
    x.decision = decision;
    const rendered = renderProxyResponse(decision, { accept: undefined, nowMs: this.deps.clock.nowMs(), requestId: requestIdOf(req) });
    const answered = answerAsFinalRecipient(req, res, rendered.headers);
    x.status = answered.status;
    x.bytesSent = answered.bytesSent;
    x.finish();
  }

  /** Sends an allowed request upstream on its slot, relaying the answer into the response (the exchange is the relay's hooks; its end comes back through {@link RequestPipeline.#relayed}). */
  #sendUpstream(x: ProxiedExchange, slot: Slot, identity: Identity | null): void {
    const { req, res } = x.p;
    x.slot = slot;
    x.queueWaitMs = slot.waitedMs;
    x.upstreamStarted = x.nowMs();
    const hasBody = req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined;
    // Crawlers rarely send bodies; only then is a counting stage put in the way.
    const body = hasBody ? req.pipe(new ByteCounter()) : null;
    if (body !== null) {
      x.body = body;
      const { requestBodyTimeoutMs } = this.config.clients;
      x.stopBodyWatch = watchRequestBody(req, requestBodyTimeoutMs, () => {
        // The upstream exchange cannot complete without the body: abandon it (undici aborts on the body's error).
        x.isBodyTimedOut = true;
        x.bodyTimeoutMs = requestBodyTimeoutMs;
        req.unpipe(body);
        body.destroy(Object.assign(new Error(`no request body bytes for ${requestBodyTimeoutMs} ms`), { code: CLIENT_BODY_TIMEOUT }));
      });
    }
    // The listeners hold back Node's automatic 100 Continue (checkContinue): the request is allowed
    // and its slot granted, so the client may send its body now.
    if (awaitsContinue(req)) res.writeContinue();
    const maxForwards = maxForwardsOf(req);
    const sentUserAgent = outgoingUserAgent(identity, x.userAgent, x.productTokens);
    const headers = upstreamRequestFields(req.headers, req.httpVersion, this.deps.viaPseudonym, x.p.target.host, maxForwards === undefined ? undefined : String(maxForwards - 1), sentUserAgent);
    // The exchange's `close` listener tells the relay (one listener per response, not two).
    const relay = this.deps.forwarder.relay({ origin: (x.decision as Decision).origin, method: req.method ?? 'GET', path: x.path, headers, body }, res, x, true);
    // A relay that settled within `relay` (its dispatch threw) has already been told to the exchange.
    if (!x.isRelaySettled) x.relay = relay;
  }

  /** Records how the relay ended on `x` and its Decision: the upstream's answer, a client timeout (408 or a close), or an upstream failure (502/504, or a close). */
  #settleRelay(x: ProxiedExchange, relayed: RelayOutcome): void {
    const { req, res } = x.p;
    const decision = x.decision as Decision;
    x.stopBodyWatch?.();
    // A head whose body failed before its first byte was never handed to the exchange: its status
    // still frees the slot as the origin's answer (a 429/503 pauses the origin).
    if (decision.upstream === undefined && relayed.status !== undefined) decision.upstream = { status: relayed.status };
    x.onUpstreamEnd();
    x.upstreamStatus = relayed.status ?? null;
    // A client that left before the origin's head (the exchange ran on until it: forwarder.ts clientClosed) got nothing.
    x.status = relayed.clientAborted && !res.headersSent ? 0 : (relayed.status ?? 0);
    x.bytesSent = relayed.bytesSent;
    x.bytesReceived = x.body?.bytes ?? 0;
    if (x.isBodyTimedOut || relayed.error === CLIENT_WRITE_TIMEOUT) {
      // The client was too slow: the request stays allowed; the outcome is the client's timeout.
      x.error = x.isBodyTimedOut ? CLIENT_BODY_TIMEOUT : CLIENT_WRITE_TIMEOUT;
      decision.reason = 'client-timeout';
      decision.detail = x.isBodyTimedOut
        ? `the request body stalled: no bytes for ${x.bodyTimeoutMs} ms (clients.requestBodyTimeout)`
        : `the client left the response unread for ${this.config.clients.responseWriteTimeoutMs} ms (clients.responseWriteTimeout)`;
      // 408 with Connection: close while nothing was sent (the unread body makes the connection unusable); else a close.
      if (!res.headersSent && !res.destroyed) x.status = this.respond(res, req, decision, { close: true });
      else res.destroy();
    } else if (relayed.error !== undefined) {
      x.error = relayed.error;
      if (!relayed.clientAborted) {
        const reason = isGuardRefusal(relayed.error) ? 'target-private-network' : 'upstream-error';
        decision.upstream = { ...(relayed.status !== undefined ? { status: relayed.status } : {}), error: relayed.error, timedOut: isTimeoutCode(relayed.error) };
        if (reason === 'target-private-network') decision.verdict = 'deny';
        decision.reason = reason;
        if (!res.headersSent) x.status = this.respond(res, req, decision);
        else res.destroy();
      }
    }
  }

  /** Writes the proxy's own response for `decision` (`close`: with `Connection: close`); returns its status. */
  private respond(res: ServerResponse, req: IncomingMessage, decision: Decision, options: { close?: boolean } = {}): number {
    const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: this.deps.clock.nowMs(), requestId: requestIdOf(req) });
    if (res.headersSent || res.destroyed) return rendered.status;
    // A client told to wait for 100 Continue may never send the body it announced: close rather than read it as the next request.
    const close = options.close || awaitsContinue(req) ? { connection: 'close' } : {};
    res.writeHead(rendered.status, { ...rendered.headers, 'content-length': String(Buffer.byteLength(rendered.body)), ...close });
    res.end(req.method === 'HEAD' ? undefined : rendered.body);
    // A request body we will not read must not keep the connection busy.
    if (!req.complete) req.resume();
    return rendered.status;
  }
}
