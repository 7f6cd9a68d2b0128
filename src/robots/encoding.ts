/**
 * Percent-encoding normalisation of paths and rule patterns (RFC 9309 §2.2.2),
 * and extraction of the path the rules are matched against. Pure.
 *
 * Both sides of a match are brought to one canonical spelling, so a pattern
 * and a path that an origin serves as the same resource compare equal however
 * each was written ({@link normaliseOctets}, {@link normalisePath},
 * {@link normalisePattern}):
 * - raw octets outside printable ASCII (>= 0x80, controls, space) become `%XX`;
 * - so do the printable ASCII octets that may not appear raw in a URI
 *   (RFC 3986 §2: `"` `<` `>` `\` `^` `` ` `` `{` `|` `}`): `/a|` and `/a%7C`
 *   are one resource to every origin server, so both are spelt `/a%7C`;
 * - `%xx` hex is upper-cased (`%2f` -> `%2F`);
 * - an encoded unreserved octet (RFC 3986 §2.3: ALPHA DIGIT - . _ ~) is decoded
 *   (`%7E` -> `~`), as §2.2.2 requires; reserved ones stay encoded (`%2F` stays);
 * - in a path, a `%` not followed by two hex digits becomes `%25` (it can
 *   only be a literal percent sign); in a pattern it stays `%`, as the
 *   reference keeps it, where it reads as the start of an escape: at the
 *   end or before a `*`, or followed by one hex digit there
 *   (`Disallow: /jobs*%` blocks `/jobs/a%20b`, `*url%2*` and `/url%2`
 *   block `/url%2F`); any other lone `%` (`/p%xy`, `/p%2x`, `/c40%$`) is a
 *   literal percent sign, so it becomes `%25` as in a path
 *   (`Disallow: /p%xy` blocks the path `/p%xy`, spelt `/p%25xy`);
 * - `$` and `*` written literally: in a path they are plain characters, which
 *   a pattern can only name as `%24` and `%2A` (§2.2.3), so a path spells them
 *   `%24` and `%2A`; in a pattern `*` is the wildcard and a final `$` the end
 *   anchor, and a `$` anywhere else is a literal `$` (as the reference reads
 *   it), spelt `%24`.
 *
 * The reference matcher does only the first and third steps; see the skip
 * table in test/robots/conformance.test.ts for the vectors where that differs.
 */

const HEX = '0123456789ABCDEF';

/** Value of an ASCII hex digit, or -1. */
function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  if (code >= 0x41 && code <= 0x46) return code - 0x37;
  if (code >= 0x61 && code <= 0x66) return code - 0x57;
  return -1;
}

/** RFC 3986 §2.3 unreserved. */
function isUnreserved(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x61 && code <= 0x7a) || // a-z
    (code >= 0x30 && code <= 0x39) || // 0-9
    code === 0x2d || code === 0x2e || code === 0x5f || code === 0x7e // - . _ ~
  );
}

/** Octets written as `%XX` on both sides: outside printable ASCII, or not allowed raw in a URI (RFC 3986 §2). */
const ENCODED_ALWAYS = new Uint8Array(256);
for (let c = 0; c < 256; c++) ENCODED_ALWAYS[c] = c <= 0x20 || c >= 0x7f ? 1 : 0;
for (const c of '"<>\\^`{|}') ENCODED_ALWAYS[c.charCodeAt(0)] = 1;
/** The same, plus `$` and `*`, which a path holds only as plain characters (RFC 9309 §2.2.3). */
const ENCODED_IN_PATHS = ENCODED_ALWAYS.slice();
ENCODED_IN_PATHS[0x24] = 1;
ENCODED_IN_PATHS[0x2a] = 1;

/**
 * The characters {@link normaliseWith} respells with `encoded`, as one character class: `%`, the
 * octets `encoded` marks, and every code unit above 0xFF. Found with one `search` instead of a
 * `charCodeAt` per character: in the proxy each of those went through V8's generic property-load
 * handler (a LoadIC call per character under callgrind, ~150 instructions each), where a regular
 * expression is one call (issue 11).
 */
