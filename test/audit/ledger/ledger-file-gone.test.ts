/**
 * The ledger file deleted (or replaced) while the proxy runs: SQLite would go
 * on writing into the unlinked file, so everything recorded afterwards was
 * lost and the report said the file "does not exist yet". The ledger notices
 * at its next write, logs it, and starts a new file at the configured path.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { captureLogs, siteHandler, startOrigin, startTestProxy } from '../../helpers/harness.js';
import { sendMany, tempDir, totalRequests, UA } from './support.js';

describe('ledger file deleted mid-run', () => {
  it('the next write starts a new file at the path, logged; requests after the deletion are counted there', async () => {
    const origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    const stateDir = tempDir();
    const path = join(stateDir, 'ledger.sqlite');
    const logs = captureLogs();
    const proxy = await startTestProxy({ stateDir }, { logger: logs.logger });
    try {
      assert.deepEqual(await sendMany(proxy.proxyAddress.port, `${origin.url}/before`, UA.example, 2), [200, 200]);
      // The report flushes the ledger before it reads.
      assert.equal((await fetch(`${proxy.adminUrl}/report/data/summary.json?range=1h`)).status, 200);
      assert.equal(totalRequests(path), 2);
      for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
      assert.deepEqual(await sendMany(proxy.proxyAddress.port, `${origin.url}/after`, UA.example, 3), [200, 200, 200]);
      const answer = await fetch(`${proxy.adminUrl}/report/data/summary.json?range=1h`);
      assert.equal(answer.status, 200, await answer.text());
      assert.ok(existsSync(path), 'a new ledger file at the path');
      assert.equal(totalRequests(path), 3, 'the requests after the deletion are in the new file');
      assert.equal(logs.lines.filter((l) => l['event'] === 'ledger-file-replaced').length, 1);
    } finally {
      await proxy.close();
      await origin.close();
    }
  });
});
