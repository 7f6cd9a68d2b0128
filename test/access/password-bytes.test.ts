/**
 * Passwords are UTF-8 (the 407 says `charset="UTF-8"`, RFC 7617 §2.1): bytes that are not UTF-8
 * must neither be hashed by the passwd helper nor compared by the proxy. Decoded leniently, every
 * invalid byte became U+FFFD, so a password typed as Latin-1 `caf\xe9` was stored as `caf\uFFFD`
 * and then `caf\xff`, `caf\x80` (any invalid byte) were accepted as that user's password.
 * Real parts: the CLI as a child process, a proxy in process, raw sockets, a loopback origin.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { runCli } from '../helpers/cli.js';
import { siteHandler, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { writeTempFile } from '../helpers/https-support.js';
import { rawExchange } from '../helpers/proxy-client.js';

describe('passwords that are not UTF-8', () => {
  let origin: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: '' }));
    // `latin` as the helper wrote it before: Latin-1 "caf\xe9" read as UTF-8, i.e. "caf\uFFFD".
    const file = writeTempFile('users', `latin:${bcrypt.hashSync('caf\uFFFD', 4)}\nutf:${bcrypt.hashSync('café', 4)}\n`);
    chmodSync(file, 0o600);
    proxy = await startTestProxy({ access: { clients: ['127.0.0.1/32'], credentialsFile: file, maxAuthFailures: 100 } });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  /** The status of a GET through the proxy with Basic credentials of these user:password bytes. */
  async function statusWith(credentials: Buffer): Promise<number> {
    const head = await rawExchange(
      proxy.proxyAddress.port,
      `GET ${origin.url}/page HTTP/1.1\r\nHost: ${origin.url.slice('http://'.length)}\r\nProxy-Authorization: Basic ${credentials.toString('base64')}\r\nConnection: close\r\n\r\n`,
    );
    return Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
  }

  it('the proxy refuses credentials whose bytes are not UTF-8, and accepts the UTF-8 spelling', async () => {
    const latin = Buffer.from('latin:caf', 'latin1');
    for (const byte of [0xe9, 0xff, 0x80]) assert.equal(await statusWith(Buffer.concat([latin, Buffer.from([byte])])), 407, `byte 0x${byte.toString(16)}`);
    assert.equal(await statusWith(Buffer.from('latin:caf\uFFFD', 'utf8')), 200, 'the password as stored, in UTF-8');
    assert.equal(await statusWith(Buffer.from('utf:café', 'utf8')), 200);
    assert.equal(await statusWith(Buffer.from('utf:caf\xe9', 'latin1')), 407);
  });

  it('passwd refuses a password that is not UTF-8, and writes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-passwd-bytes-'));
    const file = join(dir, 'users');
    assert.equal((await runCli(['passwd', file, 'alice', '--cost', '4'], { stdin: 'pw\n' })).code, 0);
    const before = readFileSync(file, 'utf8');
    const run = await runCli(['passwd', file, 'latin', '--cost', '4'], { stdin: Buffer.from('caf\xe9\n', 'latin1') });
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /not valid UTF-8/);
    assert.equal(readFileSync(file, 'utf8'), before);
    const utf = await runCli(['passwd', file, 'utf', '--cost', '4'], { stdin: Buffer.from('café\n', 'utf8') });
    assert.equal(utf.code, 0, utf.stderr);
    const hash = /^utf:(\S+)$/m.exec(readFileSync(file, 'utf8'))?.[1] ?? '';
    assert.ok(bcrypt.compareSync('café', hash));
  });

  it('a password in either Unicode normalization is the same password (NFC, RFC 7617 §2.1): the proxy compares and passwd hashes its NFC form', async () => {
    const composed = 'caf\u00e9';
    const decomposed = 'cafe\u0301';
    // The file's `utf` user was hashed from the composed (NFC) spelling; a client that sends it decomposed was refused (407).
    assert.equal(await statusWith(Buffer.from(`utf:${decomposed}`, 'utf8')), 200, 'decomposed (NFD) from the client');
    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-passwd-nfc-'));
    const file = join(dir, 'users');
    const run = await runCli(['passwd', file, 'nfd', '--cost', '4'], { stdin: Buffer.from(`${decomposed}\n`, 'utf8') });
    assert.equal(run.code, 0, run.stderr);
    const hash = /^nfd:(\S+)$/m.exec(readFileSync(file, 'utf8'))?.[1] ?? '';
    assert.ok(bcrypt.compareSync(composed, hash), 'passwd hashed the NFC form of a decomposed password');
  });
});
