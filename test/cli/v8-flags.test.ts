/**
 * The CLI turns V8's allocation-site pretenuring off before anything else runs
 * (src/v8-flags.ts; bench/PROFILE.md, "the GC state"): a real child process
 * under `--trace-pretenuring` reports what pretenuring does with a workload that
 * survives scavenges, and nothing once `src/cli.ts` has been loaded first.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const workload = fileURLToPath(new URL('../fixtures/scripts/pretenure-workload.ts', import.meta.url));
const tsx = import.meta.resolve('tsx');

/** Runs the workload (after loading the CLI when `viaCli`) and returns its stdout, stderr and exit code. */
function runWorkload(viaCli: boolean): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const args = ['--trace-pretenuring', '--expose-gc', '--import', tsx, workload, ...(viaCli ? ['cli'] : [])];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('V8 flags set by the CLI', () => {
  it('turns allocation-site pretenuring off for the rest of the process', async () => {
    const [plain, viaCli] = await Promise.all([runWorkload(false), runWorkload(true)]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stderr, /workload done/);
    // The control: without the CLI, V8's pretenuring runs and reports (its decisions on the
    // workload's sites, or its reset of them after a mark-compact that freed most of the old generation).
    assert.match(plain.stdout, /pretenuring: AllocationSite|Deopt all allocation sites/);

    assert.equal(viaCli.code, 0, viaCli.stderr);
    assert.match(viaCli.stdout, /^\d+\.\d+\.\d+/m, 'the CLI ran (printed its version)');
    assert.match(viaCli.stderr, /workload done/);
    assert.doesNotMatch(viaCli.stdout, /pretenuring|allocation sites/i);
  });
});
