/**
 * `robots-proxy passwd FILE USER` as a real child process: the password comes from stdin and
 * only its bcrypt hash is written; other lines stay; a file with a plain entry is refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { runCli } from '../helpers/cli.js';
import { parseCredentials } from '../../src/access/credentials-file.js';

test('passwd writes a bcrypt entry from stdin, replaces and removes entries, keeps comments', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'robots-proxy-passwd-')), 'users');
  writeFileSync(file, '# crawl lab\n', { mode: 0o640 });
  const added = await runCli(['passwd', file, 'alice', '--cost', '4'], { stdin: 'first password\n' });
  assert.equal(added.code, 0, added.stderr);
  assert.match(added.stderr, /added alice/);
  const bob = await runCli(['passwd', file, 'bob', '--cost', '4', '--identity', 'lab-scrapers'], { stdin: 'bobs password\n' });
  assert.equal(bob.code, 0, bob.stderr);
  const replaced = await runCli(['passwd', file, 'alice', '--cost', '4'], { stdin: 'second password\n' });
  assert.match(replaced.stderr, /replaced alice/);
  const text = readFileSync(file, 'utf8');
  assert.ok(text.startsWith('# crawl lab\n'));
  assert.ok(!text.includes('password'), 'no password in the file');
  const users = parseCredentials(text, file);
  assert.equal(bcrypt.compareSync('second password', users.get('alice')?.hash ?? ''), true);
  assert.equal(users.get('bob')?.identity, 'lab-scrapers');
  assert.equal(statSync(file).mode & 0o777, 0o640, 'an existing file keeps its mode');
  const removed = await runCli(['passwd', file, 'bob', '--delete']);
  assert.equal(removed.code, 0, removed.stderr);
  assert.deepEqual([...parseCredentials(readFileSync(file, 'utf8'), file).keys()], ['alice']);
});

test('passwd creates a missing file 0600 and refuses bad input with exit code 2', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-passwd-'));
  const file = join(dir, 'users');
  assert.equal((await runCli(['passwd', file, 'alice', '--cost', '4'], { stdin: 'pw\n' })).code, 0);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const empty = await runCli(['passwd', file, 'bob'], { stdin: '' });
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /no password on stdin/);
  const long = await runCli(['passwd', file, 'bob'], { stdin: `${'x'.repeat(73)}\n` });
  assert.match(long.stderr, /longer than 72 bytes/);
  const badUser = await runCli(['passwd', file, 'bad:user', '--cost', '4'], { stdin: 'pw\n' });
  assert.equal(badUser.code, 2);
  assert.match(badUser.stderr, /USER must be/);
  const plain = join(dir, 'plain');
  writeFileSync(plain, 'carol:hunter2\n');
  const refused = await runCli(['passwd', plain, 'dave', '--cost', '4'], { stdin: 'pw\n' });
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /plain:1: user "carol" has no bcrypt hash/);
  assert.doesNotMatch(refused.stderr, /hunter2/);
});

test('passwd refuses a FILE that is a directory (or a device: /dev/null, never read or renamed over) with exit 2, creating nothing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-passwd-'));
  const file = join(dir, 'users');
  mkdirSync(file);
  const r = await runCli(['passwd', file, 'alice', '--cost', '4'], { stdin: 'a password\n' });
  assert.deepEqual({ code: r.code, stderr: r.stderr }, { code: 2, stderr: `robots-proxy: passwd: ${file} is not a regular file; FILE is the credentials file to write\n` });
  assert.deepEqual(readdirSync(dir), ['users'], 'no FILE.tmp left');
});

test('passwd never writes through a file or symlink at FILE.tmp, names it, and leaves it alone', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-passwd-'));
  const stale = join(dir, 'users');
  writeFileSync(stale, '# lab\n', { mode: 0o600 });
  writeFileSync(`${stale}.tmp`, 'left by a run killed mid-write\n');
  // The attack O_EXCL blocks: a symlink planted at the temporary name, pointing at a file to clobber.
  const planted = join(dir, 'planted');
  const victim = join(dir, 'victim');
  writeFileSync(planted, '# lab\n', { mode: 0o600 });
  writeFileSync(victim, 'precious\n');
  symlinkSync(victim, `${planted}.tmp`);
  const [staleRun, plantedRun] = await Promise.all([
    runCli(['passwd', stale, 'alice', '--cost', '4'], { stdin: 'pw\n' }),
    runCli(['passwd', planted, 'alice', '--cost', '4'], { stdin: 'pw\n' }),
  ]);
  for (const [run, file] of [[staleRun, stale], [plantedRun, planted]] as const) {
    assert.equal(run.code, 2, run.stderr);
    assert.ok(run.stderr.includes(`${file}.tmp exists`), run.stderr);
    assert.match(run.stderr, /if none is running, remove/);
    assert.equal(readFileSync(file, 'utf8'), '# lab\n', 'the credentials file is unchanged');
  }
  assert.equal(readFileSync(`${stale}.tmp`, 'utf8'), 'left by a run killed mid-write\n', 'a temporary file passwd did not create is not removed');
  assert.equal(readFileSync(victim, 'utf8'), 'precious\n', 'nothing is written through the symlink');
  assert.equal(lstatSync(`${planted}.tmp`).isSymbolicLink(), true);
});

test('concurrent passwd runs on one file lose no entry; the file keeps its mode; no temporary file is left', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-passwd-'));
  const file = join(dir, 'users');
  writeFileSync(file, '# lab\n', { mode: 0o640 });
  const users = ['u1', 'u2', 'u3', 'u4'];
  const runs = await Promise.all(users.map((user) => runCli(['passwd', file, user, '--cost', '4'], { stdin: `${user} password\n` })));
  for (const run of runs) assert.equal(run.code, 0, run.stderr);
  assert.deepEqual([...parseCredentials(readFileSync(file, 'utf8'), file).keys()].sort(), users);
  assert.equal(statSync(file).mode & 0o777, 0o640);
  const missing = await runCli(['passwd', file, 'nobody', '--delete']);
  assert.equal(missing.code, 2, 'removing a user that is not there fails');
  assert.deepEqual(readdirSync(dir), ['users'], 'the lock is released after a success and after a failure');
});

test('passwd run by root keeps the owner of a file another user owns', { skip: process.getuid?.() !== 0 ? 'needs root (to chown the fixture)' : false }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-passwd-'));
  const file = join(dir, 'users');
  writeFileSync(file, '', { mode: 0o640 });
  chownSync(file, 65534, 65534);
  const run = await runCli(['passwd', file, 'alice', '--cost', '4'], { stdin: 'pw\n' });
  assert.equal(run.code, 0, run.stderr);
  const after = statSync(file);
  assert.deepEqual([after.uid, after.gid, after.mode & 0o777], [65534, 65534, 0o640]);
});

test('passwd refuses a USER starting with "#": its line would be a comment, a user nobody could log in as', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'robots-proxy-passwd-')), 'users');
  writeFileSync(file, '', { mode: 0o600 });
  const run = await runCli(['passwd', file, '#ops', '--cost', '4', '--identity', 'ops'], { stdin: 'pw\n' });
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /must not start with "#"/);
  assert.equal(readFileSync(file, 'utf8'), '');
});
