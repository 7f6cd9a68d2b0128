/**
 * The child-process helpers leave nothing running when a start fails: a proxy that does not
 * listen in time (a real `robots-proxy serve` child, also under `sh -c ulimit`), and one that
 * exits at once on a bad config. A test file whose `before` fails while a proxy started beside
 * it (a `Promise.all` whose result its `after` never saw) ends, and that proxy with it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isRunning, startProxyProcess, StartFailure, stopAllProcesses, trackedPids } from './processes.js';

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

test('stopAllProcesses ends a started proxy nobody closed', async () => {
  const proxy = await startProxyProcess(YAML);
  const pids = trackedPids();
  assert.ok(pids.length > 0, 'the proxy is tracked');
  await stopAllProcesses();
  for (const pid of pids) assert.equal(isRunning(pid), false, `process ${pid} is still running`);
  await proxy.close();
});

test('a test file whose before fails beside a started proxy ends, leaving no process behind', { timeout: 120_000 }, () => {
  const tree = mkdtempSync(join(tmpdir(), 'hang-tree-'));
  try {
    const pidFile = join(tree, 'pids.json');
    const helpers = new URL('./processes.ts', import.meta.url).href;
    mkdirSync(join(tree, 'test'));
    // One proxy starts (or is still starting) when the other's 300 ms start timeout rejects the Promise.all,
    // so `proxies` is never assigned and the suite's own `after` closes nothing: before the fix, the file hung.
    writeFileSync(
      join(tree, 'test', 'failed-start.test.ts'),
      [
        "import { describe, it, before, after } from 'node:test';",
        "import { writeFileSync } from 'node:fs';",
        `import { startProxyProcess, trackedPids, type ProxyProcess } from ${JSON.stringify(helpers)};`,
        `const YAML = ${JSON.stringify(YAML)};`,
        "describe('a fleet that does not start', () => {",
        '  let proxies: ProxyProcess[] = [];',
        '  before(async () => {',
        '    try {',
        '      proxies = await Promise.all([startProxyProcess(YAML), startProxyProcess(YAML, { startTimeoutMs: 300 })]);',
        '    } catch (error) {',
        `      writeFileSync(${JSON.stringify(pidFile)}, JSON.stringify(trackedPids()));`,
        '      throw error;',
        '    }',
        '  });',
        '  after(async () => { await Promise.all(proxies.map((p) => p.close())); });',
        "  it('never runs', () => {});",
        '});',
        '',
      ].join('\n'),
    );
    const runner = fileURLToPath(new URL('../../scripts/run-tests.mjs', import.meta.url));
    // 60 s: the file ends in about a second; a hang is ended by SIGTERM (passed on to the run's process group).
    const run = spawnSync(process.execPath, [runner, '--root', tree], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(run.signal, null, `the run hung and was killed: ${run.stdout}${run.stderr}`);
    assert.equal(run.status, 1, run.stdout + run.stderr);
    assert.match(run.stderr, /test\/failed-start\.test\.ts \(suite "a fleet that does not start"\): hookFailed: proxy did not start in 300 ms/);
    const pids = JSON.parse(readFileSync(pidFile, 'utf8')) as number[];
    assert.ok(pids.length > 0, 'the proxy that was starting was tracked');
    for (const pid of pids) assert.equal(isRunning(pid), false, `process ${pid} is still running`);
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
});
