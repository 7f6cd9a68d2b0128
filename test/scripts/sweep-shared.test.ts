/**
 * scripts/sweep-shared.ts (`npm run sweep`) and where it looks for the shared
 * data set (scripts/shared-corpus.ts), on throwaway directories. The passing
 * sweep over the real shared set is run by .ci/run, not here: tests never
 * read it.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SHARED_DIR_ENV, locateShared } from '../../scripts/shared-corpus.js';
import { sha256Prefix } from '../robots/corpus-checks.js';
import { CONFORMANCE_FIXTURES_DIR, MATCH_VECTORS_FILE, OTHER_VECTORS_FILE } from '../robots/conformance-vectors.js';

const sweepScript = fileURLToPath(new URL('../../scripts/sweep-shared.ts', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'sweep-shared-'));

function runSweep(sharedDir: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', sweepScript], {
    encoding: 'utf8',
    env: { ...process.env, [SHARED_DIR_ENV]: sharedDir },
    timeout: 120_000,
  });
  return { status: r.status, out: r.stdout + r.stderr };
}

/** A shared data set of `count` small generated robots.txt files with their MANIFEST.tsv, and the conformance vectors. */
function fakeSharedSet(count: number, mangle: (row: string[]) => void = () => {}): string {
  const root = mkdtempSync(join(scratch, 'shared-'));
  const corpus = join(root, 'corpus/robots');
  mkdirSync(corpus, { recursive: true });
  const rows = ['file\tsource_repo\tsource_path\tbytes\tsha256_16\tflags\tcrawl_delay_values'];
  for (let i = 0; i < count; i++) {
    const file = `site-${i}.example.txt`;
    const body = Buffer.from(`User-agent: *\nDisallow: /private-${i}/\nAllow: /*.css$\n`);
    writeFileSync(join(corpus, file), body);
    const row = [file, 'test/generated', file, String(body.length), sha256Prefix(body), 'wildcard,dollar', ''];
    if (i === 7) mangle(row);
    rows.push(row.join('\t'));
  }
  writeFileSync(join(corpus, 'MANIFEST.tsv'), rows.join('\n') + '\n');
  mkdirSync(join(root, 'conformance'));
  for (const file of [MATCH_VECTORS_FILE, OTHER_VECTORS_FILE]) copyFileSync(join(CONFORMANCE_FIXTURES_DIR, file), join(root, 'conformance', file));
  return root;
}

after(() => rmSync(scratch, { recursive: true, force: true }));

describe('locating the shared data set', () => {
  it('takes $ROBOTS_PROXY_SHARED first, then shared/ next to the repository, else says why there is none', () => {
    const repo = join(scratch, 'clone');
    mkdirSync(repo, { recursive: true });
    const none = locateShared({}, repo);
    assert.equal(none.found, false);
    assert.equal(!none.found && none.explicit, false, 'nothing named, nothing found: a skip, not an error');
    assert.match(!none.found ? none.reason : '', /is not set and there is no .*shared next to the repository/);

    const sibling = join(scratch, 'shared');
    mkdirSync(sibling);
    const found = locateShared({}, repo);
    assert.ok(found.found);
    assert.deepEqual([found.dirs.root, found.dirs.from, found.dirs.corpusDir], [sibling, '../shared', join(sibling, 'corpus/robots')]);

    const named = locateShared({ [SHARED_DIR_ENV]: scratch }, repo);
    assert.ok(named.found);
    assert.deepEqual([named.dirs.root, named.dirs.from], [scratch, SHARED_DIR_ENV]);

    const wrong = locateShared({ [SHARED_DIR_ENV]: join(scratch, 'no-such-dir') }, repo);
    assert.equal(!wrong.found && wrong.explicit, true, 'a named directory that does not exist is an error');
  });
});

describe('npm run sweep', () => {
  it('fails when $ROBOTS_PROXY_SHARED names a directory that does not exist', () => {
    const { status, out } = runSweep(join(scratch, 'no-such-dir'));
    assert.equal(status, 1, out);
    assert.match(out, /sweep: FAILED: ROBOTS_PROXY_SHARED=.*no-such-dir names a directory that does not exist/);
  });

  it('fails when the shared directory lacks the corpus', () => {
    const empty = mkdtempSync(join(scratch, 'empty-'));
    const { status, out } = runSweep(empty);
    assert.equal(status, 1, out);
    assert.match(out, /sweep: FAILED: the shared data set at .* is incomplete: .*corpus\/robots does not exist/);
  });

  it('fails when the corpus is too small to be the shared one', () => {
    const { status, out } = runSweep(fakeSharedSet(20));
    assert.equal(status, 1, out);
    assert.match(out, /only 20 robots\.txt files/);
  });

  it('runs every check, reports each failing one, and exits 1', { timeout: 120_000 }, () => {
    const { status, out } = runSweep(fakeSharedSet(1_000, (row) => (row[3] = '999')));
    assert.equal(status, 1, out);
    assert.match(out, /^FAIL {2}corpus list: site-7\.example\.txt: byte size/m);
    assert.match(out, /^ok {4}every file parses: 1000 files/m);
    assert.match(out, /^ok {4}conformance vectors: 145 match vectors/m);
    assert.match(out, /^FAIL {2}fixtures are faithful copies: .*not in the shared corpus/m);
    assert.match(out, /sweep: FAILED: \d of 7 checks failed/);
  });
});