function respelledCharacters(encoded: Uint8Array): RegExp {
  let chars = '%';
  for (let c = 0; c < 256; c++) if (encoded[c] === 1) chars += `\\x${c.toString(16).padStart(2, '0')}`;
  return new RegExp(`[${chars}\\u0100-\\uffff]`);
}
const RESPELLED_ALWAYS = respelledCharacters(ENCODED_ALWAYS);
const RESPELLED_IN_PATHS = respelledCharacters(ENCODED_IN_PATHS);
/** A code unit at or above U+0080. */
const NON_ASCII = /[^\x00-\x7f]/;
/**
 * Where {@link mayResolve} can become true: the leftmost start of `%2F`, `%5C`, `\`, `;`, `//` or `/.`
 * (any case). Its matches are a superset of what mayResolve looks for, so no match before `end`
 * answers false without the per-character scan.
 */
const MAY_RESOLVE_FROM = /%2F|%5C|\\|;|\/\/|\/\./i;

/**
 * Normalises an octet string (one char per octet, codes 0..255, as produced by
 * a latin1 decode) as described in the module comment, leaving `$` and `*`
 * as they are (the caller decides what they mean). Returns pure ASCII.
 * Pure; never throws. RFC 9309 §2.2.2.
 */
export function normaliseOctets(octets: string): string {
  return normaliseWith(octets, ENCODED_ALWAYS, RESPELLED_ALWAYS);
}

/**
 * Normalises a rule's pattern (octets, as {@link normaliseOctets}): `*` stays
 * the wildcard and a final `$` the end anchor; any other `$` is a literal
 * character and becomes `%24` (RFC 9309 §2.2.3), so it matches a `$` or a
 * `%24` in the path alike. A `%` not followed by two hex digits stays `%`
 * (the reference's reading) when it may still begin an escape of the path,
 * else it becomes `%25` (see the module comment). Pure; never throws.
 */
export function normalisePattern(octets: string): string {
  const normalised = normaliseWith(octets, ENCODED_ALWAYS, RESPELLED_ALWAYS, true);
  const last = normalised.length - 1;
  const dollar = normalised.indexOf('$');
  if (dollar === -1 || dollar === last) return normalised;
  return normalised.slice(0, last).replaceAll('$', '%24') + normalised.slice(last);
}

/**
 * A pattern's match priority (RFC 9309 §2.2.2: the longest match in octets),
 * counted on the pattern as written (octets, as {@link normaliseOctets}
 * takes them): an octet >= 0x80 counts 3, as its `%XX` form, every other
 * octet 1. This is the reference matcher's count, and it does not depend on
 * how {@link normalisePattern} respells an octet. Pure; never throws.
 */
export function patternPriority(octets: string): number {
  let priority = octets.length;
  for (let i = 0; i < octets.length; i++) if (octets.charCodeAt(i) >= 0x80) priority += 2;
  return priority;
}

/**
 * For an `allow` pattern naming `.../index.htm[l]...` (normalised), the index
 * of its last `/`: the reference matcher also allows the directory `.../`
 * itself (extension, not in RFC 9309). -1 for any other pattern. Pure.
 */
export function indexHtmlSlash(pattern: string): number {
  const slash = pattern.lastIndexOf('/');
  return slash !== -1 && pattern.startsWith('/index.htm', slash) ? slash : -1;
}

/**
 * Whether the lone `%` at `octets[at]` of a pattern stays `%`, the reference's literal octet that
 * matches the `%` of any escape in a normalised path: when it ends the pattern or a `*` follows
 * it (`/50%`, `/jobs*%`, `/*URL%*`), or one hex digit that ends the pattern or precedes a `*`
 * (`/a%2`, `*url%2*`): the start of an escape, which is all a `%` can begin in a valid URI (and
 * `%2` also begins the `%25` of a literal percent sign), so `/a%2` blocks `/a%2F` as the
 * reference does. Every other lone `%` is a literal percent sign, spelt `%25` as a path spells
 * it: before the final `$` (`/cached40%$` ends where the path's `%25` does) or before anything
 * else (`/p1%xy`).
 */
