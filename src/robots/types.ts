/**
 * The parsed form of one robots.txt file (RFC 9309 §2.2). Produced once by
 * `parseRobotsTxt`, read many times by `matchRule` / `evaluate`. Plain data.
 */

/** `allow` or `disallow` (RFC 9309 §2.2.2). */
export type RuleKind = 'allow' | 'disallow';

/** One `allow` / `disallow` line (RFC 9309 §2.2.2). */
export interface Rule {
  kind: RuleKind;
  /**
   * The path pattern, percent-encoding normalised (§2.2.2): raw non-ASCII
   * octets encoded, hex upper-cased, encoded unreserved octets decoded.
   * May contain `*` and a final `$` (§2.2.3); see `encoding.ts` for the
   * canonical spelling.
   */
  pattern: string;
  /**
   * The rule's match priority: the pattern's length in octets as written,
   * non-ASCII octets counted as their `%XX` form (RFC 9309 §2.2.2: the most
   * octets wins; counted as the reference matcher counts them). Taken from
   * the written pattern, not from `pattern`, so that spelling an octet as
   * `%7C` for the matcher's sake does not change which rule wins.
   */
  priority: number;
  /**
   * For an `allow` of `.../index.htm[l]...` only: the priority of the
   * directory form `.../$` that it also allows (the reference matcher's
   * leniency, extension, not in RFC 9309), counted like `priority`.
   */
  directoryPriority?: number;
  /** 1-based line number in the robots.txt body. */
  line: number;
}

/**
 * Request-rate extension (not in RFC 9309): `requests` per `seconds`; both finite,
 * `requests` an integer >= 1, `seconds / requests` at most the parse's crawl-delay ceiling.
 * Parsed and shown, not used for pacing (only crawl-delay is).
 */
export interface RequestRate {
  requests: number;
  seconds: number;
}

/**
 * A group as written: one or more `user-agent` lines and the records after
 * them (RFC 9309 §2.2.1).
 */
export interface Group {
  /**
   * The product tokens the group names, as written after cutting each
   * `user-agent` value to its leading name, the `[A-Za-z0-9_-]` run
   * (`productTokenOf`); `*` for the global group.
   */
  productTokens: string[];
  rules: Rule[];
  /**
   * Largest crawl-delay in the group, seconds, fractions allowed (extension, §2.2.4); undefined when
   * absent or invalid. Always finite: a longer or infinite value is clamped to the parse's ceiling.
   */
  crawlDelaySeconds: number | undefined;
  /**
   * Crawl-delay in seconds per lower-cased product token of the group. A
   * crawl-delay line applies to the `user-agent` lines just before it (the
   * run since the last other record), which is how files that give each bot
   * its own delay are written; rules still apply to the whole group (§2.2.1).
   */
  crawlDelayByToken: Map<string, number>;
  /** The group's first request-rate (extension, not in RFC 9309); undefined when absent or invalid. */
  requestRate: RequestRate | undefined;
  /**
   * Request-rate per lower-cased product token of the group: as for
   * {@link Group.crawlDelayByToken}, a request-rate line applies to the
   * `user-agent` lines just before it; the first one given a token applies.
   */
  requestRateByToken: Map<string, RequestRate>;
  /** Line of the group's first `user-agent` line. */
  line: number;
}

/**
 * All groups that name one product token, merged (RFC 9309 §2.2.1: "If there
 * is more than one group matching the user-agent, the matching groups' rules
 * MUST be combined into one group").
 */
export interface MergedGroup {
  /** The product token as first written in the file (or `*`). */
  productToken: string;
  /** The groups as written that name the token, in file order, each once. */
  groups: readonly Group[];
  /**
   * The rules of every group naming the token, in file order. For a token of
   * one group, that group's own array; for several, a new array made on each
   * read: a file with many tokens in many groups must not cost tokens times
   * rules (the matcher reads `groups`).
   */
  readonly rules: readonly Rule[];
  /** Crawl-delay in seconds for this token: the largest one any merged group gives it (the most polite reading); undefined when none. */
  crawlDelaySeconds: number | undefined;
  /** Request-rate of the first merged group that gives this token one (see {@link Group.requestRateByToken}). */
  requestRate: RequestRate | undefined;
  /** Lines of the `user-agent` lines that opened each merged group. */
  lines: number[];
}

/** A non-fatal observation made while parsing (unknown directive, bad crawl-delay, ...). */
export interface ParseWarning {
  /** 1-based line the warning is about; 0 when it is about the whole body. */
  line: number;
  /**
   * Stable code. About one line: `invalid-line`, `invalid-user-agent`, `rule-outside-group`,
   * `unknown-directive`, `line-too-long`, `invalid-crawl-delay` (ignored), `crawl-delay-clamped`
   * (longer than the ceiling, which applies), `invalid-request-rate`, `request-rate-clamped`.
   * About the body: `truncated`, `looks-like-html`, `looks-binary`, `too-many-warnings`.
   */
  code: string;
  message: string;
}

/** The result of parsing one robots.txt body. */
export interface RobotsTxt {
  /** Groups in file order, as written. */
  groups: Group[];
  /** Merged groups by lower-cased product token; `*` is the global group. */
  groupsByToken: ReadonlyMap<string, MergedGroup>;
  /** Sitemap URLs, in file order (§2.2.4). */
  sitemaps: string[];
  warnings: ParseWarning[];
  /** Number of lines seen. */
  lineCount: number;
  /** Bytes of the body that were parsed (at most the limit). */
  bytesParsed: number;
  /** True when the body was longer than the limit and the rest was ignored (§2.5). */
  truncated: boolean;
}
