// run-tests: in-process
/**
 * The curated real robots.txt files in test/fixtures/robots (listed, with
 * why each was chosen, in its SOURCES) parse without throwing, and their
 * traits come out as RFC 9309 and the reference parser read them.
 * `npm run sweep` runs the generic checks here over the whole shared corpus.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DEFAULT_MAX_ROBOTS_BYTES, evaluate, extractPathAndQuery } from '../../src/robots/index.js';
import {
  ROBOTS_FIXTURES_DIR,
  assertBomFilesHaveGroups,
  assertEveryFileParses,
  assertFractionalCrawlDelays,
  assertListMatchesDirectory,
  assertTruncationAtLimit,
  parseCorpusFile,
  readCorpusList,
  robotsFilesIn,
} from './corpus-checks.js';

const dir = ROBOTS_FIXTURES_DIR;
const sources = readCorpusList(join(dir, 'SOURCES'));

function parseFile(file: string) {
  return parseCorpusFile(dir, file);
}

/** The verdict for a product token on a full URL, as the proxy asks it. */
function verdictOf(file: string, token: string, url: string) {
  return evaluate(parseFile(file), [token], extractPathAndQuery(url));
}

function ruleCount(file: string): number {
  return parseFile(file).groups.reduce((n, g) => n + g.rules.length, 0);
}

