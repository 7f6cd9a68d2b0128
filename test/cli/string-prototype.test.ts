/**
 * A proxy without a Redis fleet does not load ioredis (src/main.ts imports the fleet's modules only
 * for `state.backend: redis`): ioredis defines `class VerbatimString extends String`, which on Node
 * 20's V8 leaves String.prototype with dictionary properties for the life of the process, and every
 * string method call in optimised code (`charCodeAt` in the access line's encoder, the path
 * normalisation) then takes a generic property lookup (bench/PROFILE.md, "Issue 8 under close,
 * instructions"). Real child processes: what one loads stays loaded.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { runNode } from '../helpers/cli.js';

const probe = fileURLToPath(new URL('../fixtures/scripts/string-prototype-probe.ts', import.meta.url));
const tsx = import.meta.resolve('tsx');

describe('String.prototype in a proxy without a Redis fleet', () => {
  it('keeps fast properties after src/main.ts is loaded; loading ioredis (the control) does not', async () => {
    const [main, ioredis] = await Promise.all([runNode(['--import', tsx, probe, 'main']), runNode(['--import', tsx, probe, 'ioredis'])]);
    assert.equal(ioredis.code, 0, ioredis.stderr);
    assert.match(ioredis.stdout, /String\.prototype fast: false/, 'the control: ioredis turns String.prototype into a dictionary');
    assert.equal(main.code, 0, main.stderr);
    assert.match(main.stdout, /String\.prototype fast: true/);
  });
});
