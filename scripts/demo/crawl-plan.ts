/**
 * What the demo crawls: the real robots.txt files it serves, the real crawler
 * User-Agents it sends, and the URLs each bot asks for, built from the rules
 * of the group that applies to it (so some are disallowed) plus ordinary
 * paths. The plan is computed offline with the project's own engine so that
 * the crawl fits a time budget: a bot with a Crawl-delay of 7 s can only make
 * a couple of allowed requests in a demo that lasts a quarter of a minute.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { evaluate, extractProductTokens, parseRobotsTxt, selectGroup, type RobotsTxt } from '../../src/robots/index.js';

/** A crawler as it presents itself (published User-Agent strings). */
export interface Bot {
  /** Short name for the table. */
  name: string;
  userAgent: string;
}

/** Real crawler User-Agent headers, as the vendors document them. */
export const BOTS: readonly Bot[] = [
  { name: 'Googlebot', userAgent: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' },
  { name: 'bingbot', userAgent: 'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)' },
  { name: 'GPTBot', userAgent: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)' },
  { name: 'ClaudeBot', userAgent: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)' },
  { name: 'CCBot', userAgent: 'CCBot/2.0 (https://commoncrawl.org/faq/)' },
  { name: 'AhrefsBot', userAgent: 'Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)' },
  { name: 'YandexBot', userAgent: 'Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)' },
  {
    name: 'Applebot',
    userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)',
  },
];

/** One demo origin: a corpus file served as its robots.txt, or a status instead. */
export interface SiteSpec {
  /** File name of a real robots.txt under test/fixtures/robots/, or a label for a status-only origin. */
  label: string;
  /** Read from test/fixtures/robots/ when set. */
  file?: string;
  /** Status answered for /robots.txt when there is no file. */
  robotsStatus?: number;
  /**
   * robots.txt bodies served in turn instead of a file: the first fetch gets the first, each
   * later fetch the next (the last one stays), with `Cache-Control: max-age` of
   * {@link CHANGING_MAX_AGE_SECONDS}, so the proxy fetches it again during the crawl and the
   * ledger records each version.
   */
  versions?: readonly string[];
}

/** Lifetime the changing robots.txt gives itself, seconds (the demo lowers `robots.minTtl` to it). */
export const CHANGING_MAX_AGE_SECONDS = 2;

/** A site that tightens its robots.txt while being crawled: first paths, then AI crawlers. */
const CHANGING_VERSIONS: readonly string[] = [
  'User-agent: *\nCrawl-delay: 0.5\nDisallow: /private/\n',
  'User-agent: *\nCrawl-delay: 0.5\nDisallow: /private/\nDisallow: /news/\nDisallow: /search\n',
  'User-agent: *\nCrawl-delay: 0.5\nDisallow: /private/\nDisallow: /news/\nDisallow: /search\n\nUser-agent: GPTBot\nUser-agent: ClaudeBot\nUser-agent: CCBot\nDisallow: /\n',
];

/** The real robots.txt files (test/fixtures/robots/), each chosen for what it exercises. */
export const SITES: readonly SiteSpec[] = [
  { label: 'm.youtube.com.txt', file: 'm.youtube.com.txt' }, // `*` Crawl-delay 0.5 for every bot
  { label: 'top.mail.ru.txt', file: 'top.mail.ru.txt' }, // GoogleBot group without delay, `*` 0.1; /*.csv, /*?
  { label: 'shopee.co.id.txt', file: 'shopee.co.id.txt' }, // Googlebot+Bingbot share a group at 0.1, `*` at 1
  { label: 'poshmark.com.txt', file: 'poshmark.com.txt' }, // `$`, /tr?*, /listing/*/like
  { label: 'openlibrary.org.txt', file: 'openlibrary.org.txt' }, // Googlebot group: only /*.rdf$
  { label: 'www.click-licht.de.txt', file: 'www.click-licht.de.txt' }, // dense wildcards, Allow inside Disallow, AhrefsBot 5 s
  { label: 'link.springer.com.txt', file: 'link.springer.com.txt' }, // Disallow: / with Allow exceptions, Allow: /$
  { label: 'www.biorxiv.org.txt', file: 'www.biorxiv.org.txt' }, // 43 groups, AI bots out, `*` Crawl-delay 7
  { label: 'deadline.com.txt', file: 'deadline.com.txt' }, // AI opt-out groups, *?v02, Allow admin-ajax.php
  { label: 'www.eventbrite.com.txt', file: 'www.eventbrite.com.txt' }, // 31 KB, 140 groups, CCBot 0.7, AhrefsBot 2
  { label: 'www.astro.com.txt', file: 'www.astro.com.txt' }, // 22 groups, per-bot delays 2, 3, 5
  { label: 'github.com.txt', file: 'github.com.txt' }, // 25 groups, `*` Disallow: / for unnamed bots
  { label: '(robots.txt answers 503)', robotsStatus: 503 },
  { label: '(robots.txt answers 404)', robotsStatus: 404 },
  { label: '(robots.txt changes)', versions: CHANGING_VERSIONS },
];

/** Ordinary paths every bot also asks for (some hit rules by themselves). */
const ORDINARY_PATHS: readonly string[] = [
  '/',
  '/about',
  '/products/4711',
  '/blog/2024/05/robots-and-you?utm_source=feed',
  '/search?q=crawl+delay',
  '/images/logo.png',
  '/api/v1/items?page=2',
  '/index.html',
  '/user/login',
  '/news/world/article-123.html',
  '/export/report.csv',
  '/sitemap.xml',
];

/** Paths per bot and origin: this many derived from rules, plus {@link ORDINARY_PER_BOT} ordinary ones. */
const RULE_PATHS_PER_BOT = 3;
const ORDINARY_PER_BOT = 2;
const PATHS_PER_BOT = RULE_PATHS_PER_BOT + ORDINARY_PER_BOT;

