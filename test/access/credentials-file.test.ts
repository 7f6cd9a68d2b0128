// run-tests: in-process
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { compareCredentials, parseCredentials, readCredentialsFile } from '../../src/access/credentials-file.js';
import { ConfigError } from '../../src/errors.js';

const HASH = bcrypt.hashSync('correct horse', 4);

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err;
  }
  assert.fail('expected a ConfigError');
}

test('reads user:hash and user:hash:identity lines, skipping comments and blank lines', () => {
  const users = parseCredentials(`# proxy users\n\nalice:${HASH}\r\nbob:${HASH.replace('$2b$', '$2y$')}:lab-scrapers\n`, 'users');
  assert.deepEqual([...users.keys()], ['alice', 'bob']);
  assert.equal(users.get('alice')?.identity, 'alice');
  assert.equal(users.get('bob')?.identity, 'lab-scrapers');
  assert.equal(users.get('bob')?.line, 4);
});

test('a plain-text password is refused naming the file, the line and the user, never the password', () => {
  const error = errorOf(() => parseCredentials(`alice:${HASH}\ncarol:hunter2-plain\n`, 'users.txt'));
  assert.equal(error.key, 'access.credentialsFile');
  assert.match(error.message, /users\.txt:2: user "carol" has no bcrypt hash: plain-text passwords are refused/);
  assert.match(error.message, /robots-proxy passwd users\.txt carol/);
  assert.doesNotMatch(error.message, /hunter2/);
});

test('other hashes, a malformed bcrypt hash, a missing colon, a bad identity and a repeated user are refused by line', () => {
  const cases: Array<[string, RegExp]> = [
    ['dave:$apr1$abcdefgh$0123456789abcdefghijkl', /:1: user "dave" has a hash bcrypt is not/],
    ['erin:$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA', /:1: user "erin" has an argon2 hash/],
    [`frank:${HASH.slice(0, 40)}`, /:1: user "frank" has a malformed bcrypt hash/],
    ['grace', /:1: expected "user:bcrypt-hash"/],
    [`heidi:${HASH}:bad identity`, /:1: user "heidi": the identity must be/],
    [`ivan:${HASH}\nivan:${HASH}`, /:2: user "ivan" is already listed on line 1/],
    [`:${HASH}`, /:1: the user name must be/],
  ];
  for (const [text, pattern] of cases) assert.match(errorOf(() => parseCredentials(text, 'f')).message, pattern, text);
});

test('an unreadable file is a ConfigError naming the key', () => {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-creds-'));
  assert.match(errorOf(() => readCredentialsFile(join(dir, 'missing'))).message, /access\.credentialsFile: cannot read .*ENOENT/);
  const file = join(dir, 'users');
  writeFileSync(file, `alice:${HASH}\n`);
  assert.equal(readCredentialsFile(file).size, 1);
});

test('compareCredentials counts users added, removed, and changed in hash or identity', () => {
  const hashA = bcrypt.hashSync('a', 4);
  const hashB = bcrypt.hashSync('b', 4);
  const before = parseCredentials(`alice:${hashA}\nbob:${hashA}:lab\ncarol:${hashA}\n`, 'users');
  const after = parseCredentials(`alice:${hashA}\nbob:${hashA}:other-lab\ncarol:${hashB}\ndave:${hashB}\neve:${hashB}\n`, 'users');
  assert.deepEqual(compareCredentials(before, after), { users: 5, added: 2, removed: 0, changed: 2 });
  assert.deepEqual(compareCredentials(after, before), { users: 3, added: 0, removed: 2, changed: 2 });
  assert.deepEqual(compareCredentials(before, before), { users: 3, added: 0, removed: 0, changed: 0 });
  assert.deepEqual(compareCredentials(undefined, before), { users: 3, added: 3, removed: 0, changed: 0 }, 'a first file adds every user');
});
