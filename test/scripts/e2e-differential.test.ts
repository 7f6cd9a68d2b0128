/**
 * The end-to-end differential (scripts/e2e-runner.ts) on a small seeded run: robots.txt files
 * (the curated real files of test/fixtures/robots/ and generated ones) served by loopback origins
 * with varied status, redirects (same host, another host, http <-> https), content codings,
 * framing, BOM and line ends; requests with real User-Agents through an enforcing and a reporting
 * proxy, odd targets, CONNECT (TLS and plain) and pipelined requests of other agents. Every answer
 * must be the reference's (test/robots/reference-port.ts) on the path the origin receives, save the
 * designed readings (`DESIGNED_DISAGREEMENTS`). The full hunt is `npm run e2e:reference`.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DESIGNED_DISAGREEMENTS, PIPELINED, describeOutcome, runE2eDifferential, type E2eReport } from '../../scripts/e2e-runner.js';
import { ROBOTS_FIXTURES_DIR } from '../robots/corpus-checks.js';
import { referenceAllowed } from '../robots/reference-port.js';

const CASES = 240;

describe('end-to-end differential against the reference port (scripts/e2e-runner.ts)', () => {
  let report: E2eReport;
  before(async () => {
    report = await runE2eDifferential({ total: CASES, seed: 2912, corpusShare: 0.6, corpusDir: ROBOTS_FIXTURES_DIR, tmpDir: mkdtempSync(join(tmpdir(), 'e2e-differential-')), concurrency: 4 });
  });

  it(`${CASES} cases: the run covers what it claims (real and generated files, codings, redirects, tunnels, pipelining, both verdicts)`, () => {
    const { outcomes } = report;
    assert.equal(outcomes.length, CASES);
    const some = (what: string, test: (o: (typeof outcomes)[number]) => boolean): void => assert.ok(outcomes.some(test), `no case with ${what}`);
    some('a real file', (o) => o.c.source !== 'generated');
    some('a generated file', (o) => o.c.source === 'generated');
    for (const coding of ['gzip', 'deflate', 'deflate-raw', 'br'] as const) some(coding, (o) => o.c.wire.coding === coding && o.c.wire.status === 200 && o.c.wire.hops === 0);
    for (const hopTo of ['same', 'host', 'https'] as const) some(`a redirect to ${hopTo}`, (o) => o.c.wire.hops > 0 && o.c.wire.hopTo === hopTo);
    some('five redirects followed to a rule that refuses', (o) => o.c.wire.hops === 5 && o.expected === 'deny');
    some('six redirects (unavailable: allow all) where the file would refuse', (o) => o.c.wire.hops === 6 && o.c.wire.status === 200 && o.enforce === 'allow' && referenceAllowed(o.c.body, o.c.agent.token, `http://h${o.received}`) === false);
    some('a CONNECT with TLS', (o) => o.c.tunnel === 'tls' && o.tunnel !== undefined);
    some('a CONNECT with plain HTTP', (o) => o.c.tunnel === 'plain' && o.tunnel !== undefined);
    some('a pipelined request first', (o) => o.before !== undefined);
    some('an allow', (o) => o.enforce === 'allow');
    some('a rule deny', (o) => o.enforce === 'deny' && o.decision.includes('rule-disallow'));
    some('an unreachable robots.txt', (o) => o.enforce === 'unreachable');
  });

  it('every request got an answer of the proxy (never a broken connection)', () => {
    const broken = report.outcomes.filter((o) => o.enforce === 'error' || o.report === 'error' || o.tunnel === 'error' || o.before?.verdict === 'error');
    assert.deepEqual(broken.map(describeOutcome), []);
  });

  it("the proxy's verdicts are the reference's, the CONNECT path's the plain one's, the report mode's the enforcing one's, save the designed readings", () => {
    const undesigned = [...report.byClass].filter(([name]) => !DESIGNED_DISAGREEMENTS.has(name.startsWith(PIPELINED) ? name.slice(PIPELINED.length) : name));
    assert.deepEqual(
      undesigned.map(([name, list]) => `${name}: ${list.length}\n${list.slice(0, 3).map(describeOutcome).join('\n')}`),
      [],
    );
  });
});
