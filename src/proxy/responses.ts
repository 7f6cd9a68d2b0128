/**
 * The proxy's own responses (DESIGN.md "The proxy's own responses"). The only
 * module that turns a {@link Decision} into a status code and writes a body
 * explaining it: `text/plain` by default, JSON for clients that prefer
 * `application/json`, HTML for clients that prefer `text/html` (browsers).
 * Every body and header carries the request id and the time, so the refusal
 * can be quoted. Every response, passed-on ones included, carries
 * `X-Robots-Proxy-Decision` and the request id header.
 */
import { STATUS_CODES } from 'node:http';
import escapeHtml from 'escape-html';
import Negotiator from 'negotiator';
import type { Decision, PolicyFacts } from '../policy/decision.js';
import { REQUEST_ID_HEADER } from './request-id.js';
import { flatJoin } from './flat-string.js';

export { REQUEST_ID_HEADER };

/** Name of the machine-readable outcome header. */
export const DECISION_HEADER = 'x-robots-proxy-decision';

/**
 * `<verdict>; reason=<reason>`, then `; rule=<name>` when an operator policy rule matched and
 * `; would-deny=<reason>` when the request was forwarded although it would have been refused
 * (`report-only`): the value of {@link DECISION_HEADER}. Rule names are visible ASCII without
 * spaces, `;` or `,` (the schema's charset, or `hosts:<key>`). Pure.
 */
export function decisionHeaderValue(decision: Decision): string {
  const { verdict, reason } = decision;
  if (decision.policy === undefined && decision.wouldDeny === undefined) {
    // The common case, from two closed sets: made once per pair (issue 11).
    const byReason = verdict === 'allow' ? plainAllowValues : plainDenyValues;
    let value = byReason.get(reason);
    if (value === undefined) {
      value = flatJoin([verdict, '; reason=', reason]);
      byReason.set(reason, value);
    }
    return value;
  }
  const policy = decision.policy;
  if (policy !== undefined && decision.wouldDeny === undefined) {
    // A rule's facts are frozen and shared by every request it matches (operator-policy.ts): its value is made
    // once per verdict and reason (issue 8), the last one compared first (cheaper than the look-ups).
    if (policy === lastRule.policy && reason === lastRule.reason && verdict === lastRule.verdict) return lastRule.value;
    const byRule = verdict === 'allow' ? ruleAllowValues : ruleDenyValues;
    let byReason = byRule.get(policy);
    if (byReason === undefined && Object.isFrozen(policy)) byRule.set(policy, (byReason = new Map()));
    if (byReason !== undefined) {
      let value = byReason.get(reason);
      if (value === undefined) byReason.set(reason, (value = flatJoin([verdict, '; reason=', reason, '; rule=', policy.rule])));
      lastRule = { policy, reason, verdict, value };
      return value;
    }
  }
  const parts = [verdict, '; reason=', reason];
  if (policy !== undefined) parts.push('; rule=', policy.rule);
  if (decision.wouldDeny !== undefined) parts.push('; would-deny=', decision.wouldDeny);
  return flatJoin(parts);
}

/** {@link decisionHeaderValue} without a rule or a would-deny, by reason: flat strings (flat-string.ts), one per reason. */
const plainAllowValues = new Map<string, string>();
const plainDenyValues = new Map<string, string>();
/** {@link decisionHeaderValue} with a rule (frozen facts) and no would-deny, by rule, then by reason; gone with the rule's policy. */
const ruleAllowValues = new WeakMap<PolicyFacts, Map<string, string>>();
const ruleDenyValues = new WeakMap<PolicyFacts, Map<string, string>>();
/** The last of those values made or found, with what it was for. */
let lastRule: { policy: PolicyFacts | undefined; reason: string; verdict: string; value: string } = { policy: undefined, reason: '', verdict: '', value: '' };

/**
 * The status the proxy answers with for a decision it answers itself.
 * Pure. The one mapping from reasons to HTTP statuses.
 */
