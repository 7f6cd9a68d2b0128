/**
 * A careless operator's open proxy: listening beyond loopback with `access.clients` admitting
 * every address (`0.0.0.0/0`, `::/0`) and no credentials file lets anyone who reaches the port
 * crawl through it. The start says so (`config-warning`, key `access.clients`); with a credentials
 * file, or narrower ranges, it does not. Real parts: proxies started in process on 0.0.0.0:0.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync } from 'node:fs';
import bcrypt from 'bcryptjs';
import { captureLogs, startTestProxy } from '../helpers/harness.js';
import { writeTempFile } from '../helpers/https-support.js';

async function warningsOf(access: Record<string, unknown>): Promise<Array<Record<string, unknown>>> {
  const logs = captureLogs();
  const proxy = await startTestProxy({ listen: { host: '0.0.0.0', port: 0 }, access }, { logger: logs.logger });
  await proxy.close();
  return logs.lines.filter((l) => l['event'] === 'config-warning' && l['key'] === 'access.clients');
}

test('warns at start when every address may use the proxy without credentials', async () => {
  for (const clients of [['0.0.0.0/0'], ['10.0.0.0/8', '::/0']]) {
    const warnings = await warningsOf({ clients });
    assert.equal(warnings.length, 1, JSON.stringify(clients));
    assert.match(String(warnings[0]!['msg']), /every address.*no access\.credentialsFile/, JSON.stringify(clients));
  }
  const users = writeTempFile('users', `alice:${bcrypt.hashSync('pw', 4)}\n`);
  chmodSync(users, 0o600);
  assert.deepEqual(await warningsOf({ clients: ['0.0.0.0/0'], credentialsFile: users }), [], 'credentials are required');
  assert.deepEqual(await warningsOf({ clients: ['10.0.0.0/8', '127.0.0.1/32'] }), [], 'ranges of the operator\'s network');
});
