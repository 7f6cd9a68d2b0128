/**
 * The proxy's own responses (DESIGN.md "The proxy's own responses"). The only
 * module that turns a {@link Decision} into a status code and writes a body
 * explaining it; `text/plain` by default, JSON when the client accepts
 * `application/json`. Every response, passed-on ones included, carries
 * `X-Robots-Proxy-Decision`.
 */
import type { Decision } from '../policy/decision.js';

/** Name of the machine-readable outcome header. */
export const DECISION_HEADER = 'x-robots-proxy-decision';

/** `<verdict>; reason=<reason>`: the value of {@link DECISION_HEADER}. */
export function decisionHeaderValue(decision: Decision): string {
  return `${decision.verdict}; reason=${decision.reason}`;
}

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
    case 'tunnel-denied':
      return 403;
    case 'robots-unreachable':
      return 503;
    case 'queue-full':
      return 429;
    case 'bad-request':
      return 400;
    case 'misdirected':
      return 421;
    case 'upstream-error':
      return decision.upstream?.timedOut ? 504 : 502;
    case 'internal-error':
      return 500;
    case 'client-timeout':
      return 408;
    default:
      // Allowed reasons are answered by the upstream, not by the proxy.
      return 200;
  }
}

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
 * Seconds a client should wait before retrying, for 429 and 503 (see {@link toDelaySeconds});
 * undefined for other statuses.
 */
export function retryAfterSecondsFor(decision: Decision, nowMs: number): number | undefined {
  if (decision.reason === 'queue-full') return toDelaySeconds(decision.pacing?.retryAfterSeconds ?? 1);
  if (decision.reason === 'robots-unreachable' && decision.snapshot) {
    return toDelaySeconds((decision.snapshot.expiresAtMs - nowMs) / 1000);
  }
  return undefined;
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
  /** The current time, ms since the epoch (for Retry-After and "retried in"). */
  nowMs: number;
  /** Who to contact to appeal a refusal (operator's text), if configured. */
  appeal?: string;
}

/**
 * Renders the proxy's own answer for `decision`: status, headers
 * (`X-Robots-Proxy-Decision`, `Retry-After` for 429/503, `Cache-Control: no-store`)
 * and a body that explains it. Pure; never throws.
 */
export function renderProxyResponse(decision: Decision, options: RenderOptions): ProxyResponse {
  const status = statusFor(decision);
  const retryAfter = retryAfterSecondsFor(decision, options.nowMs);
  const headers: Record<string, string> = {
    [DECISION_HEADER]: decisionHeaderValue(decision),
    'cache-control': 'no-store',
  };
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  const wantsJson = (options.accept ?? '').toLowerCase().includes('application/json');
  if (wantsJson) {
    headers['content-type'] = 'application/json; charset=utf-8';
    const body = JSON.stringify({ status, ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}), message: summary(decision), decision }) + '\n';
    return { status, headers, body };
  }
  headers['content-type'] = 'text/plain; charset=utf-8';
  return { status, headers, body: explain(decision, retryAfter, options) };
}

/** One sentence saying what happened. */
function summary(d: Decision): string {
  switch (d.reason) {
    case 'rule-disallow':
      return `Disallowed by ${robotsUrl(d)} for this crawler.`;
    case 'robots-unreachable':
      return `${robotsUrl(d)} could not be fetched, so the whole origin is treated as disallowed (RFC 9309 §2.3.1.4).`;
    case 'queue-full':
      return `Too many requests are waiting for ${d.origin}; the crawl-delay would make this one wait too long.`;
    case 'target-private-network':
      return 'The target is in a private, loopback or link-local network, which this proxy does not reach.';
    case 'operator-policy':
      return 'Refused by the proxy operator\'s policy.';
    case 'client-not-allowed':
      return 'This client may not use the proxy.';
    case 'tunnel-denied':
      return 'CONNECT tunnels are not allowed by this proxy (https.mode: deny).';
    case 'bad-request':
      return 'This is not a valid proxy request.';
    case 'misdirected':
      return 'The request names another origin than the CONNECT tunnel it came through.';
    case 'upstream-error':
      return d.upstream?.timedOut ? `${d.origin} did not answer in time.` : `The request to ${d.origin} failed.`;
    case 'internal-error':
      return 'The proxy failed while handling this request; it keeps serving others.';
    case 'client-timeout':
      return 'The request body stopped arriving; the proxy stopped waiting for it.';
    default:
      return `Allowed (${d.reason}).`;
  }
}

function robotsUrl(d: Decision): string {
  return d.snapshot?.url ?? `${d.origin}/robots.txt`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The text/plain body: what, why (file, group, rule, line, path), and what to do. */
function explain(d: Decision, retryAfter: number | undefined, options: RenderOptions): string {
  const lines = [summary(d), ''];
  if (d.origin) lines.push(`origin:        ${d.origin}`);
  if (d.path) lines.push(`path tested:   ${d.path}`);
  if (d.snapshot) {
    const s = d.snapshot;
    lines.push(`robots.txt:    ${s.url}`);
    lines.push(`fetched:       ${iso(s.fetchedAtMs)} (${s.state}${s.status !== undefined ? `, HTTP ${s.status}` : ''}${s.error ? `, ${s.error}` : ''})`);
    if (d.reason === 'robots-unreachable') lines.push(`retried:       ${iso(s.expiresAtMs)}`);
  }
  if (d.snapshot?.state === 'ok') {
    const candidates = d.agentTokens.length > 0 ? d.agentTokens.join(', ') : '(none in the User-Agent)';
    lines.push(`product token: ${d.productToken ?? `${candidates}: no group names it`}`);
    lines.push(`group:         ${d.group === null ? '(none)' : `user-agent: ${d.group}`}`);
  }
  if (d.rule) lines.push(`rule:          ${d.rule.kind}: ${d.rule.pattern}   (line ${d.rule.line})`);
  if (d.crawlDelaySeconds !== null) lines.push(`crawl-delay:   ${d.crawlDelaySeconds} s`);
  if (d.pacing && d.reason === 'queue-full') {
    lines.push(`delay:         ${d.pacing.delayMs / 1000} s between requests to this origin`);
    if (d.pacing.queueLength !== undefined) lines.push(`queue length:  ${d.pacing.queueLength}`);
  }
  if (d.upstream?.error) lines.push(`error:         ${d.upstream.error}`);
  if (d.detail) lines.push(`detail:        ${d.detail}`);
  if (retryAfter !== undefined) lines.push(`retry after:   ${retryAfter} s`);
  lines.push(`decision:      ${decisionHeaderValue(d)}`);
  if (d.verdict === 'deny' && (d.reason === 'rule-disallow' || d.reason === 'robots-unreachable')) {
    lines.push('');
    lines.push(
      options.appeal ??
        'This proxy enforces the site\'s robots.txt (RFC 9309) for the crawler named in your User-Agent. If you believe this is wrong, contact the proxy operator and quote the decision above.',
    );
  }
  return lines.join('\n') + '\n';
}