export function statusFor(decision: Decision): number {
  switch (decision.reason) {
    case 'rule-disallow':
    case 'operator-policy':
    case 'target-private-network':
    case 'client-not-allowed':
    case 'identity-mismatch':
    case 'tunnel-denied':
      return 403;
    case 'proxy-auth-required':
      return 407;
    case 'robots-unreachable':
    case 'proxy-shutting-down':
    case 'fleet-unavailable':
      return 503;
    case 'queue-full':
    case 'proxy-auth-throttled':
      return 429;
    case 'bad-request':
      return 400;
    case 'misdirected':
      return 421;
    case 'upstream-error':
      return decision.upstream?.timedOut ? 504 : 502;
    case 'internal-error':
      return 500;
    case 'transfer-coding-not-implemented':
      return 501;
    case 'client-timeout':
      return 408;
    default:
      // Allowed reasons are answered by the upstream, not by the proxy.
      return 200;
  }
}

/**
 * `Retry-After` of a `proxy-shutting-down` answer, seconds: this instance is about to exit, so
 * the client should come back once it (or its replacement) is up; a restart takes a few seconds.
 */
export const SHUTDOWN_RETRY_AFTER_SECONDS = 5;

/**
 * Largest `Retry-After` the proxy writes, seconds (2^31 - 1, about 68 years):
 * RFC 9111 §1.2.2 lets a recipient take a larger delta-seconds as 2^31 anyway,
 * and every value up to it prints as plain digits.
 */
export const MAX_RETRY_AFTER_SECONDS = 2_147_483_647;

/**
 * A wait as `delay-seconds` (RFC 9110 §10.2.3: `1*DIGIT`): rounded up to a
 * whole number of seconds, at least 1, at most {@link MAX_RETRY_AFTER_SECONDS};
 * NaN or infinite gives the maximum. Never an exponent (`1e+21`), a fraction
 * or a sign. Pure; never throws.
 */
export function toDelaySeconds(seconds: number): number {
  if (!(seconds < MAX_RETRY_AFTER_SECONDS)) return MAX_RETRY_AFTER_SECONDS;
  return Math.max(1, Math.ceil(seconds));
}

/**
 * Seconds a client should wait before retrying (see {@link toDelaySeconds}): for 429 and 503, and
 * for a 502 whose cause is the certificate refused at the robots.txt fetch (nothing changes before
 * robots.txt is fetched again); undefined otherwise.
 */
export function retryAfterSecondsFor(decision: Decision, nowMs: number): number | undefined {
  if (decision.reason === 'queue-full') return toDelaySeconds(decision.pacing?.retryAfterSeconds ?? 1);
  if (decision.reason === 'proxy-auth-throttled') return toDelaySeconds(decision.retryAfterSeconds ?? 1);
  if (decision.reason === 'proxy-shutting-down') return SHUTDOWN_RETRY_AFTER_SECONDS;
  if (decision.reason === 'fleet-unavailable') return toDelaySeconds(decision.pacing?.retryAfterSeconds ?? 1);
  if (decision.reason === 'robots-unreachable' && decision.snapshot) {
    return toDelaySeconds((decision.snapshot.expiresAtMs - nowMs) / 1000);
  }
  // An upstream certificate refused at the robots.txt fetch: every request gets this answer until the next fetch.
  if (isRefusedUntilRobotsRetry(decision)) return toDelaySeconds((decision.snapshot!.expiresAtMs - nowMs) / 1000);
  return undefined;
}

/**
 * True for the error codes of upstream certificate verification failures (Node's X509 codes:
 * `DEPTH_ZERO_SELF_SIGNED_CERT`, `UNABLE_TO_VERIFY_LEAF_SIGNATURE`, `UNABLE_TO_GET_ISSUER_CERT_LOCALLY`,
 * `CERT_HAS_EXPIRED`, `INVALID_CA`, ..., and `ERR_TLS_CERT_ALTNAME_INVALID`): an upstream fault
 * (502) that `upstream.caFile` may cure, not an unreachable robots.txt. Not the TLS protocol
 * failures OpenSSL reports as `ERR_SSL_*` (`ERR_SSL_WRONG_VERSION_NUMBER`: the origin does not speak
 * TLS on that port; a handshake alert): those are connection errors, so robots.txt is unreachable
 * (503, RFC 9309 §2.3.1.4) and a forwarded request a plain 502, neither cured by a CA. Pure.
 */
export function isCertificateError(code: string | undefined): boolean {
  return code !== undefined && !code.startsWith('ERR_SSL_') && CERTIFICATE_ERROR.test(code);
}

