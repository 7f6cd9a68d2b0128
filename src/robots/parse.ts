/**
 * robots.txt bytes -> {@link RobotsTxt} (RFC 9309 §2.2), reading real files as
 * leniently as the reference parser (github.com/google/robotstxt). Pure: no
 * I/O, no clock. Never throws, whatever the bytes.
 */
import { indexHtmlSlash, normalisePattern, patternPriority } from './encoding.js';
import { leadingName } from './product-token.js';
import type { Group, MergedGroup, ParseWarning, RequestRate, RobotsTxt, Rule } from './types.js';

/** RFC 9309 §2.5: "a parsing limit MUST be at least 500 kibibytes". */
export const DEFAULT_MAX_ROBOTS_BYTES = 500 * 1024;

/**
 * Longest line kept, in octets; the rest of a longer line is ignored. The
 * reference keeps 2083 * 8 - 1 octets ("many times the max URL length").
 */
export const MAX_LINE_OCTETS = 2083 * 8 - 1;

/** Line warnings kept per file; a garbage body must not cost unbounded memory (the rest are counted). */
const MAX_WARNINGS = 100;

/** Longest message of a warning, chars: a quoted value is cut so that 100 warnings stay small. */
const MAX_WARNING_CHARS = 240;

/** Octets of a value quoted in a warning; the rest is elided. */
const MAX_QUOTED_OCTETS = 64;

/**
 * Default ceiling of a crawl-delay, seconds (24 h): the proxy's `pacing.maxCrawlDelay` default.
 * A longer or infinite crawl-delay is clamped to the ceiling, never dropped.
 */
export const DEFAULT_MAX_CRAWL_DELAY_SECONDS = 86_400;

/** Options of {@link parseRobotsTxt}. */
export interface ParseOptions {
  /**
   * Octets parsed; content beyond is ignored and the result marked truncated.
   * A line cut by the limit is dropped whole. @default 512000 (500 KiB, RFC 9309 §2.5)
   */
  maxBytes?: number;
  /**
   * Longest crawl-delay recorded, seconds (finite, > 0; another value gives the default). A larger value, or an
   * infinite one (`inf`, `Infinity`, a number too large for a double), is
   * recorded as this ceiling with a `crawl-delay-clamped` warning: the site
   * asked for the most restraint, so it is never dropped. The same ceiling
   * bounds the interval a `request-rate` implies. @default 86400 (24 h)
   */
  maxCrawlDelaySeconds?: number;
}

type Directive = 'user-agent' | 'allow' | 'disallow' | 'sitemap' | 'crawl-delay' | 'request-rate' | 'unknown';

/**
 * Parses a robots.txt body.
 *
 * - Input: the raw body (bytes), or a string, taken as UTF-8.
 * - Lines end at LF, CRLF or a lone CR; a NUL ends the line's content; a
 *   UTF-8 byte order mark (or a prefix of one) at the very start is skipped.
 * - `#` starts a comment anywhere. Keys are case-insensitive and accept the
 *   reference's typos (`useragent`, `user agent`, `disalow`, `dissallow`, ...);
 *   a line without a colon is accepted when it holds exactly two tokens
 *   separated by spaces and tabs (a `\v` or `\f` between them makes a third,
 *   as the reference reads it: `Disallow \v /a` is no rule).
 * - Groups (§2.2.1): `user-agent` lines open a group; the group is closed by
 *   the first `user-agent` line after an `allow`/`disallow`. Blank lines,
 *   comments, sitemaps and unknown lines do not end a group.
 * - `crawl-delay` (extension, §2.2.4): decimal seconds, fractions and an
 *   exponent included (`10`, `0.5`, `1e3`), or infinite (`inf`, `Infinity`),
 *   as Python's `float()` reads it (Protego, Scrapy's parser); values above
 *   `maxCrawlDelaySeconds` are clamped to it with a warning. A negative, NaN
 *   or unparsable value is ignored with an `invalid-crawl-delay` warning (as
 *   urllib.robotparser ignores it: no crawler waits a negative time).
 *   It does not end a group either (so the rules stay the reference's), but
 *   it applies only to the `user-agent` lines just before it: in
 *   `User-agent: A / Crawl-delay: 5 / User-agent: B / Disallow: /x`, A and B
 *   share `Disallow: /x` and only A has the 5 s delay;
 *   `request-rate` (extension, not in RFC 9309): `n/seconds[smhd]`; the
 *   interval it implies (seconds / n) is clamped to `maxCrawlDelaySeconds`.
 *   Like crawl-delay, it applies only to the `user-agent` lines just before
 *   it (as urllib.robotparser and Protego read it): in `User-agent: one /
 *   Request-rate: 1/10s / User-agent: two / Disallow: /`, two has no rate.
 * - Warnings: at most 100 line warnings are kept (then one
 *   `too-many-warnings` counts the rest); whole-body warnings (`truncated`,
 *   `looks-like-html`, `looks-binary`) are always kept.
 *
 * Pure; never throws.
 */