function mayBeginEscape(octets: string, at: number): boolean {
  const n = octets.length;
  if (at + 1 === n || octets.charCodeAt(at + 1) === 0x2a /* * */) return true;
  return hexValue(octets.charCodeAt(at + 1)) >= 0 && (at + 2 === n || octets.charCodeAt(at + 2) === 0x2a);
}

/**
 * @param respelled {@link respelledCharacters} of `encoded`.
 * @param isPattern the octets are a rule's pattern: a lone `%` that may begin an escape stays `%` ({@link mayBeginEscape}).
 */
function normaliseWith(octets: string, encoded: Uint8Array, respelled: RegExp, isPattern = false): string {
  const n = octets.length;
  // Fast path: most paths and patterns need no change.
  let i = octets.search(respelled);
  if (i === -1) return octets;

  let out = octets.slice(0, i);
  for (; i < n; i++) {
    const c = octets.charCodeAt(i) & 0xff;
    if (c === 0x25) {
      const hi = i + 2 < n ? hexValue(octets.charCodeAt(i + 1)) : -1;
      const lo = hi >= 0 ? hexValue(octets.charCodeAt(i + 2)) : -1;
      if (lo < 0) {
        if (isPattern && mayBeginEscape(octets, i)) {
          out += '%';
          // `/a%e` at the end: the path spells that hex digit upper-case.
          const digit = i + 1 < n ? hexValue(octets.charCodeAt(i + 1)) : -1;
          if (digit >= 0) {
            out += HEX[digit];
            i++;
          }
        } else {
          out += '%25';
        }
        continue;
      }
      const value = hi * 16 + lo;
      out += isUnreserved(value) ? String.fromCharCode(value) : '%' + HEX[hi] + HEX[lo];
      i += 2;
    } else if (encoded[c] === 1) {
      out += '%' + HEX[(c >> 4) & 0xf] + HEX[c & 0xf];
    } else {
      out += octets[i];
    }
  }
  return out;
}

/** True when every char of `s` is below U+0080. */
function isAscii(s: string): boolean {
  return !NON_ASCII.test(s);
}

/**
 * The last path {@link normalisePath} was given, and its result. A request's path is normalised
 * by the operator policy's path rules and again by the robots.txt decision, one after the other
 * (issue 8: with `policy.rules` holding a path rule, every request): the second call is then one
 * string comparison. Holds one path; a function of its input only, so never stale.
 */
let lastPath: string | undefined;
let lastNormalised = '';

/**
 * Normalises a path (JavaScript string, possibly holding non-ASCII
 * characters, which are taken as UTF-8) for matching: as
 * {@link normaliseOctets}, and a literal `$` or `*` becomes `%24` or `%2A`
 * (RFC 9309 §2.2.2, §2.2.3). Pure (the same path, the same result; the last
 * one is remembered); never throws (lone surrogates become U+FFFD).
 */
export function normalisePath(path: string): string {
  if (path === lastPath) return lastNormalised;
  const normalised = isAscii(path)
    ? normaliseWith(path, ENCODED_IN_PATHS, RESPELLED_IN_PATHS)
    : normaliseWith(Buffer.from(path, 'utf8').toString('latin1'), ENCODED_IN_PATHS, RESPELLED_IN_PATHS);
  lastPath = path;
  lastNormalised = normalised;
  return normalised;
}

/**
 * Extracts path, params and query from a URL, dropping scheme, authority and
 * fragment; the result always starts with `/` (it is `/` when the URL has no
 * path). Follows the reference matcher's `GetPathParamsQuery`, so relative and
 * scheme-less inputs behave as the reference does. Not normalised.
 * Pure; never throws. RFC 9309 §2.2.2 ("the path ... including the query").
 */
