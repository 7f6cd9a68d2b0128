/**
 * Product tokens from a User-Agent header (RFC 9110 §10.1.5) for choosing a
 * robots.txt group (RFC 9309 §2.2.1). Pure: no I/O, no clock, never throws.
 *
 * Real crawlers put their name anywhere: as a product (`GPTBot/1.1`), in a
 * `compatible` comment (`(compatible; Googlebot/2.1; +http://...)`), among
 * platform words (`(X11; ExampleScan; Linux x86_64)`), after a vendor word
 * (`(compatible; Example! Crawler/3.0)`), behind a slash
 * (`Example Search/ExampleBot`, `LeadBot/ExampleCrawl/1.0`), as a host name
 * (`ExampleIndex.example/2.0`). So every word of the header is read, and the
 * words that cannot be a crawler's name are left out. One linear pass over
 * the characters, no regular expressions.
 */
import { isCrawlerNoun, isGenericName, isDigit, isPlatformWord, isVersionName, kindOf, type CandidateKind } from './agent-words.js';
import { isName, isNameChar, leadingName } from './product-token.js';

export { isValidProductToken } from './product-token.js';
export type { CandidateKind } from './agent-words.js';

/**
 * Only the first this-many UTF-16 code units of a header are read. Published
 * crawler User-Agents are under 300 characters; the cap bounds work and the
 * candidate list for hostile headers. A word cut by the cap is dropped
 * rather than returned half-read.
 */
export const USER_AGENT_SCAN_LIMIT_CHARS = 2048;

/** At most this many candidates are returned. */
export const MAX_PRODUCT_TOKEN_CANDIDATES = 16;

/** One candidate product token read from a header. */
export interface ProductTokenCandidate {
  /** The name as written in the header: `[A-Za-z0-9_-]+`. */
  token: string;
  /** How it ranks: `crawler` names first, then `other`, `library`, `platform` (see {@link extractProductTokenCandidates}). */
  kind: CandidateKind;
  /** Offset in the header (UTF-16 code units) of the word it comes from. */
  position: number;
}

/**
 * Candidate product tokens, best first, from a User-Agent header value: the
 * names of {@link extractProductTokenCandidates}. Pure; never throws.
 * @returns `[]` when the header names nothing (the caller then uses the `*` group).
 */
export function extractProductTokens(userAgent: string): string[] {
  return extractProductTokenCandidates(userAgent).map((candidate) => candidate.token);
}

