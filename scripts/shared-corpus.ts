/**
 * Where the shared data set lives: the full real robots.txt corpus
 * (`corpus/robots/`, 5,585 files with MANIFEST.tsv) and the reference
 * conformance vectors (`conformance/`). It is not part of the repository;
 * `npm test` uses the curated copies in test/fixtures/ instead, and the sweep
 * (`npm run sweep`) and the engine benchmark use the full set when present.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROBOTS_FIXTURES_DIR } from '../test/robots/corpus-checks.js';

/** The repository root (absolute). */
export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Environment variable naming the shared directory; overrides `../shared`. */
export const SHARED_DIR_ENV = 'ROBOTS_PROXY_SHARED';

/** The shared directory and its parts, once located. */
export interface SharedDirs {
  root: string;
  /** How it was found: the environment variable, or the sibling directory of the repository. */
  from: typeof SHARED_DIR_ENV | '../shared';
  corpusDir: string;
  conformanceDir: string;
}

/** Where the shared directory is, or why there is none. */
export type SharedLocation =
  | { found: true; dirs: SharedDirs }
  /** `explicit`: the environment variable named a directory that does not exist (a mistake to report, not a skip). */
  | { found: false; explicit: boolean; reason: string };

/**
 * Locates the shared directory: `$ROBOTS_PROXY_SHARED` when set (relative to
 * the working directory), else `shared` next to `repoRoot`. Only checks that
 * the directory exists; its parts may still be missing.
 */
export function locateShared(env: NodeJS.ProcessEnv = process.env, repoRoot: string = REPO_ROOT): SharedLocation {
  const named = env[SHARED_DIR_ENV];
  if (named !== undefined && named !== '') {
    const root = resolve(named);
    if (!existsSync(root)) return { found: false, explicit: true, reason: `${SHARED_DIR_ENV}=${named} names a directory that does not exist` };
    return { found: true, dirs: dirsOf(root, SHARED_DIR_ENV) };
  }
  const root = resolve(repoRoot, '..', 'shared');
  if (!existsSync(root)) return { found: false, explicit: false, reason: `${SHARED_DIR_ENV} is not set and there is no ${root} next to the repository` };
  return { found: true, dirs: dirsOf(root, '../shared') };
}

function dirsOf(root: string, from: SharedDirs['from']): SharedDirs {
  return { root, from, corpusDir: resolve(root, 'corpus/robots'), conformanceDir: resolve(root, 'conformance') };
}

/**
 * The robots.txt directory a benchmark should read: the full shared corpus
 * when present, the curated fixtures otherwise, with a line saying which.
 */
export function robotsCorpusForBench(): { dir: string; description: string } {
  const shared = locateShared();
  if (shared.found && existsSync(shared.dirs.corpusDir)) {
    return { dir: shared.dirs.corpusDir, description: `the full shared corpus, ${shared.dirs.corpusDir} (found by ${shared.dirs.from})` };
  }
  const why = shared.found ? `${shared.dirs.corpusDir} does not exist` : shared.reason;
  return { dir: ROBOTS_FIXTURES_DIR, description: `the curated fixtures, ${ROBOTS_FIXTURES_DIR} (no shared corpus: ${why})` };
}
