/**
 * The secret files' modes (`access.credentialsFile`, `admin.tokenFile`), as ssh checks a key's:
 * one warning line naming the file and its mode when others may read or write it, at start and
 * (credentials file) at every reload; a world-writable one refused. The proxy is a real
 * `robots-proxy serve` child; the files are real, chmod'ed between reloads.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { looseAccessOf, octalMode } from '../../src/access/secret-file-mode.js';
import { startProxyProcess, StartFailure, type ProxyProcess } from '../helpers/processes.js';

test('who besides the owner may read or write, in words and octal', () => {
  assert.deepEqual(looseAccessOf(0o100600), []);
  assert.deepEqual(looseAccessOf(0o700), [], 'execute bits are not access to the secret');
  assert.deepEqual(looseAccessOf(0o640), ['group-readable']);
  assert.deepEqual(looseAccessOf(0o666), ['group-readable', 'group-writable', 'world-readable', 'world-writable']);
  assert.equal(octalMode(0o100644), '0644');
  assert.equal(octalMode(0o600), '0600');
});

/** Writes the two secret files with the given modes; returns their paths. */
function secretFiles(credentialsMode: number, tokenMode: number): { users: string; token: string } {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-secrets-'));
  const users = join(dir, 'users');
  const token = join(dir, 'admin-token');
  writeFileSync(users, `alice:${bcrypt.hashSync('pw', 4)}\n`);
  writeFileSync(token, 'a-token-of-at-least-sixteen-characters\n');
  chmodSync(users, credentialsMode);
  chmodSync(token, tokenMode);
  return { users, token };
}

const yaml = (files: { users: string; token: string }): string =>
  `listen: { port: 0 }\nadmin: { port: 0, tokenFile: ${JSON.stringify(files.token)} }\naccess:\n  credentialsFile: ${JSON.stringify(files.users)}\nstateDir: $STATE\n`;

/** The secret-file warnings logged so far. */
const modeWarnings = (proxy: ProxyProcess) => proxy.logs.filter((l) => l['event'] === 'config-warning' && typeof l['mode'] === 'string');

/** Sends SIGHUP and waits for the reload's outcome line (the `n`th reload since start). */
async function reload(proxy: ProxyProcess, n: number): Promise<void> {
  proxy.kill('SIGHUP');
  const deadline = Date.now() + 10_000;
  while (proxy.logs.filter((l) => l['event'] === 'config-reloaded' || l['event'] === 'config-reload-failed').length < n) {
    if (Date.now() > deadline) throw new Error(`reload ${n} left no trace`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // The warnings of an applied reload are logged right after its line; the log is flushed every 100 ms.
  await new Promise((resolve) => setTimeout(resolve, 300));
}

test('a readable secret file is warned about at start, and the credentials file at each reload; a world-writable one is refused', async () => {
  const files = secretFiles(0o644, 0o640);
  const proxy = await startProxyProcess(yaml(files));
  try {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const atStart = modeWarnings(proxy).map((l) => [l['key'], l['file'], l['mode']]);
    assert.deepEqual(atStart, [
      ['access.credentialsFile', files.users, '0644'],
      ['admin.tokenFile', files.token, '0640'],
    ]);
    assert.match(String(modeWarnings(proxy)[0]?.['msg']), /group-readable, world-readable \(mode 0644\)/);
    chmodSync(files.users, 0o600);
    await reload(proxy, 1);
    assert.equal(modeWarnings(proxy).length, 2, 'a private file is not warned about');
    chmodSync(files.users, 0o660);
    await reload(proxy, 2);
    assert.deepEqual(modeWarnings(proxy).slice(2).map((l) => [l['key'], l['mode']]), [['access.credentialsFile', '0660']]);
    chmodSync(files.users, 0o666);
    await reload(proxy, 3);
    const failed = proxy.logs.find((l) => l['event'] === 'config-reload-failed');
    assert.equal(failed?.['key'], 'access.credentialsFile');
    assert.match(String(failed?.['error']), /world-writable \(mode 0666\): any user of this machine could add a user/);
  } finally {
    await proxy.close();
  }
});

test('the proxy does not start with a world-writable admin token file', async () => {
  const files = secretFiles(0o600, 0o666);
  await assert.rejects(startProxyProcess(yaml(files)), (err: unknown) => {
    assert.ok(err instanceof StartFailure);
    assert.match(err.message, /admin\.tokenFile: .* is world-writable \(mode 0666\): any user of this machine could replace the admin token; chmod 600 it/);
    return true;
  });
});
