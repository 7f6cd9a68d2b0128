/**
 * A generator of robots.txt files that stress the parser where the project and the reference
 * must read alike (the session-30 differential against the compiled reference used it, and found
 * a colon-less line split at `\v`): every key spelling and typo the reference tests by prefix, and
 * near misses (`User-Agent2`, `Disallowance`, `user  agent`); separators of space, tab, `\v`, `\f`,
 * `\xa0` (a non-ASCII octet, never white space), `::`, missing colons; `\v`, `\f`, `\xa0`, NUL and
 * `#` before and after values; empty values; `*` user-agents with text, `\v` or `\xa0` after them;
 * BOM and its prefixes, a BOM twice and inside a line; LF, CRLF and CR mixed; lines at and past the
 * reference's 16,663 octets; dense files of many rules over a small alphabet (patterns that share
 * prefixes and compete on priority, `*`, `$`, index.html); and random octets around record
 * fragments. Kept to the ground where RFC 9309 and the reference agree (see
 * reference-differential.test.ts): paths and patterns hold no `%` and no octet >= 0x80, and
 * user-agent values and tokens no digit or `.`. Pure; seeded by the caller's `random`.
 */

/** One generated case: the body (octets, one char each), a product token, a path. */
export interface StressCase {
  body: string;
  agent: string;
  path: string;
}

const KEYS = [
  'User-agent', 'user-agent', 'USER-AGENT', 'useragent', 'User agent', 'user-agents', 'User-Agent2', 'Useragentfoo', 'user  agent', 'User_agent',
  'Allow', 'allow', 'ALLOW', 'Allowed', 'Allow-x', 'allow\x0b', 'Disallow', 'disallow', 'Disalow', 'dissallow', 'dissalow', 'diasllow', 'disallaw',
  'Disallowance', 'Disallow-all', 'Disalllow', '\xa0Disallow', 'Disallow\xa0', 'Sitemap', 'site-map', 'Crawl-delay', 'Host', 'Unknown',
];
const AGENT_VALUES = ['*', '* ', '*\t', '*foo', '* FooBot', '*FooBot', '*\x0b', '*\xa0', '*\x0bfoo', 'FooBot', 'foobot', 'FOOBOT', 'Foo Bot', 'FooBot/x', 'FooBot*', 'Foo-Bot', 'Foo_Bot', '\xa0FooBot', 'FooBot\xa0', 'Foo\xe9Bot', 'BarBot', 'Foo;Bar', '"FooBot"', '-', ''];
const SEPARATORS = [': ', ':', ' : ', '\t:\t', ' ', '\t', ' :', '::', ': \t', ' \x0b ', '\x0b', ' \x0c', '\x0c ', '\xa0', ' \xa0', '\xa0:', ':\xa0', ' \t ', '\t \x0b\t'];
const PATTERN_PARTS = ['/', '/', 'a', 'b', 'x', 'A', '.', '?', '=', '&', '*', '**', '$', '$', '-', '_', '~', 'index.html', 'index.htm', '/index.html', 'INDEX.HTML', '|', ';', ':', ' ', '\t', '#', '"', '\x0b/', ' /'];
const PATH_PARTS = ['/', 'a', 'b', 'x', 'A', '.', '?', '=', '&', '-', '_', '~', 'index.html', 'index.htm', ';', ':', '|'];
const ODD_LINES = [' ', '\t', '\0', '\0Disallow: /', 'Disallow: /\0x', '#\0', '\xef\xbb\xbfDisallow: /', 'Disallow', 'Allow:', ':/', ': /x', 'Disallow /a', 'Disallow\t/a', 'Disallow /a /b', 'User-agent FooBot', 'Disallow:/x#y', 'Disallow: #/x'];
const TOKENS = ['FooBot', 'foobot', 'BarBot', 'Foo', 'Foo-Bot', 'Foo_Bot', 'BazBot'];
const EOLS = ['\n', '\r\n', '\r'];
const MAX_LINE = 2083 * 8 - 1;

