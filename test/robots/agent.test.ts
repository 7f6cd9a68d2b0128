// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import {
  extractProductTokenCandidates,
  extractProductTokens,
  isValidProductToken,
  MAX_PRODUCT_TOKEN_CANDIDATES,
  USER_AGENT_SCAN_LIMIT_CHARS,
} from '../../src/robots/agent.js';
import { isName } from '../../src/robots/product-token.js';
import { evaluate, parseRobotsTxt, selectGroup } from '../../src/robots/index.js';
import { CONFORMANCE_FIXTURES_DIR, OTHER_VECTORS_FILE, assertOtherCase, readVectors, type OtherCase } from './conformance-vectors.js';
import { referenceAllowed } from './reference-port.js';

interface UserAgentRecord {
  ua: string;
  token: string;
  robots?: string;
  category: 'search' | 'ai' | 'seo' | 'social' | 'monitoring' | 'feeds' | 'library';
  source: string;
  rechecked: boolean;
}

const USER_AGENTS: UserAgentRecord[] = readFileSync(new URL('../fixtures/user-agents.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.trim().length > 0)
  .map((line) => JSON.parse(line) as UserAgentRecord);

/** A robots.txt with a group for `name` that disallows everything, and a `*` group that allows everything. */
function fileFor(name: string): string {
  return `User-agent: ${name}\nDisallow: /\n\nUser-agent: *\nAllow: /\n`;
}

/** Whether `userAgent` receives the group written for `name` (it alone disallows `/x`). */
function receivesGroupFor(name: string, userAgent: string): boolean {
  return !evaluate(parseRobotsTxt(fileFor(name)), extractProductTokens(userAgent), '/x').allowed;
}

function assertWellFormed(tokens: string[]): void {
  assert.ok(Array.isArray(tokens));
  assert.ok(tokens.length <= MAX_PRODUCT_TOKEN_CANDIDATES);
  for (const token of tokens) assert.ok(isName(token), `not a name: ${JSON.stringify(token)}`);
  const lower = tokens.map((t) => t.toLowerCase());
  assert.equal(new Set(lower).size, lower.length, 'duplicate tokens');
}

describe('real headers (test/fixtures/user-agents.jsonl)', () => {
  it('has at least 60 headers, of every category, each with a source', () => {
    assert.ok(USER_AGENTS.length >= 60, `${USER_AGENTS.length} headers`);
    const categories = new Set(USER_AGENTS.map((r) => r.category));
    for (const category of ['search', 'ai', 'seo', 'social', 'monitoring', 'feeds', 'library']) assert.ok(categories.has(category as UserAgentRecord['category']), category);
    for (const r of USER_AGENTS) assert.ok(r.source.length > 0 && isName(r.token), JSON.stringify(r));
  });

  // One file that names every token of the table: each header must get its own group and no other.
  const tokens = [...new Set(USER_AGENTS.map((r) => r.token.toLowerCase()))];
  const everyGroup = parseRobotsTxt(tokens.map((t) => `User-agent: ${t}\nDisallow: /only-${t}\n`).join('\n') + '\nUser-agent: *\nDisallow: /star\n');

  for (const record of USER_AGENTS) {
    it(`${record.token} <- ${record.ua}`, () => {
      const candidates = extractProductTokens(record.ua);
      assertWellFormed(candidates);
      assert.ok(candidates.some((c) => c.toLowerCase() === record.token.toLowerCase()), `${JSON.stringify(candidates)} lacks ${record.token} (${record.source})`);
      // The operator's documented robots.txt line applies to its header...
      assert.ok(receivesGroupFor(record.robots ?? record.token, record.ua), `User-agent: ${record.robots ?? record.token} does not apply`);
      // ...and among every token of the table, its own wins.
      assert.equal(selectGroup(everyGroup, candidates).group?.productToken.toLowerCase(), record.token.toLowerCase());
      // Never a group written for a longer or a shorter name.
      assert.equal(receivesGroupFor(`${record.token}xq`, record.ua), false, 'a longer name took the group');
      if (record.token.length > 2) {
        const shorter = record.token.slice(0, -1);
        if (!candidates.some((c) => c.toLowerCase() === shorter.toLowerCase())) {
          assert.equal(receivesGroupFor(shorter, record.ua), false, `the shorter name ${shorter} took the group`);
        }
      }
    });
  }
});

/** Issue 12: every shape of header that hid the name. Names are the issue's. */
describe('shapes of real headers (issue 12)', () => {
  const shapes: Array<{ shape: string; ua: string; name: string; candidates: string[] }> = [
    { shape: 'a name after a vendor word in a comment item', ua: 'Mozilla/5.0 (compatible; Example! Crawler/3.0; +https://crawler.example/help)', name: 'Crawler', candidates: ['Crawler', 'Example'] },
    { shape: 'a name after a vendor word, not the first word (issue 7)', ua: 'Mozilla/5.0 (compatible; Example! Crawler; +https://crawler.example/help)', name: 'Crawler', candidates: ['Example', 'Crawler'] },
    { shape: 'a name after a vendor word, no version', ua: 'Mozilla/5.0 (compatible; Example! Crawler China; +https://crawler.example/cn)', name: 'Crawler', candidates: ['Example', 'Crawler', 'China'] },
    { shape: 'a product after a two-word vendor', ua: 'Mozilla/2.0 (compatible; Example Search/ExampleBot; +https://search.example/bot)', name: 'ExampleBot', candidates: ['ExampleBot', 'Example', 'Search'] },
    { shape: 'a comment item without compatible', ua: 'ExampleCVS/0.7.1 (ExampleBot; https://example.org/bot.html; bot@example.org)', name: 'ExampleBot', candidates: ['ExampleBot', 'ExampleCVS'] },
    { shape: 'a lone comment item', ua: 'Mozilla/5.0 (ExampleMonitor)', name: 'ExampleMonitor', candidates: ['ExampleMonitor'] },
    { shape: 'a name among platform words', ua: 'Mozilla/5.0 (X11; ExampleScan; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36', name: 'ExampleScan', candidates: ['ExampleScan'] },
    { shape: 'a name first among platform words', ua: 'Mozilla/5.0 (ExampleTower; Windows NT 10.0; Win64; x64; rv:84.0) Gecko/20100101 Firefox/84.0', name: 'ExampleTower', candidates: ['ExampleTower'] },
    { shape: 'comma-separated items', ua: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko, ExampleAudit) Chrome/91.0 Safari/537.36', name: 'ExampleAudit', candidates: ['ExampleAudit'] },
    { shape: 'comma-separated items after Safari', ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko) Chrome/91.0 Safari/537.36 (ExampleCheck, https://check.example)', name: 'ExampleCheck', candidates: ['ExampleCheck'] },
    { shape: 'several words in one item', ua: 'Mozilla/5.0 (X11; Linux x86_64; ExampleHub Single Page link check; links@example.com) AppleWebKit/537.36', name: 'ExampleHub', candidates: ['ExampleHub', 'Single', 'Page', 'link', 'check'] },
    { shape: 'several words, domain-style first', ua: 'ExampleAtlas.com SEO Crawler', name: 'ExampleAtlas', candidates: ['ExampleAtlas', 'SEO', 'Crawler'] },
    { shape: 'a domain-style product', ua: 'Mozilla/5.0 (compatible; ExampleIndex.example/2.0; +https://exampleindex.example/crawler)', name: 'ExampleIndex', candidates: ['ExampleIndex'] },
    { shape: 'a bare domain', ua: 'examplecounts.example', name: 'examplecounts', candidates: ['examplecounts'] },
    { shape: 'a domain, a word and an address', ua: 'ExampleSite.com robot support@example.com', name: 'ExampleSite', candidates: ['ExampleSite', 'robot'] },
    { shape: 'a :: module name', ua: 'Example::Fetcher/0.01', name: 'Example', candidates: ['Example', 'Fetcher'] },
    { shape: 'two products joined by /, first', ua: 'LeadBot/ExampleCrawl/1.0', name: 'LeadBot', candidates: ['LeadBot', 'ExampleCrawl'] },
    { shape: 'two products joined by /, second', ua: 'LeadBot/ExampleCrawl/1.0', name: 'ExampleCrawl', candidates: ['LeadBot', 'ExampleCrawl'] },
    { shape: 'a name before a version in a library comment', ua: 'Jersey/2.25.1 (ExampleConnection 1.8.0_141)', name: 'ExampleConnection', candidates: ['ExampleConnection', 'Jersey'] },
    { shape: 'a comma after X11 and a bracketed language', ua: 'Mozilla/5.0 [en] (X11, U; ExampleVAS)', name: 'ExampleVAS', candidates: ['ExampleVAS'] },
    { shape: 'a name after via and a host', ua: 'Firefox/11.0 (via images.example ExampleImageProxy)', name: 'ExampleImageProxy', candidates: ['ExampleImageProxy'] },
  ];
  for (const { shape, ua, name, candidates } of shapes) {
    it(`${shape}: ${name} <- ${ua}`, () => {
      assert.deepEqual(extractProductTokens(ua), candidates);
      assert.equal(receivesGroupFor(name, ua), true, `User-agent: ${name} does not apply`);
      assert.equal(receivesGroupFor(`${name}News`, ua), false, 'a longer name took the group');
    });
  }
});

describe('what is left out', () => {
  it('names that appear only inside URLs, e-mail addresses and +links', () => {
    for (const ua of [
      'Mozilla/5.0 (compatible; +https://crawler.example/ExampleBot)',
      'Mozilla/5.0 (compatible; https://www.example.com/bot.html)',
      'Mozilla/5.0 (compatible; www.examplebot.com/info)',
      'Mozilla/5.0 (compatible; examplebot.example/help)',
      'Mozilla/5.0 (compatible; ExampleBot@example.com)',
      'Mozilla/5.0 (compatible; +ExampleBot@example.com)',
      'Mozilla/5.0 (compatible; mailto:ExampleBot@example.com)',
      'Mozilla/5.0 (+http://www.example.com/ExampleBot.html)',
    ]) {
      assert.deepEqual(extractProductTokens(ua), [], ua);
      assert.equal(receivesGroupFor('ExampleBot', ua), false, ua);
    }
  });
  it('versions, build ids and version placeholders', () => {
    assert.deepEqual(extractProductTokens('ExampleBot/v1.4.8 (Android 11; 6.0.1; 14_7_1; Build/MMB29P; Chrome/W.X.Y.Z; 10)'), ['ExampleBot']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; SemrushBot/7~bl)'), ['SemrushBot']);
  });
  it('generic browser and platform words, one-character words and locales', () => {
    const ua = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; WOW64; X11; Linux x86_64; U; en-US; rv:84.0; K) AppleWebKit/537.36 (KHTML, like Gecko) Version/17.4 Mobile Safari/537.36 Chrome/120 Firefox/84.0 Edg/120';
    assert.deepEqual(extractProductTokens(ua), []);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X; Macintosh; Intel; Android)'), []);
  });
  it('the name after like: a claim of resemblance, not the sender', () => {
    assert.deepEqual(extractProductTokens('FreshRSS/1.11.2 (Linux; https://freshrss.org) like Googlebot'), ['FreshRSS']);
    assert.equal(receivesGroupFor('Googlebot', 'FreshRSS/1.11.2 (Linux; https://freshrss.org) like Googlebot'), false);
    assert.equal(receivesGroupFor('FeedFetcher-Google', 'Feedly/1.0 (+http://www.feedly.com/fetcher.html; 16 subscribers; like FeedFetcher-Google)'), false);
  });
  it('plain browsers name nobody', () => {
    for (const ua of [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
      'Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1',
      'Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36',
      'Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; rv:11.0) like Gecko',
      'Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; WOW64; Trident/4.0; SLCC2; .NET CLR 2.0.50727; .NET CLR 3.5.30729; .NET CLR 3.0.30729; Media Center PC 6.0)',
    ]) {
      assert.deepEqual(extractProductTokens(ua), [], ua);
    }
  });
  it('device models stay candidates, ranked last', () => {
    const ua = 'Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36';
    assert.deepEqual(extractProductTokenCandidates(ua).map((c) => [c.token, c.kind]), [['SM-S918B', 'platform']]);
  });
});

describe('which candidate decides (one documented rule)', () => {
  it("a crawler's own name before a library's", () => {
    const ua = 'python-requests/2.31 ExampleBot/1.0';
    assert.deepEqual(extractProductTokens(ua), ['ExampleBot', 'python-requests']);
    const robots = parseRobotsTxt('User-agent: python-requests\nDisallow: /\n\nUser-agent: ExampleBot\nDisallow: /private\n');
    const r = evaluate(robots, extractProductTokens(ua), '/x');
    assert.equal(r.productToken, 'ExampleBot');
    assert.equal(r.allowed, true);
    // With no group for the crawler, the library's applies.
    assert.equal(evaluate(parseRobotsTxt('User-agent: python-requests\nDisallow: /\n'), extractProductTokens(ua), '/x').productToken, 'python-requests');
  });
  it('crawler-looking names, then others, then libraries, then device words; header order within each', () => {
    const ua = 'Mozilla/5.0 (Linux; Android 14; Pixel 8) Alpha/1 curl/8 (compatible; Beta/2; GammaSpider/3) DeltaBot/4';
    assert.deepEqual(extractProductTokenCandidates(ua).map((c) => `${c.token}:${c.kind}`), [
      'GammaSpider:crawler', 'DeltaBot:crawler', 'Alpha:other', 'Beta:other', 'curl:library', 'Pixel:platform',
    ]);
  });
  it('a bare crawler noun ranks with the other names unless it names a product', () => {
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Speedy Spider; http://www.example.com/)'), ['Speedy', 'Spider']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Example! Crawler/3.0)'), ['Crawler', 'Example']);
  });
  it("a GNU tool's system comment names no one: Wget's own name comes first", () => {
    // GNU Wget sends `Wget/VERSION (OS_TYPE)`, OS_TYPE being configure's $host_os. Before: `linux-gnu`
    // ranked before `Wget` (an "other" name before a library's), so a request no group named was put in
    // the ledger and the report under `linux-gnu` (the first candidate).
    for (const system of ['linux-gnu', 'linux-gnueabihf', 'linux-musl', 'mingw32', 'cygwin', 'msys', 'freebsd14.0', 'openbsd7.5']) {
      assert.deepEqual(extractProductTokens(`Wget/1.21.4 (${system})`), ['Wget'], system);
    }
    // `darwin` is also CFNetwork's `Darwin/23.0.0`, a library word: run into its version it ranks as one, after Wget.
    assert.deepEqual(extractProductTokens('Wget/1.24.5 (darwin23.2.0)'), ['Wget', 'darwin23', 'darwin']);
    // The group choice was right before and is right now.
    assert.equal(receivesGroupFor('Wget', 'Wget/1.21.4 (linux-gnu)'), true);
    // A crawler's name glued to a version is read as before.
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; ExampleBot2.1; linux-gnu)'), ['ExampleBot2', 'ExampleBot']);
  });
  it('a crawler noun that ends a name of several words (`Sogou web spider/4.0`) is no name of its own', () => {
    // Before: `spider`/`Spider`/`Bot` first, as the name of a `name/version` product, so a site's
    // `User-agent: spider` group (www.metmuseum.org, www.rightmove.co.uk in the corpus) applied to
    // Sogou and to Screaming Frog, where the reference, given their tokens (`Sogou`, `Screaming`),
    // and the operators' own `User-agent: Sogou web spider` / `Screaming Frog SEO Spider` lines
    // (read `Sogou`, `Screaming` on both sides) apply the `*` group.
    const sogou = 'Sogou web spider/4.0(+http://www.sogou.com/docs/help/webmasters.htm#07)';
    assert.deepEqual(extractProductTokens(sogou), ['Sogou']);
    assert.deepEqual(extractProductTokens('Sogou Pic Spider/3.0(+http://www.sogou.com/docs/help/webmasters.htm#07)'), ['Sogou']);
    assert.deepEqual(extractProductTokens('Screaming Frog SEO Spider/19.4'), ['Screaming']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Screaming Frog SEO Spider/19.4)'), ['Screaming']);
    // Nor the words between: 56 corpus files that do not name Sogou refused it whole through
    // `User-agent: Web Image Collector` (read `Web`), matched by the `web` of its name.
    const collector = parseRobotsTxt('User-agent: Web Image Collector\nDisallow: /\n\nUser-agent: *\nDisallow: /cgi-bin/\n');
    assert.equal(evaluate(collector, extractProductTokens(sogou), '/a').allowed, true);
    assert.equal(referenceAllowed(Buffer.from('User-agent: Web Image Collector\nDisallow: /\n\nUser-agent: *\nDisallow: /cgi-bin/\n'), 'Sogou', 'http://example.com/a'), true);
    // Words in other items of the header stay candidates.
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; ExampleBot/1.0; Sogou web spider/4.0) Extra'), ['ExampleBot', 'Sogou', 'Extra']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Alpha Beta; Gamma Spider/1.0)'), ['Alpha', 'Beta', 'Gamma']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Kangaroo Bot/1.0; +https://kangaroo.bot)'), ['Kangaroo']);
    // www.rightmove.co.uk's shape: `spider` refused everything; Screaming Frog, not named, gets `*`.
    assert.equal(evaluate(parseRobotsTxt('User-agent: spider\nDisallow: /\n\nUser-agent: *\nDisallow: /x\n'), extractProductTokens('Screaming Frog SEO Spider/19.4'), '/a').allowed, true);
    // metmuseum.org's shape: an empty `spider` group, and `*` refusing /api/.
    const met = 'user-agent: spider \ndisallow: \n\nuser-agent: sogou spider \ndisallow: \n\nuser-agent: * \ndisallow: /api/ \n';
    const robots = parseRobotsTxt(met);
    // The operator's own line (`sogou spider`, read `sogou`) still applies to Sogou...
    assert.equal(evaluate(robots, extractProductTokens(sogou), '/api/x').productToken, 'Sogou');
    // ...and a crawler the file does not name gets the `*` group, as the reference reads it.
    const frog = 'Screaming Frog SEO Spider/19.4';
    const r = evaluate(robots, extractProductTokens(frog), '/api/x');
    assert.equal(r.allowed, false);
    assert.equal(r.productToken, undefined);
    assert.equal(referenceAllowed(Buffer.from(met), 'Screaming', 'http://example.com/api/x'), false);
    // The operators' documented lines apply.
    assert.equal(receivesGroupFor('Sogou web spider', sogou), true);
    assert.equal(receivesGroupFor('Screaming Frog SEO Spider', frog), true);
    // Unchanged: a crawler noun after a vendor word with punctuation, alone, or as the only product name.
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Example! Crawler/3.0)'), ['Crawler', 'Example']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Speedy Spider; http://www.example.com/)'), ['Speedy', 'Spider']);
    assert.deepEqual(extractProductTokens('Spider/2.0 (compatible; Example)'), ['Spider', 'Example']);
    // A generic word before the noun is no name it ends: `compatible Crawler/3.0` names Crawler.
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible Crawler/3.0)'), ['Crawler']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'), ['Googlebot']);
  });
  it('drops duplicates case-insensitively, keeping the best-ranked spelling', () => {
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; ExampleBot/1.0) examplebot/2.0 EXAMPLEBOT'), ['ExampleBot']);
  });
  it('reads nested comments and quoted-pairs', () => {
    assert.deepEqual(extractProductTokens('Foo/1.0 (compatible; (nested; BarBot/2); Baz/3)'), ['BarBot', 'Foo', 'nested', 'Baz']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Quoted\\)Bot/1.0)'), ['Quoted']);
  });
});

