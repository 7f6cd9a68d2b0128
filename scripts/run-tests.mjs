#!/usr/bin/env node
// Runs every test/**/*.test.ts with node:test under tsx.
//   node scripts/run-tests.mjs [--root DIR] [SUBSTRING...]
// Node 20 does not expand quoted globs and passes with 0 tests when given none,
// so we list the files ourselves and fail when there are none. Files run one at a time, but for
// the in-process lane below: several end-to-end tests measure request spacing, which a neighbour
// loading the CPU would blur.
//
// A test file that fails to load (import error, throw at top level) or whose process crashes,
// and a describe() whose callback or hook throws, fail the run and are counted: node:test's own
// summary shows a failed file as one failure and a failed suite as none (its tests never
// registered), so scripts/test-outcomes-reporter.mjs records every outcome and this prints the
// count and the reason for each, and exits 1. --root runs the tests of another directory tree
// (its test/ folder), which test/scripts/run-tests.test.ts uses on a throwaway one.
//
// A file that has not ended after RUN_TESTS_FILE_TIMEOUT_MS ms (default 360000: longer than the
// longest test's own timeout, 300 s) fails, named, and its process is killed, so one hung file (a
// child process or server its hooks left open) cannot eat CI's 15 minutes. node --test-timeout
// sets that per file (the file is a test of the runner) and as the default of each test in it.
// Once the run ends, whatever is left in its process group (grandchildren of a killed file) is killed.
//
// Two lanes, one after the other, never side by side. A file whose first line is exactly
// `// run-tests: in-process` (pure code in its own process: no server, no child process, no real
// time measured) is in the in-process lane: those files run first, up to IN_PROCESS_CONCURRENCY at
// a time (at least 2, on one core too: these files claim nothing about time). Every other file
// runs after them, one at a time, with nothing beside it.
//
// Run on this repository (not --root), it first brings the build up to date (`tsc -b`, what
// `npm run build` does; a second or so when nothing changed) and, when that succeeds, tells the
// test files (ROBOTS_PROXY_TEST_BUILT_CLI=1) that the `robots-proxy` children they start may run
// dist/cli.js instead of src/cli.ts under tsx (test/helpers/cli.ts): tsx's start-up, paid by
// every such child, was a large part of the run. When the build fails, they run src/ under tsx.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, constants, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));

function findTests(root, dir) {
  const found = [];
  for (const name of readdirSync(dir)) {
    if (name === 'fixtures' || name === 'node_modules') continue;
    const full = join(dir, name);
    if (statSync(full).isDirectory()) found.push(...findTests(root, full));
    else if (name.endsWith('.test.ts')) found.push(relative(root, full));
  }
  return found;
}

/** The first line that puts a test file in the in-process lane (see the header). */
const IN_PROCESS_MARKER = '// run-tests: in-process';
/** How many in-process files run at once. */
const IN_PROCESS_CONCURRENCY = Math.max(2, availableParallelism());

/** True when the file at `path` starts with {@link IN_PROCESS_MARKER} (its own line). */
function isInProcess(path) {
  const text = readFileSync(path, 'utf8');
  return text.startsWith(IN_PROCESS_MARKER) && /^\r?\n/.test(text.slice(IN_PROCESS_MARKER.length));
}

/** Counts the reporter's lines; returns the summary lines to print and whether anything failed. */
function summarise(lines, fileCount) {
  const records = lines.filter((line) => line.trim() !== '').map((line) => JSON.parse(line));
  const tests = records.filter((r) => r.kind === 'test');
  const count = (outcome) => tests.filter((t) => t.outcome === outcome).length;
  const broken = records.filter((r) => r.kind === 'file-failed' || r.kind === 'suite-failed');
  const [passed, failed, cancelled, skipped, todo] = ['pass', 'fail', 'cancelled', 'skip', 'todo'].map(count);
  const out = [
    `run-tests: ${fileCount} files, ${tests.length} tests: ${passed} passed, ${failed} failed, ${cancelled} cancelled, ${skipped} skipped, ${todo} todo; ` +
      `${broken.length} files or suites failed to load or crashed`,
  ];
  const failedTests = tests.filter((t) => t.outcome === 'fail');
  if (failedTests.length > 0) {
    // Named here, at the end, because a CI log is often kept only in part and the TAP above scrolls away.
    out.push(`run-tests: FAILED: ${failedTests.length} tests:`);
    for (const t of failedTests) out.push(`  ${relative(root, t.file ?? '?')}: ${(t.path ?? [t.name]).join(' > ')}: ${t.reason ?? 'failed'}`);
  }
  if (broken.length > 0) {
    out.push(`run-tests: FAILED: ${broken.length} test files or suites did not load or crashed, so some of their tests never ran:`);
    for (const b of broken) {
      const where = relative(root, b.file ?? '?') + (b.kind === 'suite-failed' ? ` (suite "${b.name}")` : '');
      out.push(`  ${where}: ${b.reason}`);
    }
  }
  return { out, hasFailures: failed > 0 || cancelled > 0 || broken.length > 0 };
}

let args = process.argv.slice(2);
let root = repoRoot;
if (args[0] === '--root') {
  if (args[1] === undefined) {
    console.error('run-tests: --root needs a directory');
    process.exit(2);
  }
  root = resolve(args[1]);
  args = args.slice(2);
}

