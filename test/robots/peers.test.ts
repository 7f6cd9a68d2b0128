// run-tests: in-process
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
const SPATIE = 'spatie-robots-txt-RobotsTxtTest.jsonl';

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

/** The crawl-delay (seconds) and request-rate of the group `agent` (a User-Agent) obeys in `body`. */
function pacingOf(body: string, agent: string): { delay: number | undefined; rate: { requests: number; seconds: number } | undefined } {
  const { group } = selectGroup(parseRobotsTxt(body), extractProductTokens(agent));
  return { delay: group?.crawlDelaySeconds, rate: group?.requestRate };
}

describe(`peers: ${CRAWLER_COMMONS} (crawler-commons' tests, Java)`, () => {
  itPeerVectors(CRAWLER_COMMONS, 264);

  it('crawl-delay as crawler-commons reads it (testCrawlDelay, testFloatingPointCrawlDelay, testHeritrixCases), in seconds', () => {
    assert.equal(pacingOf('User-agent: bixo\rCrawl-delay: 10\rUser-agent: foobot\rCrawl-delay: 20\rUser-agent: *\rDisallow:/baz\r', 'bixo').delay, 10);
    assert.equal(pacingOf('User-agent: foobot\rCrawl-delay: 20\rUser-agent: *\rDisallow:/baz\r', 'bixo').delay, undefined);
    assert.equal(pacingOf('User-agent: *\rCrawl-delay: 0.5\rDisallow:\r', 'bixo').delay, 0.5);
    const heritrix = 'User-agent: *\nDisallow: /cgi-bin/\n\nUser-agent: denybot\nDisallow: /\n\nUser-agent: delaybot\nDisallow: /\nCrawl-Delay: 20\nAllow: /images/\n';
    assert.equal(pacingOf(heritrix, 'Mozilla delaybot 99.9').delay, 20);
    assert.equal(pacingOf(heritrix, 'Mozilla denybot 99.9').delay, undefined);
  });

  it('a sitemap at the end of the file, after the groups (testSitemapAtEndOfFile)', () => {
    const body = 'User-agent: a\r\nDisallow: /content/dam/\r\n\r\nUser-agent: b\r\nDisallow: /content/dam/\r\n\r\n\r\nSitemap: https://wwwfoocom/sitemapxml';
    assert.deepEqual(parseRobotsTxt(body).sitemaps, ['https://wwwfoocom/sitemapxml']);
  });
});

