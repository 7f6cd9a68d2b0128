// run-tests: in-process
/**
 * Differential against the reference port where a file and a URL spell one resource many ways
 * (reference-spellings.ts): percent-escapes in either case, escaped unreserved characters,
 * non-ASCII raw (UTF-8, Latin-1, invalid UTF-8) or escaped, a lone `%`, `%00`, `|`, `"`, space,
 * `$` and `*` in paths and patterns, in files with key typos, missing colons, tabs, empty rules,
 * rules before any group, NUL bytes, over-long lines, BOM and mixed line ends. The reference is
 * given the canonical spelling (§2.2.2 as DESIGN.md reads it) and keeps its own priorities; we are
 * given the file and URL as written. Seeded: a failure names its case and replays. More seeds:
 * `SPELLING_CASES=200000 SPELLING_SEED=3 node scripts/run-tests.mjs reference-spellings`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, extractPathAndQuery, parseRobotsTxt } from '../../src/robots/index.js';
import { referenceAllowed } from './reference-port.js';
import { spellingCase } from './reference-spellings.js';
import { prng } from './reference-matcher.js';

const CASES = Number(process.env.SPELLING_CASES ?? 20_000);
const SEED = Number(process.env.SPELLING_SEED ?? 20261203);

describe('differential against the reference port, one resource spelt many ways', () => {
  it(`${CASES} generated files and URLs: the verdict of the canonical spelling`, () => {
    const random = prng(SEED);
    let disallowed = 0;
    for (let i = 0; i < CASES; i++) {
      const c = spellingCase(random);
      const body = Buffer.from(c.body, 'latin1');
      const ours = evaluate(parseRobotsTxt(body), [c.agent], extractPathAndQuery(c.url)).allowed;
      const reference = referenceAllowed(body, c.agent, c.canonicalUrl, (value) => c.spellings.get(value));
      if (!ours) disallowed++;
      if (ours !== reference) assert.fail(`case ${i} (seed ${SEED}): ours ${ours}, reference ${reference}: ${JSON.stringify({ agent: c.agent, url: c.url, canonicalUrl: c.canonicalUrl, body: c.body })}`);
    }
    // The generator reaches refusals, not only "no rule": a differential of allows alone proves little.
    assert.ok(disallowed > CASES / 40, `only ${disallowed} refusals in ${CASES} cases`);
  });

  it('the spelling hook changes nothing when absent: the port alone still reads escapes as the reference does', () => {
    const body = Buffer.from('User-agent: *\nDisallow: /%7e\n', 'latin1');
    assert.equal(referenceAllowed(body, 'FooBot', 'http://example.com/~'), true);
    assert.equal(referenceAllowed(body, 'FooBot', 'http://example.com/%7E'), false);
    assert.equal(referenceAllowed(body, 'FooBot', 'http://example.com/~', (v) => (v === '/%7e' ? '/~' : undefined)), false);
  });
});