/**
 * Candidate product tokens, best first, with their kind.
 *
 * Words: the header is split into products and comments (parenthesised,
 * nested, with `\` quoted-pairs, RFC 9110 §5.6.5); comment items at `;` and
 * `,`; words at whitespace (and at `;` and `,` outside comments too); a
 * word into parts at `/` and `::`. Every part of every word is a candidate
 * name except:
 * - URLs (`://`, `www.`, `http:`, a `host.name/path`), e-mail addresses
 *   (`@`) and `+links`: the whole word is left out, so a name that appears
 *   only inside an address never counts;
 * - the word right after `like` (`like Googlebot`: another crawler's name,
 *   named for resemblance) and a host name right after `via`
 *   (`via images.example ExampleProxy`);
 * - versions: a part after a `/` that holds a digit or a dot (`2.1`,
 *   `7~bl`, `MMB29P`, `W.X.Y.Z`), and names without a letter (`6.0.1`,
 *   `14_7_1`) or `v` and digits (`v2`), except a product named by digits
 *   alone (`008/0.83` names `008`);
 * - generic browser, platform and boilerplate words (Mozilla, AppleWebKit,
 *   KHTML, like, Gecko, Chrome, Safari, Firefox, Version, Mobile, compatible,
 *   Windows, NT, Win64, x64, WOW64, X11, Linux, Android, iPhone, Macintosh,
 *   Intel, CPU, OS, ...), the system part of a GNU host triplet (`linux-gnu`,
 *   `mingw32`: `Wget/1.21.4 (linux-gnu)`), such a word run into its version
 *   (`freebsd14.0`), one-character words (`U`, `K`; not the name of
 *   a `name/version` product, `d/12`) and locale tags.
 *
 * A part's name is its leading `[A-Za-z0-9_-]` run after any leading
 * punctuation (see product-token.ts): `Example!` gives `Example`, a
 * domain-style name gives the part before its first dot
 * (`ExampleIndex.example/2.0` gives `ExampleIndex`), `MJ12bot` stays whole.
 * A name run straight into a dotted version, no `/` between
 * (`trendictionbot0.5.0`, `larbin_2.6.3`), gives the whole name and, right
 * after it, the name without the version (`trendictionbot0`, then
 * `trendictionbot`): sites write the latter after `User-agent:`.
 *
 * Order (extension, not in RFC 9309), the rule that picks when a robots.txt
 * file names several candidates: first the names that look like a
 * crawler's own (containing bot, crawl, spider or slurp, except the bare
 * nouns Bot, Robot, Crawler, Spider, ... unless they name a `name/version`
 * product: `Speedy Spider` is Speedy's), then other names, then HTTP
 * libraries and tools (python-requests, curl, Go-http-client, Scrapy, ...),
 * then the other names of a platform comment, one that holds a platform
 * word such as Linux, Windows or X11 (device models: `Nexus 5X`); header
 * order within each kind. So `python-requests/2.31 ExampleBot/1.0` gives
 * `ExampleBot` before `python-requests`. Duplicates are dropped
 * case-insensitively, keeping the best-ranked spelling. At most
 * {@link MAX_PRODUCT_TOKEN_CANDIDATES} are returned.
 *
 * A header that is one bare name and nothing else (`a`, `U`, `Chrome`,
 * `008`; surrounding whitespace aside) gives that name, whatever the word
 * lists say: the filters are for words among others, and such a header is
 * what a test harness or a tool configured with only its product token
 * sends (robots-parser's tests ask for `c`'s group as agent `c`).
 *
 * Bounds: only the first {@link USER_AGENT_SCAN_LIMIT_CHARS} characters are
 * read; each is looked at a constant number of times, so the work is linear
 * in that prefix. Unbalanced parentheses are tolerated: a stray `)`
 * separates words, an unclosed comment ends with the header.
 *
 * Known limits: words of prose in a header (`Single Page link check`) are
 * candidates too; they matter only when a robots.txt file names them. A
 * domain-style name whose own name is not its first label
 * (`image.coccoc/1.0`) gives the first label (`image`), as a `User-agent:
 * image.coccoc` line does. Google's fallback from `Googlebot-Image` to
 * `Googlebot` is not applied (not in RFC 9309).
 *
 * @param userAgent the header value; a non-string gives `[]`.
 * @returns candidates whose tokens are `[A-Za-z0-9_-]+` and distinct
 *   case-insensitively. Never throws.
 */
export function extractProductTokenCandidates(userAgent: string): ProductTokenCandidate[] {
  if (typeof userAgent !== 'string' || userAgent.length === 0) return [];
  const isTruncated = userAgent.length > USER_AGENT_SCAN_LIMIT_CHARS;
  const text = isTruncated ? userAgent.slice(0, USER_AGENT_SCAN_LIMIT_CHARS) : userAgent;
  const ranked = rank(collectCandidates(text, isTruncated));
  if (ranked.length > 0 || isTruncated) return ranked;
  // A header that is one bare name and nothing else (`a`, `U`, `Chrome`, `008`) names its sender:
  // the filters that keep such words out of a browser's platform comment do not apply to it.
  const start = text.length - text.trimStart().length;
  const name = text.trim();
  return isName(name) ? [{ token: name, kind: 'other', position: start }] : ranked;
}

/** A candidate while the header is read: the comment it came from decides whether it is a platform word. */
interface Found extends ProductTokenCandidate {
  /** Innermost comment the word is in (numbered from 0 in header order), or -1 outside comments. */
  comment: number;
}

