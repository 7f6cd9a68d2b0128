/**
 * A generator of robots.txt files and URLs that spell one resource many ways, for a differential
 * against the reference port (reference-port.ts) where the project and the reference are meant
 * to differ only in spelling: percent-escapes in either hex case, escaped unreserved characters
 * (`%7E`, `%61`), non-ASCII written raw (UTF-8, Latin-1, invalid UTF-8) or escaped, a lone `%`
 * (`%zz`), `%00`, characters a URI may not hold raw (`|`, `"`, space), `$` and `*` in paths and
 * patterns (`**`, `*$`, several `$`, `$` mid-pattern), around a file of lenient syntax (key typos
 * the reference accepts, missing `:`, tabs, empty rules, rules before any group, NUL bytes, lines
 * past the reference's 16,663 octets, BOM, LF / CRLF / CR mixed).
 *
 * Each case carries its canonical spelling (RFC 9309 §2.2.2 and §2.2.3, as DESIGN.md reads them:
 * both sides normalised, a path's `$`/`*` are `%24`/`%2A`, a mid-pattern `$` is a literal `$`):
 * the reference is given the path in that spelling and matches each rule in it, keeping its own
 * priority (the escaped length as written); the project is given the file and URL as written.
 * The verdicts must agree. Seeded (mulberry32), so a case replays.
 */


/** One piece of a path or pattern: its canonical spelling, and how a URL and a robots.txt may write it. */
interface Piece {
  /** ASCII, the §2.2.2 spelling. */
  canonical: string;
  /** Spellings in a URL (a JavaScript string, non-ASCII as characters, sent as UTF-8). */
  inPath: readonly string[];
  /** Spellings in a robots.txt rule (octets, one char each); empty: never in a pattern. */
  inPattern: readonly string[];
}

const plain = (c: string, ...escapes: string[]): Piece => ({ canonical: c, inPath: [c, ...escapes], inPattern: [c, ...escapes] });
const escaped = (canonical: string, inPath: string[], inPattern: string[]): Piece => ({ canonical, inPath, inPattern });

const PIECES: readonly Piece[] = [
  plain('/'), plain('/'), plain('/'),
  plain('a', '%61'), plain('b', '%62'), plain('x'), plain('A', '%41', '%41'), plain('index.html'),
  plain('.', '%2E', '%2e'), plain('-', '%2D'), plain('_', '%5F', '%5f'), plain('~', '%7E', '%7e'),
  plain('?'), plain('='), plain('&'), plain(';'), plain(':'), plain('+'), plain(','),
  escaped('%2F', ['%2F', '%2f'], ['%2F', '%2f']),
  escaped('%3A', ['%3A', '%3a'], ['%3A', '%3a']),
  escaped('%3F', ['%3F', '%3f'], ['%3F', '%3f']),
  escaped('%25', ['%25'], ['%25']),
  escaped('%25zz', ['%zz', '%25zz'], ['%zz', '%25zz']),
  escaped('%00', ['%00', '\0'], ['%00']),
  escaped('%20', [' ', '%20'], ['%20']),
  escaped('%7C', ['|', '%7c', '%7C'], ['|', '%7c', '%7C']),
  escaped('%22', ['"', '%22'], ['"', '%22']),
  escaped('%24', ['$', '%24'], ['%24']),
  escaped('%2A', ['*', '%2A', '%2a'], ['%2A', '%2a']),
  escaped('%C3%A9', ['é', '%C3%A9', '%c3%a9'], ['\xc3\xa9', '%C3%A9', '%c3%A9', '\xc3%a9']),
  escaped('%E9', ['%E9', '%e9'], ['\xe9', '%e9', '%E9']),
  escaped('%C3', ['%C3', '%c3'], ['\xc3', '%c3']),
  escaped('%E2%82%AC', ['€', '%e2%82%ac'], ['\xe2\x82\xac', '%E2%82%AC']),
  escaped('%F0%9F%98%80', ['😀', '%F0%9F%98%80'], ['\xf0\x9f\x98\x80', '%f0%9f%98%80']),
];

/** A generated case: what the project reads, and what the reference is given. */
export interface SpellingCase {
  /** The robots.txt as written (octets, one char each: decode as latin1 to bytes). */
  body: string;
  /** A rule's value as written -> the canonical spelling it is matched in. */
  spellings: Map<string, string>;
  /** The product token asked about. */
  agent: string;
  /** The URL as written. */
  url: string;
  /** The URL with its path in the canonical spelling. */
  canonicalUrl: string;
}

const USER_AGENT_VALUES = ['FooBot', 'foobot', 'FOOBOT', '*', '* ', '*\t', '*bot', '* FooBot', 'Foo Bar', 'FooBot/1.0', 'foo-bar_baz', 'Foo-Bar_Baz/2', 'FooBot*', '', 'BarBot', 'foo', 'FooBot (compatible)', 'FooBot;', 'Foo', 'foo bar'];
const AGENTS = ['FooBot', 'foo-bar_baz', 'Foo', 'BarBot', 'foo', 'Baz'];
const USER_AGENT_KEYS = ['User-agent', 'user-agent', 'USER-AGENT', 'useragent', 'User agent', 'user-agents'];
const ALLOW_KEYS = ['Allow', 'allow', 'ALLOW', 'Allowed'];
const DISALLOW_KEYS = ['Disallow', 'disallow', 'DISALLOW', 'dissallow', 'dissalow', 'disalow', 'diasllow', 'disallaw', 'Disallowed'];
const OTHER_LINES = ['Sitemap: http://example.com/s.xml', 'Crawl-delay: 1', 'Unknown: x', 'Host: example.com', '# a comment', '', 'Disallow', 'Allow:', 'Disallow:', 'Disallow: \t', 'garbage line here'];
const SEPARATORS = [': ', ':', ' : ', '\t:\t', ' ', '\t', ':\t', ' :'];
const EOLS = ['\n', '\r\n', '\r'];

