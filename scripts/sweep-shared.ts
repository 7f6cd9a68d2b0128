/**
 * `npm run sweep`: the full sweeps over the shared data set, which is not in
 * the repository (see scripts/shared-corpus.ts for where it is looked for).
 * `npm test` runs the same checks over the curated copies in test/fixtures/;
 * this runs them over everything:
 *
 * - the corpus list (MANIFEST.tsv) matches its directory, byte sizes and hashes;
 * - every real robots.txt parses without throwing, each within
 *   {@link MAX_CPU_MS_PER_FILE} of CPU time (a bound against pathological
 *   parsing, not a speed claim), and every group answers a decision;
 * - files over 500 KiB are truncated at the limit, smaller ones read whole;
 *   fractional crawl-delays and BOM files come out right;
 * - the indexed matcher agrees with the slow linear reference on paths made
 *   from the rules of every file;
 * - every reference conformance vector passes (with the one skip table);
 * - the curated fixtures are still faithful copies of their originals.
 *
 * Prints one line per check. Exit 0 when every check passed, or when there is
 * no shared directory at all (one line says the sweep was skipped and why);
 * 1 when a check failed or the shared directory is incomplete or misnamed.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ROBOTS_FIXTURES_DIR,
  assertBomFilesHaveGroups,
  assertEveryFileParses,
  assertFractionalCrawlDelays,
  assertListMatchesDirectory,
  assertTruncationAtLimit,
  readCorpusList,
  robotsFilesIn,
  type CorpusRow,
} from '../test/robots/corpus-checks.js';
import {
  CHECKED_OTHER_KINDS,
  CONFORMANCE_FIXTURES_DIR,
  MATCH_VECTORS_FILE,
  MATCH_VECTOR_COUNT,
  OTHER_VECTORS_FILE,
  assertDeviationsExist,
  assertMatchCase,
  assertOtherCase,
  readVectors,
  type MatchCase,
  type OtherCase,
} from '../test/robots/conformance-vectors.js';
import { compareWithReference } from '../test/robots/reference-matcher.js';
import { locateShared, type SharedDirs } from './shared-corpus.js';

/** Parse plus decisions of one file costing more CPU time than this fails the sweep, ms (the costliest real file, 19,125 rules, takes ~0.3 s). */
const MAX_CPU_MS_PER_FILE = 2_000;
/** Below this many files the corpus is not the shared one. */
const MIN_CORPUS_FILES = 1_000;

interface Check {
  name: string;
  /** Runs the check; throws on failure; returns a one-line summary of what it covered. */
  run: () => string;
}

/** The corpus as listed and as found on disk. */
interface Corpus {
  dir: string;
  manifest: CorpusRow[];
  files: string[];
}

/** Reads the shared corpus's list and directory; throws when either is missing or the corpus is too small to be the shared one. */
function readCorpus(shared: SharedDirs): Corpus {
  for (const needed of [shared.corpusDir, join(shared.corpusDir, 'MANIFEST.tsv'), shared.conformanceDir]) {
    if (!existsSync(needed)) throw new Error(`the shared data set at ${shared.root} is incomplete: ${needed} does not exist`);
  }
  const corpus = { dir: shared.corpusDir, manifest: readCorpusList(join(shared.corpusDir, 'MANIFEST.tsv')), files: robotsFilesIn(shared.corpusDir) };
  if (corpus.files.length < MIN_CORPUS_FILES) throw new Error(`only ${corpus.files.length} robots.txt files in ${corpus.dir}`);
  return corpus;
}

/** A corpus row without the fixtures' `why`, for comparing a SOURCES row with its MANIFEST.tsv row. */
function listingOf(row: CorpusRow): string {
  return JSON.stringify({ ...row, why: undefined });
}

