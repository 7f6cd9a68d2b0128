#!/usr/bin/env node
// Runs every test/**/*.test.ts with node:test under tsx.
// Node 20 does not expand quoted globs and passes with 0 tests when given none,
// so we list the files ourselves and fail when there are none. Files run one at a time:
// several end-to-end tests measure request spacing, which a neighbour loading the CPU would blur.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function findTests(dir) {
  const found = [];
  for (const name of readdirSync(dir)) {
    if (name === 'fixtures' || name === 'node_modules') continue;
    const full = join(dir, name);
    if (statSync(full).isDirectory()) found.push(...findTests(full));
    else if (name.endsWith('.test.ts')) found.push(relative(root, full));
  }
  return found;
}

const filter = process.argv.slice(2);
let files = findTests(join(root, 'test')).sort();
if (filter.length > 0) files = files.filter((f) => filter.some((part) => f.includes(part)));
if (files.length === 0) {
  console.error('run-tests: no test files found under test/' + (filter.length ? ` matching ${filter.join(' ')}` : ''));
  process.exit(1);
}

const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...files], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
