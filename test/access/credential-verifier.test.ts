// run-tests: in-process
import { test } from 'node:test';
import assert from 'node:assert/strict';
import bcrypt from 'bcryptjs';
import { CredentialVerifier, parseBasicCredentials } from '../../src/access/credential-verifier.js';
import { parseCredentials } from '../../src/access/credentials-file.js';

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const file = (lines: string[]) => parseCredentials(lines.join('\n'), 'users');

test('Basic credentials: scheme in any case, password may hold ":"; anything else is malformed', () => {
  assert.deepEqual(parseBasicCredentials(basic('alice', 'a:b')), { user: 'alice', password: 'a:b', token: Buffer.from('alice:a:b').toString('base64') });
  assert.equal(parseBasicCredentials(`bAsIc ${Buffer.from('u:p').toString('base64')}`)?.user, 'u');
  for (const bad of ['Bearer abc', 'Basic', 'Basic !!!', `Basic ${Buffer.from('nocolon').toString('base64')}`, `Basic ${Buffer.from(':p').toString('base64')}`, `Basic ${'A'.repeat(5000)}`]) {
    assert.equal(parseBasicCredentials(bad), undefined, bad);
  }
});

test('a verified credential is remembered: bcrypt runs once for many checks, and concurrent first checks share it', async () => {
  const verifier = new CredentialVerifier(file([`alice:${bcrypt.hashSync('s3cret', 4)}:lab`]));
  const header = basic('alice', 's3cret');
  const first = await Promise.all([verifier.verify(header), verifier.verify(header), verifier.verify(header)]);
  for (const v of first) assert.equal(v.ok && v.entry.identity, 'lab');
  assert.equal(verifier.bcryptRuns, 1);
  for (let i = 0; i < 50; i++) assert.equal((await verifier.verify(header)).ok, true);
  assert.equal(verifier.bcryptRuns, 1);
});

test('wrong password and unknown user fail alike and are never remembered', async () => {
  const verifier = new CredentialVerifier(file([`alice:${bcrypt.hashSync('s3cret', 4)}`]));
  assert.deepEqual(await verifier.verify(basic('alice', 'wrong')), { ok: false, failure: 'wrong-credentials', user: 'alice' });
  assert.deepEqual(await verifier.verify(basic('mallory', 's3cret')), { ok: false, failure: 'wrong-credentials', user: 'mallory' });
  assert.deepEqual(await verifier.verify('Digest x'), { ok: false, failure: 'malformed' });
  await verifier.verify(basic('alice', 'wrong'));
  assert.equal(verifier.bcryptRuns, 3);
});

test('a reloaded file that changes or removes the user invalidates what was remembered', async () => {
  const verifier = new CredentialVerifier(file([`alice:${bcrypt.hashSync('old', 4)}`]));
  assert.equal((await verifier.verify(basic('alice', 'old'))).ok, true);
  const newHash = bcrypt.hashSync('new', 4);
  verifier.setCredentials(file([`alice:${newHash}`]));
  assert.equal((await verifier.verify(basic('alice', 'old'))).ok, false);
  assert.equal((await verifier.verify(basic('alice', 'new'))).ok, true);
  assert.equal(verifier.isCurrent({ user: 'alice', hash: newHash }), true);
  verifier.setCredentials(file([]));
  assert.equal((await verifier.verify(basic('alice', 'new'))).ok, false);
  assert.equal(verifier.isCurrent({ user: 'alice', hash: newHash }), false);
});

test('an unknown user is checked against a decoy hash of the bcrypt cost the file uses (htpasswd -B writes cost 5), so timing does not tell users apart', async () => {
  const verifier = new CredentialVerifier(file([`alice:${bcrypt.hashSync('s3cret', 5)}`, `bob:${bcrypt.hashSync('other', 5)}`, `carol:${bcrypt.hashSync('x', 4)}`]));
  const decoy = await verifier.decoyHash();
  assert.equal(bcrypt.getRounds(decoy), 5, 'the cost most of the file uses');
  assert.equal(await bcrypt.compare('', decoy), false);
  assert.deepEqual(await verifier.verify(basic('mallory', 's3cret')), { ok: false, failure: 'wrong-credentials', user: 'mallory' });
  verifier.setCredentials(file([`alice:${bcrypt.hashSync('s3cret', 6)}`]));
  assert.equal(bcrypt.getRounds(await verifier.decoyHash()), 6, 'a reloaded file with another cost gets a decoy of that cost');
});

test('rememberedEntry answers from the cache alone: verified credentials only, never a bcrypt run', async () => {
  const verifier = new CredentialVerifier(file([`alice:${bcrypt.hashSync('s3cret', 4)}:lab`, `bob:${bcrypt.hashSync('b0b', 4)}`]));
  assert.equal(verifier.rememberedEntry(basic('alice', 's3cret')), undefined, 'right, but never verified');
  assert.equal(verifier.bcryptRuns, 0);
  assert.equal((await verifier.verify(basic('alice', 's3cret'))).ok, true);
  assert.equal(verifier.rememberedEntry(basic('alice', 's3cret'))?.identity, 'lab');
  assert.equal(verifier.rememberedEntry(basic('alice', 'wrong')), undefined);
  assert.equal(verifier.rememberedEntry(basic('bob', 'b0b')), undefined);
  assert.equal(verifier.rememberedEntry('Digest x'), undefined);
  assert.equal(verifier.bcryptRuns, 1);
  verifier.setCredentials(file([`alice:${bcrypt.hashSync('other', 4)}:lab`]));
  assert.equal(verifier.rememberedEntry(basic('alice', 's3cret')), undefined, 'a changed password is forgotten');
});

test('the cache is keyed by the value as sent, salted per process: another spelling is verified again, and keys differ between processes', async () => {
  const users = file([`alice:${bcrypt.hashSync('s3cret', 4)}:lab`]);
  const verifier = new CredentialVerifier(users);
  const header = basic('alice', 's3cret');
  assert.equal((await verifier.verify(header)).ok, true);
  assert.equal(verifier.rememberedEntry(header)?.identity, 'lab');
  const lower = header.replace('Basic', 'basic');
  assert.equal(verifier.rememberedEntry(lower), undefined, 'the same credentials spelt otherwise are another entry');
  assert.equal((await verifier.verify(lower)).ok, true);
  assert.equal(verifier.bcryptRuns, 2);
  assert.equal(verifier.rememberedEntry(lower)?.identity, 'lab');
  assert.equal(verifier.cacheKeyOf(header), verifier.cacheKeyOf(header));
  assert.notEqual(verifier.cacheKeyOf(header), new CredentialVerifier(users).cacheKeyOf(header), 'a per-process salt');
  assert.ok(!verifier.cacheKeyOf(header).includes(header.slice(6)), 'no credentials in the key');
});

test('cache keys: 32 latin1 characters, the same for the same header, another per process (salt) and per header', () => {
  const users = file([`alice:${bcrypt.hashSync('correct horse', 4)}`]);
  const a = new CredentialVerifier(users);
  const b = new CredentialVerifier(users);
  const header = basic('alice', 'correct horse');
  assert.equal(a.cacheKeyOf(header).length, 32);
  assert.equal(a.cacheKeyOf(header), a.cacheKeyOf(header));
  assert.notEqual(a.cacheKeyOf(header), b.cacheKeyOf(header));
  assert.notEqual(a.cacheKeyOf(header), a.cacheKeyOf(basic('alice', 'correct horsf')));
  assert.ok(!a.cacheKeyOf(header).includes('correct'));
});
