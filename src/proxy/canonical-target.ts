/**
 * A request target read without the URL parser when it is already spelt as the parser would
 * write it back (issue 11: `new URL` and its getters were ~4,900 instructions per request under
 * callgrind, the largest share of the proxy's own arrival work). Crawlers send such targets:
 * `http://host[:port]/path?query`, the scheme and host in lower case, the path without dot
 * segments. For those, the WHATWG URL Standard's parse of the target serializes back to the
 * target itself, so every part the proxy reads (`href`, `protocol`, `host`, `hostname`, `port`,
 * `pathname`, `search`, `origin`) is a slice of it. Anything this reader is not sure of (upper
 * case, IDNA, IPv4 shorthand, a default or empty port, user information, a percent-encoded dot,
 * a character the parser would encode, a fragment) is left to `new URL`
 * (proxy-target.ts), which stays the reference: test/proxy/proxy-target.test.ts compares the two
 * on every target this reader accepts. Pure; never throws. Extension, not in RFC 9309.
 */

/** The parts of a request target the proxy reads, under `URL`'s names and spelt exactly as `URL` spells them. */
export type TargetUrl = Pick<URL, 'href' | 'protocol' | 'host' | 'hostname' | 'port' | 'pathname' | 'search' | 'origin'>;

const SLASH = 0x2f;
const DOT = 0x2e;
const COLON = 0x3a;
const QUESTION = 0x3f;
const PERCENT = 0x25;
const ZERO = 0x30;
const NINE = 0x39;

/** Characters of a host name kept as they are by the host parser (UTS 46 maps lower-case ASCII letters, digits and `-` to themselves). */
const HOST_NAME = new Uint8Array(0x80);
/**
 * Path characters the URL parser keeps as they are (outside the path percent-encode set, WHATWG
 * URL §1.3, and not `\`, which a special URL reads as `/`): printable ASCII but `"`, `#`, `<`, `>`,
 * `?` (the query), `\`, `^`, `` ` ``, `{`, `|`, `}`. `%` is handled apart.
 */
const PATH_PLAIN = new Uint8Array(0x80);
/** Query characters kept as they are (outside the special-query percent-encode set): printable ASCII but `"`, `#`, `<`, `>`, `'`. */
const QUERY_PLAIN = new Uint8Array(0x80);
for (let c = 0x21; c < 0x7f; c++) {
  if (!'"#<>?\\^`{|}%'.includes(String.fromCharCode(c))) PATH_PLAIN[c] = 1;
  if (!'"#<>\''.includes(String.fromCharCode(c))) QUERY_PLAIN[c] = 1;
}
for (const c of 'abcdefghijklmnopqrstuvwxyz0123456789-') HOST_NAME[c.charCodeAt(0)] = 1;

/** A target read by {@link canonicalTargetOf}: the target string and where its parts begin and end. */
class CanonicalTarget implements TargetUrl {
  constructor(
    readonly href: string,
    readonly protocol: 'http:' | 'https:',
    readonly hostname: string,
    readonly port: string,
    /** Where the host begins in `href` (after `//`). */
    private readonly hostStart: number,
    /** Where the path begins in `href` (its `/`): the authority ends there. */
    private readonly pathStart: number,
    /** Where the query's `?` is in `href`, or `href.length` when there is none. */
    private readonly queryStart: number,
  ) {}

  get host(): string {
    return this.href.slice(this.hostStart, this.pathStart);
  }

  get origin(): string {
    return this.href.slice(0, this.pathStart);
  }

  get pathname(): string {
    return this.href.slice(this.pathStart, this.queryStart);
  }

  /** `?query`, or '' when there is no query or it is empty (as `URL.search` has it). */
  get search(): string {
    return this.queryStart + 1 < this.href.length ? this.href.slice(this.queryStart) : '';
  }
}

/** True when `c` is an ASCII digit. */
function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