/** The words of Node's certificate verification codes (tls docs, "X509 certificate error codes"). */
const CERTIFICATE_ERROR = /CERT|SELF_SIGNED|UNABLE_TO_(?:VERIFY|GET_ISSUER|DECODE_ISSUER|DECRYPT)|ALTNAME|HOSTNAME_MISMATCH|INVALID_CA|INVALID_PURPOSE|PATH_LENGTH_EXCEEDED/;

/**
 * What a certificate verification code says is wrong: `validity` (expired, or not yet valid: the
 * origin must renew it, or its clock or ours is wrong), `name` (it names other hosts than the one
 * connected to), or `trust` (anything else: its issuer is not trusted, which `upstream.caFile` can
 * cure). Only the last is a matter of the proxy's CAs. Pure.
 */
export function certificateFaultOf(code: string | undefined): 'validity' | 'name' | 'trust' {
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') return 'validity';
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID' || code === 'HOSTNAME_MISMATCH') return 'name';
  return 'trust';
}

/** The words for an upstream certificate refused with `code` (see {@link certificateFaultOf}), after "the upstream TLS certificate". */
export function certificateFaultWords(code: string | undefined): string {
  const fault = certificateFaultOf(code);
  return fault === 'validity' ? 'has expired or is not yet valid' : fault === 'name' ? 'does not name the host' : 'is not trusted';
}

/** The host of an origin `scheme://host[:port]`, for a sentence; the origin itself if it does not parse. */
function hostOfOrigin(origin: string): string {
  try {
    return new URL(origin).hostname;
  } catch {
    return origin;
  }
}

/** An `upstream-error` that comes from the robots.txt fetch (its certificate), so it holds until that is fetched again. */
function isRefusedUntilRobotsRetry(d: Decision): boolean {
  return d.reason === 'upstream-error' && d.snapshot?.state === 'unreachable' && isCertificateError(d.snapshot.error);
}

/** A response ready to write. */
export interface ProxyResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Options of {@link renderProxyResponse}. */
export interface RenderOptions {
  /** The client's `Accept` header. */
  accept: string | undefined;
  /** The current time, ms since the epoch (for Retry-After, "retried in" and the time shown). */
  nowMs: number;
  /** The request id (see `request-id.ts`), shown in the body and the {@link REQUEST_ID_HEADER} header. */
  requestId: string;
  /** Who to contact to appeal a refusal (operator's text), if configured. */
  appeal?: string;
  /**
   * The status, when it is not {@link statusFor} the decision: Node's HTTP
   * parser refusals (408, 431) share the reason `bad-request` (`clientErrorStatus` in raw-response.ts).
   */
  status?: number;
}

/** The body formats, the default first: a client that states no preference gets text. */
const MEDIA_TYPES = ['text/plain', 'application/json', 'text/html'] as const;
type MediaType = (typeof MEDIA_TYPES)[number];

/** The format the client prefers, by `Accept` and its q-values (RFC 9110 §12.5.1); text/plain when none fits. */
function negotiate(accept: string | undefined): MediaType {
  if (accept === undefined || accept === '') return 'text/plain';
  return (new Negotiator({ headers: { accept } }).mediaType([...MEDIA_TYPES]) as MediaType | undefined) ?? 'text/plain';
}

/**
 * Renders the proxy's own answer for `decision`: status, headers
 * (`X-Robots-Proxy-Decision`, the request id, `Retry-After` for 429/503,
 * `Cache-Control: no-store`) and a body that explains it, in the format the
 * client's `Accept` prefers. In HTML every value is escaped. Pure; never throws.
 */
