/**
 * The query of a request target as the client wrote it, where the URL parser respells it without
 * need. WHATWG URL percent-encodes `'` in the query of an http(s) URL (the special-query
 * percent-encode set), but `'` is a sub-delim RFC 3986 allows in a query as it is, and `%27` is
 * not the same query (RFC 3986 §6.2.2.2; RFC 9309 §2.2.2 matches them apart), and a proxy must
 * not change the query it forwards (RFC 9110 §7.7). Forwarded as `%27`, `/x?q='` was decided as
 * `/x?q=%27`, so `Disallow: /*?*'` (www.nationalesicherheitsstrategie.de) did not refuse it
 * (the reference does), and the origin, decoding its query, served the `'` anyway.
 * The characters a URI may not hold as they are (`"`, `<`, `>`, space, controls, non-ASCII) stay
 * escaped as the parser escapes them: §2.2.2 matches them escaped on both sides. Pure; never throws.
 */
import type { TargetUrl } from './canonical-target.js';

/** Characters of the code unit the parser writes for one code point of a query: itself, or `%XX` per UTF-8 octet. */
function encodedLength(codePoint: number): number {
  if (codePoint <= 0x20 || codePoint === 0x22 || codePoint === 0x23 || codePoint === 0x3c || codePoint === 0x3e || codePoint === 0x7f) return 3;
  if (codePoint < 0x80) return 1;
  if (codePoint < 0x800) return 6;
  if (codePoint < 0x10000) return 9;
  return 12;
}

/**
 * `url` (parsed from `rawTarget`, whose query it carries) with each `'` of the written query kept
 * as `'` in `search` and `href`, where the parser wrote `%27`; `url` itself when the written
 * query holds no `'` (the common case: one `indexOf`) or when the two do not line up (left to
 * the parser's spelling).
 * @param rawTarget the request target as received: absolute-form, or origin-form inside a tunnel.
 */
export function withQueryAsSent(url: URL, rawTarget: string): TargetUrl | URL {
  const q = rawTarget.indexOf('?');
  if (q === -1 || rawTarget.indexOf("'", q) === -1) return url;
  const hash = rawTarget.indexOf('#', q);
  const written = rawTarget.slice(q + 1, hash === -1 ? rawTarget.length : hash);
  const search = url.search;
  let kept = '?';
  let at = 1;
  for (const c of written) {
    if (c === "'") {
      // Belt and braces: the line-up check below also refuses a `'` the parser did not write as `%27`.
      if (!search.startsWith('%27', at)) return url;
      kept += "'";
      at += 3;
      continue;
    }
    const length = encodedLength(c.codePointAt(0)!);
    kept += search.slice(at, at + length);
    at += length;
  }
  // Every written character accounted for, and nothing else: else the parser changed more than escapes.
  if (at !== search.length) return url;
  const { origin, pathname } = url;
  return { href: origin + pathname + kept + url.hash, protocol: url.protocol, host: url.host, hostname: url.hostname, port: url.port, pathname, search: kept, origin };
}
