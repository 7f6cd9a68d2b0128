// run-tests: in-process
/**
 * Differential against a port of the reference parser and matcher (reference-port.ts): random
 * robots.txt files built from the lines real files hold (key typos, missing colons, `*` with
 * text after it, comments, blank lines, sitemaps and unknown records between user-agent lines,
 * LF / CRLF / CR, a BOM) and random paths. Where RFC 9309 and the reference agree, so must we:
 * the paths and patterns here hold no `%` and no octet >= 0x80 (there the project normalises
 * both sides as §2.2.2 says and the reference does not; see the skip tables) and the product
 * tokens no digit (read whole here, cut by the reference). Seeded, so a failure replays.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { evaluate, extractPathAndQuery, parseRobotsTxt } from '../../src/robots/index.js';
import { referenceAllowed } from './reference-port.js';
import { CONFORMANCE_FIXTURES_DIR, MATCH_VECTORS_FILE, type MatchCase } from './conformance-vectors.js';
import { prng } from './reference-matcher.js';
import { stressCase } from './reference-stress.js';


const KEYS = ['User-agent', 'user-agent', 'USER-AGENT', 'useragent', 'User agent', 'Allow', 'allow', 'Disallow', 'disallow', 'Disalow', 'dissallow', 'Sitemap', 'Crawl-delay', 'Unknown', 'Request-rate', 'Host'];
const USER_AGENT_VALUES = ['FooBot', 'foobot', 'BarBot', '*', '* ', '*foo', 'Foo Bar', 'FooBot/1.0', 'Foo', '', 'FooBot*', 'Foo-Bot', 'Foo_Bot'];
const PATTERN_PARTS = ['/', 'a', 'b', 'x', '.', '?', '=', '&', '*', '$', '-', 'index.html', 'index.htm', 'A', '|', ';'];
const PATH_PARTS = ['/', 'a', 'b', 'x', '.', '?', '=', '&', '-', 'index.html', 'A', ';'];
const AGENTS = ['FooBot', 'BarBot', 'foo', 'Foo_Bot'];

interface Case {
  body: string;
  agent: string;
  path: string;
}

function randomCase(random: () => number): Case {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const sequence = (parts: readonly string[], start: string, max: number): string => {
    let s = start;
    for (let n = Math.floor(random() * max); n > 0; n--) s += pick(parts);
    return s;
  };
  const lines: string[] = [];
  for (let n = 1 + Math.floor(random() * 8); n > 0; n--) {
    const r = random();
    if (r < 0.08) lines.push('');
    else if (r < 0.12) lines.push(`# ${sequence(PATTERN_PARTS, '/', 4)}`);
    else {
      const key = pick(KEYS);
      const lower = key.toLowerCase();
      const value = lower.includes('agent') ? pick(USER_AGENT_VALUES) : lower.includes('allow') || lower.includes('alow') ? sequence(PATTERN_PARTS, random() < 0.9 ? '/' : '', 6) : pick(['1', '0.5', 'x', 'v']);
      const separator = random() < 0.1 ? ' ' : random() < 0.1 ? ' : ' : ': ';
      lines.push(`${key}${separator}${value}${random() < 0.05 ? ' # c' : ''}`);
    }
  }
  const eol = pick(['\n', '\r\n', '\r']);
  const body = (random() < 0.05 ? '\ufeff' : '') + lines.join(eol) + (random() < 0.5 ? eol : '');
  return { body, agent: pick(AGENTS), path: sequence(PATH_PARTS, '/', 7) };
}

/** Asserts that the product and the port give `count` cases of `generate` the same verdict; the body is encoded as `encoding`. */
function assertSameVerdicts(random: () => number, count: number, generate: (random: () => number) => Case, encoding: 'utf8' | 'latin1'): void {
  for (let i = 0; i < count; i++) {
    const c = generate(random);
    const body = Buffer.from(c.body, encoding);
    const url = `http://example.com${c.path}`;
    const ours = evaluate(parseRobotsTxt(body), [c.agent], extractPathAndQuery(url)).allowed;
    assert.equal(ours, referenceAllowed(body, c.agent, url), `case ${i}: ${JSON.stringify(c)}`);
  }
}

describe('differential against a port of the reference (reference-port.ts)', () => {
  it('the port agrees with every conformance vector of the reference', () => {
    const lines = readFileSync(join(CONFORMANCE_FIXTURES_DIR, MATCH_VECTORS_FILE), 'utf8').split('\n').filter((l) => l.trim().length > 0);
    for (const c of lines.map((l) => JSON.parse(l) as MatchCase)) {
      assert.equal(referenceAllowed(Buffer.from(c.robots, 'utf8'), c.agent, c.url), c.allowed, c.id);
    }
  });

  it('30,000 random files and paths without % or non-ASCII: the same verdict', () => {
    assertSameVerdicts(prng(20261201), 30_000, randomCase, 'utf8');
  });

  it('20,000 files stressing the parser (separators \\v \\f \\xa0, NUL, BOMs, long lines, dense rules, noise): the same verdict', () => {
    // The port agrees with the compiled reference on these (session 30: 0 differences in 4 million cases).
    assertSameVerdicts(prng(20261203), 20_000, stressCase, 'latin1');
  });
});
