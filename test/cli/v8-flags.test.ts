/**
 * The CLI turns V8's allocation-site pretenuring off before anything else runs
 * (src/v8-flags.ts; bench/PROFILE.md, "The GC state is V8's allocation-site
 * pretenuring"): a real child process under `--trace-pretenuring` reports what
 * pretenuring does with a workload that survives scavenges when node's command
 * line asks for it, and nothing when `src/cli.ts` was loaded first without it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { runNode, type CliRun } from '../helpers/cli.js';

const workload = fileURLToPath(new URL('../fixtures/scripts/pretenure-workload.ts', import.meta.url));
const tsx = import.meta.resolve('tsx');

/** Runs the workload under `--trace-pretenuring` after loading the CLI, with `nodeFlags` on node's command line. */
function runWorkload(nodeFlags: string[]): Promise<CliRun> {
  return runNode(['--trace-pretenuring', '--expose-gc', ...nodeFlags, '--import', tsx, workload, 'cli']);
}

describe('V8 flags set by the CLI', () => {
  it('turns allocation-site pretenuring off for the rest of the process', async () => {
    const [explicit, viaCli] = await Promise.all([runWorkload(['--allocation-site-pretenuring']), runWorkload([])]);
    // The control, and the rule that node's own command line wins: with the flag given there,
    // V8's pretenuring runs and reports (its decisions on the workload's sites, or its reset of
    // them after a mark-compact that freed most of the old generation).
    assert.equal(explicit.code, 0, explicit.stderr);
    assert.match(explicit.stderr, /workload done/);
    assert.match(explicit.stdout, /pretenuring: AllocationSite|Deopt all allocation sites/);

    assert.equal(viaCli.code, 0, viaCli.stderr);
    assert.match(viaCli.stdout, /^\d+\.\d+\.\d+/m, 'the CLI ran (printed its version)');
    assert.match(viaCli.stderr, /workload done/);
    assert.doesNotMatch(viaCli.stdout, /pretenuring|allocation sites/i);
  });
});
