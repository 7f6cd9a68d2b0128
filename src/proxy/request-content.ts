/**
 * Requests that carry content where their method defines none: `GET`, `HEAD`, `DELETE` (RFC 9110
 * §9.3.1, §9.3.2, §9.3.5: "content received in a GET request has no generally defined semantics
 * ... and might lead some implementations to reject the request and close the connection because
 * of its potential as a request smuggling attack") and `TRACE` (§9.3.8: a client MUST NOT send
 * content). Many origins read no body on such a request and take the bytes after the head as the
 * next request on the connection (a "CL.0" desynchronisation): through the proxy, a body holding
 * `GET /private HTTP/1.1 ...` reached the origin as a request the proxy never decided. These are
 * refused 400 `bad-request` (with `Connection: close`, own-answer.ts) before admission, robots.txt
 * or pacing, on plain HTTP, inside CONNECT tunnels and for an Upgrade. `Content-Length: 0` is no
 * content and passes. Pure.
 */
import type { IncomingMessage } from 'node:http';
import { decideWithoutRobots } from '../policy/decide.js';
import type { Decision } from '../policy/decision.js';
import { pathAndQueryOf } from './target-origin.js';
import type { TargetUrl } from './canonical-target.js';
import { transferCodingRefusal, unimplementedCodingsOf } from './transfer-coding.js';

/**
 * The method of a request that carries content its method defines no meaning for (see the
 * module's note), or undefined when the request may go on: another method, or no content (no
 * `Transfer-Encoding`, and no `Content-Length` or one of `0`). Pure; never throws.
 * @param method the request method as Node parsed it (upper case for the methods concerned).
 * @param contentLength the `content-length` field (Node keeps the first; a repeated different one is its 400).
 * @param transferEncoding the `transfer-encoding` field (any value frames a body, RFC 9112 §6.3).
 */
export function contentWithoutMeaningOf(method: string | undefined, contentLength: string | undefined, transferEncoding: string | undefined): string | undefined {
  if (contentLength === undefined && transferEncoding === undefined) return undefined;
  if (method !== 'GET' && method !== 'HEAD' && method !== 'DELETE' && method !== 'TRACE') return undefined;
  if (transferEncoding === undefined && /^0+$/.test((contentLength as string).trim())) return undefined;
  return method;
}

/**
 * The refusal of such a request: reason `bad-request` (400, `Connection: close`), the detail
 * naming the method and the rule. Pure; never throws.
 * @param method what {@link contentWithoutMeaningOf} returned.
 */
export function contentRefusal(target: TargetUrl, method: string): Decision {
  return decideWithoutRobots('bad-request', {
    origin: target.origin,
    path: pathAndQueryOf(target),
    detail: `a ${method} request with content (Content-Length or Transfer-Encoding) is not forwarded: ${method} defines no content, and an origin that reads none would take it as another request (RFC 9110 §9.3); send it without content`,
  });
}

/**
 * The refusal of a request whose framing the proxy will not forward, checked in this order
 * before admission, robots.txt or pacing (plain HTTP, inside CONNECT tunnels, and Upgrades): a
 * transfer coding other than `chunked` (501, transfer-coding.ts, RFC 9112 §6.1), then content on a
 * method that defines none (400, {@link contentRefusal}). Undefined when the request may go on.
 * Pure; never throws.
 */
export function framingRefusalOf(req: Pick<IncomingMessage, 'method' | 'headers'>, target: TargetUrl): Decision | undefined {
  const transferEncoding = req.headers['transfer-encoding'];
  const codings = unimplementedCodingsOf(transferEncoding);
  if (codings !== undefined) return transferCodingRefusal(target, codings);
  const method = contentWithoutMeaningOf(req.method, req.headers['content-length'], transferEncoding);
  return method === undefined ? undefined : contentRefusal(target, method);
}
