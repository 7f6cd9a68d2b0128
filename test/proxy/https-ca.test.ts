/**
 * The interception CA end to end (issue #4, "The CA"): created once in the
 * state directory and reused on restart, key file mode 0600; printed by
 * `robots-proxy ca --config FILE`; served by the admin listener at /ca.pem.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliNodeArgs } from '../helpers/cli.js';
import { startTestProxy } from '../helpers/harness.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Runs `robots-proxy ca --config <configPath>` as a child process. */
function runCaCommand(configPath: string): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...cliNodeArgs(), 'ca', '--config', configPath], { cwd: root, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ exitCode: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

describe('the interception CA', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'robots-proxy-ca-state-'));
  const running = new Set<{ close(): Promise<void> }>();

  after(async () => {
    await Promise.all([...running].map((r) => r.close()));
  });

  it('is generated on first start and reused on restart; key file mode 0600', async () => {
    const first = await startTestProxy({ stateDir });
    running.add(first);
    assert.ok(first.ca);
    assert.equal(first.ca.created, true);
    assert.equal(first.ca.source, 'generated');
    assert.equal(first.ca.certPath, join(stateDir, 'ca', 'ca.pem'));
    assert.equal(readFileSync(first.ca.certPath, 'utf8').trim(), first.ca.certPem.trim());
    assert.equal(statSync(first.ca.keyPath).mode & 0o777, 0o600);
    await first.close();
    running.delete(first);

    const second = await startTestProxy({ stateDir });
    running.add(second);
    assert.ok(second.ca);
    assert.equal(second.ca.created, false);
    assert.equal(second.ca.source, 'state-dir');
    assert.equal(second.ca.certPem, first.ca.certPem);
    assert.equal(second.ca.sha256Fingerprint, first.ca.sha256Fingerprint);
    assert.equal(statSync(second.ca.keyPath).mode & 0o777, 0o600);

    // The admin listener serves the same PEM.
    const res = await fetch(`${second.adminUrl}/ca.pem`);
    assert.equal(res.status, 200);
    assert.match(String(res.headers.get('content-type')), /application\/x-pem-file/);
    assert.equal((await res.text()).trim(), first.ca.certPem.trim());
  });

  it('`robots-proxy ca --config FILE` prints the path and the PEM of that CA', async () => {
    const configPath = join(mkdtempSync(join(tmpdir(), 'robots-proxy-ca-config-')), 'config.yaml');
    writeFileSync(configPath, `stateDir: ${JSON.stringify(stateDir)}\nlog: { level: silent }\n`);
    const expectedPem = readFileSync(join(stateDir, 'ca', 'ca.pem'), 'utf8');
    const r = await runCaCommand(configPath);
    assert.equal(r.exitCode, 0, r.stderr);
    const [firstLine, ...rest] = r.stdout.split('\n');
    assert.equal(firstLine, `# ${join(stateDir, 'ca', 'ca.pem')}`);
    assert.equal(rest.join('\n').trim(), expectedPem.trim());
    assert.match(rest.join('\n'), /^-----BEGIN CERTIFICATE-----\n/);
  });

  it('`robots-proxy ca` creates the CA when the state directory has none yet', async () => {
    const freshState = mkdtempSync(join(tmpdir(), 'robots-proxy-ca-fresh-'));
    const configPath = join(freshState, 'config.yaml');
    writeFileSync(configPath, `stateDir: ${JSON.stringify(join(freshState, 'state'))}\n`);
    const r = await runCaCommand(configPath);
    assert.equal(r.exitCode, 0, r.stderr);
    const certPath = join(freshState, 'state', 'ca', 'ca.pem');
    assert.equal(r.stdout.split('\n')[0], `# ${certPath}`);
    assert.ok(r.stdout.includes(readFileSync(certPath, 'utf8').trim()));
    assert.equal(statSync(join(freshState, 'state', 'ca', 'ca-key.pem')).mode & 0o777, 0o600);
  });
});
