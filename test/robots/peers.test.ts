/**
 * Other robots.txt implementations' test vectors (test/fixtures/peers, see its
 * SOURCES), run through the engine with the agent read as a User-Agent header.
 * Where a peer deliberately differs from RFC 9309, PEER_DEVIATIONS says what we
 * answer and why.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { extractProductTokens } from '../../src/robots/agent.js';
import { parseRobotsTxt, selectGroup } from '../../src/robots/index.js';
import {
  PEER_DEVIATIONS,
  PEER_FIXTURES_DIR,
  assertPeerCase,
  assertPeerDeviationsExist,
  readVectors,
  type PeerCase,
} from './conformance-vectors.js';

const PYTHON = 'cpython-test_robotparser.jsonl';
const ROBOTS_PARSER = 'robots-parser-Robots.jsonl';
const TEMOTO = 'temoto-robotstxt_test.jsonl';
const CRAWLER_COMMONS = 'crawler-commons-SimpleRobotRulesParserTest.jsonl';
const PROTEGO = 'protego-test_protego.jsonl';
const TEXTING_ROBOTS = 'texting_robots-test.jsonl';

/** Reads `file`'s vectors and registers a test per vector, a count check and the skip-table check; returns the vectors. */
function itPeerVectors(file: string, count: number): PeerCase[] {
  const cases = readVectors<PeerCase>(PEER_FIXTURES_DIR, file);
  it(`has all ${count} vectors`, () => assert.equal(cases.length, count));
  for (const c of cases) {
    const deviation = PEER_DEVIATIONS[`${file}:${c.id}`];
    it(`${c.id} ${JSON.stringify(c.agent)} ${JSON.stringify(c.path.slice(0, 80))}${deviation ? ' (deviation: RFC 9309)' : ''}`, () => assertPeerCase(file, c));
  }
  it('every deviation names a vector that exists and differs from the peer', () => assertPeerDeviationsExist(file, cases));
  return cases;
}

describe(`peers: ${PYTHON} (urllib.robotparser's tests)`, () => {
  const cases = itPeerVectors(PYTHON, 213);

  it('crawl-delay and request-rate as Python reads them, for the agent its tests name', () => {
    const figtree = parseRobotsTxt(cases.find((c) => c.id === 'CrawlDelayAndRequestRateTest#1')?.robots ?? '');
    for (const agent of ['figtree', 'FigTree Robot libwww-perl/5.04']) {
      const { group } = selectGroup(figtree, extractProductTokens(agent));
      assert.equal(group?.crawlDelaySeconds, 3, agent);
      assert.deepEqual(group?.requestRate, { requests: 9, seconds: 30 }, agent);
    }
    // InvalidRequestRateTest: `Request-rate: 9/banana` is ignored, the crawl-delay kept.
    const invalid = parseRobotsTxt(cases.find((c) => c.id === 'InvalidRequestRateTest#1')?.robots ?? '');
    assert.equal(invalid.groupsByToken.get('*')?.crawlDelaySeconds, 3);
    assert.equal(invalid.groupsByToken.get('*')?.requestRate, undefined);
    // InvalidCrawlDelayTest: `Crawl-delay: pears` is ignored.
    assert.equal(parseRobotsTxt(cases.find((c) => c.id === 'InvalidCrawlDelayTest#1')?.robots ?? '').groupsByToken.get('*')?.crawlDelaySeconds, undefined);
    // DefaultEntryTest: the `*` group's values for an agent without a group.
    const defaults = parseRobotsTxt(cases.find((c) => c.id === 'DefaultEntryTest#1')?.robots ?? '');
    const { group } = selectGroup(defaults, extractProductTokens('test_robotparser'));
    assert.equal(group?.crawlDelaySeconds, 1);
    assert.deepEqual(group?.requestRate, { requests: 3, seconds: 15 });
  });

  it('sitemaps as Python lists them (SitemapTest), none for a file without', () => {
    assert.deepEqual(parseRobotsTxt(cases.find((c) => c.id === 'SitemapTest#1')?.robots ?? '').sitemaps, [
      'http://www.gstatic.com/s2/sitemaps/profiles-sitemap.xml',
      'http://www.google.com/hostednews/sitemap_index.xml',
    ]);
    assert.deepEqual(parseRobotsTxt(cases.find((c) => c.id === 'UserAgentWildcardTest#1')?.robots ?? '').sitemaps, []);
  });
});

