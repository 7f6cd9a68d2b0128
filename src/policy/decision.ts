/**
 * The Decision: one object that carries the verdict for a request, and its
 * reason, from the matcher to every place that shows it (the 403 body, the
 * `X-Robots-Proxy-Decision` header, the log line, the metrics labels, the
 * admin `explain` answer). Nobody re-derives the reason.
 */
import type { PolicyAction } from '../config/types.js';
import type { RuleKind } from '../robots/types.js';

/**
 * Why a request was allowed or refused. A closed set: it is a metrics label.
 * - `rule-allow` / `rule-disallow`: a rule matched (RFC 9309 §2.2.2).
 * - `no-matching-rule`: a group applied but no rule matched, or no group applied (allowed).
 * - `robots-txt-itself`: the request is for `/robots.txt`, always allowed (§2.2.2).
 * - `robots-unavailable`: robots.txt answered 4xx (or too many redirects): allow all (§2.3.1.3).
 * - `robots-unreachable`: 5xx, 429, timeout or network error: disallow all (§2.3.1.4).
 * - `operator-policy`: refused by an operator policy rule with action `deny` (`policy.rule` names it).
 * - `operator-allow`: allowed by an operator policy rule with action `allow`, whatever robots.txt
 *   says (still paced by its Crawl-delay when it has one).
 * - `report-only`: forwarded although it would have been refused (`enforcement: report`, or a
 *   rule with action `report`); `wouldDeny` holds the reason it would have had.
 * - `target-private-network`: the target resolves to a loopback/private/link-local address.
 * - `client-not-allowed`: the client's address is in none of `access.clients` (403).
 * - `proxy-auth-required`: proxy credentials are required and were missing or wrong
 *   (407 with `Proxy-Authenticate`, RFC 9110 §11.7.1).
 * - `proxy-auth-throttled`: the client's address spent its budget of failed credential checks
 *   (`access.maxAuthFailures` per `access.authFailureWindow`), or `access.maxCredentialChecks`
 *   checks of new credentials were already running; answered 429 with `Retry-After` without
 *   checking the credentials.
 * - `identity-mismatch`: a bound identity's User-Agent names none of its tokens and
 *   `onMismatch` is `deny` (403); or, at admission, a client of a `binding` client range sent
 *   valid proxy credentials for another identity (403, no identity facts).
 * - `queue-full`: the per-origin queue is full or the wait would exceed `pacing.maxWait`.
 * - `bad-request`: not a proxy request (no absolute URL, bad host).
 * - `upstream-error`: allowed, but the upstream failed or timed out.
 * - `client-timeout`: allowed, but the client was too slow: its request body stalled past
 *   `clients.requestBodyTimeout` (408), or it left the response unread past
 *   `clients.responseWriteTimeout` (the connection is closed).
 * - `misdirected`: inside a CONNECT tunnel, the request names another origin than the CONNECT target.
 * - `tunnel-denied`: CONNECT refused because `https.mode` is `deny`.
 * - `internal-error`: the proxy failed while handling the request (a bug caught by an error boundary; answered 500).
 * - `proxy-shutting-down`: the proxy is draining before it exits (SIGTERM/SIGINT): the request
 *   arrived, or was still queued, after the drain began; answered 503 with `Retry-After`.
 * - `fleet-unavailable`: the fleet's shared state (Redis) does not answer and
 *   `state.redis.onUnavailable` is `deny`; answered 503 with `Retry-After` (issue 10).
 * - `max-forwards`: a TRACE or OPTIONS with `Max-Forwards: 0`, answered by the proxy itself
 *   as the final recipient (200; RFC 9110 §7.6.2); nothing reaches the origin.
 * - `transfer-coding-not-implemented`: the request's `Transfer-Encoding` names a transfer coding
 *   other than a single final `chunked` (e.g. `gzip, chunked`), which the proxy cannot decode nor
 *   pass on: answered 501 with `Connection: close` before robots.txt or pacing (RFC 9112 §6.1).
 */
