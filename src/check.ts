/**
 * `robots-proxy check`: decide offline, with the same engine the proxy uses.
 * Two modes:
 * - files: `--robots FILE (--user-agent UA | --token T) URL...` -> one line per URL;
 * - JSON lines on stdin (`--jsonl`): `{"robots", "url", "userAgent" | "token" | "agent"}`
 *   -> one JSON line per input line, in order; a malformed line gets `{"error"}`.
 *   `agent` is the reference vectors' field (DESIGN.md, shared/conformance): a bare
 *   product token, with the URL read as the reference reads it (any string).
 */
import type { Readable, Writable } from 'node:stream';
import { LRUCache } from 'lru-cache';
import { extractProductTokens } from './robots/agent.js';
import { DEFAULT_MAX_ROBOTS_BYTES, evaluate, extractPathAndQuery, parseRobotsTxt, type RobotsEvaluation, type RobotsTxt } from './robots/index.js';
import { boundedLines } from './bounded-lines.js';
import { UsageError } from './errors.js';
import { readErrorReason, readFileBounded } from './read-bounded.js';

/** One JSON-lines answer (see the issue's contract). */
export interface CheckAnswer {
  allowed: boolean;
  reason: RobotsEvaluation['outcome'];
  /** Product token that chose the group (one of `candidates`); null when the `*` group or no group applied. */
  token: string | null;
  /**
   * Every candidate product token, best first: those read from `--user-agent`
   * (see `extractProductTokens`), or the one `--token`. The first that a
   * group names decides.
   */
  candidates: string[];
  /** The group that applied (its token as written, or `*`); null when none. */
  group: string | null;
  rule: { kind: 'allow' | 'disallow'; pattern: string; line: number } | null;
  /** Crawl-delay in seconds of the group that applied (extension, RFC 9309 §2.2.4); null when none. */
  crawlDelay: number | null;
}

/**
 * Decides one URL. `url` must be an absolute http(s) URL (its path and query
 * are tested, never the fragment). Throws {@link UsageError} for a URL that
 * is not absolute http(s).
 */
export function checkUrl(robots: RobotsTxt, productTokens: readonly string[], url: string): CheckAnswer {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`not an absolute URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`not an http(s) URL: ${JSON.stringify(url)}`);
  }
  // The path as the URL parser writes it, i.e. as a client sends it and the proxy decides it: dot
  // segments resolved (`/a/../private` is `/private`), `\` read as `/`, `http:/x/p` as `http://x/p`.
  // Read from the string as written, `http://x/a/../private` was allowed where the proxy refuses it.
  return answerOf(evaluate(robots, productTokens, extractPathAndQuery(parsed.href)), productTokens);
}

/** A bare product token as `--token` and `"token"` take it: letters, digits, `_` and `-` (RFC 9309 §2.2.1; digits as the proxy reads names). */
const BARE_TOKEN = /^[A-Za-z0-9_-]+$/;

/**
 * Why `token` cannot be a bare `--token` (a name with a version or a whole header, `Googlebot/2.1`,
 * names no group: every URL was allowed), or undefined when it can. Pure.
 */
export function bareTokenProblem(token: string): string | undefined {
  if (BARE_TOKEN.test(token)) return undefined;
  return `${JSON.stringify(token.slice(0, 128))} is not a bare product token (letters, digits, "_" and "-", e.g. Googlebot); for a User-Agent header, use the user agent instead`;
}

/**
 * Decides one URL as the reference matcher takes it (`RobotsMatcher::OneAgentAllowedByRobots`):
 * any string, its path, params and query read by `extractPathAndQuery` (the reference's
 * `GetPathParamsQuery`: a relative or empty URL gives its path or `/`). Never throws.
 */
export function checkReferenceUrl(robots: RobotsTxt, productTokens: readonly string[], url: string): CheckAnswer {
  return answerOf(evaluate(robots, productTokens, extractPathAndQuery(url)), productTokens);
}

