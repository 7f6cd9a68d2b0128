/**
 * `npm run e2e:reference`: the end-to-end differential against the reference matcher
 * (scripts/e2e-runner.ts) over generated cases, 60% of them (by default) on real robots.txt
 * files of the shared corpus (the curated fixtures when it is absent).
 *
 * Usage: node --import tsx scripts/e2e-differential.ts [--cases N] [--seed S] [--corpus-share F] [--show K]
 * Prints counts by class and the first K disagreements of each; exit 0 (a hunt, not a check;
 * test/scripts/e2e-differential.test.ts is the check).
 */
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { robotsCorpusForBench } from './shared-corpus.js';
import { describeOutcome, runE2eDifferential, type Verdict } from './e2e-runner.js';

const { values } = parseArgs({
  options: { cases: { type: 'string', default: '500' }, seed: { type: 'string', default: '29' }, 'corpus-share': { type: 'string', default: '0.6' }, show: { type: 'string', default: '5' } },
});
const show = Number(values.show);
const seed = Number(values.seed);
const corpus = robotsCorpusForBench();
console.log(`robots.txt files: ${corpus.description}`);
const report = await runE2eDifferential({ total: Number(values.cases), seed, corpusShare: Number(values['corpus-share']), corpusDir: corpus.dir, tmpDir: process.env['TMPDIR'] ?? tmpdir() });
const { outcomes, byClass } = report;
const count = (v: Verdict): number => outcomes.filter((o) => o.enforce === v).length;
console.log(`seed ${seed}: ${outcomes.length} cases (${report.tunnels} also through CONNECT, ${outcomes.filter((o) => o.before).length} after another agent's request on the connection) in ${(report.elapsedMs / 1000).toFixed(1)} s`);
console.log(`  enforcing proxy: allow ${count('allow')}, deny ${count('deny')}, unreachable ${count('unreachable')}, 400 ${count('bad-target')}, other ${count('error')}`);
console.log(`  the reference on the spelling as sent differs from it on the RFC 9309 spelling (not counted below): ${report.encodingOnly}`);
const refused = outcomes.filter((o) => o.enforce === 'bad-target').map((o) => `${o.c.authority === 'plain' ? '' : o.c.authority + ' '}${JSON.stringify(o.c.target)}`);
console.log(`  targets answered 400 (first ${show * 4}): ${refused.slice(0, show * 4).join(', ')}`);
console.log(`  disagreements: ${[...byClass.values()].reduce((n, l) => n + l.length, 0)}`);
for (const [name, list] of [...byClass].sort((a, b) => b[1].length - a[1].length)) {
  console.log(`  ${name}: ${list.length}`);
  for (const o of list.slice(0, show)) console.log(describeOutcome(o).replace(/^/gm, '    '));
}