describe('curated real robots.txt files (test/fixtures/robots)', () => {
  it('SOURCES lists every file, with its byte size and sha256, and why it was chosen', () => {
    assert.equal(assertListMatchesDirectory(dir, sources), robotsFilesIn(dir).length);
    for (const row of sources) assert.ok(row.why && row.why.length > 10, `${row.file}: no reason given`);
  });

  it('keeps a file for each trait the tests rely on, in a spread of sizes, a few MB in all', () => {
    const traits = [
      'bom-utf8', 'bom-utf16', 'lone-cr', 'crlf', 'mixed-eol', 'non-utf8', 'utf8-nonascii', 'nul-bytes', 'html', 'binary',
      'crawl-delay', 'crawl-delay-fraction', 'crawl-delay-nonnumeric', 'sitemap', 'wildcard', 'dollar', 'groups>=20',
      'line-without-colon', 'tabs', 'long-line', 'size>100KiB', 'size>500KiB', 'empty',
    ];
    const missing = traits.filter((t) => !sources.some((r) => r.flags.includes(t)));
    assert.deepEqual(missing, [], 'traits without a fixture');
    assert.ok(sources.filter((r) => r.flags.some((f) => f.startsWith('directive-typo:'))).length >= 5, 'directive typos');
    const sizes = [0, 100, 1_000, 10_000, 100_000, DEFAULT_MAX_ROBOTS_BYTES, Infinity];
    for (let i = 0; i + 1 < sizes.length; i++) {
      const [low, high] = [sizes[i]!, sizes[i + 1]!];
      assert.ok(sources.some((r) => r.bytes >= low && r.bytes < high), `no file of ${low} to ${high} bytes`);
    }
    assert.ok(sources.length >= 40 && sources.length <= 80, `${sources.length} files`);
    const total = sources.reduce((n, r) => n + r.bytes, 0);
    assert.ok(total < 4 * 1024 * 1024, `${total} bytes in all`);
  });

  // No wall-clock assertion: a pathological (super-linear) parse of the 853 KB file would blow the timeout.
  it('every file parses without throwing, and every group answers a decision', { timeout: 60_000 }, () => {
    const sweep = assertEveryFileParses(dir, robotsFilesIn(dir));
    assert.equal(sweep.files, sources.length);
    assert.ok(sweep.rules > 30_000, `${sweep.rules} rules`);
    assert.ok(sweep.groups > 2_000, `${sweep.groups} groups`);
  });

  it('files larger than 500 KiB are truncated at the limit; smaller ones are read whole', () => {
    assert.ok(assertTruncationAtLimit(dir, sources) >= 2);
    const oracle = parseFile('docs.oracle.com.txt');
    assert.ok(oracle.warnings.some((w) => w.code === 'truncated'));
    assert.ok(oracle.groups[0]!.rules.length > 19_000, 'the rules of the first 500 KiB are all kept');
    assert.equal(parseFile('go.com.txt').truncated, true);
    assert.equal(parseFile('www.renderotica.com.txt').truncated, false, '482 KB, just under the limit');
    assert.equal(parseFile('m.youtube.com.txt').truncated, false);
  });

  it('fractional crawl-delays come out as numbers', () => {
    const checks: Array<[string, string, number]> = [
      ['m.youtube.com.txt', 'anybot', 0.5],
      ['poshmark.com.txt', 'Pinterestbot', 0.1],
      ['top.mail.ru.txt', 'anybot', 0.1],
      ['openlibrary.org.txt', 'Baiduspider', 0.5],
    ];
    for (const [file, token, seconds] of checks) {
      assert.equal(evaluate(parseFile(file), [token], '/').group?.crawlDelaySeconds, seconds, file);
    }
    assert.ok(assertFractionalCrawlDelays(dir, sources) >= 8);
  });

  it('a non-numeric crawl-delay gives no delay and a warning', () => {
    const robots = parseFile('globalresearch.ca.txt');
    assert.equal(robots.groupsByToken.get('ahrefsbot')?.crawlDelaySeconds, undefined);
    assert.ok(robots.warnings.some((w) => w.code === 'invalid-crawl-delay'));
    assert.ok(parseFile('www.eulerian.com.txt').warnings.some((w) => w.code === 'invalid-crawl-delay'));
  });

  it('request-rate is read (extension, not in RFC 9309)', () => {
    assert.deepEqual(parseFile('astore.amazon.com.txt').groupsByToken.get('*')?.requestRate, { requests: 1, seconds: 5 });
    assert.deepEqual(parseFile('moodle.org_443.txt').groupsByToken.get('*')?.requestRate, { requests: 1, seconds: 20 });
    // `User-Agent: bingbot / Crawl-delay: 4 / … / User-agent: SeznamBot / Request-rate: 1/10s / User-agent: MJ12bot / Disallow: /`:
    // one group for the rules (RFC 9309 §2.2.1, the reference), but the rate is SeznamBot's and the delay bingbot's.
    const tennis = parseFile('www.tennis-warehouse.com.txt');
    assert.deepEqual(tennis.groupsByToken.get('seznambot')?.requestRate, { requests: 1, seconds: 10 });
    assert.equal(tennis.groupsByToken.get('bingbot')?.requestRate, undefined);
    assert.equal(tennis.groupsByToken.get('bingbot')?.crawlDelaySeconds, 4);
  });

  it('HTML, binary and UTF-16 bodies give no rules, so everything is allowed', () => {
    const bodies = ['103.88.218.109.txt', 'sina.com.cn.txt', 'funplay.hinet.net.txt', 'go.com.txt', 'www.renderotica.com.txt', 'exhentai.org.txt', 'img-media.1plus1.ua.txt', 'store.usps.com.txt'];
    for (const file of bodies) {
      assert.equal(ruleCount(file), 0, file);
      assert.equal(verdictOf(file, 'anybot', 'https://example.com/anything').allowed, true, file);
    }
  });

  it('empty and comment-only files have no groups and no warnings', () => {
    for (const file of ['avaaz.org.txt', 'www.bgsu.edu.txt', 'federec.com.txt']) {
      const robots = parseFile(file);
      assert.deepEqual([robots.groups.length, robots.warnings.length], [0, 0], file);
      assert.equal(evaluate(robots, ['anybot'], '/').allowed, true, file);
    }
    assert.equal(parseFile('avaaz.org.txt').bytesParsed, 0);
  });

  it('reads BOM, lone-CR and mixed line ends', () => {
    assert.ok(assertBomFilesHaveGroups(dir, sources) >= 4);
    // 26 bytes: a BOM, `User-agent: *`, CR, `Allow: /`, CR.
    assert.deepEqual(parseFile('www.gridspertise.com.txt').groups.map((g) => [g.productTokens, g.rules.map((r) => [r.kind, r.pattern])]), [[['*'], [['allow', '/']]]]);
    assert.ok(parseFile('etc.usf.edu.txt').lineCount > 3);
    assert.equal(ruleCount('www.sirengames.at.txt'), 39, 'lone-CR file: every rule on its own line');
    assert.equal(parseFile('www.gfk.com.txt').groups.length, 12, 'CRLF, CR and LF mixed');
  });

  it('accepts the directive typos the reference accepts, and no others', () => {
    assert.equal(verdictOf('www.wmtransfer.com.txt', 'anybot', 'https://www.wmtransfer.com/include/a').rule?.line, 4, '`Disalow`');
    assert.equal(verdictOf('www.klett.ch.txt', 'anybot', 'https://www.klett.ch/rundgang?seite=3').rule?.kind, 'disallow', '`Dissalow`');
    assert.ok(ruleCount('secure.reviversoft.com.txt') > 20);
    assert.ok(parseFile('www.answers.com.txt').groupsByToken.has('sosobot'), '`Useragent`');
    assert.equal(verdictOf('www.talbots.com.txt', 'anybot', 'https://www.talbots.com/Cart-Show').allowed, false, '`User Agent`');
    // `Disllow` and `User_agent` are not typos the reference accepts: unknown directives, with a warning.
    assert.ok(parseFile('ruliweb.com.txt').warnings.some((w) => w.code === 'unknown-directive' && w.line === 8));
    assert.ok(parseFile('www.eurekalert.org.txt').warnings.some((w) => w.code === 'unknown-directive' && w.line === 42));
  });

  it('reads `key value` lines without a colon as the reference does', () => {
    assert.equal(verdictOf('newscientist.com.txt', 'Zibber', 'https://www.newscientist.com/search?offset=10').rule?.kind, 'allow');
    assert.equal(verdictOf('newscientist.com.txt', 'Zibber', 'https://www.newscientist.com/search?offset=30').rule?.kind, 'disallow');
    assert.equal(verdictOf('www.elkhabar.com.txt', 'anybot', 'https://www.elkhabar.com/a').rule?.kind, 'allow');
  });

  it('matches raw non-ASCII patterns against either spelling of the URL (RFC 9309 §2.2.2)', () => {
    for (const url of ['https://www.rfi.fr/поиск/?Search=a', 'https://www.rfi.fr/%D0%BF%D0%BE%D0%B8%D1%81%D0%BA/?Search=a']) {
      assert.equal(verdictOf('www.rfi.fr.txt', 'anybot', url).rule?.line, 14, url);
    }
    for (const url of ['https://www.deere.com/latin-america/es/búsqueda/x', 'https://www.deere.com/latin-america/es/b%C3%BAsqueda/x']) {
      assert.equal(verdictOf('www.deere.com.txt', 'anybot', url).allowed, false, url);
    }
    assert.equal(verdictOf('wetter.com.txt', 'anybot', 'https://www.wetter.com/regenradar/Südamerika/x').allowed, false);
  });

  it('gives both spellings of `|` and `$` the verdict of the rule written with either (issue #7 item 3)', () => {
    // ebay.com writes `Disallow: /sch/*%7C` (line 48) and `Disallow: /b/*?*|` (line 22).
    for (const query of ['_nkw=a|b', '_nkw=a%7Cb']) {
      assert.equal(verdictOf('ebay.com.txt', 'anybot', `https://www.ebay.com/sch/i.html?${query}`).rule?.line, 48, query);
    }
    for (const query of ['y=a|b', 'y=a%7Cb']) {
      assert.equal(verdictOf('ebay.com.txt', 'anybot', `https://www.ebay.com/b/x?${query}`).rule?.line, 22, query);
    }
    // developer.mozilla.org writes `Disallow: /*$history` (line 25): a `$` inside a pattern is a literal character, not an anchor.
    for (const path of ['/en-US/docs/Web$history', '/en-US/docs/Web%24history']) {
      assert.equal(verdictOf('developer.mozilla.org.txt', 'anybot', `https://developer.mozilla.org${path}`).rule?.line, 25, path);
    }
    assert.equal(verdictOf('developer.mozilla.org.txt', 'anybot', 'https://developer.mozilla.org/en-US/docs/Web').allowed, true);
  });

  it('keeps sitemaps and many user-agents', () => {
    assert.equal(parseFile('cnet.txt').sitemaps.length, 22);
    assert.equal(parseFile('google.com.txt').sitemaps.length, 6);
    assert.equal(parseFile('tech-faq.com.txt').groups.reduce((n, g) => n + g.productTokens.length, 0), 380);
    assert.ok(parseFile('venture.gr.txt').groups.length > 1_700);
  });
});