export function renderProxyResponse(decision: Decision, options: RenderOptions): ProxyResponse {
  const status = options.status ?? statusFor(decision);
  const retryAfter = retryAfterSecondsFor(decision, options.nowMs);
  const headers: Record<string, string> = {
    [DECISION_HEADER]: decisionHeaderValue(decision),
    [REQUEST_ID_HEADER]: options.requestId,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  };
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  // RFC 9110 §11.7.1: a 407 carries the challenge the client answers with Proxy-Authorization.
  if (status === 407 && decision.proxyAuthenticate !== undefined) headers['proxy-authenticate'] = decision.proxyAuthenticate;
  const time = iso(options.nowMs);
  switch (negotiate(options.accept)) {
    case 'application/json': {
      headers['content-type'] = 'application/json; charset=utf-8';
      const body = {
        status,
        requestId: options.requestId,
        time,
        ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}),
        message: summary(decision),
        ...(decision.reason === 'queue-full' ? { limit: queueLimitOf(decision) ?? null } : {}),
        decision,
      };
      return { status, headers, body: JSON.stringify(body) + '\n' };
    }
    case 'text/html':
      headers['content-type'] = 'text/html; charset=utf-8';
      // Nothing in the page runs or loads: values come from the client and from remote robots.txt files.
      headers['content-security-policy'] = "default-src 'none'; style-src 'unsafe-inline'";
      return { status, headers, body: renderHtml(status, decision, facts(decision, retryAfter, options.requestId, time), appealText(decision, options)) };
    default:
      headers['content-type'] = 'text/plain; charset=utf-8';
      return { status, headers, body: renderText(decision, facts(decision, retryAfter, options.requestId, time), appealText(decision, options)) };
  }
}

/** A queue limit that refused a request (`queue-full`), as every 429 body names it. */
export interface QueueLimitInfo {
  /** The limit's name, as in `decision.pacing.limit` and the log: `max-wait`, `max-queue`, `max-queue-per-identity`. */
  name: NonNullable<NonNullable<Decision['pacing']>['limit']>;
  /** The configuration key that sets it, e.g. `pacing.maxWait`. */
  setting: string;
  /** What it bounds, in words. */
  bounds: string;
}

const QUEUE_LIMITS: Record<QueueLimitInfo['name'], Omit<QueueLimitInfo, 'name'>> = {
  'max-queue-per-identity': { setting: 'pacing.maxQueuePerIdentity', bounds: 'requests one client may have waiting per origin' },
  'max-queue': { setting: 'pacing.maxQueue', bounds: 'requests waiting per origin' },
  'max-wait': { setting: 'pacing.maxWait', bounds: 'the longest expected wait in the queue' },
};

/** The limit that refused a `queue-full` decision, with its setting; undefined for other decisions. */
export function queueLimitOf(d: Decision): QueueLimitInfo | undefined {
  const name = d.reason === 'queue-full' ? d.pacing?.limit : undefined;
  return name === undefined ? undefined : { name, ...QUEUE_LIMITS[name] };
}