describe(`peers: ${ROBOTS_PARSER} (robots-parser's tests, Node)`, () => {
  itPeerVectors(ROBOTS_PARSER, 119);

  it('crawl-delay per agent, as robots-parser reads it: a delay applies to the user-agent lines just before it; an agent with no group of its own falls back to *', () => {
    const perAgent = parseRobotsTxt('user-agent: a\ncrawl-delay: 1\nuser-agent: b\ndisallow: /d\nuser-agent: c\nuser-agent: d\ncrawl-delay: 10');
    const delayOf = (robots: ReturnType<typeof parseRobotsTxt>, agent: string): number | undefined => selectGroup(robots, extractProductTokens(agent)).group?.crawlDelaySeconds;
    assert.equal(delayOf(perAgent, 'a'), 1);
    assert.equal(delayOf(perAgent, 'b'), undefined);
    assert.equal(delayOf(perAgent, 'c'), 10);
    assert.equal(delayOf(perAgent, 'd'), 10);
    const invalid = parseRobotsTxt('user-agent: a\ncrawl-delay: 1.2.1\nuser-agent: b\ncrawl-delay: 1.a0\nuser-agent: c\nuser-agent: d\ncrawl-delay: 10a');
    for (const agent of ['a', 'b', 'c', 'd']) assert.equal(delayOf(invalid, agent), undefined, agent);
    const fallback = parseRobotsTxt('user-agent: *\ncrawl-delay: 1\nuser-agent: b\ncrawl-delay: 12\nuser-agent: c\nuser-agent: d\ncrawl-delay: 10');
    assert.equal(delayOf(fallback, 'should-fall-back'), 1);
    assert.equal(delayOf(fallback, 'd'), 10);
    assert.equal(delayOf(fallback, 'dd'), 1);
    assert.equal(delayOf(fallback, 'should-fall-back/1.0.0'), 1);
    assert.equal(delayOf(fallback, 'd/12'), 10);
    assert.equal(delayOf(fallback, 'dd / 0-32-3'), 1);
    assert.equal(delayOf(parseRobotsTxt('user-agent: *\ncrawl-delay: 1\nuser-agent: b\ndisallow:'), 'b'), undefined);
  });

  it('sitemaps in file order, values trimmed', () => {
    const robots = parseRobotsTxt('user-agent: a\ncrawl-delay: 1\nsitemap: http://example.com/test.xml\nuser-agent: b\ndisallow: /d\nsitemap: /sitemap.xml\nsitemap:     http://example.com/test/sitemap.xml     ');
    assert.deepEqual(robots.sitemaps, ['http://example.com/test.xml', '/sitemap.xml', 'http://example.com/test/sitemap.xml']);
  });

  it('empty and invalid directives parse without a throw', () => {
    const robots = parseRobotsTxt(['user-agent:', 'user-agent:::: a::', 'crawl-delay:', 'crawl-delay:::: 0:', 'host:', 'host:: example.com', 'sitemap:', 'sitemap:: site:map.xml', 'disallow:', 'disallow::: /:', 'allow:', 'allow::: /:'].join('\n'));
    assert.ok(robots.lineCount === 12);
  });
});

describe(`peers: ${TEMOTO} (temoto/robotstxt's tests, Go)`, () => {
  itPeerVectors(TEMOTO, 11);
});

describe(`peers: ${CRAWLER_COMMONS} (crawler-commons' tests, Java)`, () => {
  itPeerVectors(CRAWLER_COMMONS, 264);
});

describe(`peers: ${PROTEGO} (Protego's tests, Python: Scrapy's parser)`, () => {
  itPeerVectors(PROTEGO, 312);
});

describe(`peers: ${TEXTING_ROBOTS} (texting_robots' tests, Rust)`, () => {
  itPeerVectors(TEXTING_ROBOTS, 184);
});
