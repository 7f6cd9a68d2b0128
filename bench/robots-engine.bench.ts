/**
 * Benchmark of the robots.txt engine (src/robots, RFC 9309) against the npm
 * package `robots-parser`, side by side in one run. Prints figures; asserts
 * nothing, fails nothing. Run with `npm run bench`. Reads real files: the
 * full shared corpus when present ($ROBOTS_PROXY_SHARED or ../shared, see
 * scripts/shared-corpus.ts), else the curated fixtures in test/fixtures/robots
 * (the largest files then differ); prints which. Contacts no network. Total
 * runtime ~30-60 s.
 *
 * 1. Decisions per second on a parsed ~10 KiB real file, ~1000 URLs, for a
 *    named product token and an unknown one (which falls to `*`).
 * 1b. The same on the largest files with >= 1000 rules (no target).
 * 2. Parse time of the largest corpus files (ours stops at 500 KiB, §2.5;
 *    robots-parser has no limit and parses everything).
 * 3. The pathological pattern `/*a*a*a*a*a*a*a*a*b` on a 2,000-char path.
 * 4. Product-token extraction from a 300-character User-Agent header (µs per
 *    header; the pipeline caches the result per distinct header), and from
 *    hostile headers at the 2,048-character scan limit.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import robotsParserModule from 'robots-parser';
import { DEFAULT_MAX_ROBOTS_BYTES, evaluate, extractPathAndQuery, extractProductTokens, parseRobotsTxt, USER_AGENT_SCAN_LIMIT_CHARS } from '../src/robots/index.js';
import type { RobotsTxt } from '../src/robots/index.js';
import { robotsCorpusForBench } from '../scripts/shared-corpus.js';
// Deterministic (mulberry32), so every run measures the same URLs.
import { prng } from '../test/robots/reference-matcher.js';

/**
 * robots-parser is CommonJS (`module.exports = fn`) while its .d.ts declares an
 * ES default export, so under NodeNext the types see a namespace; this unwraps it.
 */
const robotsParser = ((robotsParserModule as unknown as { default?: unknown }).default ??
  robotsParserModule) as typeof robotsParserModule.default;

const CORPUS = robotsCorpusForBench();
const CORPUS_DIR = CORPUS.dir;
/** ~10 KiB, 12 groups, 130+ wildcard rules, percent-encoded non-ASCII patterns. */
const DECISION_FILE = 'au.indeed.com.txt';
const ORIGIN = 'https://au.indeed.com';
const NAMED_TOKEN = 'Bingbot';
const UNKNOWN_TOKEN = 'ExampleUnknownBot';
const URL_COUNT = 1000;
const ROUNDS = 7;
const ROUND_MS = 200;
const WARMUP_MS = 400;

/** Defeats dead-code elimination: every timed result is folded in here. */
let sink = 0;
const bench0 = process.hrtime.bigint();

const elapsedMs = (since: bigint): number => Number(process.hrtime.bigint() - since) / 1e6;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
}

/** Repeats `pass` (which makes `perPass` decisions) for at least `minMs`; returns decisions per second. */
function decisionRate(pass: () => number, perPass: number, minMs: number): number {
  const start = process.hrtime.bigint();
  let passes = 0;
  let ms = 0;
  do {
    sink ^= pass();
    passes++;
    ms = elapsedMs(start);
  } while (ms < minMs);
  return (passes * perPass) / (ms / 1000);
}

/** Median of `runs` timings (ms) of `fn`, after `warmups` untimed calls. */
function medianMs(fn: () => number, runs: number, warmups: number): number {
  for (let i = 0; i < warmups; i++) sink ^= fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    sink ^= fn();
    times.push(elapsedMs(start));
  }
  return median(times);
}