/** Issue 7 item 4: names with digits are whole names, on both sides. */
describe('names with digits (issue 7, item 4)', () => {
  it('keeps digits in the name', () => {
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)'), ['MJ12bot']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Foo_Bar-Baz9x/1.0)'), ['Foo_Bar-Baz9x']);
    assert.deepEqual(extractProductTokens('360Spider'), ['360Spider']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; 008/0.83; http://www.80legs.com/webcrawler.html)'), ['008']);
  });
  it('a version glued to the name (no `/`): the name without it is a candidate too, after the whole name', () => {
    // Before: `trendictionbot0` alone, so `User-agent: Trendictionbot` (7 corpus files) never applied to
    // the crawler, nor `User-agent: larbin` (135) to `larbin_2.6.3`, nor `User-agent: twiceler` (18).
    const trendiction = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; trendictionbot0.5.0; trendiction search; http://www.trendiction.de/bot; please let us know of any problems; web at trendiction.com) Gecko/20100101 Firefox/125.0';
    assert.deepEqual(extractProductTokens(trendiction).slice(0, 3), ['trendictionbot0', 'trendictionbot', 'trendiction']);
    assert.equal(receivesGroupFor('Trendictionbot', trendiction), true);
    assert.deepEqual(extractProductTokens('larbin_2.6.3 larbin2.6.3@unspecified.mail'), ['larbin_2', 'larbin']);
    assert.equal(receivesGroupFor('larbin', 'larbin_2.6.3 larbin2.6.3@unspecified.mail'), true);
    assert.equal(receivesGroupFor('twiceler', 'Mozilla/5.0 (Twiceler-0.9 http://www.cuil.com/twiceler/robot.html)'), true);
    assert.deepEqual(extractProductTokens('NaverBot-1.0 (NHN Corp.)'), ['NaverBot-1', 'NaverBot', 'NHN', 'Corp']);
    // A group written with the version (`User-agent: Twiceler-0.9` reads `Twiceler-0`) still wins over the stem's.
    const both = parseRobotsTxt('User-agent: twiceler\nDisallow: /stem\n\nUser-agent: Twiceler-0.9\nDisallow: /whole\n');
    assert.equal(selectGroup(both, extractProductTokens('Twiceler-0.9')).group?.productToken, 'Twiceler-0');
    // Digits not followed by a dotted version stay part of the name, alone.
    assert.deepEqual(extractProductTokens('MJ12bot'), ['MJ12bot']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Nokia6230i/2.0)'), ['Nokia6230i']);
    assert.deepEqual(extractProductTokens('a1.2'), ['a1']);
    assert.deepEqual(extractProductTokens('ExampleScan9.example/2.0'), ['ExampleScan9']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; ExampleScan9+)'), ['ExampleScan9']);
  });
  it('a name of digits alone counts only as a product name', () => {
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; 008)'), []);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (Linux; Android 11; Pixel 5)'), ['Pixel']);
  });
});

