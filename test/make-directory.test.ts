// run-tests: in-process
/**
 * makeDirectory: creates missing parents one at a time and fails fast where
 * Node's recursive mkdir spins for ever (issue #7: `stateDir: /proc/nope`).
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeDirectory } from '../src/make-directory.js';

describe('makeDirectory', () => {
  const base = mkdtempSync(join(tmpdir(), 'robots-proxy-mkdir-'));
  after(() => rmSync(base, { recursive: true, force: true }));

  it('creates missing parents with the mode, and accepts an existing directory', async () => {
    const deep = join(base, 'a', 'b', 'c');
    await makeDirectory(deep, 0o700);
    assert.ok(statSync(deep).isDirectory());
    assert.equal(statSync(join(base, 'a')).mode & 0o777, 0o700);
    await makeDirectory(deep, 0o700);
    await makeDirectory(join(base, 'a', '.', 'b', '..', 'b'), 0o700);
  });

  it('refuses a path whose parent is a file (ENOTDIR) or that is a file', async () => {
    const file = join(base, 'file');
    writeFileSync(file, 'x');
    await assert.rejects(makeDirectory(join(file, 'sub'), 0o700), { code: 'ENOTDIR' });
    await assert.rejects(makeDirectory(file, 0o700), { code: 'ENOTDIR' });
  });

  it('fails at once under /proc instead of spinning', { skip: !existsSync('/proc/self'), timeout: 10_000 }, async () => {
    await assert.rejects(makeDirectory('/proc/robots-proxy-nope', 0o700), { code: 'ENOENT' });
    await assert.rejects(makeDirectory('/proc/robots-proxy-nope/a/b', 0o700), { code: 'ENOENT' });
  });
});