export function parseRobotsTxt(body: Uint8Array | string, options: ParseOptions = {}): RobotsTxt {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_ROBOTS_BYTES;
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const truncated = bytes.length > maxBytes;
  const parsedBytes = truncated ? bytes.subarray(0, maxBytes) : bytes;
  // latin1: one char per octet, so pattern lengths are octet counts (§2.2.2).
  const text = Buffer.from(parsedBytes.buffer, parsedBytes.byteOffset, parsedBytes.byteLength).toString('latin1');

  const ceiling = options.maxCrawlDelaySeconds;
  const builder = new RobotsBuilder(ceiling !== undefined && Number.isFinite(ceiling) && ceiling > 0 ? ceiling : DEFAULT_MAX_CRAWL_DELAY_SECONDS);
  let lineNumber = 0;
  let start = skipBom(text);
  noteBodyKind(builder, text, start);
  const n = text.length;
  let i = start;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x0a || c === 0x0d) {
      builder.line(++lineNumber, text, start, i);
      if (c === 0x0d && i + 1 < n && text.charCodeAt(i + 1) === 0x0a) i++;
      start = i + 1;
    }
    i++;
  }
  // The last line: dropped when the limit cut it, since its end is unknown.
  if (!truncated || start === n) builder.line(++lineNumber, text, start, n);
  if (truncated) builder.note(lineNumber, 'truncated', `robots.txt is longer than ${maxBytes} bytes; the rest is ignored (RFC 9309 §2.5)`);
  return builder.finish(lineNumber, parsedBytes.length, truncated);
}

/** Chars of the body's start inspected for HTML or binary content. */
const SNIFF_CHARS = 1024;

/** An HTML or XML document's first tag: no robots.txt line starts so. */
const MARKUP_START = /^<(?:!doctype|\?xml|!--|(?:html|head|body|title|meta|link|script|style|div|span|p|a|br|hr|h[1-6]|table|center|iframe|form)[\s>/])/i;
/** A line of the first {@link SNIFF_CHARS} that opens an HTML page (one after a PHP notice, say). */
const HTML_LINE = /(?:^|[\r\n])[ \t]*<(?:!doctype\s+html|html[\s>]|head>|body[\s>])/i;

/**
 * Adds the whole-body warnings: `looks-like-html` when the body is an HTML
 * (or XML) page, as a soft 404 or a login page served for /robots.txt is;
 * `looks-binary` when its start holds NUL or many control octets (an image,
 * a compressed body, UTF-16). Either way the body is still read as robots.txt
 * (its lines that are not records are ignored, as the reference does).
 */
function noteBodyKind(builder: RobotsBuilder, text: string, start: number): void {
  const head = text.slice(start, start + SNIFF_CHARS);
  const trimmed = head.replace(/^[\s]+/, '');
  if (MARKUP_START.test(trimmed) || HTML_LINE.test(head)) {
    builder.note(0, 'looks-like-html', 'the body looks like an HTML or XML page, not a robots.txt; only its lines that are robots.txt records count');
  }
  let controls = 0;
  for (let i = 0; i < head.length; i++) {
    const c = head.charCodeAt(i);
    if (c === 0 || (c < 0x20 && !isSpace(c)) || c === 0x7f) controls++;
  }
  if (controls > 0 && (head.includes('\0') || controls * 32 > head.length)) {
    builder.note(0, 'looks-binary', `the body looks binary (${controls} control octets in its first ${head.length}); a NUL ends a line's content`);
  }
}

