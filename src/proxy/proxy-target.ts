/**
 * The request target of a proxy request (RFC 9112 §3.2.2, absolute-form).
 * Pure; never throws.
 */
import { redactUserInfo } from '../audit/redact.js';
import { canonicalTargetOf, type TargetUrl } from './canonical-target.js';
import { withQueryAsSent } from './query-as-sent.js';

export type { TargetUrl } from './canonical-target.js';

/** `scheme://` followed by an authority (RFC 3986 §3.2: `//` then a host, not a third `/`). */
const AUTHORITY_AFTER_SCHEME = /^[a-z][a-z0-9+.-]*:\/\/[^/\\]/i;

/**
 * Parses the request target of a proxy request: an absolute-form `http://` or
 * `https://` URL with a host (RFC 9112 §3.2.2) and a port other than 0. A
 * trailing dot on the host is dropped (`example.com.` is `example.com`). The
 * authority must be written: WHATWG reads `http:///x` and `http:x` as
 * `http://x/`, a host the client never named, so they are refused. A target
 * already spelt as the URL parser writes it is read without it
 * (canonical-target.ts: the same parts, a fraction of the cost); any other goes
 * through `new URL`, a `'` in its query kept as written (query-as-sent.ts). Never throws.
 * @returns the URL's parts, or a reason string (for a 400) when it is not one.
 */
export function parseProxyTarget(rawTarget: string | undefined): TargetUrl | string {
  if (rawTarget === undefined || rawTarget.length === 0) return 'the request has no target';
  const canonical = canonicalTargetOf(rawTarget);
  if (canonical !== undefined) return canonical;
  const url = parseProxyTargetByUrl(rawTarget);
  // The parser writes a query's `'` as `%27`: forwarded and decided as written (query-as-sent.ts).
  return typeof url === 'string' ? url : withQueryAsSent(url, rawTarget);
}

/**
 * {@link parseProxyTarget} by the URL parser alone, for any target: the reference the canonical
 * reading must agree with (test/proxy/proxy-target.test.ts). Never throws.
 * @returns the URL, or a reason string (for a 400) when it is not one.
 */
export function parseProxyTargetByUrl(rawTarget: string): URL | string {
  if (rawTarget.length === 0) return 'the request has no target';
  if (rawTarget.startsWith('/')) {
    return `this is a forward proxy: send absolute-form requests (GET http://host/path) through it, not "${redactUserInfo(rawTarget.slice(0, 100))}"`;
  }
  let url: URL;
  try {
    url = new URL(rawTarget);
  } catch {
    return `the target "${redactUserInfo(rawTarget.slice(0, 200))}" is not an absolute URL`;
  }
  const protocol = url.protocol;
  if (protocol !== 'http:' && protocol !== 'https:') return `the scheme "${protocol}" is not proxied (only http and https)`;
  // Each URL getter makes its string anew (~180 instructions for hostname): read once (issue 11).
  const hostname = url.hostname;
  if (hostname.length === 0 || !AUTHORITY_AFTER_SCHEME.test(rawTarget)) return `the target "${redactUserInfo(rawTarget.slice(0, 200))}" has no host: write ${protocol}//host/path`;
  // Port 0 names no server (RFC 6335 §6: reserved); connecting to it fails, and it is not an origin to fetch robots.txt for.
  if (url.port === '0') return 'the target\'s port is 0, which no server listens on';
  // `example.com.` is `example.com`: one origin, one robots.txt, one queue (else a trailing dot
  // would buy a second pacing queue).
  if (hostname.length > 1 && hostname.charCodeAt(hostname.length - 1) === 0x2e /* . */) url.hostname = hostname.slice(0, -1);
  if (url.username || url.password) return 'the target must not carry user information';
  return url;
}

/**
 * Why a request must be refused for its missing `Host` (the detail of a 400), or undefined: an
 * HTTP/1.1 request without one gets 400 (RFC 9112 §3.2: "A server MUST respond with a 400"), an
 * absolute-form one too; HTTP/1.0 needs none. Node's own check is off on the proxy's servers, so
 * the answer is the proxy's (decision header, request id, access line), not Node's bare 400.
 */
export function missingHostDetail(httpVersion: string, host: string | undefined): string | undefined {
  if (host !== undefined || httpVersion === '1.0') return undefined;
  return 'an HTTP/1.1 request must carry a Host header (RFC 9112 §3.2), even with an absolute URL';
}
