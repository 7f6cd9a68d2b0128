import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import {
  extractProductTokens,
  isValidProductToken,
  MAX_PRODUCT_TOKEN_CANDIDATES,
  USER_AGENT_SCAN_LIMIT_CHARS,
} from '../../src/robots/agent.js';

interface UaCase {
  ua: string;
  /** Every candidate, in order; the first one decides. */
  tokens: string[];
  /** Where the operator publishes the header. */
  src: string;
}

const GOOGLE = 'developers.google.com/search/docs/crawling-indexing/overview-google-crawlers';
const BING = 'bing.com/webmasters/help/which-crawlers-does-bing-use; blogs.bing.com 2019-12';
const YANDEX = 'yandex.com/support/webmaster/robot-workings/check-yandex-robots.html';
const OPENAI = 'platform.openai.com/docs/bots';

/** Real crawler and client headers, written as their operators publish them. */
const REAL_USER_AGENTS: UaCase[] = [
  { src: GOOGLE, tokens: ['Googlebot'], ua: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' },
  { src: GOOGLE, tokens: ['Googlebot'], ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; +http://www.google.com/bot.html) Chrome/W.X.Y.Z Safari/537.36' },
  { src: GOOGLE, tokens: ['Googlebot'], ua: 'Googlebot/2.1 (+http://www.google.com/bot.html)' },
  { src: GOOGLE, tokens: ['Googlebot'], ua: 'Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/W.X.Y.Z Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' },
  { src: GOOGLE, tokens: ['Googlebot-Image'], ua: 'Googlebot-Image/1.0' },
  { src: GOOGLE, tokens: ['Googlebot-Video'], ua: 'Googlebot-Video/1.0' },
  { src: GOOGLE, tokens: ['AdsBot-Google'], ua: 'AdsBot-Google (+http://www.google.com/adsbot.html)' },
  { src: GOOGLE, tokens: ['AdsBot-Google-Mobile'], ua: 'Mozilla/5.0 (iPhone; CPU iPhone OS 14_7_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/14.1.2 Mobile/15E148 Safari/604.1 (compatible; AdsBot-Google-Mobile; +http://www.google.com/mobile/adsbot.html)' },
  { src: GOOGLE, tokens: ['Mediapartners-Google'], ua: 'Mediapartners-Google' },
  { src: GOOGLE, tokens: ['Mediapartners-Google'], ua: '(Various mobile device types) (compatible; Mediapartners-Google/2.1; +http://www.google.com/bot.html)' },
  { src: GOOGLE, tokens: ['Google-InspectionTool'], ua: 'Mozilla/5.0 (compatible; Google-InspectionTool/1.0;)' },
  { src: GOOGLE, tokens: ['Storebot-Google'], ua: 'Mozilla/5.0 (X11; Linux x86_64; Storebot-Google/1.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/W.X.Y.Z Safari/537.36' },
  { src: GOOGLE, tokens: ['GoogleOther'], ua: 'GoogleOther' },
  { src: GOOGLE, tokens: ['FeedFetcher-Google'], ua: 'FeedFetcher-Google; (+http://www.google.com/feedfetcher.html)' },
  { src: BING, tokens: ['bingbot'], ua: 'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)' },
  { src: BING, tokens: ['bingbot'], ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/W.X.Y.Z Safari/537.36 Edg/W.X.Y.Z' },
  { src: BING, tokens: ['bingbot'], ua: 'Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/W.X.Y.Z Mobile Safari/537.36 Edg/W.X.Y.Z (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)' },
  { src: BING, tokens: ['bingbot'], ua: 'Mozilla/5.0 (Windows Phone 8.1; ARM; Trident/7.0; Touch; rv:11.0; IEMobile/11.0; NOKIA; Lumia 530) like Gecko (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)' },
  { src: YANDEX, tokens: ['YandexBot'], ua: 'Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)' },
  { src: YANDEX, tokens: ['YandexBot'], ua: 'Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/81.0.4044.268' },
  { src: YANDEX, tokens: ['YandexMobileBot'], ua: 'Mozilla/5.0 (iPhone; CPU iPhone OS 8_1 like Mac OS X) AppleWebKit/600.1.4 (KHTML, like Gecko) Version/8.0 Mobile/12B411 Safari/600.1.4 (compatible; YandexMobileBot/3.0; +http://yandex.com/bots)' },
  { src: 'baidu.com/search/spider.html', tokens: ['Baiduspider'], ua: 'Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)' },
  { src: 'duckduckgo.com/duckduckbot', tokens: ['DuckDuckBot'], ua: 'DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)' },
  { src: 'duckduckgo.com/duckduckbot', tokens: ['DuckDuckBot-Https'], ua: 'Mozilla/5.0 (compatible; DuckDuckBot-Https/1.1; https://duckduckgo.com/duckduckbot)' },
  { src: 'support.apple.com/en-us/HT204683', tokens: ['Applebot'], ua: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_10_1) AppleWebKit/600.2.5 (KHTML, like Gecko) Version/8.0.2 Safari/600.2.5 (Applebot/0.1)' },
  { src: 'support.apple.com/en-us/119829', tokens: ['Applebot'], ua: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)' },
  { src: OPENAI, tokens: ['GPTBot'], ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.1; +https://openai.com/gptbot)' },
  { src: OPENAI, tokens: ['GPTBot'], ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.1; +https://openai.com/gptbot' },
  { src: OPENAI, tokens: ['ChatGPT-User'], ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot' },
  { src: OPENAI, tokens: ['OAI-SearchBot'], ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot' },
  { src: OPENAI, tokens: ['OAI-SearchBot'], ua: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36; compatible; OAI-SearchBot/1.3; +https://openai.com/searchbot' },
  { src: 'support.anthropic.com/en/articles/8896518', tokens: ['ClaudeBot'], ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)' },
  { src: 'support.anthropic.com/en/articles/8896518', tokens: ['Claude-User'], ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)' },
  { src: 'docs.perplexity.ai/guides/bots', tokens: ['PerplexityBot'], ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)' },
  { src: 'commoncrawl.org/faq', tokens: ['CCBot'], ua: 'CCBot/2.0 (https://commoncrawl.org/faq/)' },
  { src: 'bytedance (spider-feedback@bytedance.com)', tokens: ['Bytespider'], ua: 'Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)' },
  // Amazon's page writes `KHTML\, like Gecko`: a quoted-pair (RFC 9110 §5.6.5).
  { src: 'developer.amazon.com/support/amazonbot', tokens: ['Amazonbot'], ua: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_10_1) AppleWebKit/600.2.5 (KHTML\\, like Gecko) Version/8.0.2 Safari/600.2.5 (Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)' },
  { src: 'ahrefs.com/robot', tokens: ['AhrefsBot'], ua: 'Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)' },
  { src: 'semrush.com/bot', tokens: ['SemrushBot'], ua: 'Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)' },
  // `MJ12bot` is cut at the digit, exactly as a `User-agent: MJ12bot` line is (§2.2.1).
  { src: 'mj12bot.com', tokens: ['MJ'], ua: 'Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)' },
  { src: 'moz.com/help/moz-procedures/crawlers/dotbot', tokens: ['DotBot'], ua: 'Mozilla/5.0 (compatible; DotBot/1.2; +https://opensiteexplorer.org/dotbot; help@moz.com)' },
  { src: 'developers.facebook.com/docs/sharing/webmasters/web-crawlers', tokens: ['facebookexternalhit'], ua: 'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)' },
  { src: 'developer.x.com/en/docs/x-for-websites/cards/guides/troubleshooting-cards', tokens: ['Twitterbot'], ua: 'Twitterbot/1.0' },
  { src: 'linkedin.com (LinkedInBot)', tokens: ['LinkedInBot', 'Apache-HttpClient'], ua: 'LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)' },
  { src: 'api.slack.com/robots', tokens: ['Slackbot-LinkExpanding'], ua: 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)' },
  { src: 'discord.com (link embeds)', tokens: ['Discordbot'], ua: 'Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)' },
  { src: 'feedly.com/fetcher.html', tokens: ['Feedly'], ua: 'Feedly/1.0 (+http://www.feedly.com/fetcher.html; 16 subscribers; like FeedFetcher-Google)' },
  { src: 'FreshRSS constants.php FRESHRSS_USERAGENT', tokens: ['FreshRSS'], ua: 'FreshRSS/1.24.3 (Linux; https://freshrss.org)' },
  { src: 'curl.se (default --user-agent)', tokens: ['curl'], ua: 'curl/8.5.0' },
  { src: 'GNU Wget default', tokens: ['Wget'], ua: 'Wget/1.21.4' },
  { src: 'requests.utils.default_user_agent', tokens: ['python-requests'], ua: 'python-requests/2.31.0' },
  { src: 'Go net/http defaultUserAgent', tokens: ['Go-http-client'], ua: 'Go-http-client/1.1' },
  { src: 'Go net/http (HTTP/2)', tokens: ['Go-http-client'], ua: 'Go-http-client/2.0' },
  { src: 'docs.scrapy.org settings USER_AGENT', tokens: ['Scrapy'], ua: 'Scrapy/2.11.2 (+https://scrapy.org)' },
  { src: 'node-fetch v2 default', tokens: ['node-fetch'], ua: 'node-fetch/1.0 (+https://github.com/bitinn/node-fetch)' },
  { src: 'Node.js 20 global fetch default', tokens: ['node'], ua: 'node' },
];

const BROWSER_USER_AGENTS: string[] = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/125.0 Mobile/15E148 Safari/605.1.15',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.51',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 OPR/109.0.0.0',
  'Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Linux; Android 13; SM-S908B Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.230 Mobile Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; rv:11.0) like Gecko',
  'Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; WOW64; Trident/4.0; SLCC2; .NET CLR 2.0.50727; .NET CLR 3.5.30729; .NET CLR 3.0.30729; Media Center PC 6.0)',
  'Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.2; Trident/6.0)',
];

const CONFORMANCE_FILE = new URL('../../../shared/conformance/google-robotstxt-other.jsonl', import.meta.url);

interface ConformanceRecord {
  id: string;
  kind: string;
  input: string;
  expected: boolean;
}

function assertWellFormed(tokens: string[]): void {
  assert.ok(Array.isArray(tokens));
  assert.ok(tokens.length <= MAX_PRODUCT_TOKEN_CANDIDATES);
  for (const token of tokens) assert.ok(isValidProductToken(token), `invalid token ${JSON.stringify(token)}`);
  const lower = tokens.map((t) => t.toLowerCase());
  assert.equal(new Set(lower).size, lower.length, 'duplicate tokens');
}

describe('extractProductTokens: real crawler and client headers', () => {
  it('has a table of at least 30 headers', () => {
    assert.ok(REAL_USER_AGENTS.length >= 30);
  });
  for (const { ua, tokens, src } of REAL_USER_AGENTS) {
    it(`${tokens[0] ?? '(none)'} from ${ua}`, () => {
      assert.deepEqual(extractProductTokens(ua), tokens, src);
    });
  }
});

describe('extractProductTokens: plain browsers name no crawler', () => {
  for (const ua of BROWSER_USER_AGENTS) {
    it(ua, () => assert.deepEqual(extractProductTokens(ua), []));
  }
  it('empty and blank headers', () => {
    assert.deepEqual(extractProductTokens(''), []);
    assert.deepEqual(extractProductTokens(' \t '), []);
  });
});

describe('extractProductTokens: rules', () => {
  it('takes a bare comment item from a compatible comment, skipping e-mail and URL items', () => {
    const ua = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 (compatible; ExampleBot; mail@example.com)';
    assert.deepEqual(extractProductTokens(ua), ['ExampleBot']);
    assert.deepEqual(extractProductTokens('ExampleBot/2.0 (https://bot.example/info)'), ['ExampleBot']);
    assert.deepEqual(extractProductTokens('Tool/1 (www.example.com/bot; me@example.com; http://x.example)'), ['Tool']);
  });
  it('prefers names containing bot, crawl, spider or slurp; header order otherwise', () => {
    assert.deepEqual(extractProductTokens('python-requests/2.31.0 (compatible; ExampleCrawler/1.0)'), ['ExampleCrawler', 'python-requests']);
    assert.deepEqual(extractProductTokens('Alpha/1.0 Beta/2.0 (compatible; Gamma/3)'), ['Alpha', 'Beta', 'Gamma']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Embedly/0.2; +http://support.embed.ly/)'), ['Embedly']);
  });
  it('drops duplicates case-insensitively, keeping the first spelling', () => {
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; ExampleBot/1.0) examplebot/2.0 EXAMPLEBOT'), ['ExampleBot']);
  });
  it('ignores device names in platform comments but keeps name/version items there', () => {
    assert.deepEqual(extractProductTokens('Dalvik/2.1.0 (Linux; U; Android 11; Pixel 5 Build/RQ3A.210805.001.A1)'), ['Dalvik']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (X11; Linux x86_64; ShopBot/1.0)'), ['ShopBot']);
  });
  it('reads nested comments and quoted-pairs', () => {
    assert.deepEqual(extractProductTokens('Foo/1.0 (compatible; (nested; BarBot/2); Baz/3)'), ['BarBot', 'Foo', 'Baz']);
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Quoted\\)Bot/1.0)'), ['Quoted']);
  });
  it('cuts each name to its leading [A-Za-z_-] run (RFC 9309 §2.2.1)', () => {
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; Foo_Bar-Baz9x/1.0)'), ['Foo_Bar-Baz']);
    assert.deepEqual(extractProductTokens('360Spider'), []);
  });
});

describe('extractProductTokens: hostile input', () => {
  it('tolerates unbalanced parentheses', () => {
    assert.deepEqual(extractProductTokens('Mozilla/5.0 (compatible; ExampleBot/1.0'), ['ExampleBot']);
    assert.deepEqual(extractProductTokens('ExampleBot/1.0)))'), ['ExampleBot']);
    assert.deepEqual(extractProductTokens('(((((('), []);
    assert.deepEqual(extractProductTokens(')))((( )('), []);
  });
  it('treats control characters as separators', () => {
    assert.deepEqual(extractProductTokens('ExampleBot/1.0\r\nX-Injected: yes\u0000'), ['ExampleBot', 'yes']);
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
  it('caps the candidate list', () => {
    const ua = Array.from({ length: 100 }, (_, i) => `Agent${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}/1`).join(' ');
    assert.equal(extractProductTokens(ua).length, MAX_PRODUCT_TOKEN_CANDIDATES);
  });
  it('returns [] for a non-string', () => {
    assert.deepEqual(extractProductTokens(undefined as unknown as string), []);
    assert.deepEqual(extractProductTokens(['GPTBot'] as unknown as string), []);
  });
  it('never throws and always returns valid, distinct tokens (property)', () => {
    const uaChars = fc.constantFrom(...'()\\;,/ +@.:_-abcXYZbot09\t\u0000\u00e9'.split(''));
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 3000 }), fc.string({ unit: uaChars, maxLength: 3000 })), (ua) => {
        assertWellFormed(extractProductTokens(ua));
      }),
      { numRuns: 500 },
    );
  });
});

describe('isValidProductToken', () => {
  it('matches the reference IsValidUserAgentToObey conformance records', () => {
    const records = readFileSync(CONFORMANCE_FILE, 'utf8')
      .split('\n')
      .filter((line) => line.trim().length > 0)
      .map((line) => JSON.parse(line) as ConformanceRecord)
      .filter((record) => record.kind === 'IsValidUserAgentToObey');
    assert.ok(records.length >= 10, `expected the conformance records, found ${records.length}`);
    for (const record of records) {
      assert.equal(isValidProductToken(record.input), record.expected, record.id);
    }
  });
  it('accepts every token the real-header table expects', () => {
    for (const { tokens } of REAL_USER_AGENTS) for (const token of tokens) assert.ok(isValidProductToken(token), token);
  });
  it('rejects non-strings', () => {
    assert.equal(isValidProductToken(undefined as unknown as string), false);
  });
});
