/**
 * `robots-proxy report`: the compliance report as one static HTML file (or
 * JSON), from the ledger file named by the config (or `--ledger`), or rebuilt
 * from JSON access-log files (`--from-logs`). Extension, not in RFC 9309.
 */
import { writeFileSync } from 'node:fs';
import { parseCommandArgs } from '../../cli-args.js';
import { UsageError } from '../../errors.js';
import { LedgerReader, unreadableLedgerError } from './ledger-reader.js';
import { buildReport, diffsOfChangedVersions, type ReportData, type VersionDiff } from './report-data.js';
import { parseReportQuery } from './report-query.js';
import { renderReportPage } from './report-page.js';

/** The usage text of `robots-proxy report`. */
export const REPORT_USAGE = `robots-proxy report [--config FILE | --ledger FILE | --from-logs FILE...]
                    [--since 7d | --from TIME [--to TIME]] [--identity ID] [--token TOKEN]
                    [--origin ORIGIN] [--limit N] [--json] [--out FILE]
  Writes the compliance report as one self-contained HTML file (--json: the
  report's data as JSON) to --out, or to standard output. The data comes from
  the ledger file of the config (ledger.path, else <stateDir>/ledger.sqlite;
  the config is --config, else $ROBOTS_PROXY_CONFIG, else the package's own),
  from --ledger, or, with --from-logs, from JSON access-log files (the proxy's
  stdout; "-" reads standard input), e.g. gathered from several instances.
  --since: 1h, 24h, 7d, 30d or any duration (default 24h), ending now;
  --from/--to: ISO-8601 times or ms since the epoch (13 digits; not seconds).`;

/** What the command needs from outside (the config loader and the log rebuilder are passed in). */
export interface ReportCommandDeps {
  /** The ledger path the config names (undefined: the default config file). @throws {ConfigError} */
  ledgerPathFromConfig(configPath: string | undefined): string;
  /** Rebuilds an in-memory ledger from log files; resolves with a reader and what was read. */
  readerFromLogs?(files: string[]): Promise<{ reader: LedgerReader; summary: string }>;
  /** Where messages for a person go. */
  stderr: (text: string) => void;
  stdout: (text: string) => void;
  nowMs: () => number;
}

/**
 * Runs `robots-proxy report` with `args` (after the command name).
 * @returns the exit code: 0 written.
 * @throws {UsageError} for bad arguments; {@link LedgerError} when the ledger cannot be read.
 */
export async function runReportCommand(args: string[], deps: ReportCommandDeps): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    'report',
    args,
    {
      config: { type: 'string', short: 'c' },
      ledger: { type: 'string' },
      'from-logs': { type: 'boolean' },
      since: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      identity: { type: 'string' },
      token: { type: 'string' },
      origin: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
      out: { type: 'string', short: 'o' },
    },
    true,
  );
  const params = new URLSearchParams();
  if (values.since !== undefined) params.set('range', values.since);
  for (const key of ['from', 'to', 'identity', 'token', 'origin', 'limit'] as const) {
    const value = values[key];
    if (value !== undefined) params.set(key, value);
  }
  if (values.since !== undefined && values.from !== undefined) throw new UsageError('report: give --since or --from, not both');
  if (values.to !== undefined && values.from === undefined) throw new UsageError('report: --to needs --from (--since counts back from now)');
  const nowMs = Math.floor(deps.nowMs());
  const parsed = parseReportQuery(params, nowMs);
  if (!parsed.ok) throw new UsageError(`report: ${parsed.message.replace(/^range/, '--since').replace(/^from/, '--from').replace(/^to/, '--to')}`);

  let reader: LedgerReader;
  /** The ledger file read (undefined: rebuilt from access logs). */
  let ledgerPath: string | undefined;
  if (values['from-logs']) {
    if (positionals.length === 0) throw new UsageError('report --from-logs needs one or more access-log files ("-" for standard input)');
    if (deps.readerFromLogs === undefined) throw new UsageError('report --from-logs is not available');
    const rebuilt = await deps.readerFromLogs(positionals);
    deps.stderr(`robots-proxy report: ${rebuilt.summary}\n`);
    reader = rebuilt.reader;
  } else {
    if (positionals.length > 0) throw new UsageError(`report: unexpected argument "${positionals[0]}" (log files need --from-logs)`);
    if (values.ledger !== undefined && values.config !== undefined) throw new UsageError('report: give --ledger or --config, not both');
    ledgerPath = values.ledger ?? deps.ledgerPathFromConfig(values.config);
    reader = LedgerReader.open(ledgerPath);
  }
  let data: ReportData;
  let diffs: VersionDiff[];
  try {
    data = buildReport(reader, parsed.query, nowMs);
    diffs = diffsOfChangedVersions(reader, data);
  } catch (error) {
    // A damaged page is found by the query that reads it, after the open: say which file, as the open does.
    throw ledgerPath === undefined ? error : unreadableLedgerError(ledgerPath, error);
  } finally {
    reader.close();
  }
  const output = values.json ? `${JSON.stringify(data, null, 1)}\n` : renderReportPage(data, 'static', diffs);
  if (values.out === undefined) deps.stdout(output);
  else {
    try {
      writeFileSync(values.out, output);
    } catch (err) {
      // Node's own words ("ENOENT: no such file or directory, open ...") name no option; ours do.
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      const why = code === 'ENOENT' ? ' (its directory does not exist)' : code === 'EISDIR' ? ' (it is a directory; name a file)' : code === 'EACCES' ? ' (not allowed to write there)' : '';
      throw new Error(`report: cannot write --out ${values.out}: ${code}${why}`, { cause: err });
    }
    const s = data.tables.summary.rows[0] ?? {};
    deps.stderr(`robots-proxy report: wrote ${values.out} (${s['requests'] ?? 0} requests, ${s['refused'] ?? 0} refused, ${data.query.fromMs === nowMs ? '' : new Date(data.query.fromMs).toISOString()} to ${new Date(data.query.toMs).toISOString()})\n`);
  }
  return 0;
}