/** One planned request. */
export interface PlannedRequest {
  bot: Bot;
  /** Path plus query, already as the proxy will see it (URL-normalised). */
  path: string;
  /**
   * The verdict the offline engine expects (`deny` for an unreachable robots.txt); `either` when
   * the versions of a changing robots.txt disagree (which one applies depends on timing).
   */
  expected: 'allow' | 'deny' | 'either';
  /** Crawl-delay of the group that applies to the bot, seconds; 0 when none. */
  delaySeconds: number;
}

/** A site with its robots.txt bytes and its planned requests, in the order they are sent. */
export interface PlannedSite {
  spec: SiteSpec;
  /** The file's bytes (the last version of a changing one), or undefined for a status-only origin. */
  robotsBody: Buffer | undefined;
  requests: PlannedRequest[];
  /** Declared Crawl-delay per bot name, seconds, or null when its group has none (or there is no file). */
  declaredDelay: Map<string, number | null>;
}

/** A concrete path matching `pattern` (`*` filled, `$` dropped), normalised as a URL would be. */
function pathFromPattern(pattern: string, seed: number): string {
  const isAnchored = pattern.endsWith('$');
  let path = (isAnchored ? pattern.slice(0, -1) : pattern).replaceAll('*', `x${seed}`);
  if (!path.startsWith('/')) path = `/${path}`;
  if (path.endsWith('/') && !isAnchored) path += `page-${seed}`;
  if (path.endsWith('?')) path += `id=${seed}`;
  return normalisePathAndQuery(path);
}

/** Path plus query as the proxy will read it from the absolute URL (`#` kept as data, not a fragment). */
function normalisePathAndQuery(path: string): string {
  const url = new URL(path.replaceAll('#', '%23'), 'http://demo.invalid');
  return url.pathname + url.search;
}

/** Up to `count` rule-derived paths for one bot, spread over the group's rules; rotated by `offset`. */
function rulePaths(robots: RobotsTxt | undefined, tokens: readonly string[], count: number, offset: number): string[] {
  const group = robots === undefined ? undefined : selectGroup(robots, tokens).group;
  const patterns = (group?.rules ?? []).map((r) => r.pattern).filter((p) => p.length > 0);
  if (patterns.length === 0) return [];
  const step = Math.max(1, Math.floor(patterns.length / count));
  return Array.from({ length: count }, (_, k) => pathFromPattern(patterns[(offset + k * step) % patterns.length]!, offset * count + k));
}

/**
 * Plans one site: for every bot, rule-derived and ordinary paths; the offline verdict and delay of
 * each; then drops allowed requests with a Crawl-delay once the sum of their delays would exceed
 * `delayBudgetSeconds` (with the start-to-start model, that sum bounds how long the origin's queue
 * takes, whatever the order the requests arrive in).
 * @throws Error when the corpus file cannot be read.
 */
export function planSite(spec: SiteSpec, corpusDir: string, delayBudgetSeconds: number): PlannedSite {
  const bodies = spec.versions !== undefined ? spec.versions.map((v) => Buffer.from(v)) : spec.file === undefined ? [] : [readFileSync(join(corpusDir, spec.file))];
  const robotsBody = bodies.at(-1);
  const everyVersion = bodies.map((body) => parseRobotsTxt(body));
  // Paths come from the last version, which names the most rules.
  const robots = everyVersion.at(-1);
  const isUnreachable = spec.robotsStatus !== undefined && spec.robotsStatus >= 500;
  const expectedOf = (tokens: readonly string[], path: string): PlannedRequest['expected'] => {
    if (isUnreachable) return 'deny';
    if (everyVersion.length === 0) return 'allow';
    const verdicts = new Set(everyVersion.map((r) => (evaluate(r, tokens, path).allowed ? 'allow' : 'deny')));
    return verdicts.size === 1 ? [...verdicts][0]! : 'either';
  };
  const perBot = BOTS.map((bot, b) => {
    const tokens = extractProductTokens(bot.userAgent);
    const delays = everyVersion.map((r) => selectGroup(r, tokens).group?.crawlDelaySeconds ?? null).filter((d): d is number => d !== null);
    const delay = delays.length === 0 ? null : Math.max(...delays);
    // Ordinary paths fill the places that rules cannot (a file with no rules for this bot, no file).
    const fromRules = rulePaths(robots, tokens, RULE_PATHS_PER_BOT, b);
    const ordinaryCount = PATHS_PER_BOT - fromRules.length;
    const ordinary = Array.from({ length: ordinaryCount }, (_, k) => normalisePathAndQuery(ORDINARY_PATHS[(b * ORDINARY_PER_BOT + k) % ORDINARY_PATHS.length]!));
    const paths = [...fromRules, ...ordinary];
    const requests = paths.map((path): PlannedRequest => {
      return { bot, path, expected: expectedOf(tokens, path), delaySeconds: delay ?? 0 };
    });
    return { bot, delay, requests };
  });

  // Interleave the bots (first path of every bot, then the second...), then apply the budget.
  const requests: PlannedRequest[] = [];
  let spentSeconds = 0;
  for (let k = 0; k < PATHS_PER_BOT; k++) {
    for (const { requests: own } of perBot) {
      const request = own[k];
      if (request === undefined) continue;
      if (request.expected !== 'deny' && request.delaySeconds > 0) {
        if (spentSeconds + request.delaySeconds > delayBudgetSeconds) continue;
        spentSeconds += request.delaySeconds;
      }
      requests.push(request);
    }
  }
  return { spec, robotsBody, requests, declaredDelay: new Map(perBot.map((p) => [p.bot.name, p.delay])) };
}