/** True when `c` is an ASCII hexadecimal digit. */
function isHex(c: number): boolean {
  return isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/**
 * True when `raw[from, to)` is an IPv4 address as the URL parser writes it: four decimal parts of
 * 0-255, without leading zeros (the parser reads `010` as octal, `127.1` as `127.0.0.1`: those
 * are left to it).
 */
function isDottedQuad(raw: string, from: number, to: number): boolean {
  let parts = 0;
  let i = from;
  while (i < to) {
    const start = i;
    let value = 0;
    for (; i < to && isDigit(raw.charCodeAt(i)); i++) value = value * 10 + raw.charCodeAt(i) - ZERO;
    const length = i - start;
    if (length === 0 || length > 3 || value > 255 || (length > 1 && raw.charCodeAt(start) === ZERO)) return false;
    parts++;
    if (i === to) break;
    if (raw.charCodeAt(i) !== DOT) return false;
    i++;
    if (i === to) return false;
  }
  return parts === 4;
}

/**
 * The target `raw` read without the URL parser, when it is `http://` or `https://`, a host name
 * of lower-case letters, digits and `-` in non-empty dot-separated labels (none of them an
 * `xn--` label, no trailing dot) or a dotted-quad IPv4 address, an optional port of 1-65535
 * written without leading zeros and other than the scheme's default, then a path that begins with
 * `/` and holds no dot segment and only characters the parser keeps (a `%` only before two
 * hexadecimal digits other than `2e`), then an optional `?query` of characters the parser keeps.
 * For such a target `new URL(raw).href === raw`, and each part returned is the part `URL` gives.
 * @returns the target's parts, or undefined when `raw` is not spelt so (then `new URL` reads it).
 */
export function canonicalTargetOf(raw: string): TargetUrl | undefined {
  let protocol: 'http:' | 'https:';
  let i: number;
  if (raw.startsWith('http://')) {
    protocol = 'http:';
    i = 7;
  } else if (raw.startsWith('https://')) {
    protocol = 'https:';
    i = 8;
  } else return undefined;
  const n = raw.length;
  const hostStart = i;
  let labelStart = i;
  let hasXn = false;
  for (; i < n; i++) {
    const c = raw.charCodeAt(i);
    if (c === DOT) {
      if (i === labelStart) return undefined;
      labelStart = i + 1;
    } else if (c >= 0x80 || HOST_NAME[c] === 0) break;
    else if (c === 0x2d && i === labelStart + 3 && raw.charCodeAt(i - 1) === 0x2d) hasXn = true; // `??--`: maybe `xn--` (IDNA), to the parser
  }
  const hostEnd = i;
  if (hostEnd === labelStart || hasXn) return undefined;
  // A host whose last label is a number is an IPv4 address to the parser (its "ends in a number" check).
  if (isDigit(raw.charCodeAt(labelStart)) && !isDottedQuad(raw, hostStart, hostEnd)) return undefined;
  let port = '';
  if (i < n && raw.charCodeAt(i) === COLON) {
    const portStart = ++i;
    let value = 0;
    for (; i < n && isDigit(raw.charCodeAt(i)); i++) value = value * 10 + raw.charCodeAt(i) - ZERO;
    const length = i - portStart;
    if (length === 0 || length > 5 || raw.charCodeAt(portStart) === ZERO || value > 65535 || value === (protocol === 'http:' ? 80 : 443)) return undefined;
    port = raw.slice(portStart, i);
  }
  if (i >= n || raw.charCodeAt(i) !== SLASH) return undefined;
  const pathStart = i;
  let segmentStart = i + 1;
  for (i++; i <= n; i++) {
    const c = i < n ? raw.charCodeAt(i) : SLASH;
    if (c === SLASH || c === QUESTION) {
      // A `.` or `..` segment is removed by the parser.
      const length = i - segmentStart;
      if ((length === 1 || length === 2) && raw.charCodeAt(segmentStart) === DOT && (length === 1 || raw.charCodeAt(segmentStart + 1) === DOT)) return undefined;
      if (c === QUESTION) break;
      segmentStart = i + 1;
    } else if (c === PERCENT) {
      // `%2e` is a dot to the dot-segment check; any `%` not before two hex digits: to the parser.
      const high = raw.charCodeAt(i + 1);
      const low = raw.charCodeAt(i + 2);
      if (!isHex(high) || !isHex(low) || (high === 0x32 && (low === 0x65 || low === 0x45))) return undefined;
      i += 2;
    } else if (c >= 0x80 || PATH_PLAIN[c] === 0) return undefined;
  }
  const queryStart = i < n ? i : n;
  for (i++; i < n; i++) {
    const c = raw.charCodeAt(i);
    if (c >= 0x80 || QUERY_PLAIN[c] === 0) return undefined;
  }
  return new CanonicalTarget(raw, protocol, raw.slice(hostStart, hostEnd), port, hostStart, pathStart, queryStart);
}
