/**
 * Checks over a directory of real robots.txt files and its list (the shared
 * corpus's MANIFEST.tsv, or the curated fixtures' SOURCES, which keeps the
 * same columns). test/robots/corpus.test.ts runs them over
 * test/fixtures/robots; `npm run sweep` over the whole shared corpus.
 * Each check throws an assertion error on the first failure and returns what
 * it covered, so a caller can tell that it was not vacuous.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_MAX_ROBOTS_BYTES, evaluate, parseRobotsTxt, type RobotsTxt } from '../../src/robots/index.js';

/** The curated real robots.txt files kept in the repository. */
export const ROBOTS_FIXTURES_DIR = fileURLToPath(new URL('../fixtures/robots/', import.meta.url));

/** One row of a corpus list: MANIFEST.tsv's columns, plus `why` in the fixtures' SOURCES. */
export interface CorpusRow {
  file: string;
  sourceRepo: string;
  sourcePath: string;
  bytes: number;
  /** First 16 hex digits of the file's sha256. */
  sha256Prefix: string;
  /** The corpus's heuristic feature flags (`bom-utf8`, `crawl-delay-fraction`, `size>500KiB`, ...). */
  flags: string[];
  /** Raw crawl-delay values found in the file, `;`-separated. */
  crawlDelays: string;
  /** Why a fixture was chosen (SOURCES only). */
  why: string | undefined;
}

/** Reads a tab-separated corpus list; lines starting with `#` and the header row are skipped. */
export function readCorpusList(path: string): CorpusRow[] {
  const lines = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0 && !line.startsWith('#'));
  assert.equal(lines[0]?.split('\t')[0], 'file', `${path}: the first row is the header`);
  return lines.slice(1).map((line) => {
    const [file, sourceRepo, sourcePath, bytes, sha256Prefix, flags, crawlDelays, why] = line.split('\t');
    assert.ok(file && sourceRepo && sourcePath && sha256Prefix && bytes !== undefined, `${path}: incomplete row ${JSON.stringify(line)}`);
    return { file, sourceRepo, sourcePath, bytes: Number(bytes), sha256Prefix, flags: (flags ?? '').split(',').filter(Boolean), crawlDelays: crawlDelays ?? '', why };
  });
}

/** The robots.txt files (`*.txt`) of `dir`, sorted. */
export function robotsFilesIn(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.txt'))
    .sort();
}

/** Parses one file of `dir` as the proxy would (bytes, default limit). */
export function parseCorpusFile(dir: string, file: string): RobotsTxt {
  return parseRobotsTxt(readFileSync(join(dir, file)));
}

/** The first 16 hex digits of the sha256 of `bytes`, as the lists give it. */
export function sha256Prefix(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 16);
}

/** Every listed file exists with its byte size and hash, and every file in `dir` is listed. Returns the number of rows. */
export function assertListMatchesDirectory(dir: string, rows: readonly CorpusRow[]): number {
  const listed = new Set(rows.map((r) => r.file));
  assert.equal(listed.size, rows.length, 'a file is listed twice');
  assert.deepEqual(robotsFilesIn(dir).filter((f) => !listed.has(f)), [], 'files in the directory but not in the list');
  for (const row of rows) {
    const bytes = readFileSync(join(dir, row.file));
    assert.equal(bytes.length, row.bytes, `${row.file}: byte size`);
    assert.equal(sha256Prefix(bytes), row.sha256Prefix, `${row.file}: sha256`);
  }
  return rows.length;
}

/** What {@link assertEveryFileParses} went through. */
export interface ParseSweep {
  files: number;
  groups: number;
  rules: number;
  /** The costliest parse plus decisions, CPU ms, and its file. */
  slowest: { file: string; cpuMs: number };
}

/**
 * Every file parses without throwing, within the size limit (RFC 9309 §2.5),
 * and every merged group answers a decision. With `maxCpuMsPerFile`, a file
 * whose parse and decisions cost more CPU time (this process's, so other load
 * on the machine does not count) fails: a bound against pathological
 * (super-linear) parsing for the sweep script, not a speed claim; tests leave
 * it out and rely on their timeout instead.
 */
