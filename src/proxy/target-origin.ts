/**
 * The origin and the path plus query of a request's target URL, spelt exactly as `URL.origin`
 * and `pathname + search` spell them, but built for the hot path (issue 11): flat strings
 * (flat-string.ts), and the origin one string object per origin.
 *
 * The origin is the key of every per-origin map a request looks up (robots cache, pacer, pools,
 * ledger rollup, metrics). A string made afresh per request has its hash computed by V8 at its
 * first lookup (~450 instructions under callgrind for `http://127.0.0.1:41234`), and is compared
 * with the stored key character by character at each; the same string object every time has
 * its hash already, and V8's map lookups compare it by identity. So the origins made are kept
 * in a bounded table ({@link ORIGIN_SLOTS} slots), found by the URL's own serialization (`href`),
 * not by building or hashing a string. Extension, not in RFC 9309.
 */
import { flatJoin } from './flat-string.js';
import type { TargetUrl } from './canonical-target.js';

/** Slots of the origin table (a power of two): at most this many origins kept, one per slot; a colliding origin takes the slot. */
export const ORIGIN_SLOTS = 4096;

/** The origins kept, by slot ('' for an empty slot): each one the spelling of `URL.origin` and the start of its URLs' `href`. */
const originSlots: string[] = new Array<string>(ORIGIN_SLOTS).fill('');

/**
 * The first index a special URL's path may start at: `http://` is 7 characters and its host at
 * least one, so the first `/` from index 8 on ends the authority (a host or port never holds a
 * `/`, and user information has it percent-encoded).
 */
const PATH_SEARCH_FROM = 8;

/**
 * The slot of an origin of `length` characters ending at `href[length - 1]`: its length and its
 * last three characters (a port's digits, a name's top-level domain) and the scheme's fifth
 * character (`s` of https). A collision costs a rebuilt origin, never a wrong one: the slot's
 * origin is used only when `href` begins with it.
 */
function slotOf(href: string, length: number): number {
  const hash = length * 0x9e3 + href.charCodeAt(length - 1) * 0x3c1 + href.charCodeAt(length - 2) * 0x1f + href.charCodeAt(length - 3) + href.charCodeAt(4) * 0x55;
  return hash & (ORIGIN_SLOTS - 1);
}

/**
 * `url.origin` of an http: or https: URL (`scheme://host[:port]`, the port only when not the
 * scheme's default), its host as {@link hostKeyOf} keys it (an IPv4-mapped IPv6 host is its IPv4
 * address: `http://[::ffff:7f00:1]:8` is `http://127.0.0.1:8`), as a flat string, and for an origin met before (and still in its slot) the
 * same string object as before. Found through `url.href`, the URL's own serialization (no
 * parsing here): a special URL's `href` is `scheme://`, its user information and `@` if any, its
 * host and port, then its path, which always begins with `/` (WHATWG URL). A kept origin
 * `scheme://X` that `href` begins with, whose length is that of `href` up to the first `/` after
 * the scheme's, is this URL's origin: `X` holds no `@` (no origin does), so the URL has no user
 * information and `X` is its host and port. Anything else, user information included, is spelt
 * from `protocol` and `host` as before; it is kept when it has that length (a URL with user
 * information never gives one: its path begins further on). Never throws.
 */
export function originOf(url: Pick<TargetUrl, 'href' | 'protocol' | 'host'>): string {
  const href = url.href;
  const end = href.indexOf('/', PATH_SEARCH_FROM);
  if (end >= PATH_SEARCH_FROM) {
    const slot = slotOf(href, end);
    const known = originSlots[slot] as string;
    // `lastIndexOf(known, 0) === 0` is `startsWith`, at well under half its cost in V8's optimised code (issue 11).
    if (known.length === end && href.lastIndexOf(known, 0) === 0) return known;
    const host = url.host;
    // An IPv4-mapped host is keyed by its IPv4 address (never kept: its href does not begin with that).
    if (host.lastIndexOf(MAPPED_PREFIX, 0) === 0) return flatJoin([url.protocol, hostKeyOf(host)], '//');
    const origin = flatJoin([url.protocol, host], '//');
    if (origin.length === end) originSlots[slot] = origin;
    return origin;
  }
  return flatJoin([url.protocol, hostKeyOf(url.host)], '//');
}

/**
 * How the URL parser (WHATWG) writes an IPv4-mapped IPv6 host: `[::ffff:` then the IPv4 address
 * as two hexadecimal groups, `]` (RFC 4291 §2.5.5.2, `::ffff:a.b.c.d`; the five zero groups are
 * always compressed to `::`, the IPv4 part always written in hexadecimal).
 */
const MAPPED_PREFIX = '[::ffff:';

/** `[::ffff:HHHH:HHHH]` and an optional `:port`, exactly as the URL parser writes it (lower case, no leading zeros). */
const MAPPED_HOST = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\](:\d+)?$/;

/**
 * The host (and port) an origin is keyed by, from `URL.host` (`host[:port]` as the URL parser
 * writes it): an IPv4-mapped IPv6 address (`[::ffff:7f00:1]:8080`, `[::ffff:127.0.0.1]` as the
 * client may write it) is its IPv4 address (`127.0.0.1:8080`), since a connection to it reaches
 * that IPv4 address (RFC 4291 §2.5.5.2; RFC 4038 §4.2): one origin, one robots snapshot, one
 * pacing queue, whichever way the client spells it. Any other host is returned as it is: other
 * IPv6 forms that embed an IPv4 address (IPv4-translated, IPv4-compatible, NAT64) are other
 * addresses, which the connection does not reach as that IPv4 address. Never throws.
 */
export function hostKeyOf(host: string): string {
  if (!host.startsWith(MAPPED_PREFIX)) return host;
  const mapped = MAPPED_HOST.exec(host);
  if (mapped === null) return host;
  const high = parseInt(mapped[1] as string, 16);
  const low = parseInt(mapped[2] as string, 16);
  return `${high >>> 8}.${high & 0xff}.${low >>> 8}.${low & 0xff}${mapped[3] ?? ''}`;
}

/**
 * Under this many characters V8 makes `a + b` a flat string (a SeqString) itself; from it on, a
 * rope (a ConsString: `ConsString::kMinLength`).
 */
const FLAT_CONCAT_BELOW = 13;

/**
 * The path plus query of a target URL, as matched and forwarded: a flat string (flat-string.ts),
 * so the regular expressions that match and check it take their fast path, and an equal path
 * compares as equal without V8's runtime (a slice of `href` would not: issue 11). A short one
 * (under {@link FLAT_CONCAT_BELOW} characters, e.g. `/page/1?q=1`) is joined by `+`, which V8
 * makes flat and costs a fraction of `Array.prototype.join`.
 * An empty query keeps its `?` (`/page?`): `URL.search` is '' for it as for no query, but it is
 * part of the target a proxy forwards unchanged (RFC 9110 §7.7) and of the path RFC 9309 §2.2.2
 * matches (`Disallow: /*?` refuses `/page?`, as the reference does). Only a `href` that ends in
 * `?` is read so (a fragment after an empty query, which clients do not send, still drops it).
 */
export function pathAndQueryOf(url: Pick<TargetUrl, 'pathname' | 'search' | 'href'>): string {
  const pathname = url.pathname || '/';
  let search = url.search;
  if (search.length === 0) {
    const href = url.href;
    if (href.charCodeAt(href.length - 1) === 0x3f /* ? */) search = '?';
  }
  if (pathname.length + search.length < FLAT_CONCAT_BELOW) return pathname + search;
  return flatJoin([pathname, search]);
}