/** Index after a UTF-8 BOM, or after the part of one the body starts with. */
function skipBom(text: string): number {
  const bom = [0xef, 0xbb, 0xbf];
  let i = 0;
  while (i < bom.length && i < text.length && text.charCodeAt(i) === bom[i]) i++;
  return i;
}

function isSpace(code: number): boolean {
  // absl::ascii_isspace: space, \t, \n, \v, \f, \r.
  return code === 0x20 || (code >= 0x09 && code <= 0x0d);
}

/** The keys as RFC 9309 §2.2 and the extensions spell them (lower case): any other spelling {@link classifyKey} accepts is a `lenient-key` warning. */
const CANONICAL_KEYS: ReadonlySet<string> = new Set(['user-agent', 'allow', 'disallow', 'sitemap', 'crawl-delay', 'request-rate']);

/** Recognises a key (lower case), with the reference's typos (RFC 9309 §2.2; reference ParsedRobotsKey). */
function classifyKey(k: string): Directive {
  if (k.startsWith('user-agent') || k.startsWith('useragent') || k.startsWith('user agent')) return 'user-agent';
  if (k.startsWith('allow')) return 'allow';
  if (
    k.startsWith('disallow') ||
    k.startsWith('dissallow') ||
    k.startsWith('dissalow') ||
    k.startsWith('disalow') ||
    k.startsWith('diasllow') ||
    k.startsWith('disallaw')
  ) {
    return 'disallow';
  }
  if (k.startsWith('sitemap') || k.startsWith('site-map')) return 'sitemap';
  if (k === 'crawl-delay' || k === 'crawldelay' || k === 'crawl delay' || k === 'crawl_delay') return 'crawl-delay';
  if (k === 'request-rate' || k === 'requestrate' || k === 'request rate') return 'request-rate';
  return 'unknown';
}

/** A decimal number, sign, fraction and exponent optional: `10`, `0.05`, `.5`, `2.`, `1e3`, `+5`, `-1`. */
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;
/** Infinity, spelt as Python's `float()` (and C's `strtod`) accept it. */
const INFINITE = /^[+-]?inf(?:inity)?$/i;
/** `1/5`, `1/5s`, `3/1m`, `10/1h`, `1/1d` (extension). */
const RATE = /^(\d+)\s*\/\s*(\d+(?:\.\d+)?)\s*([smhd]?)\b/i;

/** Accumulates lines into groups. One instance per parse. */
class RobotsBuilder {
  private readonly groups: Group[] = [];
  private readonly sitemaps: string[] = [];
  private readonly warnings: ParseWarning[] = [];
  private current: Group | undefined;
  /** True once the current group has an allow/disallow: the next user-agent opens a new group. */
  private hasRules = false;
  /** Lower-cased tokens of the latest run of consecutive user-agent lines: what a crawl-delay applies to. */
  private runTokens: string[] = [];
  /** True while the previous record was a user-agent line (the run is still growing). */
  private isRunOpen = false;
  /** Line warnings kept so far, and those past {@link MAX_WARNINGS} that were only counted. */
  private lineWarnings = 0;
  private droppedWarnings = 0;

  /** @param maxCrawlDelaySeconds the crawl-delay ceiling (see {@link ParseOptions}). */
  constructor(private readonly maxCrawlDelaySeconds: number) {}

  /** Records a warning about one line; past {@link MAX_WARNINGS} of them, only counts it. */
  warn(line: number, code: string, message: string): void {
    if (this.lineWarnings >= MAX_WARNINGS) {
      this.droppedWarnings++;
      return;
    }
    this.lineWarnings++;
    this.note(line, code, message);
  }