/** A random case from `random`. */
export function spellingCase(random: () => number): SpellingCase {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const spellings = new Map<string, string>();

  // The pieces of each pattern (undefined: a `*`), so that paths can follow the patterns.
  const written_: (Piece | undefined)[][] = [];
  const DOLLAR: Piece = { canonical: '%24', inPath: ['$', '%24'], inPattern: ['$'] };
  const pattern = (): { written: string; canonical: string } => {
    if (written_.length > 0 && random() < 0.3) {
      // An earlier pattern again, or a prefix of it, spelt anew: rules that compete for one path,
      // where the priority each spelling counts decides.
      const earlier = pick(written_);
      const pieces = earlier.slice(0, random() < 0.5 ? earlier.length : 1 + Math.floor(random() * earlier.length));
      let written = '';
      let canonical = '';
      for (const piece of pieces) {
        written += piece === undefined ? '*' : pick(piece.inPattern);
        canonical += piece === undefined ? '*' : piece.canonical;
      }
      if (!written.endsWith('$')) return { written, canonical };
    }
    let written = '';
    let canonical = '';
    const pieces: (Piece | undefined)[] = [];
    const start = random();
    if (start < 0.8) (written = '/'), (canonical = '/'), pieces.push(plain('/'));
    else if (start < 0.9) (written = '*'), (canonical = '*'), pieces.push(undefined);
    for (let n = Math.floor(random() * 7); n > 0; n--) {
      const r = random();
      if (r < 0.15) {
        written += '*';
        canonical += '*';
        pieces.push(undefined);
      } else if (r < 0.2 && n > 1) {
        written += '$'; // not last: a literal `$`
        canonical += '%24';
        pieces.push(DOLLAR);
      } else {
        const piece = pick(PIECES);
        written += pick(piece.inPattern);
        canonical += piece.canonical;
        pieces.push(piece);
      }
    }
    written_.push(pieces);
    if (random() < 0.2) {
      written += '$';
      canonical += '$';
    }
    if (written.endsWith('$') && !canonical.endsWith('$')) return { written: '/', canonical: '/' };
    return { written, canonical };
  };

  const lines: string[] = [];
  for (let n = 1 + Math.floor(random() * 10); n > 0; n--) {
    const r = random();
    const separator = random() < 0.7 ? ': ' : pick(SEPARATORS);
    if (r < 0.3) {
      lines.push(`${pick(USER_AGENT_KEYS)}${separator}${pick(USER_AGENT_VALUES)}`);
    } else if (r < 0.85) {
      const { written, canonical } = pattern();
      const previous = spellings.get(written);
      if (previous !== undefined && previous !== canonical) continue;
      spellings.set(written, canonical);
      const trailer = random() < 0.05 ? ' # c' : random() < 0.03 ? '\0junk' : '';
      // Without a `:` between key and value the reference splits at the value's first `:`.
      const keySeparator = written.includes(':') && !separator.includes(':') ? ': ' : separator;
      lines.push(`${random() < 0.4 ? pick(ALLOW_KEYS) : pick(DISALLOW_KEYS)}${keySeparator}${written}${trailer}`);
    } else if (r < 0.88) {
      lines.push(`Disallow: /${'a'.repeat(16_650 + Math.floor(random() * 30))}`);
    } else {
      lines.push(pick(OTHER_LINES));
    }
  }
  let body = random() < 0.05 ? '\xef\xbb\xbf' : '';
  for (const line of lines) body += line + pick(EOLS);
  if (random() < 0.3) body = body.slice(0, -1);

  let path = '';
  let canonicalPath = '';
  const shape = random();
  if (shape < 0.05) path = canonicalPath = random() < 0.5 ? '?' : ';'; // no path: the URL goes on with a query or params
  else if (shape < 0.1) path = canonicalPath = '/';
  else if (shape < 0.15) path = canonicalPath = '//';
  else path = canonicalPath = '/';
  const follow = written_.length > 0 && random() < 0.7 ? [...pick(written_)] : [];
  if (follow.length > 0 && follow[0]?.canonical === '/' && path.endsWith('/')) follow.shift();
  const tail = random() < 0.5 ? [] : Array.from({ length: 1 + Math.floor(random() * 4) }, () => pick(PIECES));
  for (const piece of [...follow, ...tail, ...Array.from({ length: follow.length === 0 ? Math.floor(random() * 8) : 0 }, () => pick(PIECES))]) {
    const p = piece ?? (random() < 0.3 ? undefined : pick(PIECES));
    if (p === undefined) continue;
    path += pick(p.inPath);
    canonicalPath += p.canonical;
  }
  if (random() < 0.2) {
    const index = random() < 0.5 ? '/index.html' : '/index.htm';
    path += index;
    canonicalPath += index;
  }
  const fragment = random() < 0.05 ? '#frag' : '';
  return { body, spellings, agent: pick(AGENTS), url: `http://example.com${path}${fragment}`, canonicalUrl: `http://example.com${canonicalPath}${fragment}` };
}
