/**
 * scripts/run-tests.mjs (`npm test`) on throwaway test trees: a file that
 * fails to load, one that throws at top level and a suite whose callback
 * throws each fail the run, are counted and named with their reason; a
 * healthy tree passes. Files marked in-process run side by side, before the
 * others, which run one at a time. SIGTERM or SIGINT to the runner, or SIGTERM to the
 * `npm test` that started it, stops the whole run:
 * no test process or server it started is left behind.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isRunning } from '../helpers/processes.js';

const runner = fileURLToPath(new URL('../../scripts/run-tests.mjs', import.meta.url));
const trees: string[] = [];

/** Writes `files` (path under test/ -> source) into a fresh directory; returns its root. */
function testTree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'run-tests-tree-'));
  trees.push(root);
  for (const [path, source] of Object.entries(files)) {
    const full = join(root, 'test', path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, source);
  }
  return root;
}

function runTests(root: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [runner, '--root', root], { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const PASSING = "import { it } from 'node:test';\nit('passes', () => {});\nit('passes too', () => {});\n";

describe('scripts/run-tests.mjs', () => {
  after(() => {
    for (const root of trees) rmSync(root, { recursive: true, force: true });
  });

  it('fails the run and counts files and suites that do not load, naming each with its reason', { timeout: 120_000 }, () => {
    const root = testTree({
      'ok.test.ts': PASSING,
      'nested/import-error.test.ts': "import { nothing } from './missing-module.js';\nconsole.log(nothing);\n",
      'top-level-throw.test.ts': "import { readFileSync } from 'node:fs';\nreadFileSync('/nonexistent/robots-fixture.txt');\n",
      'suite-throws.test.ts': "import { describe, it } from 'node:test';\ndescribe('reads its data', () => {\n  JSON.parse('{');\n  it('never registered', () => {});\n});\n",
      'hook.test.ts': "import { describe, it, before } from 'node:test';\ndescribe('set up', () => {\n  before(() => { throw new Error('origin did not start'); });\n  it('a', () => {});\n  it('b', () => {});\n});\n",
      'fails.test.ts': "import { describe, it } from 'node:test';\ndescribe('a group', () => {\n  it('fails', () => { throw new Error('no\\nmore'); });\n});\n",
    });
    const { status, stdout, stderr } = runTests(root);
    assert.equal(status, 1, stdout + stderr);
    assert.match(stderr, /run-tests: 6 files, 5 tests: 2 passed, 1 failed, 2 cancelled, 0 skipped, 0 todo; 4 files or suites failed to load or crashed/);
    assert.match(stderr, /^ {2}test\/nested\/import-error\.test\.ts: .*Cannot find module/m);
    assert.match(stderr, /^ {2}test\/top-level-throw\.test\.ts: Error: ENOENT: .*robots-fixture\.txt/m);
    assert.match(stderr, /^ {2}test\/suite-throws\.test\.ts \(suite "reads its data"\): testCodeFailure: .*JSON/m);
    assert.match(stderr, /^ {2}test\/hook\.test\.ts \(suite "set up"\): hookFailed: /m);
    // A failed test is named at the end with its suites and its error's first line (a CI log may keep only the end).
    assert.match(stderr, /^run-tests: FAILED: 1 tests:$/m);
    assert.match(stderr, /^ {2}test\/fails\.test\.ts: a group > fails: no$/m);
  });

  // `via: 'npm'` is `npm test -- --root DIR` as an operator runs it: the signal goes to npm, which passes
  // it on to its script's process; with `"test": "node scripts/run-tests.mjs"` that process was the
  // `sh -c` npm runs scripts in, which died of it and left the runner and the whole run going.
  for (const [signal, code, via] of [['SIGTERM', 143, 'runner'], ['SIGINT', 130, 'runner'], ['SIGTERM', null, 'npm']] as const) {
    it(`${signal} to ${via === 'npm' ? '`npm test`' : 'the runner'} stops the test process and the servers it started${code === null ? '' : ` (exit ${code})`}`, { timeout: 120_000 }, async () => {
      const pidsFile = join(mkdtempSync(join(tmpdir(), 'run-tests-pids-')), 'pids.json');
      trees.push(dirname(pidsFile));
      const root = testTree({
        'hang.test.ts': [
          "import { it } from 'node:test';",
          "import { spawn } from 'node:child_process';",
          "import { writeFileSync } from 'node:fs';",
          "it('runs long with a server child', async () => {",
          "  const server = spawn(process.execPath, ['-e', \"require('node:http').createServer().listen(0, '127.0.0.1')\"], { stdio: 'ignore' });",
          `  writeFileSync(${JSON.stringify(pidsFile)}, JSON.stringify([process.pid, server.pid]));`,
          '  await new Promise((resolve) => setTimeout(resolve, 100_000));',
          '});',
        ].join('\n'),
      });
      const run =
        via === 'npm'
          ? spawn('npm', ['test', '--', '--root', root], { cwd: fileURLToPath(new URL('../../', import.meta.url)), stdio: ['ignore', 'pipe', 'pipe'] })
          : spawn(process.execPath, [runner, '--root', root], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      run.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      run.stdout.resume();
      const exited = new Promise<number | null>((resolve) => run.once('exit', (status) => resolve(status)));
      for (let waited = 0; !existsSync(pidsFile) || readFileSync(pidsFile, 'utf8') === ''; waited += 50) {
        assert.ok(waited < 60_000, `the test never started: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const pids = JSON.parse(readFileSync(pidsFile, 'utf8')) as number[];
      assert.ok(pids.every(isRunning), 'the test process and its server run');
      run.kill(signal);
      const status = await exited;
      for (let waited = 0; pids.some(isRunning); waited += 50) {
        if (waited > 10_000) {
          for (const pid of pids.filter(isRunning)) process.kill(pid, 'SIGKILL');
          assert.fail(`left running after ${signal}: ${pids.join(', ')}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      if (code !== null) assert.equal(status, code, stderr);
      assert.match(stderr, new RegExp(`run-tests: stopped by ${signal}`));
    });
  }

  it('a file that does not end in time fails, named, the other files run, and what it left running is killed', { timeout: 120_000 }, async () => {
    const pidsFile = join(mkdtempSync(join(tmpdir(), 'run-tests-pids-')), 'pids.json');
    trees.push(dirname(pidsFile));
    // Its test passes, but a server child and an interval keep its process alive: before the per-file
    // timeout, the run waited for it for ever.
    const root = testTree({
      'a-hangs.test.ts': [
        "import { it } from 'node:test';",
        "import { spawn } from 'node:child_process';",
        "import { writeFileSync } from 'node:fs';",
        "it('passes', () => {});",
        "const server = spawn(process.execPath, ['-e', \"require('node:http').createServer().listen(0, '127.0.0.1')\"], { stdio: 'ignore' });",
        `writeFileSync(${JSON.stringify(pidsFile)}, JSON.stringify([process.pid, server.pid]));`,
        'setInterval(() => {}, 1000);',
      ].join('\n'),
      'b-ok.test.ts': PASSING,
    });
    const startedMs = Date.now();
    const r = spawnSync(process.execPath, [runner, '--root', root], { encoding: 'utf8', timeout: 90_000, env: { ...process.env, RUN_TESTS_FILE_TIMEOUT_MS: '5000' } });
    assert.equal(r.signal, null, `the run hung: ${r.stdout}${r.stderr}`);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.ok(Date.now() - startedMs < 60_000);
    assert.match(r.stderr, /run-tests: 2 files, 3 tests: 3 passed, 0 failed, 0 cancelled, 0 skipped, 0 todo; 1 files or suites failed to load or crashed/);
    assert.match(r.stderr, /^ {2}test\/a-hangs\.test\.ts: the file did not end in time \(test timed out after 5000ms; .*\): killed$/m);
    const pids = JSON.parse(readFileSync(pidsFile, 'utf8')) as number[];
    for (let waited = 0; pids.some(isRunning); waited += 50) {
      if (waited > 10_000) {
        for (const pid of pids.filter(isRunning)) process.kill(pid, 'SIGKILL');
        assert.fail(`left running: ${pids.filter(isRunning).join(', ')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  it('refuses a RUN_TESTS_FILE_TIMEOUT_MS that is not a positive integer', () => {
    const r = spawnSync(process.execPath, [runner, '--root', testTree({ 'a.test.ts': PASSING })], { encoding: 'utf8', env: { ...process.env, RUN_TESTS_FILE_TIMEOUT_MS: '5s' } });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /RUN_TESTS_FILE_TIMEOUT_MS must be a positive integer/);
  });

  it('passes a healthy tree with exit code 0', { timeout: 120_000 }, () => {
    const { status, stdout, stderr } = runTests(testTree({ 'a.test.ts': PASSING, 'b/b.test.ts': PASSING }));
    assert.equal(status, 0, stdout + stderr);
    assert.match(stdout, /run-tests: 2 files, 4 tests: 4 passed, 0 failed, 0 cancelled, 0 skipped, 0 todo; 0 files or suites failed to load or crashed/);
  });

  it('runs the files marked in-process side by side, first, and every other file after them, alone', { timeout: 120_000 }, () => {
    const meeting = mkdtempSync(join(tmpdir(), 'run-tests-lanes-'));
    trees.push(meeting);
    const at = (name: string) => JSON.stringify(join(meeting, name));
    // Each waits for the other to have started: one at a time, the first would wait alone and fail.
    const inProcess = (me: string, other: string) =>
      [
        '// run-tests: in-process',
        "import { it } from 'node:test';",
        "import { appendFileSync, existsSync, writeFileSync } from 'node:fs';",
        `it('${me} meets ${other}', async () => {`,
        `  writeFileSync(${at(`${me}.started`)}, '');`,
        `  for (let waited = 0; !existsSync(${at(`${other}.started`)}); waited += 20) {`,
        `    if (waited > 60_000) throw new Error('${me} ran without ${other} beside it');`,
        '    await new Promise((resolve) => setTimeout(resolve, 20));',
        '  }',
        `  appendFileSync(${at('ended')}, '${me}\\n');`,
        '});',
      ].join('\n');
    // Sorted first, yet it runs after the lane; the marker counts on the first line only.
    const serial = (me: string, firstLine: string) =>
      [
        firstLine,
        "import { it } from 'node:test';",
        "import assert from 'node:assert/strict';",
        "import { appendFileSync, readFileSync } from 'node:fs';",
        `it('${me} runs after the in-process lane, alone', () => {`,
        `  const ended = readFileSync(${at('ended')}, 'utf8').split('\\n').filter(Boolean);`,
        "  assert.deepEqual(ended.slice(0, 2).sort(), ['p', 'q']);",
        `  appendFileSync(${at('ended')}, '${me}\\n');`,
        '});',
      ].join('\n');
    const { status, stdout, stderr } = runTests(
      testTree({
        'a-serial.test.ts': serial('a', '// an ordinary file'),
        'b-serial.test.ts': serial('b', '// not first: the marker below does not count\n// run-tests: in-process'),
        'lane/p.test.ts': inProcess('p', 'q'),
        'lane/q.test.ts': inProcess('q', 'p'),
      }),
    );
    assert.equal(status, 0, stdout + stderr);
    assert.match(stdout, /run-tests: 4 files, 4 tests: 4 passed, 0 failed, 0 cancelled, 0 skipped, 0 todo; 0 files or suites failed to load or crashed/);
    assert.deepEqual(readFileSync(join(meeting, 'ended'), 'utf8').split('\n').slice(2), ['a', 'b', ''], 'the serial files one after the other, in order');
  });

  it('fails when there is no test file', () => {
    const { status, stderr } = runTests(testTree({ 'README.md': 'no tests here' }));
    assert.equal(status, 1);
    assert.match(stderr, /no test files found/);
  });
});