const fileTimeoutMs = Number(process.env.RUN_TESTS_FILE_TIMEOUT_MS ?? 360_000);
if (!Number.isInteger(fileTimeoutMs) || fileTimeoutMs <= 0) {
  console.error(`run-tests: RUN_TESTS_FILE_TIMEOUT_MS must be a positive integer (ms), not ${process.env.RUN_TESTS_FILE_TIMEOUT_MS}`);
  process.exit(2);
}

const filter = args;
let files = findTests(root, join(root, 'test')).sort();
if (filter.length > 0) files = files.filter((f) => filter.some((part) => f.includes(part)));
if (files.length === 0) {
  console.error('run-tests: no test files found under test/' + (filter.length ? ` matching ${filter.join(' ')}` : ''));
  process.exit(1);
}

const outcomesDir = mkdtempSync(join(tmpdir(), 'run-tests-'));
// The reporter node:test would pick by itself, plus ours; tsx resolved from this repository, so --root works anywhere.
const visibleReporter = process.stdout.isTTY ? 'spec' : 'tap';
const tsx = import.meta.resolve('tsx');
const env = { ...process.env };
// Set when this runs inside a node:test file (the runner's own test): the child would report to that parent instead.
delete env.NODE_TEST_CONTEXT;
delete env.ROBOTS_PROXY_TEST_BUILT_CLI;
if (root === repoRoot) {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const build = spawnSync(process.execPath, [tsc, '-b', 'tsconfig.json'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (build.status === 0) env.ROBOTS_PROXY_TEST_BUILT_CLI = '1';
  else console.error(`run-tests: tsc -b failed (${build.error?.message ?? `exit ${build.status ?? build.signal}`}): the robots-proxy children of the tests run src/cli.ts under tsx`);
}
const inProcessFiles = files.filter((f) => isInProcess(join(root, f)));
const serialFiles = files.filter((f) => !inProcessFiles.includes(f));
const lanes = [
  { name: 'in-process', files: inProcessFiles, concurrency: IN_PROCESS_CONCURRENCY },
  { name: 'serial', files: serialFiles, concurrency: 1 },
].filter((lane) => lane.files.length > 0);

// SIGINT (Ctrl-C), SIGTERM and SIGHUP are passed on to the whole group of the lane running. The
// same signal again within a second is the same stop (under `npm test` a Ctrl-C can arrive twice);
// again later, the group is killed (SIGKILL) at once. No lane starts after a stop.
const REPEATED_SIGNAL_MS = 1000;
let firstSignal;
let child;
function forward(signal) {
  const repeated = firstSignal !== undefined;
  if (repeated && firstSignal.signal === signal && Date.now() - firstSignal.atMs < REPEATED_SIGNAL_MS) return;
  firstSignal ??= { signal, atMs: Date.now() };
  if (child === undefined) return;
  try {
    process.kill(-child.pid, repeated ? 'SIGKILL' : signal);
  } catch {
    // The group is gone already.
  }
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward);

const outcomeFiles = [];
let result = { status: 0, signal: null };
for (const [index, lane] of lanes.entries()) {
  if (firstSignal !== undefined) break;
  const outcomesFile = join(outcomesDir, `outcomes-${index}.jsonl`);
  outcomeFiles.push(outcomesFile);
  // A process group of its own (detached), so that a stop reaches every process of the lane: the
  // test runner, each test file's process and the servers and CLI children the tests start. With
  // spawnSync, a SIGTERM ended this script alone and left them running, ports and all.
  child = spawn(
    process.execPath,
    [
      '--import', tsx,
      '--test', `--test-concurrency=${lane.concurrency}`, `--test-timeout=${fileTimeoutMs}`,
      `--test-reporter=${visibleReporter}`, '--test-reporter-destination=stdout',
      `--test-reporter=${pathToFileURL(join(repoRoot, 'scripts/test-outcomes-reporter.mjs')).href}`, `--test-reporter-destination=${outcomesFile}`,
      ...lane.files,
    ],
    { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], env, detached: true },
  );
  const laneResult = await new Promise((resolve) => {
    child.once('error', (err) => resolve({ status: null, signal: null, error: err }));
    child.once('exit', (status, signal) => resolve({ status, signal }));
  });
  if (laneResult.error) console.error(`run-tests: could not start node --test (${lane.name} lane): ${laneResult.error.message}`);
  // Processes of the lane still alive now were left behind (the children of a file killed on its timeout).
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // None left: the group is gone.
  }
  if (result.status === 0) result = laneResult;
}

let summary;
try {
  summary = summarise(outcomeFiles.flatMap((f) => readFileSync(f, 'utf8').split('\n')), files.length);
} catch (err) {
  summary = { out: [`run-tests: FAILED: no test outcomes recorded (${err.message})`], hasFailures: true };
} finally {
  rmSync(outcomesDir, { recursive: true, force: true });
}
for (const line of summary.out) (summary.hasFailures ? console.error : console.log)(line);
if (firstSignal !== undefined) {
  console.error(`run-tests: stopped by ${firstSignal.signal}`);
  process.exit(128 + (constants.signals[firstSignal.signal] ?? 0));
}
const code = result.status ?? 1;
process.exit(code !== 0 ? code : summary.hasFailures ? 1 : 0);