function checksFor(shared: SharedDirs, { dir: corpus, manifest, files }: Corpus): Check[] {
  return [
    {
      name: 'corpus list',
      run: () => `${assertListMatchesDirectory(corpus, manifest)} files match MANIFEST.tsv (byte sizes, sha256)`,
    },
    {
      name: 'every file parses',
      run: () => {
        const sweep = assertEveryFileParses(corpus, files, { maxCpuMsPerFile: MAX_CPU_MS_PER_FILE });
        return `${sweep.files} files, ${sweep.groups} groups, ${sweep.rules} rules; costliest ${sweep.slowest.file} ${sweep.slowest.cpuMs.toFixed(0)} ms CPU (bound ${MAX_CPU_MS_PER_FILE} ms)`;
      },
    },
    {
      name: 'size limit',
      run: () => `${assertTruncationAtLimit(corpus, manifest)} files over 500 KiB truncated at the limit, the rest read whole`,
    },
    {
      name: 'crawl-delay and BOM',
      run: () => `${assertFractionalCrawlDelays(corpus, manifest)} fractional crawl-delays read; ${assertBomFilesHaveGroups(corpus, manifest)} BOM files yield their groups`,
    },
    {
      name: 'match index vs reference',
      run: () => {
        const r = compareWithReference(corpus, files);
        if (r.differences.length > 0) throw new Error(`matchRule differs from the reference:\n  ${r.differences.join('\n  ')}`);
        if (r.decisions <= 100_000 || r.decided <= r.decisions / 2 || r.wildcardWins <= 1_000) {
          throw new Error(`vacuous comparison: ${r.decisions} decisions, ${r.decided} decided by a rule, ${r.wildcardWins} by a wildcard rule`);
        }
        return `${r.decisions} decisions over ${r.files} files agree (${r.decided} decided by a rule, ${r.wildcardWins} by a wildcard rule)`;
      },
    },
    {
      name: 'conformance vectors',
      run: () => {
        const cases = readVectors<MatchCase>(shared.conformanceDir, MATCH_VECTORS_FILE);
        if (cases.length < MATCH_VECTOR_COUNT) throw new Error(`${cases.length} vectors in ${MATCH_VECTORS_FILE}, expected at least ${MATCH_VECTOR_COUNT}`);
        const failures = collectFailures(cases, assertMatchCase);
        assertDeviationsExist(cases);
        const others = readVectors<OtherCase>(shared.conformanceDir, OTHER_VECTORS_FILE).filter((c) => (CHECKED_OTHER_KINDS as readonly string[]).includes(c.kind));
        failures.push(...collectFailures(others, assertOtherCase));
        if (failures.length > 0) throw new Error(`${failures.length} vectors fail:\n  ${failures.join('\n  ')}`);
        return `${cases.length} match vectors and ${others.length} ${CHECKED_OTHER_KINDS.join('/')} vectors pass`;
      },
    },
    {
      name: 'fixtures are faithful copies',
      run: () => {
        const byFile = new Map(manifest.map((row) => [row.file, row]));
        const fixtures = readCorpusList(join(ROBOTS_FIXTURES_DIR, 'SOURCES'));
        const drift: string[] = [];
        for (const fixture of fixtures) {
          const original = byFile.get(fixture.file);
          if (original === undefined) drift.push(`${fixture.file}: not in the shared corpus`);
          else if (listingOf(original) !== listingOf(fixture)) drift.push(`${fixture.file}: SOURCES row differs from MANIFEST.tsv`);
          else if (!readFileSync(join(ROBOTS_FIXTURES_DIR, fixture.file)).equals(readFileSync(join(corpus, fixture.file)))) drift.push(`${fixture.file}: bytes differ`);
        }
        for (const file of [MATCH_VECTORS_FILE, OTHER_VECTORS_FILE]) {
          if (!readFileSync(join(CONFORMANCE_FIXTURES_DIR, file)).equals(readFileSync(join(shared.conformanceDir, file)))) drift.push(`conformance/${file}: differs from the shared copy`);
        }
        if (drift.length > 0) throw new Error(drift.join('\n  '));
        return `${fixtures.length} robots.txt fixtures and 2 conformance files equal their originals`;
      },
    },
  ];
}

/** Runs `check` on every item; returns the failure messages instead of stopping at the first. */
function collectFailures<T>(items: readonly T[], check: (item: T) => void): string[] {
  const failures: string[] = [];
  for (const item of items) {
    try {
      check(item);
    } catch (err) {
      failures.push((err as Error).message.split('\n')[0] ?? String(err));
    }
  }
  return failures;
}

function main(): number {
  const location = locateShared();
  if (!location.found) {
    if (location.explicit) {
      console.error(`sweep: FAILED: ${location.reason}`);
      return 1;
    }
    console.log(`sweep: skipped: no shared data set (${location.reason}); npm test covered the curated fixtures only`);
    return 0;
  }
  const shared = location.dirs;
  console.log(`sweep: shared data set ${shared.root} (from ${shared.from})`);
  const started = performance.now();
  let corpus: Corpus;
  try {
    corpus = readCorpus(shared);
  } catch (err) {
    console.error(`sweep: FAILED: ${(err as Error).message}`);
    return 1;
  }
  let failed = 0;
  const checks = checksFor(shared, corpus);
  for (const check of checks) {
    const t0 = performance.now();
    try {
      const summary = check.run();
      console.log(`ok    ${check.name}: ${summary} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    } catch (err) {
      failed++;
      console.log(`FAIL  ${check.name}: ${(err as Error).message}`);
    }
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (failed > 0) {
    console.error(`sweep: FAILED: ${failed} of ${checks.length} checks failed (${seconds} s)`);
    return 1;
  }
  console.log(`sweep: all ${checks.length} checks passed (${seconds} s)`);
  return 0;
}

process.exitCode = main();
