/**
 * Cases for the end-to-end differential (scripts/e2e-differential.ts): a robots.txt (a real
 * corpus file, or one generated around a real crawler's product token spelt oddly), how the
 * origin serves it (status, redirects, content coding, framing, Content-Type, BOM, line ends),
 * a real User-Agent header, and a request target as clients write it (escapes in either case,
 * dot segments, `//`, `%2F`, `?` and `#` in the query, upper-case scheme and host, userinfo, an
 * empty path). Pure and seeded (mulberry32), so a case replays from its seed and number.
 */
import { prng, pathsNear } from '../test/robots/reference-matcher.js';

/** A real User-Agent header and the product token a site names it by (test/fixtures/user-agents.jsonl). */
export interface RealAgent {
  ua: string;
  /** The token the reference is given (the fixture's `token`). */
  token: string;
  /** How sites name it on a `User-agent:` line (the fixture's `robots` value when present, else `token`). */
  written: string;
}

/** How the origin serves the robots.txt. */
export interface Wire {
  /** The status of the last hop. */
  status: number;
  /** Redirects before it (301/302/307/308), each to the next `/robots-hop-<n>.txt`. */
  hops: number;
  /** Where a redirect points: the same origin (relative or absolute), another host, or the HTTPS origin. */
  hopTo: 'same' | 'host' | 'https';
  coding: 'identity' | 'gzip' | 'deflate' | 'deflate-raw' | 'br';
  /** Sent chunked (no Content-Length), in two writes. */
  chunked: boolean;
  /** Content-Type value, or undefined for none. */
  contentType: string | undefined;
}

/** One end-to-end case. */
export interface E2eCase {
  id: number;
  /** Where the robots.txt comes from: a corpus file name or `generated`. */
  source: string;
  /** The robots.txt octets the origin's entity holds (before any content coding). */
  body: Buffer;
  wire: Wire;
  agent: RealAgent;
  /** Path and query as the client writes it after the authority (may be empty, may hold `#`). */
  target: string;
  /** How the absolute-form URL writes scheme and authority. */
  authority: 'plain' | 'upper' | 'userinfo';
  /** Also sent through a CONNECT tunnel: intercepted TLS to the HTTPS origin, or plain HTTP inside it to the HTTP origin. */
  tunnel: 'tls' | 'plain' | undefined;
  /** Another real agent whose request for the same target goes first on the same connection (pipelined), if any. */
  before: RealAgent | undefined;
}

/** The parts a generated robots.txt names: its crawler's token and a few others. */
const PATTERN_PARTS = ['/', '/', 'a', 'b', 'private', 'x', '.html', '?', '=', '*', '$', '%2F', '%41', '%c3%a9', 'é', ';', 'index.html', '-', '~', '%7E'];

/** Spellings of `token` on a `User-agent:` line that still name it (or, for the reference, its prefix). */
function tokenSpellings(token: string): string[] {
  return [token, token.toLowerCase(), token.toUpperCase(), `${token}/2.1`, `${token} `, `${token}*`, `${token} # the crawler`];
}

function randomRobots(agent: RealAgent, others: readonly RealAgent[], random: () => number): string {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const pattern = (): string => {
    let s = random() < 0.95 ? '/' : '';
    for (let n = Math.floor(random() * 5); n > 0; n--) s += pick(PATTERN_PARTS);
    return s;
  };
  const lines: string[] = [];
  for (let g = 1 + Math.floor(random() * 4); g > 0; g--) {
    const r = random();
    const agents = r < 0.45 ? [pick(tokenSpellings(agent.written))] : r < 0.7 ? ['*'] : r < 0.8 ? [pick(tokenSpellings(agent.written)), '*'] : [pick(others).written];
    for (const a of agents) lines.push(`${pick(['User-agent', 'user-agent', 'USER-AGENT', 'useragent'])}: ${a}`);
    for (let n = Math.floor(random() * 5); n > 0; n--) {
      const q = random();
      if (q < 0.08) lines.push('# ' + pattern());
      else if (q < 0.12) lines.push('Sitemap: http://example.com/sitemap.xml');
      else lines.push(`${pick(['Allow', 'Disallow', 'disallow', 'Disalow', 'allow'])}: ${pattern()}`);
    }
    if (random() < 0.3) lines.push('');
  }
  return lines.join('\n');
}

