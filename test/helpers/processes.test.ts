/**
 * The child-process helpers leave nothing running when a start fails: a proxy that does not
 * listen in time (a real `robots-proxy serve` child, also under `sh -c ulimit`), and one that
 * exits at once on a bad config.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isRunning, startProxyProcess, StartFailure } from './processes.js';

/** The StartFailure `starting` rejects with. */
async function failureOf(starting: Promise<unknown>): Promise<StartFailure> {
  try {
    const started = (await starting) as { close(): Promise<void> };
    await started.close();
  } catch (error) {
    assert.ok(error instanceof StartFailure, String(error));
    return error;
  }
  assert.fail('the start should have failed');
}

const YAML = 'listen: { port: 0 }\nadmin: { port: 0 }\nstateDir: $STATE\n';

test('a proxy that does not listen in time is killed before the start rejects', async () => {
  // 50 ms: far less than node and tsx need to load the CLI, so the child is running when the wait ends.
  const failure = await failureOf(startProxyProcess(YAML, { startTimeoutMs: 50 }));
  assert.match(failure.message, /did not start in 50 ms/);
  assert.equal(typeof failure.pid, 'number');
  assert.equal(isRunning(failure.pid!), false, `process ${failure.pid} is still running`);
});

test('the same through sh -c "ulimit -n": the process started (sh, then node by exec) is gone', async () => {
  const failure = await failureOf(startProxyProcess(YAML, { startTimeoutMs: 50, openFileLimit: 4096 }));
  assert.equal(isRunning(failure.pid!), false, `process ${failure.pid} is still running`);
});

test('a proxy that exits at once (a bad config) rejects with its stderr', async () => {
  const failure = await failureOf(startProxyProcess('listen: { port: 0 }\nnoSuchKey: 1\nstateDir: $STATE\n'));
  assert.match(failure.message, /exited with 2/);
  assert.match(failure.message, /noSuchKey/);
  assert.equal(isRunning(failure.pid!), false);
});
