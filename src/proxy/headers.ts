/**
 * Header handling for forwarding (RFC 9110 §7.6). Pure.
 */
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { flatJoin } from './flat-string.js';

/** Hop-by-hop fields, never forwarded (RFC 9110 §7.6.1), plus the legacy `proxy-connection`. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** A `Via` pseudonym for one proxy instance (RFC 9110 §7.6.3): unique, so a loop back into the same instance is recognised. */
export function makeViaPseudonym(): string {
  return `robots-proxy-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * The sets of names of the `Connection` values seen most (`keep-alive`, `close`: nearly every
 * response an origin sends carries one), so they are parsed once, not per message. Bounded;
 * the sets are never changed once made.
 */
const listedByValue = new Map<string, ReadonlySet<string>>();
const MAX_CACHED_CONNECTION_VALUES = 64;
/** Longest `Connection` value whose names are cached. */
const MAX_CACHED_CONNECTION_CHARS = 64;

/** The names in a `Connection` value, lower case. */
function parseConnectionValue(value: string): Set<string> {
  const listed = new Set<string>();
  for (const item of value.split(',')) {
    const name = item.trim().toLowerCase();
    if (name) listed.add(name);
  }
  return listed;
}

/** Names listed in `Connection` (lower case): they are hop-by-hop too (RFC 9110 §7.6.1). Undefined when there is no `Connection` field. */
function connectionListed(headers: IncomingHttpHeaders | OutgoingHttpHeaders): ReadonlySet<string> | undefined {
  const value = headers['connection'];
  if (value === undefined) return undefined;
  const text = String(Array.isArray(value) ? value.join(',') : value);
  if (text.length > MAX_CACHED_CONNECTION_CHARS) return parseConnectionValue(text);
  let listed = listedByValue.get(text);
  if (listed === undefined) {
    listed = parseConnectionValue(text);
    if (listedByValue.size < MAX_CACHED_CONNECTION_VALUES) listedByValue.set(text, listed);
  }
  return listed;
}

/**
 * Copies `headers` without hop-by-hop fields (RFC 9110 §7.6.1) and with this
 * proxy appended to `Via` (§7.6.3) as `pseudonym`. `protocolVersion` is the
 * version of the hop the message arrived on, e.g. `1.1`. Names come out lower case. Pure.
 * @param namesLowerCase true when every name of `headers` is lower case already, as in Node's
 *   `IncomingMessage.headers` and undici's parsed response headers: then no name is lower-cased
 *   again (one `toLowerCase` per field and message, issue 11). A name that is not lower case is
 *   then copied as it is, so pass true only for such sources.
 */
export function forwardableHeaders(
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
  protocolVersion: string,
  pseudonym: string,
  namesLowerCase = false,
): Record<string, string | string[]> {
  const listed = connectionListed(headers);
  const out: Record<string, string | string[]> = {};
  // Per request, twice (request and response): no entries array, no Set when nothing is listed.
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || !Object.hasOwn(headers, name)) continue;
    const lower = namesLowerCase ? name : name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || listed?.has(lower)) continue;
    out[lower] = value;
  }
  out['via'] = appendedVia(out['via'], protocolVersion, pseudonym);
  return out;
}

/**
 * A `Via` value with this proxy's hop (`protocolVersion pseudonym`, e.g. `1.1 robots-proxy-x1y2z3`)
 * appended to `existing` (absent, or the field as received: one value or several), as every
 * message a proxy forwards must carry (RFC 9110 §7.6.3). Pure.
 */
export function appendedVia(existing: string | string[] | undefined, protocolVersion: string, pseudonym: string): string {
  const via = hopOf(protocolVersion, pseudonym);
  return existing === undefined ? via : flatJoin([Array.isArray(existing) ? existing.join(', ') : existing, via], ', ');
}

/** The last hop value made ({@link hopOf}): one proxy, one pseudonym, nearly always HTTP/1.1 both ways. */
let lastHop = { protocolVersion: '', pseudonym: '', value: '' };

/**
 * This proxy's `Via` hop, `protocolVersion pseudonym`, as a flat string ({@link flatJoin}), made
 * once and reused while the version and the pseudonym are the last ones (no string built per
 * message, issue 11). Pure.
 */
function hopOf(protocolVersion: string, pseudonym: string): string {
  const hop = lastHop;
  if (hop.protocolVersion === protocolVersion && hop.pseudonym === pseudonym) return hop.value;
  const value = flatJoin([protocolVersion, pseudonym], ' ');
  lastHop = { protocolVersion, pseudonym, value };
  return value;
}

/** True when a `Via` value shows the message already passed through this proxy (a forwarding loop). */
export function hasVisitedProxy(headers: IncomingHttpHeaders, pseudonym: string): boolean {
  const via = headers['via'];
  if (via === undefined) return false;
  return via.split(',').some((hop) => hop.trim().split(/\s+/)[1] === pseudonym);
}

/**
 * True when `req` asked for `Expect: 100-continue` (any case, RFC 9110 §10.1.1) and its body has not
 * all arrived: the client waits for a 100 Continue, or a final answer, before sending it. The
 * listeners hold back Node's automatic 100 (`checkContinue`), so that only an allowed request gets it.
 */
export function awaitsContinue(req: IncomingMessage): boolean {
  const expect = req.headers['expect'];
  return !req.complete && expect !== undefined && expect.trim().toLowerCase() === '100-continue';
}