export function assertEveryFileParses(dir: string, files: readonly string[], options: { maxCpuMsPerFile?: number } = {}): ParseSweep {
  const sweep: ParseSweep = { files: 0, groups: 0, rules: 0, slowest: { file: '', cpuMs: 0 } };
  const slow: string[] = [];
  for (const file of files) {
    const started = process.cpuUsage();
    let robots: RobotsTxt;
    try {
      robots = parseCorpusFile(dir, file);
      for (const group of robots.groupsByToken.values()) {
        const { allowed } = evaluate(robots, [group.productToken], '/some/path?q=1');
        assert.equal(typeof allowed, 'boolean', file);
      }
    } catch (err) {
      throw new Error(`${file}: ${(err as Error).message}`, { cause: err });
    }
    assert.ok(robots.bytesParsed <= DEFAULT_MAX_ROBOTS_BYTES, `${file}: parsed ${robots.bytesParsed} bytes`);
    const used = process.cpuUsage(started);
    const cpuMs = (used.user + used.system) / 1000;
    if (cpuMs > sweep.slowest.cpuMs) sweep.slowest = { file, cpuMs };
    if (options.maxCpuMsPerFile !== undefined && cpuMs > options.maxCpuMsPerFile) slow.push(`${file}: ${cpuMs.toFixed(0)} ms`);
    sweep.files++;
    sweep.groups += robots.groupsByToken.size;
    sweep.rules += robots.groups.reduce((n, g) => n + g.rules.length, 0);
  }
  assert.deepEqual(slow, [], `files costing more than ${options.maxCpuMsPerFile} ms of CPU time`);
  return sweep;
}

/** Files over the limit are truncated exactly at it; smaller ones are read whole. Returns the number of truncated files. */
export function assertTruncationAtLimit(dir: string, rows: readonly CorpusRow[]): number {
  let truncated = 0;
  for (const row of rows) {
    const robots = parseCorpusFile(dir, row.file);
    if (row.bytes > DEFAULT_MAX_ROBOTS_BYTES) {
      assert.equal(robots.truncated, true, row.file);
      assert.equal(robots.bytesParsed, DEFAULT_MAX_ROBOTS_BYTES, row.file);
      truncated++;
    } else {
      assert.equal(robots.truncated, false, row.file);
      assert.equal(robots.bytesParsed, row.bytes, row.file);
    }
  }
  return truncated;
}

/**
 * Every fractional crawl-delay a file declares comes out as that number of
 * seconds in some group (or a larger one, when a group takes the largest of
 * several). Returns the number of values checked.
 */
export function assertFractionalCrawlDelays(dir: string, rows: readonly CorpusRow[]): number {
  let checked = 0;
  for (const row of rows.filter((r) => r.flags.includes('crawl-delay-fraction'))) {
    const declared = row.crawlDelays.split(';').map(Number).filter((n) => Number.isFinite(n) && !Number.isInteger(n));
    const parsed = parseCorpusFile(dir, row.file)
      .groups.map((g) => g.crawlDelaySeconds)
      .filter((n): n is number => n !== undefined);
    for (const value of declared) {
      assert.ok(parsed.includes(value) || parsed.some((p) => p > value), `${row.file}: ${value} in ${parsed}`);
      checked++;
    }
  }
  return checked;
}

/**
 * The UTF-8 BOM never spoils the first line: every file with one that is not
 * an HTML page yields groups, and its first user-agent line names a product
 * token. Returns the number of files checked.
 */
export function assertBomFilesHaveGroups(dir: string, rows: readonly CorpusRow[]): number {
  const bom = rows.filter((r) => r.flags.includes('bom-utf8') && !r.flags.includes('html'));
  for (const row of bom) {
    const robots = parseCorpusFile(dir, row.file);
    assert.ok(robots.groups.length > 0, `${row.file} has groups`);
    assert.ok(robots.groups[0]!.productTokens.length > 0, `${row.file}: the first user-agent line names a product token`);
  }
  return bom.length;
}
