// run-tests: in-process
/**
 * Cases on which the compiled reference matcher (github.com/google/robotstxt, built outside the
 * repository for the session-30 differential) disagreed with reference-port.ts or with the
 * product, kept as data with the reference's verdict (test/fixtures/reference-cases/). The port
 * must give the reference's verdict on every one; the product on every one that is not a
 * designed reading (`designed`, said in the record).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { evaluate, extractPathAndQuery, parseRobotsTxt } from '../../src/robots/index.js';
import { referenceAllowed } from './reference-port.js';

interface CompiledReferenceCase {
  id: string;
  /** The body as an octet string (one char per octet). */
  robots: string;
  agent: string;
  /** The URL as the reference was given it (octets). */
  url: string;
  /** The compiled reference's verdict. */
  allowed: boolean;
  found: string;
  /** Why the product reads this case otherwise, when it does on purpose. */
  designed?: string;
}

const FILE = fileURLToPath(new URL('../fixtures/reference-cases/compiled-reference.jsonl', import.meta.url));
const CASES = readFileSync(FILE, 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l) as CompiledReferenceCase);

describe('cases the compiled reference decided otherwise (test/fixtures/reference-cases)', () => {
  it('holds the cases', () => assert.ok(CASES.length >= 12, `${CASES.length} cases`));

  for (const c of CASES) {
    it(`port: ${c.id} (${c.found.slice(0, 60)})`, () => {
      assert.equal(referenceAllowed(Buffer.from(c.robots, 'latin1'), c.agent, c.url), c.allowed);
    });
  }

  for (const c of CASES.filter((x) => x.designed === undefined)) {
    it(`product: ${c.id}`, () => {
      const verdict = evaluate(parseRobotsTxt(Buffer.from(c.robots, 'latin1')), [c.agent], extractPathAndQuery(c.url));
      assert.equal(verdict.allowed, c.allowed, JSON.stringify(c.robots));
    });
  }
});