/** Header shapes real crawlers send, around a product token named by a corpus file's `User-agent:` line. */
const HEADER_SHAPES = [
  (t: string): string => `${t}/1.0`,
  (t: string): string => t,
  (t: string): string => `Mozilla/5.0 (compatible; ${t}/2.1; +http://www.example.com/bot.html)`,
  (t: string): string => `Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ${t}/1.0; +https://bot.example/) Chrome/120.0.0.0 Safari/537.36`,
  (t: string): string => `${t}/3.0 (+https://bot.example/about)`,
];

/** A real header for a token some `User-agent:` line of `text` names, if any. */
function corpusAgent(text: string, random: () => number): RealAgent | undefined {
  // A whole value of letters, `_` and `-` (a version after `/` allowed): where the RFC's token and the reference's prefix agree.
  const tokens = [...text.matchAll(/^[ \t]*user-?agent[ \t]*:[ \t]*([A-Za-z_-]{2,})(?:\/[^\s#]*)?[ \t]*(?:#[^\r\n]*)?$/gim)].map((m) => m[1]!);
  if (tokens.length === 0) return undefined;
  const token = tokens[Math.floor(random() * tokens.length)]!;
  return { ua: HEADER_SHAPES[Math.floor(random() * HEADER_SHAPES.length)]!(token), token, written: token };
}

/** The `Allow`/`Disallow` values of a robots.txt (octets as latin1), for paths near them. */
function ruleValues(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^[ \t]*(?:dis)?allow[ \t]*:?[ \t]*([^\s#]+)/gim)) out.push(m[1]!);
  return out;
}

/** The octets of `text` with its line ends and start respelt: LF, CRLF or CR; a BOM; a NUL or a Latin-1 octet. */
function respellBytes(text: string, random: () => number): Buffer {
  const eol = random() < 0.6 ? '\n' : random() < 0.6 ? '\r\n' : '\r';
  let body = Buffer.from(text.replace(/\r\n|\r|\n/g, eol), 'latin1');
  if (random() < 0.05) body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body]);
  if (random() < 0.03) body = Buffer.concat([body, Buffer.from(`${eol}Disallow: /nul\0after${eol}`, 'latin1')]);
  if (random() < 0.03) body = Buffer.concat([body, Buffer.from(`${eol}User-agent: *${eol}Disallow: /caf\xe9${eol}`, 'latin1')]);
  if (random() < 0.03) body = Buffer.concat([body, Buffer.from(`${eol}User-agent: *${eol}Disallow: /*?*'${eol}Disallow: /*?*"${eol}`, 'latin1')]);
  return body;
}

/** A file past the 500 KiB limit: padding, then a rule at or across the limit. */
function oversize(text: string, random: () => number): Buffer {
  const limit = 500 * 1024;
  const head = Buffer.from(`User-agent: *\nDisallow: /private\n${text}\n`, 'latin1');
  const rule = Buffer.from('Disallow: /a\n', 'latin1');
  const at = limit - head.length - Math.floor(random() * rule.length * 2);
  const padding = Buffer.alloc(Math.max(0, at), '#');
  padding[padding.length - 1] = 0x0a;
  return Buffer.concat([head, padding, rule, Buffer.from('Disallow: /x\n')]);
}

function randomWire(random: () => number): Wire {
  const r = random();
  const status = r < 0.9 ? 200 : r < 0.95 ? [404, 410, 403, 401, 418][Math.floor(random() * 5)]! : [500, 503, 429][Math.floor(random() * 3)]!;
  // Most chains at the limit (§2.3.1.2: five hops followed, a sixth not).
  const hops = random() < 0.08 ? [1, 2, 5, 5, 6, 6][Math.floor(random() * 6)]! : 0;
  const h = random();
  const hopTo = h < 0.5 ? 'same' : h < 0.8 ? 'host' : 'https';
  const c = random();
  const coding = c < 0.6 ? 'identity' : c < 0.72 ? 'gzip' : c < 0.8 ? 'deflate' : c < 0.86 ? 'deflate-raw' : c < 0.94 ? 'br' : 'identity';
  const t = random();
  const contentType = t < 0.5 ? 'text/plain' : t < 0.65 ? 'text/plain; charset=utf-8' : t < 0.75 ? 'text/plain; charset=ISO-8859-1' : t < 0.85 ? 'text/html' : t < 0.9 ? 'application/octet-stream' : undefined;
  return { status, hops, hopTo, coding, chunked: random() < 0.3, contentType };
}

/** A path respelt the ways clients and hostile clients write one resource. */
function respellTarget(path: string, random: () => number): string {
  const r = random();
  const slashes = [...path.matchAll(/\//g)].map((m) => m.index!);
  const at = slashes[Math.floor(random() * slashes.length)] ?? 0;
  if (r < 0.35) return path;
  if (r < 0.42) return path.replace(/[a-z]/, (c) => '%' + c.charCodeAt(0).toString(16));
  if (r < 0.47) return path.replace(/%[0-9A-F]{2}/, (e) => e.toLowerCase());
  if (r < 0.52) return path.slice(0, at) + '/x/..' + path.slice(at);
  if (r < 0.56) return path.slice(0, at) + '/.' + path.slice(at);
  if (r < 0.6) return path.slice(0, at) + '/' + path.slice(at);
  if (r < 0.64) return path.slice(0, at) + '%2F' + path.slice(at + 1);
  if (r < 0.68) return path.slice(0, at) + '%2f' + path.slice(at + 1);
  if (r < 0.73) return path + '#frag/private';
  if (r < 0.78) return path + (path.includes('?') ? '&a=?b' : '?a=?b/private');
  if (r < 0.82) return path.replace(/[^\x21-\x7e]/g, (c) => encodeURIComponent(c));
  if (r < 0.86) return '';
  if (r < 0.9) return path.replace(/é/g, '%C3%A9').replace(/\$/g, '%24');
  if (r < 0.93) return path.replace(/\*/g, '%2A');
  // Query characters the URL parser escapes: `'` (a sub-delim, kept as written), `"`, `<`, `>` (not URI characters).
  if (r < 0.97) return path + (path.includes('?') ? '&' : '?') + ["q='x'", 'q="x"', 'q=<x>', "q=it's", "q='%27"][Math.floor(random() * 5)]!;
  return path.replace(/\?.*/, '') + '?q=' + path;
}

/**
 * Case `id` of the run seeded `seed`. `corpus` gives a real file (name and octets) for
 * `corpusShare` of the cases; the rest are generated around `agents`' tokens.
 */
export function caseOf(seed: number, id: number, agents: readonly RealAgent[], corpus: (random: () => number) => { name: string; body: Buffer } | undefined, corpusShare = 0.6): E2eCase {
  const random = prng((seed ^ Math.imul(id + 1, 0x9e3779b1)) >>> 0);
  const fixtureAgent = agents[Math.floor(random() * agents.length)]!;
  const real = random() < corpusShare ? corpus(random) : undefined;
  const source = real?.name ?? 'generated';
  const agent = (real !== undefined && random() < 0.4 ? corpusAgent(real.body.toString('latin1'), random) : undefined) ?? fixtureAgent;
  const text = real !== undefined ? real.body.toString('latin1') : randomRobots(agent, agents, random);
  const body = random() < 0.01 ? oversize(text, random) : real !== undefined && random() < 0.6 ? real.body : respellBytes(text, random);
  const values = ruleValues(body.toString('latin1'));
  const near = values.length === 0 ? ['/'] : pathsNear(values[Math.floor(random() * values.length)]!, random);
  // Rule values are octets: a path holds their UTF-8 as characters, and clients mostly send them escaped.
  const octets = ['/', '/index.html', ...near][Math.floor(random() * (near.length + 2))]!;
  const chars = Buffer.from(octets, 'latin1').toString('utf8');
  const path = random() < 0.85 ? chars.replace(/[^\x00-\x7f]/g, (c) => encodeURIComponent(c)) : chars;
  const start = path.startsWith('/') ? path : '/' + path;
  const a = random();
  return {
    id,
    source,
    body,
    wire: randomWire(random),
    agent,
    target: respellTarget(start, random),
    authority: a < 0.85 ? 'plain' : a < 0.93 ? 'upper' : 'userinfo',
    tunnel: random() < 0.2 ? 'tls' : random() < 0.08 ? 'plain' : undefined,
    before: random() < 0.25 ? agents[Math.floor(random() * agents.length)] : undefined,
  };
}