function answerOf(r: RobotsEvaluation, productTokens: readonly string[]): CheckAnswer {
  return {
    allowed: r.allowed,
    reason: r.outcome,
    token: r.productToken ?? null,
    candidates: [...productTokens],
    group: r.group?.productToken ?? null,
    rule: r.rule ? { kind: r.rule.kind, pattern: r.rule.pattern, line: r.rule.line } : null,
    crawlDelay: r.group?.crawlDelaySeconds ?? null,
  };
}

/** Candidate tokens: a bare `--token` as given, or those extracted from a User-Agent header. */
export function tokensFor(source: { token?: string; userAgent?: string }): string[] {
  if (source.token !== undefined) return [source.token];
  return extractProductTokens(source.userAgent ?? '');
}

/** Renders an answer as one human-readable line: `token=` is the candidate that decided, `candidates=` all of them, best first. */
export function formatAnswer(url: string, a: CheckAnswer): string {
  const parts = [
    a.allowed ? 'ALLOWED   ' : 'DISALLOWED',
    url,
    `reason=${a.reason}`,
    `token=${a.token ?? '-'}`,
    `candidates=${a.candidates.length > 0 ? a.candidates.join(',') : '-'}`,
    `group=${a.group ?? '-'}`,
    `rule=${a.rule ? `"${a.rule.kind}: ${a.rule.pattern}" line=${a.rule.line}` : '-'}`,
    `crawl-delay=${a.crawlDelay === null ? '-' : `${a.crawlDelay}s`}`,
  ];
  return parts.join('  ');
}

/**
 * Longest JSON line read, in characters: a 500 KiB robots.txt (what the parser reads of one)
 * written with a `\uXXXX` escape for every byte is 3 Mi characters; a longer line is answered
 * `{"error"}` without being kept.
 */
export const MAX_JSONL_LINE_CHARS = 16 * 1_048_576;

/**
 * Runs the JSON-lines mode: reads `input` line by line, writes one JSON line
 * per non-empty input line to `output`, in order. When `output` fails (its
 * reader went away: EPIPE) the run stops and `input` is destroyed; the counts
 * are those of the lines answered so far. Parsed files are cached by
 * body (bounded), so 10,000 cases over a few files parse each file once.
 * @returns counts of answered lines, of those disallowed, and of malformed lines.
 */
export async function runJsonl(input: Readable, output: Writable): Promise<{ answered: number; disallowed: number; errors: number }> {
  const parsedByBody = new LRUCache<string, RobotsTxt>({ max: 256 });
  const lines = boundedLines(input, MAX_JSONL_LINE_CHARS);
  let answered = 0;
  let disallowed = 0;
  let errors = 0;
  let buffer: string[] = [];
  // A reader that goes away (`| head -1`: EPIPE) ends the run, quietly: nothing is left to answer to.
  // The listener stays: the error of the last write may come after this function returned.
  let isOutputGone = false;
  output.on('error', () => {
    isOutputGone = true;
    input.destroy();
  });
  const flush = async (): Promise<void> => {
    if (buffer.length === 0 || isOutputGone) return;
    const chunk = buffer.join('');
    buffer = [];
    if (output.write(chunk)) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        output.off('drain', done);
        output.off('close', done);
        resolve();
      };
      output.once('drain', done);
      output.once('close', done);
    });
  };
  for await (const line of lines) {
    if (isOutputGone) break;
    // One output line per input line, blank ones included, so outputs stay aligned with inputs.
    const answer = typeof line === 'string' ? answerLine(line, parsedByBody) : { error: `line longer than ${MAX_JSONL_LINE_CHARS} characters; skipped` };
    buffer.push(JSON.stringify(answer) + '\n');
    if ('error' in answer) errors++;
    else {
      answered++;
      if (!answer.allowed) disallowed++;
    }
    if (buffer.length >= 512) await flush();
  }
  await flush();
  return { answered, disallowed, errors };
}