/** A case from `random` (a uniform [0, 1) source). */
export function stressCase(random: () => number): StressCase {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const sequence = (parts: readonly string[], start: string, max: number): string => {
    let s = start;
    for (let n = Math.floor(random() * max); n > 0; n--) s += pick(parts);
    return s;
  };
  const path = sequence(PATH_PARTS, '/', 8);
  const kind = random();
  if (kind < 0.05) {
    const fragments = ['User-agent: *', 'User-agent: FooBot', 'Disallow: /', 'Disallow: /a', 'Allow: /a/index.html', '\n', '\r', '\r\n', '\0', ':', ' ', '\t', '#', '*', '$', '/', '\xef\xbb\xbf'];
    let body = '';
    for (let n = Math.floor(random() * 60); n > 0; n--) body += random() < 0.6 ? pick(fragments) : String.fromCharCode(Math.floor(random() * 256));
    return { body, agent: pick(TOKENS), path };
  }
  if (kind < 0.25) {
    const dense = ['/', '/', 'a', 'b', 'a', '*', '$', '.', 'index.html', '?', 'A'];
    const lines: string[] = [];
    for (let g = 1 + Math.floor(random() * 3); g > 0; g--) {
      lines.push(`User-agent: ${pick(['*', 'FooBot', 'BarBot', 'foobot'])}`);
      if (random() < 0.3) lines.push(`User-agent: ${pick(['*', 'FooBot', 'BarBot'])}`);
      for (let n = 5 + Math.floor(random() * 60); n > 0; n--) lines.push(pick(['Allow: ', 'Disallow: ', 'disallow:', 'allow:']) + sequence(dense, random() < 0.9 ? '/' : pick(['*', '', '$']), 8));
    }
    return { body: lines.join('\n') + '\n', agent: pick(TOKENS), path: sequence(dense.filter((p) => p !== '*' && p !== '$'), '/', 9) };
  }
  const lines: string[] = [];
  for (let n = 1 + Math.floor(random() * 12); n > 0; n--) {
    const r = random();
    if (r < 0.05) lines.push('');
    else if (r < 0.08) lines.push(`# ${sequence(PATTERN_PARTS, '/', 4)}`);
    else if (r < 0.12) lines.push(pick(ODD_LINES));
    else if (r < 0.14) lines.push(`Disallow: /${'a'.repeat(MAX_LINE - 12 + Math.floor(random() * 16))}${pick(['', '/b', '$'])}`);
    else {
      const key = pick(KEYS);
      const lower = key.toLowerCase();
      const value = /agent/.test(lower) ? pick(AGENT_VALUES) : /allow|alow|llaw/.test(lower) ? sequence(PATTERN_PARTS, random() < 0.85 ? '/' : pick(['', '*', '$', 'x']), 7) : pick(['1', '0.5', 'http://x/s.xml', 'x y', '']);
      const lead = random() < 0.1 ? pick([' ', '\t', '\x0b', '\x0c']) : '';
      const trail = random() < 0.1 ? pick([' ', '\t', ' # c', '#c', '\x0b', '\0junk', ' \0', '\x0c']) : '';
      lines.push(lead + key + pick(SEPARATORS) + value + trail);
    }
  }
  const mixed = random() < 0.3;
  const eol = pick(EOLS);
  let body = '';
  for (let i = 0; i < lines.length; i++) body += lines[i] + (i < lines.length - 1 || random() < 0.5 ? (mixed ? pick(EOLS) : eol) : '');
  const bom = random();
  if (bom < 0.05) body = '\xef\xbb\xbf' + body;
  else if (bom < 0.07) body = '\xef\xbb' + body;
  else if (bom < 0.08) body = '\xef' + body;
  else if (bom < 0.09) body = '\xef\xbb\xbf\xef\xbb\xbf' + body;
  else if (bom < 0.1) body = '\xbb\xbf' + body;
  return { body, agent: pick(TOKENS), path };
}