  /** Records a warning about the whole body (few per file): always kept. */
  note(line: number, code: string, message: string): void {
    const text = message.length > MAX_WARNING_CHARS ? `${message.slice(0, MAX_WARNING_CHARS - 1)}…` : message;
    this.warnings.push({ line, code, message: text });
  }

  /** Parses one line, `text[start, end)`, and records it. */
  line(lineNumber: number, text: string, start: number, end: number): void {
    if (end - start > MAX_LINE_OCTETS) {
      this.warn(lineNumber, 'line-too-long', `line longer than ${MAX_LINE_OCTETS} bytes; the rest of it is ignored`);
      end = start + MAX_LINE_OCTETS;
    }
    let raw = text.slice(start, end);
    const nul = raw.indexOf('\0');
    if (nul !== -1) raw = raw.slice(0, nul);
    const hash = raw.indexOf('#');
    if (hash !== -1) raw = raw.slice(0, hash);
    const line = trim(raw);
    if (line.length === 0) return;

    let sep = line.indexOf(':');
    let valueStart: number;
    const hasColon = sep !== -1;
    if (sep === -1) {
      // Reference leniency: "key value" without a colon, exactly two tokens, split by spaces and tabs only: a
      // \v or \f after the separator starts a third token (the reference skips " \t" there, strspn), so
      // `Disallow \v /a` is no rule.
      sep = findSpace(line, 0);
      if (sep === -1) return this.warn(lineNumber, 'invalid-line', 'line has no key and value');
      valueStart = sep;
      while (valueStart < line.length && isBlank(line.charCodeAt(valueStart))) valueStart++;
      if (findSpace(line, valueStart) !== -1) return this.warn(lineNumber, 'invalid-line', 'line has no colon and more than two tokens');
    } else {
      valueStart = sep + 1;
    }
    const key = trim(line.slice(0, sep));
    if (key.length === 0) return this.warn(lineNumber, 'invalid-line', 'line has an empty key');
    const value = trim(line.slice(valueStart));
    const lowerKey = key.toLowerCase();
    const directive = classifyKey(lowerKey);
    // Read as the reference matcher reads it, but not as written: said, so the operator can mend it.
    if (directive !== 'unknown' && (!hasColon || !CANONICAL_KEYS.has(lowerKey))) {
      const how = hasColon ? `the key "${shown(key)}"` : `"${shown(key)}" without a colon`;
      this.warn(lineNumber, 'lenient-key', `${how} read as ${directive}, as the reference matcher reads it; write "${directive}:"`);
    }
    this.record(lineNumber, directive, key, value);
  }

