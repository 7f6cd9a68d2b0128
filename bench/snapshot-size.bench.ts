/**
 * Calibration check of the robots snapshot size estimate
 * (src/cache/snapshot-size.ts) against the heap. Prints figures; asserts
 * nothing. Run with `npm run bench:memory` (gc is exposed at run time). Reads real files from ../shared/corpus/robots by path (all
 * files of 16 KiB and more, and a fixed 12 % sample of the smaller ones) and
 * adds synthetic hostile files. Runtime: a few minutes.
 *
 * For each file: parse it K times (K copies amortise the noise of small
 * files), read heapUsed after gc, build the prefix index of every written
 * group of each copy, read it again. Measured = (parse + index) / K, compared
 * with `estimateRobotsBytes`. Prints the ratio estimate / measured (median,
 * percentiles, worst) and the totals, and the cost of the largest files.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseRobotsTxt } from '../src/robots/index.js';
import { ruleIndexOf } from '../src/robots/match.js';
import { estimateRobotsBytes, featuresOf, type RobotsFeatures } from '../src/cache/snapshot-size.js';
import { heapUsedAfterGc as heapUsed } from '../test/helpers/heap.js';

const CORPUS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'shared', 'corpus', 'robots');

/** Files an attacker could serve: each stresses one feature of the model. */
export function hostileFiles(): Array<[string, Buffer]> {
  const lines = (n: number, line: (i: number) => string): string => Array.from({ length: n }, (_, i) => line(i)).join('');
  const token = (i: number): string => 'b' + i.toString(36).replace(/\d/g, (d) => 'abcdefghij'[Number(d)]!);
  const out: Array<[string, Buffer]> = [];
  for (const n of [100, 2000, 18000]) {
    out.push([`groups-${n}`, Buffer.from(lines(n, (i) => `User-agent: ${token(i)}\nDisallow: /x${i}\n`))]);
    out.push([`tokens-${n}`, Buffer.from(lines(n, (i) => `User-agent: ${token(i)}\n`) + 'Disallow: /\n')]);
    out.push([`short-rules-${n}`, Buffer.from('User-agent: *\n' + lines(n, (i) => `Disallow: /${i}\n`))]);
    out.push([`long-rules-${n}`, Buffer.from('User-agent: *\n' + lines(n, (i) => `Disallow: /some/long/path/segment/${i}/and/more/${'x'.repeat(i % 40)}\n`))]);
    out.push([`wildcards-${n}`, Buffer.from('User-agent: *\n' + lines(n, (i) => `Disallow: /*${i}*x*y${i % 7}$\n`))]);
    out.push([`percent-${n}`, Buffer.from('User-agent: *\n' + lines(n, (i) => `Disallow: /caf\xe9/%e5%${((i % 200) + 16).toString(16)}/${i}\n`), 'latin1')]);
    out.push([`sitemaps-${n}`, Buffer.from('User-agent: *\nDisallow: /a\n' + lines(n, (i) => `Sitemap: https://example.com/sitemaps/${i}.xml\n`))]);
    out.push([`delays-${n}`, Buffer.from(lines(n, (i) => `User-agent: ${token(i)}\nCrawl-delay: ${i % 9}\nDisallow: /p${i}\n`))]);
  }
  out.push(['warnings', Buffer.from(lines(20000, (i) => `foo${i}: bar\n`))]);
  out.push(['groups-of-300', Buffer.from(lines(30, (i) => `User-agent: ${token(i)}\n` + lines(300, (j) => `Allow: /a${i}/${j}/*.php$\n`)))]);
  return out;
}

/** Measured heap bytes of one parsed file with every group indexed, per copy. */
function measure(body: Buffer): { bytes: number; features: RobotsFeatures; estimate: number } {
  const copies = Math.max(1, Math.min(12, Math.ceil(150_000 / (body.length + 2000))));
  const before = heapUsed();
  const parsed = Array.from({ length: copies }, () => parseRobotsTxt(body));
  for (const robots of parsed) for (const group of robots.groups) ruleIndexOf(group);
  const after = heapUsed();
  const first = parsed[0]!;
  return { bytes: (after - before) / copies, features: featuresOf(first), estimate: estimateRobotsBytes(first) };
}

function main(): void {
  const inputs: Array<[string, Buffer]> = [];
  let seed = 7;
  const sample = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (const name of readdirSync(CORPUS_DIR).filter((f) => f.endsWith('.txt')).sort()) {
    const body = readFileSync(path.join(CORPUS_DIR, name));
    if (body.length >= 16384 || sample() < 0.12) inputs.push([name, body]);
  }
  const corpusCount = inputs.length;
  inputs.push(...hostileFiles());
  for (const [, body] of inputs.slice(0, 50)) measure(body); // warm-up: compile parser and index builder

  const rows = inputs.map(([name, body], i) => ({ name, octets: body.length, isHostile: i >= corpusCount, ...measure(body) }));
  const describe = (label: string, set: typeof rows): void => {
    const ratios = set.filter((r) => r.bytes > 20_000).map((r) => r.estimate / r.bytes).sort((a, b) => a - b);
    const at = (q: number): string => (ratios[Math.min(ratios.length - 1, Math.floor(q * ratios.length))] ?? NaN).toFixed(2);
    const measured = set.reduce((n, r) => n + r.bytes, 0);
    const estimated = set.reduce((n, r) => n + r.estimate, 0);
    console.log(
      `${label}: ${set.length} files (${ratios.length} above 20 kB measured); estimate/measured min ${at(0)} p1 ${at(0.01)} p10 ${at(0.1)} median ${at(0.5)} p90 ${at(0.9)} max ${at(1)}; ` +
        `totals measured ${(measured / 1048576).toFixed(1)} MiB, estimated ${(estimated / 1048576).toFixed(1)} MiB`,
    );
  };
  describe('corpus', rows.filter((r) => !r.isHostile));
  describe('hostile', rows.filter((r) => r.isHostile));
  const median = [...rows.filter((r) => !r.isHostile)].sort((a, b) => a.bytes - b.bytes)[Math.floor(corpusCount / 2)]!;
  console.log(`median sampled corpus file: ${median.name}, ${median.octets} octets, ${(median.bytes / 1024).toFixed(0)} KiB measured`);
  console.log('largest costs (name, octets, rules, measured MiB, estimated MiB, bytes of heap per octet):');
  for (const r of [...rows].sort((a, b) => b.bytes - a.bytes).slice(0, 12)) {
    console.log(`  ${r.name.padEnd(32)} ${String(r.octets).padStart(7)} ${String(r.features.rules).padStart(6)} ${(r.bytes / 1048576).toFixed(2).padStart(6)} ${(r.estimate / 1048576).toFixed(2).padStart(6)} ${(r.bytes / r.octets).toFixed(1).padStart(5)}`);
  }
}

main();