/** The state of one read of a header. */
interface Reading {
  found: Found[];
  /** The comment being read, or -1. */
  comment: number;
  /** Comments that hold a platform word (`Linux`, `Windows`, `X11`, ...). */
  platformComments: Set<number>;
  /** Header offset of the first of the bare names right before the word being read, in its item (`Sogou` before `web spider/4.0`), or -1. */
  nameRunStart: number;
}

/** Splits `text` into words and feeds each to {@link addWord}. No closures: the loop's state stays in registers. */
function collectCandidates(text: string, isTruncated: boolean): Found[] {
  const reading: Reading = { found: [], comment: -1, platformComments: new Set(), nameRunStart: -1 };
  const open: number[] = [];
  let comments = 0;
  let wordStart = -1;
  let hasQuotedPair = false;
  let previous: PreviousWord = 'other';
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x5c /* \ */ && open.length > 0 && i + 1 < text.length) {
      if (wordStart < 0) wordStart = i;
      hasQuotedPair = true;
      i++;
    } else if (code === 0x28 /* ( */ || code === 0x29 /* ) */ || code === 0x3b /* ; */ || code === 0x2c /* , */) {
      if (wordStart >= 0) addWord(reading, wordOf(text, wordStart, i, hasQuotedPair), wordStart, previous);
      wordStart = -1;
      hasQuotedPair = false;
      previous = 'other';
      reading.nameRunStart = -1;
      if (code === 0x28) open.push(comments++);
      else if (code === 0x29) open.pop();
      reading.comment = open.length > 0 ? (open[open.length - 1] ?? -1) : -1;
    } else if (code <= 0x20 || code === 0x7f) {
      // SP, HTAB (RFC 9110 RWS) and, leniently, every other control character.
      if (wordStart >= 0) {
        const word = wordOf(text, wordStart, i, hasQuotedPair);
        addWord(reading, word, wordStart, previous);
        previous = previousWordOf(word);
        if (previous !== 'name') reading.nameRunStart = -1;
        else if (reading.nameRunStart < 0) reading.nameRunStart = wordStart;
      }
      wordStart = -1;
      hasQuotedPair = false;
    } else if (wordStart < 0) {
      wordStart = i;
    }
  }
  // The word in progress at the cap may be cut mid-name: drop it.
  if (!isTruncated && wordStart >= 0) addWord(reading, wordOf(text, wordStart, text.length, hasQuotedPair), wordStart, previous);
  for (const candidate of reading.found) {
    if (candidate.kind === 'other' && reading.platformComments.has(candidate.comment)) candidate.kind = 'platform';
  }
  return reading.found;
}

function wordOf(text: string, start: number, end: number, hasQuotedPair: boolean): string {
  const raw = text.slice(start, end);
  return hasQuotedPair ? unquote(raw) : raw;
}

/**
 * The word before, when it changes how a word reads: after `like` comes
 * another crawler's name (`like Googlebot`, `like FeedFetcher-Google`: a
 * claim of resemblance, not the sender's name); after `via`, the host a
 * request passed through (`via images.example ExampleImageProxy`); after a
 * bare name (`name`: only `[A-Za-z0-9_-]`, not a generic word), a product
 * whose name is a crawler noun ends a name of several words (`Sogou web
 * spider/4.0`, `Screaming Frog SEO Spider/19.4`), which is named by its
 * first word, as the reference reads such a header and a `User-agent:` line:
 * the noun and the words between are no names of their own.
 */
type PreviousWord = 'like' | 'via' | 'name' | 'other';

function previousWordOf(word: string): PreviousWord {
  const lower = word.toLowerCase();
  if (lower === 'like') return 'like';
  if (lower === 'via') return 'via';
  return isName(word) && !isGenericName(lower) && !isVersionName(lower) ? 'name' : 'other';
}

/** Removes the `\` of each quoted-pair (RFC 9110 §5.6.5). */
function unquote(raw: string): string {
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    if (raw.charCodeAt(i) === 0x5c && i + 1 < raw.length) i++;
    out += raw[i];
  }
  return out;
}