export function extractPathAndQuery(url: string): string {
  let searchStart = 0;
  if (url.length >= 2 && url[0] === '/' && url[1] === '/') searchStart = 2;

  const earlyPath = firstOf(url, searchStart);
  let protocolEnd = url.indexOf('://', searchStart);
  if (earlyPath !== -1 && (protocolEnd === -1 || earlyPath < protocolEnd)) protocolEnd = -1;
  protocolEnd = protocolEnd === -1 ? searchStart : protocolEnd + 3;

  const pathStart = firstOf(url, protocolEnd);
  if (pathStart === -1) return '/';
  const hash = url.indexOf('#', searchStart);
  if (hash !== -1 && hash < pathStart) return '/';
  const pathEnd = hash === -1 ? url.length : hash;
  const path = url.slice(pathStart, pathEnd);
  return url[pathStart] === '/' ? path : '/' + path;
}

/** Index of the first of `/`, `?`, `;` at or after `from`, or -1. */
function firstOf(s: string, from: number): number {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x2f || c === 0x3f || c === 0x3b) return i;
  }
  return -1;
}

/**
 * True when `path`'s first `end` characters hold something {@link originResolvedPath} resolves:
 * `%2F` or `%5C` (any case), `\`, `;`, `//`, or a `.` or `..` segment (`/.` or `/..` followed by `/`
 * or the end), i.e. when `/%2F|%5C|\\|;|\/\/|\/\.\.?(?:\/|$)/i` matches them. Allocates nothing. Pure.
 */
export function mayResolve(path: string, end: number): boolean {
  const from = path.search(MAY_RESOLVE_FROM);
  if (from === -1 || from >= end) return false;
  for (let i = from; i < end; i++) {
    const c = path.charCodeAt(i);
    if (c === 0x5c || c === 0x3b) return true; // \ ;
    if (c === 0x25) {
      // %2F, %5C: `| 0x20` lower-cases F and C, and only them among the characters that could become f or c.
      if (i + 2 < end) {
        const digit = path.charCodeAt(i + 1);
        const letter = path.charCodeAt(i + 2) | 0x20;
        if ((digit === 0x32 && letter === 0x66) || (digit === 0x35 && letter === 0x63)) return true;
      }
    } else if (c === 0x2f && i + 1 < end) {
      const next = path.charCodeAt(i + 1);
      if (next === 0x2f) return true; // //
      if (next === 0x2e) {
        // /. or /.. ending a segment
        let after = i + 2;
        if (after < end && path.charCodeAt(after) === 0x2e) after++;
        if (after === end || path.charCodeAt(after) === 0x2f) return true;
      }
    }
  }
  return false;
}

/**
 * The path as a lenient origin server may resolve it: encoded slashes and
 * backslashes (`%2F`, `%5C`, `\`) taken as `/`, runs of `/` merged, path
 * parameters (`;` to the end of its segment, RFC 3986 §3.3) dropped, and
 * dot segments removed (RFC 3986 §5.2.4). Common servers do some of this
 * before routing, so `/private%2Fx`, `//private/x`, `/a/..%2Fprivate/x`,
 * `/private;x/x` and `/a/..;/private/x` (Servlet containers such as Tomcat and
 * Jetty drop each segment's parameters) can all reach `/private/x`. Extension,
 * not in RFC 9309, which matches the path as sent. `path` must already be normalised
 * ({@link normalisePath}); the query is kept as it is.
 * Pure (the last path's answer is remembered, as {@link normalisePath}'s: the policy's path
 * rules and the robots.txt decision ask for the same path in turn); never throws.
 * @returns the resolved path plus query, or `undefined` when it equals `path`.
 */
export function originResolvedPath(path: string): string | undefined {
  if (path === lastUnresolved) return lastResolved;
  const resolved = resolvePath(path);
  lastUnresolved = path;
  lastResolved = resolved;
  return resolved;
}

/** The last path {@link originResolvedPath} was given, and its answer. */
let lastUnresolved: string | undefined;
let lastResolved: string | undefined;