/** One sentence saying what happened. */
function summary(d: Decision): string {
  switch (d.reason) {
    case 'rule-disallow':
      return `Disallowed by ${robotsUrl(d)} for this crawler.`;
    case 'robots-unreachable':
      return `${robotsUrl(d)} could not be fetched, so the whole origin is treated as disallowed (RFC 9309 §2.3.1.4).`;
    case 'queue-full':
      if (d.pacing?.limit === 'max-queue-per-identity') {
        return `Too many of your requests are already waiting for ${d.origin} (limit max-queue-per-identity, set by pacing.maxQueuePerIdentity); send more when some of them have gone.`;
      }
      if (d.pacing?.limit === 'max-queue') return `Too many requests are waiting for ${d.origin} (limit max-queue, set by pacing.maxQueue).`;
      return `This request would wait about ${d.pacing?.retryAfterSeconds ?? '?'} s for ${d.origin} (its delay between requests and the requests ahead of it), longer than the proxy allows (limit max-wait, set by pacing.maxWait).`;
    case 'target-private-network':
      return (
        'The target is a loopback, private, link-local or other non-public address, which this proxy does not reach. ' +
        'The proxy operator can allow such targets with upstream.allowPrivateNetworks: true (config/local.yaml sets it, for trying the proxy on one machine).'
      );
    case 'operator-policy':
      return `Refused by the proxy operator's policy (rule "${d.policy?.rule ?? 'unknown'}").`;
    case 'client-not-allowed':
      return 'This client\'s address may not use the proxy (it is in none of the ranges the operator allows).';
    case 'proxy-auth-required':
      return 'This proxy requires credentials: send Proxy-Authorization: Basic with the user and password the proxy operator gave you (curl --proxy-user USER:PASSWORD, or http://USER:PASSWORD@proxy:port as the proxy URL).';
    case 'proxy-auth-throttled':
      return 'Too many failed proxy credential attempts from this address; retry later with the right credentials.';
    case 'identity-mismatch':
      // Without identity facts: credentials for another identity from a binding client range (admission).
      if (d.identity === null) return 'Your address is in a client range bound to one identity, and your proxy credentials name another; this proxy refuses such requests.';
      return `Your User-Agent does not name the crawler your identity "${d.identity.name}" is bound to; this proxy refuses such requests.`;
    case 'tunnel-denied':
      return 'CONNECT tunnels are not allowed by this proxy (https.mode: deny).';
    case 'bad-request':
      return 'This is not a valid proxy request.';
    case 'misdirected':
      return 'The request names another origin than the CONNECT tunnel it came through.';
    case 'proxy-shutting-down':
      return 'The proxy is shutting down and takes no new requests; retry shortly.';
    case 'fleet-unavailable':
      return 'The proxy cannot reach the state its fleet shares, so it cannot keep the fleet within the site\'s rate; retry shortly.';
    case 'upstream-error':
      if (isCertificateError(d.upstream?.error)) {
        // Only an untrusted issuer is cured by a CA file: an expired certificate or one for other names is the origin's to fix.
        const fault = certificateFaultOf(d.upstream?.error);
        if (fault === 'validity') {
          return `The TLS certificate of ${d.origin} has expired or is not yet valid (${d.upstream?.error}): the origin must renew it (or a clock is wrong); the proxy does not accept it.`;
        }
        if (fault === 'name') {
          return `The TLS certificate of ${d.origin} does not name ${hostOfOrigin(d.origin)} (${d.upstream?.error}): the origin serves a certificate for other names; the proxy does not accept it.`;
        }
        return (
          `The TLS certificate of ${d.origin} is not trusted (${d.upstream?.error}). If this origin uses a private CA, ` +
          'the proxy operator can trust it with upstream.caFile (a PEM file of CA certificates, added to the system ones; read at start).'
        );
      }
      return d.upstream?.timedOut ? `${d.origin} did not answer in time.` : `The request to ${d.origin} failed.`;
    case 'internal-error':
      return 'The proxy failed while handling this request; it keeps serving others.';
    case 'client-timeout':
      return 'The request body stopped arriving; the proxy stopped waiting for it.';
    case 'max-forwards':
      return 'Max-Forwards was 0: the proxy answered as the final recipient (RFC 9110 §7.6.2).';
    case 'transfer-coding-not-implemented':
      return 'The request body is sent with a transfer coding this proxy does not implement (the detail names it); only chunked is. Send the body with chunked alone or with Content-Length (RFC 9112 §6.1).';
    default:
      return `Allowed (${d.reason}).`;
  }
}

function robotsUrl(d: Decision): string {
  return d.snapshot?.url ?? `${d.origin}/robots.txt`;
}

function iso(ms: number): string {
  const date = new Date(ms);
  return Number.isFinite(date.getTime()) ? date.toISOString() : 'invalid';
}