export type DecisionReason =
  | 'rule-allow'
  | 'rule-disallow'
  | 'no-matching-rule'
  | 'robots-txt-itself'
  | 'robots-unavailable'
  | 'robots-unreachable'
  | 'operator-policy'
  | 'operator-allow'
  | 'report-only'
  | 'target-private-network'
  | 'client-not-allowed'
  | 'proxy-auth-required'
  | 'proxy-auth-throttled'
  | 'identity-mismatch'
  | 'queue-full'
  | 'bad-request'
  | 'upstream-error'
  | 'client-timeout'
  | 'misdirected'
  | 'tunnel-denied'
  | 'internal-error'
  | 'proxy-shutting-down'
  | 'fleet-unavailable'
  | 'max-forwards'
  | 'transfer-coding-not-implemented';

/** The reasons robots.txt itself gives (RFC 9309 §2.2.2, §2.3.1); an operator's `allow` or `report` rule overrides only these. */
export const ROBOTS_REASONS: readonly DecisionReason[] = [
  'rule-allow',
  'rule-disallow',
  'no-matching-rule',
  'robots-txt-itself',
  'robots-unavailable',
  'robots-unreachable',
];

/** Every {@link DecisionReason}, for metrics pre-registration and validation. */
export const DECISION_REASONS: readonly DecisionReason[] = [
  ...ROBOTS_REASONS,
  'operator-policy',
  'operator-allow',
  'report-only',
  'target-private-network',
  'client-not-allowed',
  'proxy-auth-required',
  'proxy-auth-throttled',
  'identity-mismatch',
  'queue-full',
  'bad-request',
  'upstream-error',
  'client-timeout',
  'misdirected',
  'tunnel-denied',
  'internal-error',
  'proxy-shutting-down',
  'fleet-unavailable',
  'max-forwards',
  'transfer-coding-not-implemented',
];

/** `allow` or `deny`. */
export type Verdict = 'allow' | 'deny';

/** The rule that decided, as written in the file (RFC 9309 §2.2.2). */
export interface MatchedRule {
  kind: RuleKind;
  /** Normalised pattern (see `Rule.pattern`). */
  pattern: string;
  /** 1-based line in robots.txt. */
  line: number;
}

/** How the robots snapshot the decision used was obtained. */
export interface SnapshotInfo {
  /** `scheme://host[:port]/robots.txt` actually requested first. */
  url: string;
  /** `ok` (2xx parsed), `unavailable` (4xx: allow all), `unreachable` (5xx/429/network: disallow all). */
  state: 'ok' | 'unavailable' | 'unreachable';
  /** Final HTTP status seen, or undefined for a network error / timeout. */
  status: number | undefined;
  /** Error code for a network failure (e.g. `ECONNREFUSED`, `timeout`, `too-many-redirects`). */
  error: string | undefined;
  /** When the snapshot was fetched, ms since epoch. */
  fetchedAtMs: number;
  /** When it expires, ms since epoch. */
  expiresAtMs: number;
  /** Body bytes parsed. */
  bytes: number;
  /** True when the body exceeded `robots.maxBytes` and the rest was ignored. */
  truncated: boolean;
}