/** Adds the names of one word, unless the word is an address (see {@link extractProductTokenCandidates}). */
function addWord(reading: Reading, word: string, position: number, previous: PreviousWord): void {
  if (previous === 'like') return;
  if (word.charCodeAt(0) === 0x2b /* + */ || word.includes('@') || word.includes('://')) return;
  if (startsWithFolded(word, 'www.') || startsWithFolded(word, 'http:') || startsWithFolded(word, 'https:') || startsWithFolded(word, 'mailto:')) return;
  let partStart = 0;
  let separator: 'none' | 'slash' | 'colons' = 'none';
  for (let i = 0; i <= word.length; i++) {
    const code = i < word.length ? word.charCodeAt(i) : -1;
    const isSlash = code === 0x2f;
    const isDoubleColon = code === 0x3a && word.charCodeAt(i + 1) === 0x3a;
    if (code !== -1 && !isSlash && !isDoubleColon) continue;
    const part = word.slice(partStart, i);
    // `host.example/path` and the host after `via` are addresses, not names.
    if (partStart === 0 && part.includes('.') && (previous === 'via' || (isSlash && !startsVersion(word, i + 1)))) return;
    addPart(reading, part, position + partStart, separator === 'slash', separator === 'none' && isSlash, partStart === 0 && previous === 'name');
    separator = isSlash ? 'slash' : 'colons';
    if (isDoubleColon) i++;
    partStart = i + 1;
  }
}

/**
 * Adds the name of one part of a word. `isVersionPosition`: the part follows
 * a `/`; `isProductName`: it is the name of a `name/version` product (not a
 * part after `::`, which names a module: `Example::Fetcher/0.01`);
 * `endsLongerName`: a bare name stands right before it in the same item, so
 * a crawler noun naming the product here ends a longer name (`Sogou web
 * spider/4.0`): it and the names between the first and it (`web`) are left
 * out, as the reference reads the name (`Sogou`): `User-agent: spider` and
 * `User-agent: Web Image Collector` are not written for Sogou.
 */
function addPart(reading: Reading, part: string, position: number, isVersionPosition: boolean, isProductName: boolean, endsLongerName: boolean): void {
  if (part.length === 0) return;
  if (isVersionPosition && hasDigitOrDot(part)) return;
  let start = 0;
  // Leading quotes and brackets (`[en]`, `"Foo"`), but not a dot: `.NET` names nothing.
  while (start < part.length && !isNameChar(part.charCodeAt(start)) && part.charCodeAt(start) !== 0x2e) start++;
  const rest = start === 0 ? part : part.slice(start);
  const name = leadingName(rest);
  if (name.length === 0) return;
  const lower = name.toLowerCase();
  if (isVersionName(lower) && !(isProductName && isDigits(lower))) return;
  // A one-character name is platform noise (`U`, `K`) unless it names a `name/version` product (`d/12`).
  if (endsLongerName && isProductName && isCrawlerNoun(lower)) {
    dropNamesAfter(reading, reading.nameRunStart, position);
    return;
  }
  if (isGenericName(lower) && !(isProductName && lower.length === 1)) {
    if (reading.comment >= 0 && isPlatformWord(lower)) reading.platformComments.add(reading.comment);
    return;
  }
  const stem = gluedVersionStem(rest, name);
  const stemLower = stem === undefined ? undefined : stem.toLowerCase();
  // A platform or generic word run into its version (`freebsd14.0` in `Wget/1.21 (freebsd14.0)`) is that word.
  if (stemLower !== undefined && !isVersionName(stemLower) && isGenericName(stemLower)) {
    if (reading.comment >= 0 && isPlatformWord(stemLower)) reading.platformComments.add(reading.comment);
    return;
  }
  // A library's name run into its version (`darwin23.2.0`) ranks as the library: after a tool that names itself.
  const stemKind = stemLower === undefined ? undefined : kindOf(stemLower, isProductName);
  reading.found.push({ token: name, kind: stemKind === 'library' ? stemKind : kindOf(lower, isProductName), position, comment: reading.comment });
  if (stem === undefined || stemLower === undefined) return;
  if (isVersionName(stemLower)) return;
  // Right after the whole name (same kind and position; the sort is stable), so a group written for the
  // whole name (`User-agent: Twiceler-0.9` reads `Twiceler-0`) still wins over one for the stem.
  reading.found.push({ token: stem, kind: kindOf(stemLower, isProductName), position, comment: reading.comment });
}

