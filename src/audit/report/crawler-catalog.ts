/**
 * Who runs a bot and what kind it is, from the maintained list of crawler
 * User-Agents in the npm package `crawler-user-agents` (patterns matched
 * against a User-Agent, with a description, a documentation URL and category
 * tags such as `search-engine`, `ai-crawler`, `seo`). The list has no operator
 * field, so the operator is derived: the domain the bot names in its own
 * User-Agent (a `+https://...` link or an e-mail address; what the bot
 * declares, not verified), else the domain of the list's documentation URL
 * when that is not a catalogue or code host. Extension, not in RFC 9309.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';


/** What the catalog says about one bot. */
export interface BotProfile {
  /** Operator domain, e.g. `openai.com`; null when unknown. */
  operator: string | null;
  /** Where the operator came from: the bot's own User-Agent, or the list's URL. */
  operatorSource: 'user-agent' | 'list-url' | null;
  /** Category tags, e.g. `['ai-crawler']`; [] when the bot is not in the list. */
  categories: string[];
  /** The list's description, or null. */
  description: string | null;
  /** The list's pattern that matched, or null when none did. */
  pattern: string | null;
}

interface CatalogEntry {
  pattern: string;
  url?: string;
  description?: string;
  tags?: string[];
}

interface CompiledEntry {
  regex: RegExp;
  entry: CatalogEntry;
}

/** Hosts of the list's URLs that document many bots rather than run one. */
const CATALOG_HOSTS = new Set([
  'github.com',
  'gitlab.com',
  'datadome.co',
  'knownagents.com',
  'darkvisitors.com',
  'useragentstring.com',
  'user-agents.net',
  'stackoverflow.com',
  'en.wikipedia.org',
  'wikipedia.org',
  'web.archive.org',
  'udger.com',
  'radar.cloudflare.com',
  'developers.cloudflare.com',
  'npmjs.com',
  'pypi.org',
  'bot-traffic.icu',
]);

const require = createRequire(import.meta.url);

function readCatalogVersion(): string {
  try {
    // The package's `exports` hide its package.json: read it beside the list.
    const listPath = require.resolve('crawler-user-agents');
    return (JSON.parse(readFileSync(join(dirname(listPath), 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '(version unknown)';
  }
}

/** Where the operator and category come from, for the report's footnote. */
export const CATALOG_SOURCE = `crawler-user-agents ${readCatalogVersion()} (npm; MIT): category and description from its tags; operator = the domain the bot's own User-Agent names (+URL or e-mail, as declared), else the domain of the list's documentation URL`;

let compiled: CompiledEntry[] | undefined;

/** The list, compiled once (about 1,500 patterns); patterns that do not compile are skipped. */
function catalog(): CompiledEntry[] {
  if (compiled !== undefined) return compiled;
  const entries = require('crawler-user-agents') as CatalogEntry[];
  compiled = [];
  for (const entry of entries) {
    try {
      compiled.push({ regex: new RegExp(entry.pattern), entry });
    } catch {
      // A pattern JavaScript cannot compile: that entry is not matched.
    }
  }
  return compiled;
}

/** The registrable-looking part of a host: lower case, without `www.`. */
function hostOf(url: string): string | null {
  try {
    const host = new URL(url).hostname.toLowerCase();
    return host.replace(/^www\./, '') || null;
  } catch {
    return null;
  }
}

/** The domain a User-Agent declares: its first http(s) link, else the domain of an e-mail address. */
export function declaredDomainOf(userAgent: string): string | null {
  const link = /https?:\/\/[^\s;)"'<>]+/i.exec(userAgent);
  if (link !== null) {
    const host = hostOf(link[0]);
    if (host !== null && !CATALOG_HOSTS.has(host)) return host;
  }
  const mail = /[A-Za-z0-9._%+-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)/.exec(userAgent);
  return mail === null ? null : (mail[1] as string).toLowerCase();
}

/**
 * The profile of a bot from a User-Agent it sent (or, without one, its product token).
 * The longest matching pattern wins (the most specific). Never throws.
 */
export function profileOf(token: string, userAgent: string | undefined): BotProfile {
  const subject = userAgent ?? token;
  let match: CatalogEntry | undefined;
  for (const { regex, entry } of catalog()) {
    if ((match === undefined || entry.pattern.length > match.pattern.length) && regex.test(subject)) match = entry;
  }
  const declared = userAgent === undefined ? null : declaredDomainOf(userAgent);
  const listed = match?.url === undefined ? null : hostOf(match.url);
  const listedOperator = listed !== null && !CATALOG_HOSTS.has(listed) ? listed : null;
  return {
    operator: declared ?? listedOperator,
    operatorSource: declared !== null ? 'user-agent' : listedOperator !== null ? 'list-url' : null,
    categories: match?.tags ?? [],
    description: match?.description ?? null,
    pattern: match?.pattern ?? null,
  };
}
