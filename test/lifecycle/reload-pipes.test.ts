/**
 * A reload never waits on a named pipe (src/read-bounded.ts). The credentials file or the
 * configuration file replaced by a FIFO froze a `robots-proxy serve` child on the next SIGHUP:
 * the synchronous open waited for a writer (and the read for data), so no request, no admin
 * /healthz and no SIGTERM was answered again (found in session 30's fuzzing hunt; scripts/fuzz-proxy.ts now sends it).
 * Now the reload fails, logged with the reason, and the proxy keeps serving on the files it had.
 * Real child process, real FIFOs (mkfifo), real SIGHUPs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { startProxyProcess, type ProxyProcess } from '../helpers/processes.js';

/** Sends SIGHUP and resolves with the reload's outcome line (the `n`th since start), or throws after 8 s. */
async function reload(proxy: ProxyProcess, n: number): Promise<Record<string, unknown>> {
  proxy.kill('SIGHUP');
  const deadline = Date.now() + 8000;
  for (;;) {
    const outcomes = proxy.logs.filter((l) => l['event'] === 'config-reloaded' || l['event'] === 'config-reload-failed');
    if (outcomes.length >= n) return outcomes[n - 1]!;
    if (Date.now() > deadline) throw new Error(`reload ${n} left no trace in 8 s (the proxy is stuck)`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The admin /healthz status, or 0 when it did not answer in 3 s. */
async function health(proxy: ProxyProcess): Promise<number> {
  try {
    const res = await fetch(`http://127.0.0.1:${proxy.adminPort}/healthz`, { signal: AbortSignal.timeout(3000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** Replaces `path` by a FIFO of mode 0600. */
function makeFifo(path: string): void {
  rmSync(path, { force: true });
  execFileSync('mkfifo', ['-m', '600', path]);
}

test('a credentials file or configuration file replaced by a named pipe fails the reload; the proxy keeps answering', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-reload-pipes-'));
  const users = join(dir, 'users');
  const usersText = `alice:${bcrypt.hashSync('pw', 4)}\n`;
  writeFileSync(users, usersText, { mode: 0o600 });
  const proxy = await startProxyProcess(
    `listen: { port: 0 }\nadmin: { port: 0 }\nledger: { enabled: false }\naccess:\n  credentialsFile: ${JSON.stringify(users)}\nstateDir: $STATE\n`,
  );
  let writer: number | undefined;
  try {
    assert.equal(await health(proxy), 200);

    // A FIFO nobody writes to: open(2) without O_NONBLOCK waits for a writer for ever.
    makeFifo(users);
    const first = await reload(proxy, 1);
    assert.equal(first['event'], 'config-reload-failed');
    assert.match(String(first['error']), /ENODATA/);
    assert.equal(await health(proxy), 200, 'the admin listener still answers');

    // A FIFO with a writer that sends nothing: read(2) would wait for data for ever.
    writer = openSync(users, constants.O_RDWR);
    const second = await reload(proxy, 2);
    assert.equal(second['event'], 'config-reload-failed');
    assert.match(String(second['error']), /EAGAIN/);
    assert.equal(await health(proxy), 200);
    closeSync(writer);
    writer = undefined;
    rmSync(users);
    writeFileSync(users, usersText, { mode: 0o600 });

    // The configuration file itself.
    const configText = readFileSync(proxy.configPath, 'utf8');
    makeFifo(proxy.configPath);
    const third = await reload(proxy, 3);
    assert.equal(third['event'], 'config-reload-failed');
    assert.match(String(third['error']), /ENODATA/);
    assert.equal(await health(proxy), 200);

    rmSync(proxy.configPath);
    writeFileSync(proxy.configPath, configText);
    assert.equal((await reload(proxy, 4))['event'], 'config-reloaded', 'regular files again: the reload applies');
  } finally {
    if (writer !== undefined) closeSync(writer);
    await proxy.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
