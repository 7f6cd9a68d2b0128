/**
 * A configuration error about a secret never repeats its value: `admin.token` written as a number
 * (YAML reads unquoted digits as one) was echoed as "expected a string, got 8.675309867530987e+19",
 * in the start's error, the reload's 422 and its log line. Real parts: the CLI as a child process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';

test('a wrong type for admin.token is named without its value', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-secret-values-'));
  for (const [value, type] of [
    ['86753098675309867530', 'a number'],
    ['[tok-8675309-8675309-8675309]', 'a list'],
    ['{ a: tok-8675309-8675309-8675309 }', 'a mapping'],
  ] as const) {
    const file = join(dir, 'config.yaml');
    writeFileSync(file, `listen: { host: 127.0.0.1, port: 0 }\nadmin: { host: 127.0.0.1, port: 0, token: ${value} }\nstateDir: ${join(dir, 'state')}\n`);
    const run = await runCli(['serve', '--config', file]);
    assert.notEqual(run.code, 0, value);
    assert.match(run.stderr, /admin\.token: expected a string/, value);
    assert.match(run.stderr, new RegExp(`got ${type}`), value);
    assert.doesNotMatch(run.stderr + run.stdout, /8\.?675309/, value);
  }
});
