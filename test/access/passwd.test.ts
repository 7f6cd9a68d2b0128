/**
 * `robots-proxy passwd FILE USER` as a real child process: the password comes from stdin and
 * only its bcrypt hash is written; other lines stay; a file with a plain entry is refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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
