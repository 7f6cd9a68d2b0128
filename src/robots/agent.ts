/**
 * Product tokens from a User-Agent header (RFC 9110 §10.1.5) for choosing a
 * robots.txt group (RFC 9309 §2.2.1). Pure: no I/O, no clock, never throws.
 *
 * Real crawlers send browser-like headers and name themselves in a comment:
 * `Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)`.
 * The header is read as RFC 9110 products (`name/version`) and parenthesised
 * comments (nested, with `\` quoted-pairs) whose items are separated by `;`
 * or `,`. One linear pass, no regular expressions.
 */

/**
 * Only the first this-many UTF-16 code units of a header are read. Published
 * crawler User-Agents are under 300 characters; the cap bounds work and the
 * candidate list for hostile headers. A word or comment item cut by the cap
 * is dropped rather than returned half-read.
 */
export const USER_AGENT_SCAN_LIMIT_CHARS = 2048;

/** At most this many candidates are returned. */
export const MAX_PRODUCT_TOKEN_CANDIDATES = 16;

/**
 * Browser, engine and platform names that say nothing about which crawler is
 * asking, compared lower-cased after the cut to the leading `[A-Za-z_-]` run
 * (so `Win64` is `win`, `x86_64` is `x`, `SLCC2` is `slcc`). Not exhaustive:
 * an unlisted browser name yields a candidate that robots.txt files almost
 * never name, so the caller still ends at the `*` group.
 */
const GENERIC_TOKENS: ReadonlySet<string> = new Set([
  // engines, browsers, UA boilerplate
  'mozilla', 'applewebkit', 'khtml', 'gecko', 'like', 'compatible', 'version', 'mobile',
  'chrome', 'chromium', 'crios', 'safari', 'firefox', 'fxios', 'edge', 'edg', 'edga', 'edgios',
  'opr', 'opera', 'presto', 'trident', 'msie', 'iemobile', 'rv', 'samsungbrowser', 'ucbrowser',
  'yabrowser', 'vivaldi', 'brave', 'silk', 'miuibrowser', 'huaweibrowser', 'oculusbrowser',
  'electron', 'webview', 'wv', 'gsa', 'duckduckgo', 'ddg',
  // platforms and legacy Windows noise
  'windows', 'win', 'wow', 'nt', 'linux', 'android', 'macintosh', 'mac', 'intel', 'ppc', 'cpu',
  'os', 'iphone', 'ipad', 'ipod', 'build', 'u', 'x', 'ubuntu', 'fedora', 'cros', 'kindle', 'arm',
  'touch', 'tablet', 'slcc', 'media', 'infopath', 'zune', 'sv', 'en',
]);

/** Substrings (lower case) that mark a name as a crawler's own; such tokens are preferred. */
const BOT_MARKERS = ['bot', 'crawl', 'spider', 'slurp'] as const;

interface Candidate {
  token: string;
  /** 0 = name looks like a crawler's, 1 = anything else. */
  tier: 0 | 1;
  /** Offset in the header where the product or comment item starts. */
  position: number;
}

interface CommentItem {
  text: string;
  position: number;
}

interface CommentFrame {
  items: CommentItem[];
  current: string;
  currentPosition: number;
}

/**
 * Candidate product tokens, in order of preference, from a User-Agent header value.
 *
 * Candidates come from products (`GPTBot/1.1` gives `GPTBot`) and from comment
 * items. A comment item counts when its comment contains the item
 * `compatible`, or it is one `name/version` word (`(Applebot/0.1; ...)`), or
 * its name contains bot, crawl, spider or slurp; otherwise platform comments
 * such as `(Linux; Android 6.0.1; Nexus 5X Build/MMB29P)` would give device
 * names. An item's name is its first word up to `/`.
 *
 * Each name is cut to its leading `[A-Za-z_-]` run, which is what robots.txt
 * groups are compared against (RFC 9309 §2.2.1): `AhrefsBot/7.0` gives
 * `AhrefsBot`, `MJ12bot` gives `MJ`. Skipped: generic browser and platform
 * names, names containing `.`, `:` or `@` (URLs, host names, e-mail
 * addresses), and empty runs (`+http...`, version numbers).
 *
 * Order (extension, not in RFC 9309): names containing bot, crawl, spider or
 * slurp (case-insensitive, before the cut) first, then the rest; header order
 * within each. Duplicates are dropped case-insensitively, keeping the first
 * spelling. At most {@link MAX_PRODUCT_TOKEN_CANDIDATES} are returned.
 *
 * Only the first {@link USER_AGENT_SCAN_LIMIT_CHARS} characters are read; work
 * is linear in that prefix. Unbalanced parentheses are tolerated: a stray `)`
 * separates words, an unclosed comment ends with the header.
 *
 * Known limits: `Yahoo! Slurp` gives `Yahoo`; a name with a dot such as
 * `Mail.RU_Bot` is skipped as a host name; Google's fallback from
 * `Googlebot-Image` to `Googlebot` is not applied (not in RFC 9309).
 *
 * @param userAgent the header value; a non-string gives `[]`.
 * @returns tokens that each satisfy {@link isValidProductToken}; `[]` when the
 *   header names no crawler (the caller then uses the `*` group). Never throws.
 */
