/**
 * The report's HTTP answers, for the admin listener (which adds nothing but
 * the transport, so whatever guards the admin API guards the report too):
 * - `GET /report?range=&from=&to=&identity=&token=&origin=`: the HTML page;
 * - `GET /report/data/<table>.json|.csv?...`: one table (see `TABLE_NAMES`), the
 *   rows the page shows; `report.json` is everything the page shows at once;
 * - `GET /report/robots-diff.json?id=N`: robots.txt version N, the one before it
 *   and the unified diff of their bodies.
 * Errors are JSON `{"error": code, "message"}`: 400 `bad-query`, 404 `not-found`,
 * 503 `ledger-unavailable` (ledger off, or no file yet). Extension, not in RFC 9309.
 */
import { existsSync } from 'node:fs';
import { stringify } from 'csv-stringify/sync';
import { LedgerError } from '../../errors.js';
import { LedgerReader } from './ledger-reader.js';
import { buildReport, diffVersion, TABLE_NAMES, type ReportTable, type TableName } from './report-data.js';
import { parseReportQuery } from './report-query.js';
import { renderReportPage, reportContentSecurityPolicy } from './report-page.js';

/** One answer: status, content type, body and extra headers. */
export interface ReportAnswer {
  status: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
}

/** Error codes of report answers. */
export type ReportErrorCode = 'bad-query' | 'not-found' | 'ledger-unavailable';

/** Options of {@link ReportService}. */
export interface ReportServiceOptions {
  /** The ledger file, or undefined when the ledger is off. */
  ledgerPath: string | undefined;
  /** Called before each read, e.g. to write what the ledger holds in memory (so the page is current). */
  beforeRead?: () => void;
  /** The current time, ms since the epoch (ranges end now). */
  nowMs: () => number;
}

const JSON_TYPE = 'application/json; charset=utf-8';

function error(status: number, code: ReportErrorCode, message: string): ReportAnswer {
  return { status, contentType: JSON_TYPE, body: `${JSON.stringify({ error: code, message })}\n` };
}

/** A table as CSV (RFC 4180, header row of column keys). */
export function tableToCsv(table: ReportTable): string {
  return stringify(
    table.rows.map((row) => table.columns.map((c) => row[c.key] ?? '')),
    { header: true, columns: table.columns.map((c) => c.key), record_delimiter: 'windows' },
  );
}

/** The report routes of the admin listener. */
export class ReportService {
  readonly #options: ReportServiceOptions;

  constructor(options: ReportServiceOptions) {
    this.#options = options;
  }

  /** True for paths this service answers (`/report` and below). */
  static handles(pathname: string): boolean {
    return pathname === '/report' || pathname.startsWith('/report/');
  }

  /**
   * Answers one GET. Never throws for bad input (400/404); a ledger that cannot be read is 503.
   * @throws SQLite errors other than opening the file (a bug or a corrupt file: the admin
   *   server answers 500).
   */
  answer(pathname: string, params: URLSearchParams): ReportAnswer {
    const path = pathname.replace(/\/+$/, '') || '/';
    const isPage = path === '/report';
    const table = /^\/report\/data\/([a-z-]+)\.(json|csv)$/.exec(path);
    const isDiff = path === '/report/robots-diff.json';
    if (!isPage && table === null && !isDiff) return error(404, 'not-found', 'no such report route; see /report');
    if (table !== null && table[1] !== 'report' && !(TABLE_NAMES as readonly string[]).includes(table[1] as string)) {
      return error(404, 'not-found', `no table "${table[1]}"; tables: report, ${TABLE_NAMES.join(', ')}`);
    }
    const reader = this.#open();
    if ('status' in reader) return reader;
    try {
      if (isDiff) return this.#diff(reader, params);
      const nowMs = Math.floor(this.#options.nowMs());
      const parsed = parseReportQuery(params, nowMs);
      if (!parsed.ok) return error(400, 'bad-query', parsed.message);
      const data = buildReport(reader, parsed.query, nowMs);
      if (isPage) {
        return {
          status: 200,
          contentType: 'text/html; charset=utf-8',
          body: renderReportPage(data, 'live'),
          headers: { 'Content-Security-Policy': reportContentSecurityPolicy('live'), 'X-Frame-Options': 'DENY', 'Referrer-Policy': 'no-referrer' },
        };
      }
      const [, name, format] = table as RegExpExecArray;
      if (name === 'report') return { status: 200, contentType: JSON_TYPE, body: `${JSON.stringify(data)}\n` };
      const chosen = data.tables[name as TableName];
      if (format === 'json') return { status: 200, contentType: JSON_TYPE, body: `${JSON.stringify({ query: data.query, ...chosen })}\n` };
      return {
        status: 200,
        contentType: 'text/csv; charset=utf-8',
        body: tableToCsv(chosen),
        headers: { 'Content-Disposition': `attachment; filename="robots-proxy-${name}.csv"` },
      };
    } finally {
      reader.close();
    }
  }

  #diff(reader: LedgerReader, params: URLSearchParams): ReportAnswer {
    const id = params.get('id') ?? '';
    if (!/^\d{1,15}$/.test(id)) return error(400, 'bad-query', 'id must be a robots.txt version number');
    const diff = diffVersion(reader, Number(id));
    if (diff === undefined) return error(404, 'not-found', `no robots.txt version ${id}`);
    return { status: 200, contentType: JSON_TYPE, body: `${JSON.stringify(diff)}\n` };
  }

  /** Opens the ledger read-only, or the 503 answer saying why it cannot be. */
  #open(): LedgerReader | ReportAnswer {
    const path = this.#options.ledgerPath;
    if (path === undefined) return error(503, 'ledger-unavailable', 'the ledger is off (ledger.enabled: false): there is nothing to report');
    this.#options.beforeRead?.();
    if (!existsSync(path)) return error(503, 'ledger-unavailable', `the ledger file ${path} does not exist yet`);
    try {
      return LedgerReader.open(path);
    } catch (err) {
      if (err instanceof LedgerError) return error(503, 'ledger-unavailable', err.message);
      throw err;
    }
  }
}