describe("short names (robots-parser's tests ask for groups `a`, `c`, `d` with agents `c` and `d/12`)", () => {
  it('a header that is one bare name gives it, whatever the word lists say', () => {
    // Before: [] for each, so `User-agent: c` never applied to the agent `c`.
    assert.deepEqual(extractProductTokens('c'), ['c']);
    assert.deepEqual(extractProductTokens('  U  '), ['U']);
    assert.deepEqual(extractProductTokens('Chrome'), ['Chrome']);
    assert.deepEqual(extractProductTokens('008'), ['008']);
    assert.equal(receivesGroupFor('c', 'c'), true);
    // Not a bare name: the word filters still apply.
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (X11; U; Linux x86_64)'), []);
    assert.deepEqual(extractProductTokens('c d'), []);
  });
  it('a one-character name counts when it names a name/version product, not in a platform comment', () => {
    assert.deepEqual(extractProductTokens('d/12'), ['d']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; X/1.0)'), ['X']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (Windows; U; Windows NT 5.1; en-US; rv:1.9) Gecko/2008 Firefox/3.0'), []);
  });
});

describe('hostile input', () => {
  it('tolerates unbalanced parentheses', () => {
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; ExampleBot/1.0'), ['ExampleBot']);
    assert.deepEqual(extractProductTokens('ExampleBot/1.0)))'), ['ExampleBot']);
    assert.deepEqual(extractProductTokens('(((((('), []);
    assert.deepEqual(extractProductTokens(')))((( )('), []);
  });
  it('treats control characters as separators', () => {
    assert.deepEqual(extractProductTokens('ExampleBot/1.0\r\nX-Injected: yes\u0000'), ['ExampleBot', 'X-Injected', 'yes']);
    assert.deepEqual(extractProductTokens('Foo\u0000Bar\u007fBaz'), ['Foo', 'Bar', 'Baz']);
    assertWellFormed(extractProductTokens('\u0000\u0001Foo\u0007Bot\u007f(\u001b;compatible;\u0000ZedBot'));
  });
  it('survives 100 KB headers of several shapes', () => {
    const big = 100 * 1024;
    const shapes = [
      'a'.repeat(big),
      '('.repeat(big),
      ')'.repeat(big),
      '(compatible; '.repeat(big / 13),
      'ExampleBot/1.0 '.repeat(big / 15),
      '\\'.repeat(big),
      '/'.repeat(big),
      ':'.repeat(big),
      'a/'.repeat(big / 2),
      'a::'.repeat(big / 3),
      'Mozilla/5.0 (' + 'x;'.repeat(big / 2),
    ];
    for (const ua of shapes) assertWellFormed(extractProductTokens(ua));
    assert.deepEqual(extractProductTokens('ExampleBot/1.0 '.repeat(big / 15)), ['ExampleBot']);
  });
  it(`reads only the first ${USER_AGENT_SCAN_LIMIT_CHARS} characters and drops a name cut by the cap`, () => {
    const bot = 'ExampleBot/1.0';
    assert.deepEqual(extractProductTokens(' '.repeat(USER_AGENT_SCAN_LIMIT_CHARS - bot.length - 1) + bot + ' '), ['ExampleBot']);
    assert.deepEqual(extractProductTokens(' '.repeat(USER_AGENT_SCAN_LIMIT_CHARS) + bot), []);
    assert.deepEqual(extractProductTokens(' '.repeat(USER_AGENT_SCAN_LIMIT_CHARS - 5) + bot), []);
    assert.deepEqual(extractProductTokens('(compatible; ' + ' '.repeat(USER_AGENT_SCAN_LIMIT_CHARS) + 'ExampleBot)'), []);
  });
  it('depends only on the first characters up to the cap, and whether there are more (the pipeline caches on that prefix)', () => {
    const chars = fc.constantFrom(...'()\\;,/:+@. _-abcXYZbot09'.split(''));
    fc.assert(
      fc.property(fc.string({ unit: chars, minLength: USER_AGENT_SCAN_LIMIT_CHARS - 50, maxLength: USER_AGENT_SCAN_LIMIT_CHARS + 200 }), (ua) => {
        assert.deepEqual(extractProductTokens(ua), extractProductTokens(ua.slice(0, USER_AGENT_SCAN_LIMIT_CHARS + 1)));
      }),
      { numRuns: 200 },
    );
  });
  it('caps the candidate list, keeping the best-ranked', () => {
    const names = Array.from({ length: 100 }, (_, i) => `Agent${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}/1`);
    const tokens = extractProductTokens(names.join(' ') + ' LastBot/1');
    assert.equal(tokens.length, MAX_PRODUCT_TOKEN_CANDIDATES);
    assert.equal(tokens[0], 'LastBot');
  });
  it('returns [] for a non-string', () => {
    assert.deepEqual(extractProductTokens(undefined as unknown as string), []);
    assert.deepEqual(extractProductTokens(['GPTBot'] as unknown as string), []);
  });
  it('never throws and always returns distinct names (property)', () => {
    const uaChars = fc.constantFrom(...'()\\;,/:+@. _-abcXYZbot09\t\u0000\u00e9'.split(''));
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 3000 }), fc.string({ unit: uaChars, maxLength: 3000 })), (ua) => {
        assertWellFormed(extractProductTokens(ua));
      }),
      { numRuns: 500 },
    );
  });
  it('a name in the header is found wherever it stands among generic words (property)', () => {
    const generic = fc.constantFrom('Mozilla/5.0', '(X11;', 'Linux', 'x86_64)', 'AppleWebKit/537.36', '(KHTML,', 'like', 'Gecko)', 'Chrome/120.0', 'Safari/537.36', '(compatible;', '+https://x.example/bot)', 'Win64;', 'en-US;');
    fc.assert(
      fc.property(fc.array(generic, { maxLength: 12 }), fc.nat(12), fc.constantFrom('ExampleBot', 'Example2Bot', 'MJ12bot', 'ExampleScan'), fc.constantFrom('', '/1.0', ';', ','), (words, at, name, suffix) => {
        // `like` would make the next word a claim of resemblance.
        const before = words.slice(0, at);
        while (before[before.length - 1] === 'like') before.pop();
        const ua = [...before, name + suffix, ...words.slice(at)].join(' ');
        assert.ok(extractProductTokens(ua).includes(name), ua);
      }),
      { numRuns: 300 },
    );
  });
});

describe('isValidProductToken', () => {
  it('matches the reference IsValidUserAgentToObey conformance records', () => {
    const records = readVectors<OtherCase>(CONFORMANCE_FIXTURES_DIR, OTHER_VECTORS_FILE).filter((record) => record.kind === 'IsValidUserAgentToObey');
    assert.ok(records.length >= 10, `expected the conformance records, found ${records.length}`);
    for (const record of records) assertOtherCase(record);
  });
  it('accepts only [A-Za-z_-] (RFC 9309 §2.2.1)', () => {
    assert.equal(isValidProductToken('Googlebot-Image'), true);
    assert.equal(isValidProductToken('Foo_Bar'), true);
    assert.equal(isValidProductToken('MJ12bot'), false);
    assert.equal(isValidProductToken(''), false);
    assert.equal(isValidProductToken('Foo Bar'), false);
    assert.equal(isValidProductToken(undefined as unknown as string), false);
  });
});