const fmtRate = (r: number): string => (r >= 1e6 ? `${(r / 1e6).toFixed(2)} M/s` : r >= 1e3 ? `${(r / 1e3).toFixed(1)} k/s` : `${r.toFixed(0)} /s`);
const fmtMs = (ms: number): string => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
const pad = (s: string, n: number): string => (s.length >= n ? s : s + ' '.repeat(n - s.length));
const lpad = (s: string, n: number): string => (s.length >= n ? s : ' '.repeat(n - s.length) + s);

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? pad(c, widths[i] ?? 0) : lpad(c, widths[i] ?? 0))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
}

/**
 * ~1000 paths-with-query: 60% made from the file's own rules for both groups
 * measured (wildcards filled in, `$` dropped, extra segments and queries
 * added), 40% random site-like paths; ~5% carry raw non-ASCII characters.
 */
function buildPaths(robots: RobotsTxt, tokens: readonly string[], count: number): string[] {
  const rand = prng(0x5eed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const words = ['jobs', 'nurse', 'Sydney-NSW', 'cmp', 'viewjob', 'q-driver', 'reviews', 'salaries', 'm', 'career', 'Melbourne', 'about', 'rc', 'clk', 'pagead', 'l-Perth', 'salary', 'apply', 'job', 'company'];
  const unicode = ['求人', '東京都', 'München', 'café', 'работа'];
  const token = (): string => (rand() < 0.7 ? pick(words) : Math.floor(rand() * 36 ** 6).toString(36));
  const query = (): string => `q=${token()}&l=${token()}${rand() < 0.4 ? `&start=${Math.floor(rand() * 100) * 10}` : ''}`;
  const patterns = new Set<string>();
  for (const key of [...tokens.map((t) => t.toLowerCase()), '*']) {
    for (const rule of robots.groupsByToken.get(key)?.rules ?? []) if (rule.pattern.length > 1) patterns.add(rule.pattern);
  }
  const patternList = [...patterns];
  const paths: string[] = [];
  for (let i = 0; i < count; i++) {
    let p: string;
    if (i % 5 < 3 && patternList.length > 0) {
      p = pick(patternList).replace(/\$$/, '').replace(/\*/g, () => (rand() < 0.3 ? '' : token()));
      if (!p.startsWith('/')) p = '/' + p;
      if (rand() < 0.2) p = p.slice(0, Math.max(1, p.length - 2)); // near miss
      if (rand() < 0.5) p += (p.endsWith('/') ? '' : '/') + token();
      if (rand() < 0.4) p += (p.includes('?') ? '&' : '?') + query();
    } else {
      const depth = 1 + Math.floor(rand() * 4);
      p = '';
      for (let d = 0; d < depth; d++) p += '/' + token();
      if (rand() < 0.5) p += '?' + query();
    }
    if (rand() < 0.05) p += '/' + pick(unicode);
    paths.push(p);
  }
  return paths;
}

function machineLine(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  return `${cpu} (${os.cpus().length} cores), ${os.platform()} ${os.arch()}, node ${process.version}`;
}

/** Corpus `.txt` files, largest first. */
function corpusBySize(): { name: string; size: number }[] {
  return readdirSync(CORPUS_DIR)
    .filter((f) => f.endsWith('.txt'))
    .map((f) => ({ name: f, size: statSync(path.join(CORPUS_DIR, f)).size }))
    .sort((a, b) => b.size - a.size);
}

/**
 * Times decisions of both engines on one corpus file, for each token in turn;
 * rounds interleave the engines. Prints the file and verdict differences;
 * returns one table row per token.
 */
function measureDecisions(file: string, tokens: readonly string[], urlCount: number, rounds: number): string[][] {
  const bytes = readFileSync(path.join(CORPUS_DIR, file));
  const origin = file === DECISION_FILE ? ORIGIN : `https://${file.replace(/\.txt$/, '')}`;
  const ours = parseRobotsTxt(bytes);
  const theirs = robotsParser(`${origin}/robots.txt`, bytes.toString('utf8'));
  const paths = buildPaths(ours, tokens, urlCount);
  const urls = paths.map((p) => origin + p);
  const ruleCount = ours.groups.reduce((n, g) => n + g.rules.length, 0);
  console.log(`   ${file}: ${bytes.length} bytes (${(bytes.length / 1024).toFixed(1)} KiB)${ours.truncated ? `, ours parsed ${ours.bytesParsed}` : ''}, ` +
    `${ours.groups.length} groups, ${ruleCount} rules; ${urlCount} URLs; median of ${rounds} rounds >= ${ROUND_MS} ms`);
  const rows: string[][] = [];
  for (const ua of tokens) {
    const tokenList = [ua];
    const label = `${file.replace(/\.txt$/, '')} / ${ua}${ours.groupsByToken.has(ua.toLowerCase()) ? ' (named)' : ' -> *'}`;
    const contestants = {
      ours: (): number => { let n = 0; for (const p of paths) if (evaluate(ours, tokenList, p).allowed) n++; return n; },
      oursUrl: (): number => { let n = 0; for (const u of urls) if (evaluate(ours, tokenList, extractPathAndQuery(u)).allowed) n++; return n; },
      theirs: (): number => { let n = 0; for (const u of urls) if (theirs.isAllowed(u, ua) === true) n++; return n; },
    };
    const keys = ['ours', 'oursUrl', 'theirs'] as const;
    const differing = paths.filter((p, i) => evaluate(ours, tokenList, p).allowed !== theirs.isAllowed(urls[i] ?? '', ua));
    const rates = { ours: [] as number[], oursUrl: [] as number[], theirs: [] as number[] };
    for (const key of keys) decisionRate(contestants[key], urlCount, WARMUP_MS);
    for (let r = 0; r < rounds; r++) for (const key of keys) rates[key].push(decisionRate(contestants[key], urlCount, ROUND_MS));
    const [o, ou, t] = [median(rates.ours), median(rates.oursUrl), median(rates.theirs)];
    rows.push([label, fmtRate(o), (1e6 / o).toFixed(2), fmtRate(ou), fmtRate(t), `${(o / t).toFixed(1)}x`, `${(ou / t).toFixed(1)}x`, `${differing.length}/${urlCount}`]);
    const example = differing[0];
    if (example !== undefined) {
      const bareQuery = differing.filter((p) => p.endsWith('?')).length;
      const causes: string[] = [];
      if (bareQuery > 0) causes.push(`${bareQuery} end in a bare "?", which robots-parser's new URL() drops`);
      if (ours.truncated) causes.push(`ours read only the first ${ours.bytesParsed} bytes (RFC 9309 §2.5), robots-parser all of them`);
      console.log(`   ${ua}: verdicts differ on ${differing.length} URLs (${causes.join('; ') || 'see below'}); ` +
        `e.g. ${example} ours=${evaluate(ours, tokenList, example).allowed} robots-parser=${theirs.isAllowed(origin + example, ua)}`);
    }
  }
  return rows;
}

const DECISION_HEADER = ['file / token', 'ours (path)', 'ours µs/dec', 'ours (URL)', 'robots-parser', 'ratio path', 'ratio URL', 'differ'];

function benchDecisions(): void {
  console.log('\n1. Decisions/s on a ~10 KiB real file (engines interleaved in each round)');
  printTable(DECISION_HEADER, measureDecisions(DECISION_FILE, [NAMED_TOKEN, UNKNOWN_TOKEN], URL_COUNT, ROUNDS));
  console.log('   ours (path) = evaluate(robots, [token], pathAndQuery); ours (URL) adds extractPathAndQuery(url);');
  console.log('   robots-parser = prebuilt parser.isAllowed(url, token) (it takes a URL and runs new URL() each call).');
  console.log('   Targets: ours >= 5x robots-parser, >= 1 M decisions/s.');
}

/** Not a target, a warning light: decisions on the two largest files with >= 1000 rules. */
function benchLargeDecisions(): void {
  console.log('\n1b. Decisions/s on the largest files with >= 1000 rules (no target; cost grows with rule count)');
  const large = corpusBySize()
    .filter((f) => parseRobotsTxt(readFileSync(path.join(CORPUS_DIR, f.name))).groups.reduce((n, g) => n + g.rules.length, 0) >= 1000)
    .slice(0, 2);
  printTable(DECISION_HEADER, large.flatMap((f) => measureDecisions(f.name, [UNKNOWN_TOKEN], 100, 3)));
}

function benchParse(): void {
  const files = corpusBySize();
  const chosen = files.slice(0, 6);
  // Plus the largest file under the limit that has groups, which both engines parse whole.
  const underLimit = files.find((f) => f.size <= DEFAULT_MAX_ROBOTS_BYTES && parseRobotsTxt(readFileSync(path.join(CORPUS_DIR, f.name))).groups.length > 0);
  if (underLimit !== undefined && !chosen.includes(underLimit)) chosen.push(underLimit);
  console.log(`\n2. Parse time, ms (median; ours 9 runs, robots-parser 5). Ours stops at ${DEFAULT_MAX_ROBOTS_BYTES} bytes (RFC 9309 §2.5);`);
  console.log('   robots-parser has NO size limit and parses the whole file. "ours+compile" also compiles every group\'s');
  console.log('   rules (done lazily on a group\'s first decision). robots-parser gets a pre-decoded string; ours gets bytes.');
  const rows: string[][] = [];
  for (const { name, size } of chosen) {
    const bytes = readFileSync(path.join(CORPUS_DIR, name));
    const text = bytes.toString('utf8');
    const sample = parseRobotsTxt(bytes);
    const keys = [...sample.groupsByToken.keys()];
    const rules = sample.groups.reduce((n, g) => n + g.rules.length, 0);
    const oursMs = medianMs(() => parseRobotsTxt(bytes).lineCount, 9, 2);
    const compileMs = medianMs(() => {
      const robots = parseRobotsTxt(bytes);
      let n = 0;
      for (const key of keys) if (evaluate(robots, [key], '/').allowed) n++;
      return n;
    }, 9, 2);
    const theirsMs = medianMs(() => (robotsParser(`https://${name.replace(/\.txt$/, '')}/robots.txt`, text).getSitemaps().length), 5, 1);
    rows.push([name, `${(size / 1024).toFixed(0)} KiB`, `${(sample.bytesParsed / 1024).toFixed(0)} KiB${sample.truncated ? ' (trunc)' : ''}`,
      String(sample.lineCount), String(keys.length), String(rules), fmtMs(oursMs), fmtMs(compileMs), fmtMs(theirsMs),
      `${(theirsMs / oursMs).toFixed(1)}x`, /^\s*</.test(text.slice(0, 64)) ? 'HTML body' : '']);
  }
  printTable(['file', 'size', 'ours parsed', 'lines', 'tokens', 'rules', 'ours', 'ours+compile', 'robots-parser', 'r-p/ours', 'note'], rows);
  console.log('   Target: a 500 KiB file parsed by ours in under 20 ms.');
}

function benchPathological(): void {
  const pattern = '/*a*a*a*a*a*a*a*a*b';
  const body = `User-agent: *\nDisallow: ${pattern}\n`;
  const ours = parseRobotsTxt(body);
  const theirs = robotsParser(`${ORIGIN}/robots.txt`, body);
  console.log(`\n3. Pathological pattern ${pattern}, path of 2,000 chars; µs per decision (median of 5 rounds)`);
  const rows: string[][] = [];
  for (const [label, p] of [['"/" + 1999 x "a" (no match)', '/' + 'a'.repeat(1999)], ['"/" + 1998 x "a" + "b" (match)', '/' + 'a'.repeat(1998) + 'b']] as const) {
    const url = ORIGIN + p;
    const oursUs = median(Array.from({ length: 5 }, () => 1e6 / decisionRate(() => (evaluate(ours, ['x'], p).allowed ? 1 : 0), 1, 50)));
    // Guard: time one call first; only repeat if it is not catastrophically slow.
    const first = process.hrtime.bigint();
    const theirsVerdict = theirs.isAllowed(url, 'x');
    const firstMs = elapsedMs(first);
    let theirsCell: string;
    if (firstMs > 250) {
      theirsCell = `${(firstMs * 1000).toFixed(0)} (1 call, catastrophic; not repeated)`;
    } else {
      const iterations = Math.max(1, Math.min(2000, Math.floor(50 / Math.max(firstMs, 0.001))));
      const samples = Array.from({ length: 5 }, () => {
        const start = process.hrtime.bigint();
        for (let i = 0; i < iterations; i++) sink ^= theirs.isAllowed(url, 'x') === true ? 1 : 0;
        return (elapsedMs(start) * 1000) / iterations;
      });
      theirsCell = median(samples).toFixed(2);
    }
    rows.push([label, oursUs.toFixed(2), theirsCell, String(evaluate(ours, ['x'], p).allowed), String(theirsVerdict)]);
  }
  printTable(['path', 'ours µs', 'robots-parser µs', 'ours allowed', 'r-p allowed'], rows);
  console.log('   (robots-parser 3.x matches with a per-character set of match lengths, not a regex: O(pattern x path).)');
}

/** A header of exactly `length` characters: a crawler's smartphone header, then a platform comment of words. */
function userAgentOfLength(length: number): string {
  const base = 'Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.109 Mobile Safari/537.36 (compatible; ExampleBot/2.1; +https://bot.example/help; bot@example.com) python-requests/2.31 (X11; ExampleHub Single Page link check; ';
  let ua = base;
  while (ua.length < length - 1) ua += 'word ';
  return ua.slice(0, length - 1) + ')';
}

function benchUserAgents(): void {
  console.log('\n4. Product-token extraction, µs per header (median of 7 rounds >= 100 ms; computed once per distinct header, then cached)');
  const headers: Array<[string, string]> = [
    ['300-char crawler header', userAgentOfLength(300)],
    ['Googlebot smartphone (Google\'s published header)', 'Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/W.X.Y.Z Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'],
    [`${USER_AGENT_SCAN_LIMIT_CHARS}+ chars of "x;" in a comment`, 'Mozilla/5.0 (' + 'x;'.repeat(USER_AGENT_SCAN_LIMIT_CHARS)],
    [`${USER_AGENT_SCAN_LIMIT_CHARS}+ chars of "a/"`, 'a/'.repeat(USER_AGENT_SCAN_LIMIT_CHARS)],
    [`${USER_AGENT_SCAN_LIMIT_CHARS}+ chars of distinct names`, Array.from({ length: 500 }, (_, i) => `N${i.toString(36)}x`).join(' ')],
    ['100 KiB header (read up to the limit)', 'ExampleBot/1.0 '.repeat(7000)],
  ];
  const rows: string[][] = [];
  for (const [label, ua] of headers) {
    const tokens = extractProductTokens(ua);
    // Wall time per header, and this process's CPU time per header: the second is the steadier
    // figure on a loaded machine, where wall time includes waiting for a core.
    const wall: number[] = [];
    const cpu: number[] = [];
    for (let round = 0; round < 7; round++) {
      const cpu0 = process.cpuUsage();
      const start = process.hrtime.bigint();
      let calls = 0;
      do {
        for (let i = 0; i < 100; i++) sink ^= extractProductTokens(ua).length;
        calls += 100;
      } while (elapsedMs(start) < 100);
      const used = process.cpuUsage(cpu0);
      wall.push((elapsedMs(start) * 1000) / calls);
      cpu.push((used.user + used.system) / calls);
    }
    rows.push([label, String(ua.length), median(wall).toFixed(2), median(cpu).toFixed(2), String(tokens.length), tokens.slice(0, 3).join(',')]);
  }
  printTable(['header', 'chars', 'wall µs', 'CPU µs', 'candidates', 'first'], rows);
}

console.log(`robots engine benchmark — ${machineLine()}`);
console.log(`robots.txt files: ${CORPUS.description}`);
benchDecisions();
benchLargeDecisions();
benchParse();
benchPathological();
benchUserAgents();
console.log(`\nTotal ${(elapsedMs(bench0) / 1000).toFixed(1)} s${sink === 0x7fffffff ? ' ' : ''}`);
