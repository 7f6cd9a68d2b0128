/**
 * The vocabulary that sorts the names found in a User-Agent header: generic
 * browser and platform words (never candidates), HTTP libraries and tools
 * (candidates of last resort) and the marks of a crawler's own name
 * (candidates of first choice). Extension, not in RFC 9309. Pure data.
 */

/**
 * The operating-system part of a GNU host triplet (config.guess `$host_os`), lower case: GNU Wget
 * sends `Wget/VERSION (OS_TYPE)` (its src/http.c; `OS_TYPE` is configure's `$host_os`), so
 * `Wget/1.21.4 (linux-gnu)` on a glibc Linux, `(mingw32)` on Windows. Versioned ones
 * (`darwin23.2.0`, `freebsd14.0`) are read by their stem (agent.ts).
 */
const GNU_SYSTEM_NAMES: readonly string[] = [
  'gnu', 'linux-gnu', 'linux-gnueabi', 'linux-gnueabihf', 'linux-gnux32', 'linux-musl', 'linux-musleabi', 'linux-musleabihf',
  'linux-android', 'linux-androideabi', 'linux-uclibc', 'mingw32', 'mingw64', 'cygwin', 'msys', 'kfreebsd-gnu',
];

/**
 * Browser, engine, platform and UA-boilerplate words, lower case, compared
 * with a whole name. They say nothing about which crawler is asking. Not
 * exhaustive: an unlisted word (a device model such as `Nexus`) stays a
 * candidate of the lowest-but-one rank, and matters only when a robots.txt
 * file names it.
 */
export const GENERIC_WORDS: ReadonlySet<string> = new Set([
  // engines, browsers, UA boilerplate
  'mozilla', 'applewebkit', 'khtml', 'like', 'gecko', 'compatible', 'version', 'mobile', 'chrome',
  'chromium', 'crios', 'safari', 'firefox', 'fxios', 'edge', 'edg', 'edga', 'edgios', 'opr', 'opera',
  'presto', 'trident', 'msie', 'iemobile', 'rv', 'samsungbrowser', 'ucbrowser', 'yabrowser', 'vivaldi',
  'brave', 'silk', 'miuibrowser', 'huaweibrowser', 'oculusbrowser', 'electron', 'webview', 'wv', 'gsa',
  'duckduckgo', 'ddg', 'konqueror', 'epiphany', 'seamonkey', 'netscape', 'webkit', 'blink', 'via',
  // platforms, CPUs, legacy Windows noise
  'windows', 'nt', 'win', 'win16', 'win32', 'win64', 'wow64', 'x64', 'x86', 'x86_64', 'i386', 'i686',
  'amd64', 'arm', 'arm64', 'armv7l', 'armv8l', 'aarch64', 'ppc', 'x11', 'linux', 'android', 'macintosh',
  'mac', 'intel', 'cpu', 'os', 'iphone', 'ipad', 'ipod', 'build', 'ubuntu', 'fedora', 'debian', 'cros',
  'kindle', 'touch', 'tablet', 'phone', 'slcc1', 'slcc2', 'media', 'center', 'pc', 'infopath', 'clr',
  'zune', 'sv1', 'wayland', 'freebsd', 'openbsd', 'netbsd', 'sunos',
  // the operating-system part of a GNU host triplet, which GNU tools put in their comment (`Wget/1.21.4 (linux-gnu)`)
  ...GNU_SYSTEM_NAMES,
  // filler words of prose-like headers (`crawl at example dot com`)
  'at', 'dot', 'and', 'or', 'not', 'on', 'in', 'of', 'to', 'the', 'for', 'with', 'by', 'from', 'http', 'https', 'www', 'com',
]);

/** Language codes that browsers put in the platform comment, alone (`en`) or as a locale (`en-US`, `zh_CN`). */
const LANGUAGE_CODES: ReadonlySet<string> = new Set([
  'ar', 'cs', 'da', 'de', 'el', 'en', 'es', 'fi', 'fr', 'he', 'hu', 'id', 'it', 'ja', 'ko', 'nb', 'nl',
  'no', 'pl', 'pt', 'ro', 'ru', 'sk', 'sv', 'th', 'tr', 'uk', 'vi', 'zh',
]);

/**
 * HTTP libraries, frameworks and command-line tools, lower case. When a
 * header names one of these and also a crawler (`python-requests/2.31
 * ExampleBot/1.0`), the crawler's own name is preferred.
 */
