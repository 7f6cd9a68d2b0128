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
const HYPHEN = 0x2d;

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

/** A target read by {@link canonicalTargetOf}: the target string and where its parts begin and end. */
class CanonicalTarget implements TargetUrl {
  constructor(
    readonly href: string,
    readonly protocol: 'http:' | 'https:',
    readonly hostname: string,
    /** The port the connection uses (the scheme's default when none is written). */
    readonly portNumber: number,
    /** Where the host begins in `href` (after `//`). */
    private readonly hostStart: number,
    /** Where the host name ends in `href` (at the port's `:`, or at the path). */
    private readonly hostEnd: number,
    /** Where the path begins in `href` (its `/`): the authority ends there. */
    private readonly pathStart: number,
    /** Where the query's `?` is in `href`, or `href.length` when there is none. */
    private readonly queryStart: number,
  ) {}

  /** The written port, or '' (never the scheme's default: such a target is left to the URL parser). */
  get port(): string {
    return this.hostEnd < this.pathStart ? this.href.slice(this.hostEnd + 1, this.pathStart) : '';
  }

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

/**
 * The port a connection to `target` uses: the written one, else the scheme's default (80, or 443
 * for https:). Read without converting `port` for a target from {@link canonicalTargetOf} (a
 * string-to-number conversion is a runtime call, ~350 instructions). Never throws.
 */
export function connectionPortOf(target: TargetUrl): number {
  if (target instanceof CanonicalTarget) return target.portNumber;
  return Number(target.port) || (target.protocol === 'https:' ? 443 : 80);
}

/** True when `raw[from, to)` is `.` or `..`, a segment the parser removes from a path. */
function isDotSegment(raw: string, from: number, to: number): boolean {
  const length = to - from;
  return (length === 1 || length === 2) && raw.charCodeAt(from) === DOT && (length === 1 || raw.charCodeAt(from + 1) === DOT);
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
  const n = raw.length;
  // `http://` or `https://`, by character codes (`startsWith` is a call per target).
  if (n < 9 || raw.charCodeAt(0) !== 0x68 || raw.charCodeAt(1) !== 0x74 || raw.charCodeAt(2) !== 0x74 || raw.charCodeAt(3) !== 0x70) return undefined;
  const isHttps = raw.charCodeAt(4) === 0x73;
  let i = isHttps ? 5 : 4;
  if (raw.charCodeAt(i) !== COLON || raw.charCodeAt(i + 1) !== SLASH || raw.charCodeAt(i + 2) !== SLASH) return undefined;
  i += 3;
  const protocol = isHttps ? 'https:' : 'http:';
  const hostStart = i;
  let labelStart = i;
  // One pass over the host: its labels, and whether it is a dotted-quad IPv4 address as the parser
  // writes it (four decimal labels of 0-255 without leading zeros; `010` is octal to it, `127.1`
  // is `127.0.0.1`). `value` is the label's number while it has only digits (past 255: left at it).
  let labels = 0;
  let isQuad = true;
  let value = 0;
  for (; i < n; i++) {
    const c = raw.charCodeAt(i);
    if (c >= ZERO && c <= NINE) {
      if (value <= 255) value = value * 10 + c - ZERO;
    } else if (c === DOT) {
      if (i === labelStart) return undefined;
      if (value > 255 || (i - labelStart > 1 && raw.charCodeAt(labelStart) === ZERO)) isQuad = false;
      labels++;
      value = 0;
      labelStart = i + 1;
    } else if ((c >= 0x61 && c <= 0x7a) || c === HYPHEN) {
      isQuad = false;
      // `??--` begins an IDNA label (`xn--`) or one UTS 46 may refuse: to the parser.
      if (c === HYPHEN && i === labelStart + 3 && raw.charCodeAt(i - 1) === HYPHEN) return undefined;
    } else break;
  }
  const hostEnd = i;
  if (hostEnd === labelStart) return undefined; // no host, or a trailing dot
  if (value > 255 || (i - labelStart > 1 && raw.charCodeAt(labelStart) === ZERO)) isQuad = false;
  // A host whose last label is a number is an IPv4 address to the parser (its "ends in a number" check).
  const first = raw.charCodeAt(labelStart);
  if (first >= ZERO && first <= NINE && (!isQuad || labels !== 3)) return undefined;
  let port = isHttps ? 443 : 80;
  if (i < n && raw.charCodeAt(i) === COLON) {
    const portStart = ++i;
    let portValue = 0;
    for (; i < n; i++) {
      const c = raw.charCodeAt(i);
      if (c < ZERO || c > NINE) break;
      portValue = portValue * 10 + c - ZERO;
    }
    const length = i - portStart;
    if (length === 0 || length > 5 || raw.charCodeAt(portStart) === ZERO || portValue > 65535 || portValue === port) return undefined;
    port = portValue;
  }
  if (i >= n || raw.charCodeAt(i) !== SLASH) return undefined;
  const pathStart = i;
  let segmentStart = i + 1;
  for (i++; i < n; i++) {
    const c = raw.charCodeAt(i);
    if (c === SLASH) {
      if (isDotSegment(raw, segmentStart, i)) return undefined;
      segmentStart = i + 1;
    } else if (c === QUESTION) break;
    else if (c === PERCENT) {
      // `%2e` is a dot to the dot-segment check; any `%` not before two hex digits: to the parser.
      if (i + 2 >= n) return undefined;
      const high = raw.charCodeAt(i + 1);
      const low = raw.charCodeAt(i + 2);
      if (!isHex(high) || !isHex(low) || (high === 0x32 && (low === 0x65 || low === 0x45))) return undefined;
      i += 2;
    } else if (c >= 0x80 || PATH_PLAIN[c] === 0) return undefined;
  }
  if (isDotSegment(raw, segmentStart, i)) return undefined;
  const queryStart = i < n ? i : n;
  for (i++; i < n; i++) {
    const c = raw.charCodeAt(i);
    if (c >= 0x80 || QUERY_PLAIN[c] === 0) return undefined;
  }
  return new CanonicalTarget(raw, protocol, raw.slice(hostStart, hostEnd), port, hostStart, hostEnd, pathStart, queryStart);
}
