/**
 * The request transfer codings this proxy implements: `chunked` alone (RFC 9112 §7.1). Node's
 * parser accepts a request whose `Transfer-Encoding` ends in `chunked` whatever codings come
 * before it (`gzip, chunked`) and decodes only the chunked one; relaying that body would send
 * the still-coded bytes upstream under the proxy's own framing, without their coding (and undici
 * refuses a `Transfer-Encoding` field, so it cannot be passed on). RFC 9112 §6.1: a server that
 * receives a request with a transfer coding it does not understand SHOULD answer 501 (Not
 * Implemented): {@link transferCodingRefusal}, answered by the listeners before the pipeline, by
 * the Upgrade relay (upgrade.ts) before admission, and to a CONNECT (connect.ts) once admitted.
 */
import { decideWithoutRobots } from '../policy/decide.js';
import type { Decision } from '../policy/decision.js';
import { pathAndQueryOf } from './target-origin.js';
import type { TargetUrl } from './canonical-target.js';

/** Longest part of the refused codings carried in a decision's detail, characters (the field may be up to the head's size). */
const CODINGS_SHOWN_CHARS = 200;

/**
 * The transfer codings of a request's `Transfer-Encoding` value (Node joins repeated fields with
 * `, `) that this proxy does not implement: every list element but a final `chunked` (any case),
 * empty elements ignored (RFC 9110 §5.6.1), as written and joined with `, `; undefined when there
 * is none (no field, or `chunked` alone). Pure; never throws.
 * @example unimplementedCodingsOf('gzip, chunked') === 'gzip'; unimplementedCodingsOf('Chunked') === undefined
 */
export function unimplementedCodingsOf(transferEncoding: string | undefined): string | undefined {
  if (transferEncoding === undefined || transferEncoding === 'chunked') return undefined;
  const codings = transferEncoding
    .split(',')
    .map((coding) => coding.trim())
    .filter((coding) => coding !== '');
  const refused = codings.length > 0 && codings[codings.length - 1]!.toLowerCase() === 'chunked' ? codings.slice(0, -1) : codings;
  return refused.length > 0 ? refused.join(', ') : undefined;
}

/**
 * The refusal of a request sent with transfer codings other than `chunked` alone (`codings`, from
 * {@link unimplementedCodingsOf}): reason `transfer-coding-not-implemented`, verdict deny, answered
 * 501 with `Connection: close` (own-answer.ts `refuseRequest`); the detail names the codings.
 * @param target the request's absolute target (its origin and path are shown). Never throws.
 */
export function transferCodingRefusal(target: TargetUrl, codings: string): Decision {
  const shown = codings.length > CODINGS_SHOWN_CHARS ? `${codings.slice(0, CODINGS_SHOWN_CHARS)}...` : codings;
  return decideWithoutRobots('transfer-coding-not-implemented', {
    origin: target.origin,
    path: pathAndQueryOf(target),
    detail: `Transfer-Encoding: the transfer coding ${shown} is not implemented by this proxy (only chunked is), so the body cannot be forwarded (RFC 9112 §6.1)`,
  });
}