/** The labelled facts of an answer, in the order shown: what, why (file, group, rule, line, path), and how to quote it. */
function facts(d: Decision, retryAfter: number | undefined, requestId: string, time: string): Array<[label: string, value: string]> {
  const rows: Array<[string, string]> = [];
  if (d.identity) {
    rows.push(['identity', `${d.identity.name} (${d.identity.source === 'credentials' ? 'proxy credentials' : 'client range'})`]);
    if (d.identity.boundTokens.length > 0) rows.push(['bound to', d.identity.boundTokens.join(', ')]);
    if (d.identity.isMismatch) rows.push(['claimed', d.identity.claimedTokens.join(', ')]);
  }
  if (d.origin) rows.push(['origin', d.origin]);
  if (d.path) rows.push(['path tested', d.path]);
  if (d.snapshot) {
    const s = d.snapshot;
    rows.push(['robots.txt', s.url]);
    rows.push(['fetched', `${iso(s.fetchedAtMs)} (${s.state}${s.status !== undefined ? `, HTTP ${s.status}` : ''}${s.error ? `, ${s.error}` : ''})`]);
    if (d.reason === 'robots-unreachable' || isRefusedUntilRobotsRetry(d)) rows.push(['retried', iso(s.expiresAtMs)]);
  }
  if (d.snapshot?.state === 'ok') {
    const candidates = d.agentTokens.length > 0 ? d.agentTokens.join(', ') : '(none in the User-Agent)';
    rows.push(['product token', d.productToken ?? `${candidates}: no group names it`]);
    rows.push(['group', d.group === null ? '(none)' : `user-agent: ${d.group}`]);
  }
  if (d.rule) rows.push(['rule', `${d.rule.kind}: ${d.rule.pattern}   (line ${d.rule.line})`]);
  if (d.crawlDelaySeconds !== null) rows.push(['crawl-delay', `${d.crawlDelaySeconds} s`]);
  if (d.pacing && d.reason === 'queue-full') {
    rows.push(['delay', `${d.pacing.delayMs / 1000} s between requests to this origin`]);
    if (d.pacing.queueLength !== undefined) rows.push(['queue length', String(d.pacing.queueLength)]);
    if (d.pacing.identityQueueLength !== undefined) rows.push(['yours in it', `${d.pacing.identityQueueLength} (each client's requests take turns with the others')`]);
    const limit = queueLimitOf(d);
    if (limit !== undefined) rows.push(['limit', `${limit.name}: ${limit.setting} (${limit.bounds}), a setting of the proxy operator`]);
  }
  if (d.policy) rows.push(['policy rule', `${d.policy.rule} (action ${d.policy.action})`]);
  if (d.wouldDeny) rows.push(['would deny', `${d.wouldDeny} (reported, not enforced)`]);
  if (d.upstream?.error) rows.push(['error', d.upstream.error]);
  if (d.detail) rows.push(['detail', d.detail]);
  if (retryAfter !== undefined) rows.push(['retry after', `${retryAfter} s`]);
  rows.push(['decision', decisionHeaderValue(d)]);
  rows.push(['request id', requestId]);
  rows.push(['time', time]);
  return rows;
}

/** The closing paragraph of a robots.txt refusal (how to appeal), or undefined for other answers. */
function appealText(d: Decision, options: RenderOptions): string | undefined {
  if (d.reason === 'operator-policy') {
    return (
      options.appeal ??
      "This proxy's operator does not allow this request, whatever the site's robots.txt says. If you believe this is wrong, contact the proxy operator and quote the request id and the rule above."
    );
  }
  if (d.verdict !== 'deny' || (d.reason !== 'rule-disallow' && d.reason !== 'robots-unreachable')) return undefined;
  return (
    options.appeal ??
    'This proxy enforces the site\'s robots.txt (RFC 9309) for the crawler named in your User-Agent. If you believe this is wrong, contact the proxy operator and quote the request id and the decision above.'
  );
}

/** The text/plain body: the summary, the facts one per line, the appeal. */
function renderText(d: Decision, rows: ReadonlyArray<[string, string]>, appeal: string | undefined): string {
  const lines = [summary(d), '', ...rows.map(([label, value]) => `${`${label}:`.padEnd(15)}${value}`)];
  if (appeal !== undefined) lines.push('', appeal);
  return lines.join('\n') + '\n';
}

/** The text/html body: the same content as the text one, every value escaped. */
function renderHtml(status: number, d: Decision, rows: ReadonlyArray<[string, string]>, appeal: string | undefined): string {
  const title = `${status} ${STATUS_CODES[status] ?? ''}`.trim();
  const table = rows.map(([label, value]) => `<tr><th>${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`).join('\n');
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="robots" content="noindex">',
    `<title>${escapeHtml(title)}: robots-proxy</title>`,
    '<style>body{font-family:system-ui,sans-serif;max-width:50em;margin:2em auto;padding:0 1em;line-height:1.4}' +
      'th{text-align:left;vertical-align:top;padding:0.15em 1em 0.15em 0;white-space:nowrap}td{font-family:ui-monospace,monospace;word-break:break-all}</style>',
    '</head>',
    '<body>',
    `<h1>${escapeHtml(title)}</h1>`,
    `<p>${escapeHtml(summary(d))}</p>`,
    `<table>\n${table}\n</table>`,
    ...(appeal !== undefined ? [`<p>${escapeHtml(appeal)}</p>`] : []),
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