/** Removes the candidates read from header offsets `after` < offset < `before` (the inner words of a longer name). */
function dropNamesAfter(reading: Reading, after: number, before: number): void {
  let kept = 0;
  for (const found of reading.found) {
    if (found.position > after && found.position < before) continue;
    reading.found[kept++] = found;
  }
  reading.found.length = kept;
}

/**
 * The name without the version glued to it, when `rest` (a part of a word, from its name on) is a
 * name run straight into a dotted version with no `/` between (`trendictionbot0.5.0`,
 * `larbin_2.6.2`, `Twiceler-0.9`, `NaverBot-1.0`): the name's trailing digits, then a trailing `-`
 * or `_`, dropped (`trendictionbot`, `larbin`, `Twiceler`, `NaverBot`); the name read whole
 * (`trendictionbot0`) is named by no robots.txt. Only when a `.` and a digit follow the name's
 * trailing digits: `MJ12bot`, `360Spider` and `Nokia6230i` keep their digits (product-token.ts).
 * @returns the stem (the name itself when nothing was dropped: a duplicate, which ranking drops), or
 *   undefined when there is no glued version or one character or none is left.
 */
function gluedVersionStem(rest: string, name: string): string | undefined {
  const after = name.length;
  if (after + 1 >= rest.length || rest.charCodeAt(after) !== 0x2e /* . */ || !isDigit(rest.charCodeAt(after + 1))) return undefined;
  let end = after;
  while (end > 0 && isDigit(name.charCodeAt(end - 1))) end--;
  while (end > 0 && (name.charCodeAt(end - 1) === 0x2d /* - */ || name.charCodeAt(end - 1) === 0x5f /* _ */)) end--;
  return end > 1 ? name.slice(0, end) : undefined;
}

const KIND_ORDER: Readonly<Record<CandidateKind, number>> = { crawler: 0, other: 1, library: 2, platform: 3 };

/** Best first (kind, then header order), distinct case-insensitively, capped. */
function rank(found: readonly Found[]): ProductTokenCandidate[] {
  const sorted = [...found].sort((a, b) => KIND_ORDER[a.kind] - KIND_ORDER[b.kind] || a.position - b.position);
  const seen = new Set<string>();
  const ranked: ProductTokenCandidate[] = [];
  for (const { token, kind, position } of sorted) {
    const key = token.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    ranked.push({ token, kind, position });
    if (ranked.length === MAX_PRODUCT_TOKEN_CANDIDATES) break;
  }
  return ranked;
}

/** A version starts at `word[at]`: a digit, or `v` and a digit. */
function startsVersion(word: string, at: number): boolean {
  const code = word.charCodeAt(at);
  if (isDigit(code)) return true;
  return (code === 0x76 || code === 0x56) && isDigit(word.charCodeAt(at + 1));
}

function hasDigitOrDot(part: string): boolean {
  for (let i = 0; i < part.length; i++) {
    const code = part.charCodeAt(i);
    if (code === 0x2e || isDigit(code)) return true;
  }
  return false;
}

function isDigits(lower: string): boolean {
  for (let i = 0; i < lower.length; i++) if (!isDigit(lower.charCodeAt(i))) return false;
  return true;
}

/** Whether `text` starts with `prefix` (lower case ASCII), ignoring case. */
function startsWithFolded(text: string, prefix: string): boolean {
  if (text.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) {
    if ((text.charCodeAt(i) | 0x20) !== prefix.charCodeAt(i) && text.charCodeAt(i) !== prefix.charCodeAt(i)) return false;
  }
  return true;
}