export const LIBRARY_NAMES: ReadonlySet<string> = new Set([
  'curl', 'libcurl', 'pycurl', 'wget', 'python-requests', 'python-urllib', 'python-httpx', 'httpx',
  'aiohttp', 'urllib3', 'python', 'go-http-client', 'node-fetch', 'node', 'undici', 'axios', 'got',
  'superagent', 'okhttp', 'java', 'apache-httpclient', 'jakarta', 'commons-httpclient', 'jersey',
  'libwww-perl', 'lwp', 'lwp-trivial', 'www-mechanize', 'mechanize', 'ruby', 'faraday', 'httpie',
  'postmanruntime', 'dalvik', 'cfnetwork', 'darwin', 'scrapy', 'headlesschrome', 'phantomjs', 'guzzle',
  'guzzlehttp', 'php', 'restsharp', 'reqwest', 'hyper', 'nutch', 'heritrix', 'crawler4j', 'stormcrawler',
  'colly', 'deno', 'bun', 'wordpress', 'httpclient',
]);

/** Generic words that mark a comment as the platform comment (`(Linux; Android 10; Pixel 5)`). */
const PLATFORM_WORDS: ReadonlySet<string> = new Set([
  'windows', 'win64', 'win32', 'wow64', 'x64', 'x11', 'linux', 'android', 'macintosh', 'iphone', 'ipad', 'ipod',
  'cpu', 'ubuntu', 'fedora', 'debian', 'cros', 'freebsd', 'openbsd', 'netbsd', 'sunos', 'build',
  ...GNU_SYSTEM_NAMES,
]);

/** Whether a generic word (lower case) names a platform. */
export function isPlatformWord(lowerName: string): boolean {
  return PLATFORM_WORDS.has(lowerName);
}

/** Substrings (lower case) that mark a name as a crawler's own. */
const CRAWLER_MARKERS = ['bot', 'crawl', 'spider', 'slurp'] as const;

/**
 * Nouns that carry a marker but name no one (`Speedy Spider`, `HubSpot
 * Crawler`, `Example robot`): they rank with the other names, unless they
 * are the name of a `name/version` product (`Crawler/3.0`).
 */
const CRAWLER_NOUNS: ReadonlySet<string> = new Set([
  'bot', 'bots', 'robot', 'robots', 'crawl', 'crawler', 'crawlers', 'spider', 'webbot', 'webcrawler', 'web-crawler', 'webspider',
]);

/** Whether a name (lower case) is a bare crawler noun (`spider`, `bot`, `crawler`, ...): a word that names no one alone. */
export function isCrawlerNoun(lowerName: string): boolean {
  return CRAWLER_NOUNS.has(lowerName);
}

/**
 * How a candidate ranks (extension, not in RFC 9309): a crawler's own name
 * first, then other names, HTTP libraries and tools, and last the other
 * names of a platform comment (device models).
 */
export type CandidateKind = 'crawler' | 'other' | 'library' | 'platform';

/**
 * The kind of a name, given in lower case; `isProductName`: it names a
 * `name/version` product.
 */
export function kindOf(lowerName: string, isProductName: boolean): CandidateKind {
  if (LIBRARY_NAMES.has(lowerName)) return 'library';
  if (!isProductName && CRAWLER_NOUNS.has(lowerName)) return 'other';
  for (const marker of CRAWLER_MARKERS) if (lowerName.includes(marker)) return 'crawler';
  return 'other';
}

/**
 * Whether a name (lower case, `[a-z0-9_-]` only) says nothing about the
 * crawler: a generic word, a single character (`U`, `K`, `X`, `N`, `I` in
 * platform comments), a language code or a locale (`en`, `en-US`, `zh_CN`).
 */
export function isGenericName(lowerName: string): boolean {
  if (lowerName.length <= 1 || GENERIC_WORDS.has(lowerName)) return true;
  if (lowerName.length === 2) return LANGUAGE_CODES.has(lowerName);
  const isLocale = lowerName.length === 5 && (lowerName[2] === '-' || lowerName[2] === '_') && isLetters(lowerName, 3, 5);
  return isLocale && LANGUAGE_CODES.has(lowerName.slice(0, 2));
}

/** Whether a name (lower case) reads as a version: no letter at all (`14_7_1`, `008`), or `v` and no further letter (`v2`). */
export function isVersionName(lowerName: string): boolean {
  const from = lowerName.charCodeAt(0) === 0x76 /* v */ && lowerName.length > 1 && isDigit(lowerName.charCodeAt(1)) ? 1 : 0;
  for (let i = from; i < lowerName.length; i++) {
    const c = lowerName.charCodeAt(i);
    if (c >= 0x61 && c <= 0x7a) return false;
  }
  return true;
}

/** Whether `code` is an ASCII digit. */
export function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

function isLetters(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x61 || c > 0x7a) return false;
  }
  return true;
}