  private record(line: number, directive: Directive, key: string, value: string): void {
    const wasRunOpen = this.isRunOpen;
    this.isRunOpen = directive === 'user-agent';
    switch (directive) {
      case 'user-agent': {
        if (this.current === undefined || this.hasRules) {
          this.current = { productTokens: [], rules: [], crawlDelaySeconds: undefined, crawlDelayByToken: new Map(), requestRate: undefined, requestRateByToken: new Map(), line };
          this.groups.push(this.current);
          this.hasRules = false;
          this.runTokens = [];
        } else if (!wasRunOpen) {
          this.runTokens = [];
        }
        const token = productTokenOf(value);
        if (token.length === 0) this.warn(line, 'invalid-user-agent', `user-agent value "${utf8(value)}" names no product token`);
        else {
          this.current.productTokens.push(token);
          this.runTokens.push(token.toLowerCase());
        }
        return;
      }
      case 'allow':
      case 'disallow': {
        if (this.current === undefined) return this.warn(line, 'rule-outside-group', `${directive} before any user-agent line is ignored`);
        this.hasRules = true;
        const pattern = normalisePattern(value);
        const rule: Rule = { kind: directive, pattern, priority: patternPriority(value), line };
        // `/d/index.html` also allows `/d/`, as the pattern `/d/$` of the reference, whose priority is
        // counted on the text as written up to the same `/` (normalising never adds or drops a `/`).
        if (directive === 'allow' && indexHtmlSlash(pattern) !== -1) rule.directoryPriority = patternPriority(value.slice(0, value.lastIndexOf('/') + 1)) + 1;
        this.current.rules.push(rule);
        return;
      }
      case 'sitemap':
        if (value.length > 0) this.sitemaps.push(utf8(value));
        return;
      case 'crawl-delay': {
        if (this.current === undefined) return this.warn(line, 'rule-outside-group', 'crawl-delay before any user-agent line is ignored');
        let seconds = parseSeconds(value);
        if (!(seconds >= 0)) return this.warn(line, 'invalid-crawl-delay', `crawl-delay "${shown(value)}" is not a non-negative number of seconds; ignored`);
        if (seconds > this.maxCrawlDelaySeconds) {
          this.warn(line, 'crawl-delay-clamped', `crawl-delay "${shown(value)}" is longer than the ${this.maxCrawlDelaySeconds} s ceiling; ${this.maxCrawlDelaySeconds} s applies`);
          seconds = this.maxCrawlDelaySeconds;
        }
        this.current.crawlDelaySeconds = Math.max(this.current.crawlDelaySeconds ?? 0, seconds);
        for (const token of this.runTokens) {
          this.current.crawlDelayByToken.set(token, Math.max(this.current.crawlDelayByToken.get(token) ?? 0, seconds));
        }
        return;
      }
      case 'request-rate': {
        if (this.current === undefined) return this.warn(line, 'rule-outside-group', 'request-rate before any user-agent line is ignored');
        const rate = parseRequestRate(value);
        if (rate === undefined) return this.warn(line, 'invalid-request-rate', `request-rate "${shown(value)}" is not of the form n/seconds with n >= 1 and seconds > 0; ignored`);
        // One request per more than the ceiling: clamp the period, as for crawl-delay.
        if (!(rate.seconds / rate.requests <= this.maxCrawlDelaySeconds)) {
          this.warn(line, 'request-rate-clamped', `request-rate "${shown(value)}" asks for more than ${this.maxCrawlDelaySeconds} s per request; 1/${this.maxCrawlDelaySeconds} applies`);
          return this.setRequestRate(this.current, { requests: 1, seconds: this.maxCrawlDelaySeconds });
        }
        return this.setRequestRate(this.current, rate);
      }
      case 'unknown':
        return this.warn(line, 'unknown-directive', `unknown directive "${shown(key)}" ignored`);
    }
  }

  /** Records request-rate `rate` on `group` and on each token of the `user-agent` lines just before it, unless one is recorded there already (the first applies). */
  private setRequestRate(group: Group, rate: RequestRate): void {
    group.requestRate ??= rate;
    for (const token of this.runTokens) {
      if (!group.requestRateByToken.has(token)) group.requestRateByToken.set(token, rate);
    }
  }

  finish(lineCount: number, bytesParsed: number, truncated: boolean): RobotsTxt {
    if (this.droppedWarnings > 0) this.note(0, 'too-many-warnings', `${this.droppedWarnings} more line warnings were not kept (at most ${MAX_WARNINGS} are)`);
    return {
      groups: this.groups,
      groupsByToken: mergeGroups(this.groups),
      sitemaps: this.sitemaps,
      warnings: this.warnings,
      lineCount,
      bytesParsed,
      truncated,
    };
  }
}

/**
 * The product token a `user-agent` value names: `*` when it is `*` alone or
 * followed by whitespace (reference), else its whole leading name, the
 * `[A-Za-z0-9_-]` run (see product-token.ts), possibly empty:
 * `Googlebot/2.1` and `Foo Bar` name `Googlebot` and `Foo` as in the
 * reference parser; `MJ12bot` names `MJ12bot` and `008` names `008`, where
 * the reference would cut to `MJ` and to nothing (RFC 9309 §2.2.1 allows
 * only letters, `-` and `_`; reading digits too keeps crawlers apart).
 */