export function extractProductTokens(userAgent: string): string[] {
  if (typeof userAgent !== 'string' || userAgent.length === 0) return [];
  const isTruncated = userAgent.length > USER_AGENT_SCAN_LIMIT_CHARS;
  const text = isTruncated ? userAgent.slice(0, USER_AGENT_SCAN_LIMIT_CHARS) : userAgent;
  const found: Candidate[] = [];
  const stack: CommentFrame[] = [];
  let word = '';
  let wordPosition = 0;

  const flushWord = (): void => {
    if (word.length > 0) addProduct(found, word, wordPosition);
    word = '';
  };

  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const frame = stack[stack.length - 1];
    if (frame === undefined) {
      if (code === 0x28 /* ( */) {
        flushWord();
        stack.push(newFrame());
      } else if (isSpace(code) || code === 0x29 /* ) */) {
        flushWord();
      } else {
        if (word.length === 0) wordPosition = i;
        word += text[i];
      }
      continue;
    }
    if (code === 0x5c /* \ quoted-pair */ && i + 1 < text.length) {
      i++;
      appendToItem(frame, text[i] ?? '', i);
    } else if (code === 0x28 /* ( nested comment */) {
      flushItem(frame);
      stack.push(newFrame());
    } else if (code === 0x29 /* ) */) {
      flushItem(frame);
      stack.pop();
      addCommentItems(found, frame);
    } else if (code === 0x3b /* ; */ || code === 0x2c /* , */) {
      flushItem(frame);
    } else {
      appendToItem(frame, text[i] ?? '', i);
    }
  }

  // The word or item in progress at the cap may be cut mid-name: drop it.
  const innermost = stack[stack.length - 1];
  if (isTruncated) {
    word = '';
    if (innermost !== undefined) innermost.current = '';
  }
  flushWord();
  for (let depth = stack.length - 1; depth >= 0; depth--) {
    const open = stack[depth];
    if (open === undefined) continue;
    flushItem(open);
    addCommentItems(found, open);
  }
  return rankCandidates(found);
}

/**
 * Whether `token` can name a robots.txt group: non-empty and only
 * `[A-Za-z_-]` (RFC 9309 §2.2.1; the reference parser's
 * `RobotsMatcher::IsValidUserAgentToObey`). Pure; never throws.
 */
export function isValidProductToken(token: string): boolean {
  if (typeof token !== 'string' || token.length === 0) return false;
  for (let i = 0; i < token.length; i++) {
    if (!isTokenChar(token.charCodeAt(i))) return false;
  }
  return true;
}

function newFrame(): CommentFrame {
  return { items: [], current: '', currentPosition: 0 };
}

function appendToItem(frame: CommentFrame, char: string, position: number): void {
  if (frame.current.length === 0) frame.currentPosition = position;
  frame.current += char;
}

function flushItem(frame: CommentFrame): void {
  if (frame.current.length > 0) {
    frame.items.push({ text: frame.current, position: frame.currentPosition });
  }
  frame.current = '';
}

/** A top-level product: always a candidate unless filtered out. */
function addProduct(found: Candidate[], word: string, position: number): void {
  const slash = word.indexOf('/');
  addName(found, slash >= 0 ? word.slice(0, slash) : word, position);
}

/** The items of one finished comment, under the acceptance rule of {@link extractProductTokens}. */
function addCommentItems(found: Candidate[], frame: CommentFrame): void {
  const items = frame.items.map((item) => ({ text: trimSpace(item.text), position: item.position }));
  const isCompatible = items.some((item) => item.text.toLowerCase() === 'compatible');
  for (const item of items) {
    if (item.text.length === 0) continue;
    const space = indexOfSpace(item.text);
    const firstWord = space >= 0 ? item.text.slice(0, space) : item.text;
    const slash = firstWord.indexOf('/');
    const name = slash >= 0 ? firstWord.slice(0, slash) : firstWord;
    const isSingleProduct = slash >= 0 && space < 0;
    if (isCompatible || isSingleProduct || looksLikeBot(name)) addName(found, name, item.position);
  }
}

function addName(found: Candidate[], name: string, position: number): void {
  if (name.includes('.') || name.includes(':') || name.includes('@')) return;
  const token = leadingTokenRun(name);
  if (token.length === 0 || GENERIC_TOKENS.has(token.toLowerCase())) return;
  found.push({ token, tier: looksLikeBot(name) ? 0 : 1, position });
}

function rankCandidates(found: Candidate[]): string[] {
  found.sort((a, b) => a.tier - b.tier || a.position - b.position);
  const seen = new Set<string>();
  const tokens: string[] = [];
  for (const candidate of found) {
    const key = candidate.token.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    tokens.push(candidate.token);
    if (tokens.length === MAX_PRODUCT_TOKEN_CANDIDATES) break;
  }
  return tokens;
}

function looksLikeBot(name: string): boolean {
  const lower = name.toLowerCase();
  return BOT_MARKERS.some((marker) => lower.includes(marker));
}

/** The leading `[A-Za-z_-]` run (RFC 9309 §2.2.1). */
function leadingTokenRun(name: string): string {
  let end = 0;
  while (end < name.length && isTokenChar(name.charCodeAt(end))) end++;
  return name.slice(0, end);
}

function isTokenChar(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x2d || code === 0x5f
  );
}

/** SP, HTAB (RFC 9110 RWS) and, leniently, every other control character. */
function isSpace(code: number): boolean {
  return code <= 0x20 || code === 0x7f;
}

function indexOfSpace(text: string): number {
  for (let i = 0; i < text.length; i++) if (isSpace(text.charCodeAt(i))) return i;
  return -1;
}

function trimSpace(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isSpace(text.charCodeAt(start))) start++;
  while (end > start && isSpace(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
}