/** {@link originResolvedPath}'s work. */
function resolvePath(path: string): string | undefined {
  const q = path.indexOf('?');
  // Most paths hold nothing to resolve: told by a scan, without the slice and the regex (issue 8).
  if (!mayResolve(path, q === -1 ? path.length : q)) return undefined;
  const pathOnly = q === -1 ? path : path.slice(0, q);
  const slashed = pathOnly.replace(/%2F|%5C/gi, '/').replace(/\\/g, '/').replace(/\/{2,}/g, '/');
  const output: string[] = [];
  const segments = slashed.split('/').slice(1);
  segments.forEach((written, i) => {
    const semicolon = written.indexOf(';');
    const segment = semicolon === -1 ? written : written.slice(0, semicolon);
    const isLast = i === segments.length - 1;
    if (segment === '.' || segment === '..') {
      if (segment === '..') output.pop();
      if (isLast) output.push('');
      return;
    }
    output.push(segment);
  });
  const resolved = '/' + output.join('/') + (q === -1 ? '' : path.slice(q));
  return resolved === path ? undefined : resolved;
}

/**
 * Escapes of reserved characters that origin servers decode in a path before they route it
 * (nginx, Apache, MediaWiki, Express): `! & ' ( ) + , : ; = @ [ ]`. Not `%2F` and `%5C` (see
 * {@link originResolvedPath}), not `%3F` and `%23` (a decoded `?` or `#` is part of a name, not
 * a query or a fragment), not `%24` and `%2A` (a path spells `$` and `*` so, RFC 9309 §2.2.3),
 * not `%25` (decoding it would make new escapes).
 */
const DECODED_BY_ORIGINS = /%(?:2[16-9BC]|3[ABD]|40|5[BD])/gi;

/** {@link DECODED_BY_ORIGINS} without the global flag: `test` keeps no state between calls. */
const HOLDS_DECODED_BY_ORIGINS = /%(?:2[16-9BC]|3[ABD]|40|5[BD])/i;

/**
 * Whether a normalised pattern (or path) holds an escape that origin servers decode
 * ({@link originDecodedPath}: `%3A`, `%40`, `%28`, ...): a rule written with the escaped spelling
 * names that spelling on purpose (`Allow: /wiki/Special%3ARandom`). Pure; never throws.
 */
export function holdsOriginDecodedEscape(pattern: string): boolean {
  return pattern.indexOf('%') !== -1 && HOLDS_DECODED_BY_ORIGINS.test(pattern);
}

/**
 * The path with the escapes of reserved characters that origin servers decode
 * ({@link DECODED_BY_ORIGINS}: `%3A` -> `:`, `%40` -> `@`, `%28` -> `(`, ...) decoded in its
 * path part; the query is kept as it is, since there `%26` and `%3D` are data, not separators.
 * `/wiki/Special%3ASearch` reaches what `Disallow: /wiki/Special:` names. Extension, not in
 * RFC 9309, which keeps a reserved character's escape distinct from the character (§2.2.2):
 * the proxy decides this spelling too so that encoding does not bypass a rule (README "No
 * bypass by encoding"). `path` must already be normalised ({@link normalisePath}). Pure;
 * never throws.
 * @returns the decoded path plus query, or `undefined` when it equals `path`.
 */
export function originDecodedPath(path: string): string | undefined {
  // Most paths hold no escape at all: one scan, no slice (the proxy asks for every allowed request).
  if (path.indexOf('%') === -1) return undefined;
  const q = path.indexOf('?');
  const pathOnly = q === -1 ? path : path.slice(0, q);
  if (pathOnly.indexOf('%') === -1) return undefined;
  const decoded = pathOnly.replace(DECODED_BY_ORIGINS, (escape) => String.fromCharCode(parseInt(escape.slice(1), 16)));
  return decoded === pathOnly ? undefined : decoded + (q === -1 ? '' : path.slice(q));
}