describe(`peers: ${PROTEGO} (Protego's tests, Python: Scrapy's parser)`, () => {
  itPeerVectors(PROTEGO, 312);

  it('crawl-delay per agent, none when malformed or before any user-agent line (test_crawl_delay, test_malformed_crawl_delay, test_no_leading_user_agent)', () => {
    const body = 'User-agent: * \nDisallow: /disallowed \nAllow: /allowed \nCrawl-delay: 10 \nUser-agent: testbot\nCrawl-delay: 15 \n';
    assert.equal(pacingOf(body, 'somebot').delay, 10);
    assert.equal(pacingOf(body, 'testbot').delay, 15);
    assert.equal(pacingOf('User-agent: * \nDisallow: /disallowed \nAllow: /allowed \nCrawl-delay: random_word', 'somebot').delay, undefined);
    const noLeading = '\n        Disallow: /withoutUA\n        Allow: /withoutUA/exception\n        Crawl-delay: 5.2\n        User-Agent: testbot\n        Disallow: /withUA\n        ';
    assert.equal(pacingOf(noLeading, 'testbot').delay, undefined);
    assert.equal(pacingOf(noLeading, 'somebot').delay, undefined);
  });

  it('request-rate per agent, with units, given only to the user-agent lines just before it (test_request_rate, test_no_request_rate)', () => {
    const body = '\n        User-agent: one\n        Request-rate: 1/10s\n        User-agent: two\n        Request-rate: 100/15m\n        User-agent: three\n        Request-rate: 400/1h\n        User-agent: four\n        Request-rate: 9000/1d\n        User-agent: five\n        Request-rate: 1/10s 1820-1940\n        ';
    assert.deepEqual(pacingOf(body, 'one').rate, { requests: 1, seconds: 10 });
    assert.deepEqual(pacingOf(body, 'two').rate, { requests: 100, seconds: 900 });
    assert.deepEqual(pacingOf(body, 'three').rate, { requests: 400, seconds: 3600 });
    assert.deepEqual(pacingOf(body, 'four').rate, { requests: 9000, seconds: 86_400 });
    assert.deepEqual(pacingOf(body, 'five').rate, { requests: 1, seconds: 10 }, 'the visit window (1820-1940) is not read');
    assert.equal(pacingOf('\n        User-agent: one\n        Request-rate: 1/10s\n        User-agent: two\n        Disallow: /\n        ', 'two').rate, undefined);
  });

  it('sitemaps wherever they stand, before any group too (test_sitemaps, test_sitemaps_come_first)', () => {
    const body = 'User-agent: * \nDisallow: /disallowed \nAllow: /allowed \nSitemap: https://site.local/sitemap.xml \nAllow: /another_allowed \nUser-agent: testbot \nSitemap: https://site.local/sitemap2.xml';
    assert.deepEqual(parseRobotsTxt(body).sitemaps, ['https://site.local/sitemap.xml', 'https://site.local/sitemap2.xml']);
    assert.deepEqual(parseRobotsTxt('Sitemap: https://www.foo.bar/sitmap.xml\nUser-Agent: FootBot\nDisallow: /something').sitemaps, ['https://www.foo.bar/sitmap.xml']);
    assert.deepEqual(parseRobotsTxt('User-agent: * \nDisallow: /disallowed \nAllow: /allowed \nCrawl-delay: 10').sitemaps, []);
  });
});

describe(`peers: ${TEXTING_ROBOTS} (texting_robots' tests, Rust)`, () => {
  itPeerVectors(TEXTING_ROBOTS, 184);

  it('crawl-delay per run of user-agent lines (test_robot_retrieve_crawl_delay, test_reppy_separates_agents)', () => {
    const body = 'User-Agent: A\n        Crawl-Delay: 42\n        # A B and the other Agent ...\n        User-Agent: B\n        User-Agent: C\n        Crawl-Delay: 420\n        User-Agent: *\n        CRAWL-Delay : 3600';
    for (const [agent, delay] of [['A', 42], ['B', 420], ['C', 420], ['D', 3600]] as const) assert.equal(pacingOf(body, agent).delay, delay, agent);
    const separate = 'User-agent: one\n        Crawl-delay: 1\n\n        User-agent: two\n        Crawl-delay: 2';
    assert.equal(pacingOf(separate, 'one').delay, 1);
    assert.equal(pacingOf(separate, 'two').delay, 2);
  });

  it('sitemaps, non-ASCII ones as UTF-8 (test_robot_retrieve_sitemaps, test_reppy_finds_and_exposes_sitemaps)', () => {
    const body = 'user-agent: otherbot\n        disallow: /kale\n\n        sitemap: https://example.com/sitemap.xml\n        Sitemap: https://cdn.example.org/other-sitemap.xml\n        siteMAP: https://ja.example.org/テスト-サイトマップ.xml';
    assert.deepEqual(parseRobotsTxt(body).sitemaps, ['https://example.com/sitemap.xml', 'https://cdn.example.org/other-sitemap.xml', 'https://ja.example.org/テスト-サイトマップ.xml']);
    assert.deepEqual(parseRobotsTxt('            Sitemap: http://a.com/sitemap.xml\n        Sitemap: http://b.com/sitemap.xml').sitemaps, ['http://a.com/sitemap.xml', 'http://b.com/sitemap.xml']);
  });
});

describe(`peers: ${SPATIE} (spatie/robots-txt's tests, PHP)`, () => {
  itPeerVectors(SPATIE, 9);
});