export function productTokenOf(value: string): string {
  if (value.charCodeAt(0) === 0x2a && (value.length === 1 || isSpace(value.charCodeAt(1)))) return '*';
  return leadingName(value);
}

/**
 * Seconds from a crawl-delay value: a decimal number (sign, fraction and
 * exponent allowed; too large for a double gives Infinity) or an infinity.
 * @returns the number (possibly negative or infinite), or NaN when the value is not a number.
 */
function parseSeconds(value: string): number {
  if (NUMBER.test(value)) return Number(value);
  if (INFINITE.test(value)) return value.startsWith('-') ? -Infinity : Infinity;
  return NaN;
}

/** Units of a request-rate period, in seconds. */
const RATE_UNIT_SECONDS: Readonly<Record<string, number>> = { '': 1, s: 1, m: 60, h: 3600, d: 86_400 };

/**
 * Parses `n/seconds` with an optional `s`, `m`, `h` or `d` unit (extension, not in RFC 9309).
 * @returns undefined unless `n` is a finite integer >= 1 and the period is > 0 (possibly
 *   infinite: the caller clamps it); a rate with more requests than a double holds allows
 *   anything, so ignoring it loses no restraint.
 */
function parseRequestRate(value: string): RequestRate | undefined {
  const m = RATE.exec(value);
  if (m === null) return undefined;
  const requests = Number(m[1]);
  const seconds = Number(m[2]) * (RATE_UNIT_SECONDS[(m[3] ?? '').toLowerCase()] ?? 1);
  if (!Number.isFinite(requests) || !(requests >= 1) || !(seconds > 0)) return undefined;
  return { requests, seconds };
}

/**
 * Merges the groups that name the same product token, case-insensitively
 * (RFC 9309 §2.2.1). The rules are not copied: a merged group lists its
 * groups, so a file naming thousands of tokens in front of thousands of rules
 * costs their sum, not their product.
 */
function mergeGroups(groups: readonly Group[]): Map<string, MergedGroup> {
  const merged = new Map<string, MergedGroup & { groups: Group[] }>();
  for (const group of groups) {
    for (const token of group.productTokens) {
      const key = token.toLowerCase();
      let entry = merged.get(key);
      if (entry === undefined) {
        entry = {
          productToken: token,
          groups: [],
          get rules(): readonly Rule[] {
            return this.groups.length === 1 ? this.groups[0]!.rules : this.groups.flatMap((g) => g.rules);
          },
          crawlDelaySeconds: undefined,
          requestRate: undefined,
          lines: [],
        };
        merged.set(key, entry);
      }
      // The same group may name a token twice; merge its rules once.
      if (entry.groups[entry.groups.length - 1] === group) continue;
      entry.groups.push(group);
      entry.lines.push(group.line);
      const delay = group.crawlDelayByToken.get(key);
      if (delay !== undefined) entry.crawlDelaySeconds = Math.max(entry.crawlDelaySeconds ?? 0, delay);
      entry.requestRate ??= group.requestRateByToken.get(key);
    }
  }
  return merged;
}

function trim(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isSpace(s.charCodeAt(a))) a++;
  while (b > a && isSpace(s.charCodeAt(b - 1))) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

/** A space or a tab: the separators of a line without a colon (the reference's `" \t"`). */
function isBlank(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/** Index of the first space or tab of `s` at or after `from`, or -1. */
function findSpace(s: string, from: number): number {
  for (let i = from; i < s.length; i++) {
    if (isBlank(s.charCodeAt(i))) return i;
  }
  return -1;
}

/** An octet string for a warning message: its first {@link MAX_QUOTED_OCTETS} octets as UTF-8, `…` when cut. */
function shown(octets: string): string {
  return octets.length > MAX_QUOTED_OCTETS ? `${utf8(octets.slice(0, MAX_QUOTED_OCTETS))}…` : utf8(octets);
}

/** Decodes an octet string as UTF-8 for display (invalid sequences become U+FFFD). */
function utf8(octets: string): string {
  return Buffer.from(octets, 'latin1').toString('utf8');
}

export type { Rule };