function answerLine(line: string, parsedByBody: LRUCache<string, RobotsTxt>): CheckAnswer | { error: string } {
  if (line.trim().length === 0) return { error: 'empty line' };
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch (err) {
    return { error: `invalid JSON: ${(err as Error).message}` };
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) return { error: 'each line must be a JSON object' };
  const { robots, url, userAgent, token, agent } = record as Record<string, unknown>;
  if (typeof robots !== 'string') return { error: '"robots" must be a string (the robots.txt body)' };
  if (typeof url !== 'string') return { error: '"url" must be a string (an absolute URL)' };
  if (token !== undefined && typeof token !== 'string') return { error: '"token" must be a string' };
  if (userAgent !== undefined && typeof userAgent !== 'string') return { error: '"userAgent" must be a string' };
  if (agent !== undefined && typeof agent !== 'string') return { error: '"agent" must be a string' };
  if (token === undefined && userAgent === undefined && agent === undefined) return { error: 'one of "userAgent", "token" or "agent" is required' };
  if ([token, userAgent, agent].filter((v) => v !== undefined).length > 1) return { error: 'give one of "userAgent", "token" or "agent", not several' };
  const tokenProblem = token === undefined ? undefined : bareTokenProblem(token as string);
  if (tokenProblem !== undefined) return { error: `"token": ${tokenProblem.replace('the user agent', '"userAgent"')}` };
  let parsed = parsedByBody.get(robots);
  if (parsed === undefined) {
    parsed = parseRobotsTxt(robots);
    parsedByBody.set(robots, parsed);
  }
  try {
    // `agent`: the reference's vectors (`{"robots","agent","url"}`, shared/conformance): a bare product token, and a URL read as the reference reads it.
    if (token === undefined && userAgent === undefined) return checkReferenceUrl(parsed, [agent as string], url);
    return checkUrl(parsed, tokensFor({ token: token as string | undefined, userAgent: userAgent as string | undefined }), url);
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** Options of the files mode. */
export interface CheckFilesOptions {
  robotsFile: string;
  userAgent?: string;
  token?: string;
  urls: string[];
  json: boolean;
}

/**
 * Runs the files mode; returns the lines to print and how many URLs are
 * disallowed (the command exits 1 when any is). Throws {@link UsageError}
 * for a missing file, a missing agent or a bad URL.
 */
export function runCheckFiles(options: CheckFilesOptions): { lines: string[]; disallowed: number } {
  if (options.userAgent === undefined && options.token === undefined) throw new UsageError('check needs --user-agent UA or --token TOKEN');
  if (options.userAgent !== undefined && options.token !== undefined) throw new UsageError('check: give --user-agent UA or --token TOKEN, not both');
  const tokenProblem = options.token === undefined ? undefined : bareTokenProblem(options.token);
  if (tokenProblem !== undefined) throw new UsageError(`check: --token ${tokenProblem.replace('the user agent', '--user-agent')}`);
  if (options.urls.length === 0) throw new UsageError('check needs at least one URL');
  let body: Buffer;
  try {
    // One byte past the parse limit is enough for the parser to see, and say, that the file is truncated.
    // A one-shot command may wait on a pipe (`--robots <(curl -s https://example.com/robots.txt)`).
    body = readFileBounded(options.robotsFile, DEFAULT_MAX_ROBOTS_BYTES + 1, { mayWait: true }).bytes;
  } catch (err) {
    throw new UsageError(`check: cannot read --robots ${options.robotsFile} (${readErrorReason(err)})`, { cause: err });
  }
  const robots = parseRobotsTxt(body);
  const tokens = tokensFor(options);
  let disallowed = 0;
  const lines = options.urls.map((url) => {
    const answer = checkUrl(robots, tokens, url);
    if (!answer.allowed) disallowed++;
    return options.json ? JSON.stringify({ url, ...answer }) : formatAnswer(url, answer);
  });
  return { lines, disallowed };
}