/** The verdict for one request with everything that explains it. */
export interface Decision {
  verdict: Verdict;
  reason: DecisionReason;
  /** `scheme://host[:port]` (default port elided), or `''` when the request had no valid target. */
  origin: string;
  /** Path plus query that was tested, percent-encoding normalised. */
  path: string;
  /**
   * The product token that decided: the first of `agentTokens` that a group
   * names (RFC 9309 §2.2.1, whole names, see `selectGroup`), or null when
   * none did (the `*` group or no group applied).
   */
  productToken: string | null;
  /** Every candidate product token read from the client's User-Agent, best first (`extractProductTokens`; may be empty). */
  agentTokens: readonly string[];
  /** The group that applied: its product token as written, `*`, or null when none applied. */
  group: string | null;
  /** The winning rule, or null. */
  rule: MatchedRule | null;
  /** Crawl-delay in seconds from the group that applied (extension, §2.2.4), or null. */
  crawlDelaySeconds: number | null;
  /** The robots snapshot used, or null when none was needed or available. */
  snapshot: SnapshotInfo | null;
  /**
   * Who the client is (issue 8): the identity its proxy credentials or client range name, and
   * what it was decided for; null when none applies (an anonymous client, or a refusal before
   * the identity was known).
   */
  identity: DecisionIdentity | null;
  /** The operator policy rule that matched the request (the first in `policy.rules` order); absent when none did. */
  policy?: PolicyFacts;
  /**
   * The reason the request would have been refused, when it was forwarded anyway
   * (`reason: report-only`: `enforcement: report`, or a rule with action `report`);
   * e.g. `rule-disallow`, `robots-unreachable`, `operator-policy`. Absent otherwise.
   */
  wouldDeny?: DecisionReason;
  /** Human-readable detail for reasons without a rule (e.g. the upstream error). */
  detail?: string;
  /** The `Proxy-Authenticate` challenge of a `proxy-auth-required` answer (RFC 9110 §11.7.1), e.g. `Basic realm="robots-proxy"`. */
  proxyAuthenticate?: string;
  /** Seconds the client should wait before a retry can succeed, for a `proxy-auth-throttled` refusal (queue refusals carry theirs in `pacing`). */
  retryAfterSeconds?: number;
  /** Pacing facts, once the request was queued or refused by the queue. */
  pacing?: PacingFacts;
  /** Upstream facts, once the request was forwarded (or failed to be). */
  upstream?: UpstreamFacts;
}

/** The identity facts of a {@link Decision}. */
export interface DecisionIdentity {
  /** The identity's name. */
  name: string;
  /** `credentials` (`Proxy-Authorization`) or `client-range` (the client's address in a named `access.clients` range). */
  source: 'credentials' | 'client-range';
  /** The product tokens the identity is bound to (it is decided for these, whatever the User-Agent says); empty: unbound. */
  boundTokens: readonly string[];
  /** The candidate product tokens the User-Agent named (what the client claimed), best first. */
  claimedTokens: readonly string[];
  /** True when the identity is bound and the User-Agent names none of the bound tokens (a browser's, another bot's, or none): flagged, or refused with `identity-mismatch`. */
  isMismatch: boolean;
}

/** The operator policy rule that matched a request (extension, not in RFC 9309). */
export interface PolicyFacts {
  /** The rule's `name` (`hosts:<key>` for a rule translated from the deprecated `hosts` section). */
  rule: string;
  /** Its action: `deny`, `allow`, `report` or `pace`. */
  action: PolicyAction;
}

/** What the per-origin queue did with the request. */
export interface PacingFacts {
  /** Delay between request starts applied to this request, ms (crawl-delay raised to any operator minimum). */
  delayMs: number;
  /** Time spent waiting for a start slot, ms (0 when refused at once). */
  waitedMs: number;
  /** Requests waiting at the origin when this one was refused; undefined when it was not refused. */
  queueLength?: number;
  /** Requests of this request's identity among them (the round-robin queue's per-identity count), when refused. */
  identityQueueLength?: number;
  /**
   * The bound that refused it: `max-queue-per-identity` (`pacing.maxQueuePerIdentity`),
   * `max-queue` (`pacing.maxQueue`) or `max-wait` (`pacing.maxWait`); undefined when not refused.
   */
  limit?: 'max-queue-per-identity' | 'max-queue' | 'max-wait';
  /** Seconds the client should wait before retrying, when refused (`queue-full`). */
  retryAfterSeconds?: number;
}

/** What happened upstream. */
export interface UpstreamFacts {
  /** Upstream response status, or undefined when none arrived. */
  status?: number;
  /** Error code when the exchange failed (`ECONNREFUSED`, `UND_ERR_HEADERS_TIMEOUT`, `CERT_HAS_EXPIRED`...). */
  error?: string;
  /** True when the failure was a timeout (answered 504 rather than 502). */
  timedOut?: boolean;
}
