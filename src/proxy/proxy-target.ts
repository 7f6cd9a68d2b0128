/**
 * The request target of a proxy request (RFC 9112 §3.2.2, absolute-form).
 * Pure; never throws.
 */
import { redactUserInfo } from '../audit/redact.js';

/**
 * Parses the request target of a proxy request: an absolute-form `http://` or
 * `https://` URL with a host (RFC 9112 §3.2.2). A trailing dot on the host is
 * dropped (`example.com.` is `example.com`). Never throws.
 * @returns the URL, or a reason string (for a 400) when it is not one.
 */
export function parseProxyTarget(rawTarget: string | undefined): URL | string {
  if (rawTarget === undefined || rawTarget.length === 0) return 'the request has no target';
  if (rawTarget.startsWith('/')) {
    return `this is a forward proxy: send absolute-form requests (GET http://host/path) through it, not "${redactUserInfo(rawTarget.slice(0, 100))}"`;
  }
  let url: URL;
  try {
    url = new URL(rawTarget);
  } catch {
    return `the target "${redactUserInfo(rawTarget.slice(0, 200))}" is not an absolute URL`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `the scheme "${url.protocol}" is not proxied (only http and https)`;
  if (url.hostname.length === 0) return 'the target has no host';
  // `example.com.` is `example.com`: one origin, one robots.txt, one queue (else a trailing dot
  // would buy a second pacing queue).
  if (url.hostname.endsWith('.') && url.hostname.length > 1) url.hostname = url.hostname.slice(0, -1);
  if (url.username || url.password) return 'the target must not carry user information';
  return url;
}
