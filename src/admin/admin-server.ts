/**
 * The admin HTTP API: health, Prometheus metrics, `explain`, an origin's
 * robots snapshot, the CA certificate download, the configuration reload and
 * the compliance report.
 * Extension, not in RFC 9309.
 *
 * Security: on loopback (the default) the admin listener is open unless a
 * token is set; bound beyond loopback it requires one (`admin.token` or
 * `admin.tokenFile`; the config refuses to start without): every request but
 * `GET /healthz` and `GET /ca.pem` must carry `Authorization: Bearer <token>`,
 * else 401 `unauthorized` with `WWW-Authenticate: Bearer` (RFC 6750 §3).
 * `/explain` makes the proxy fetch robots.txt for any URL asked, and
 * `/metrics` reveals traffic figures. Nothing it serves is secret (the CA
 * certificate is public; its key is never served). `POST /reload` only re-reads
 * the file the operator started the proxy with; a request that carries an
 * `Origin` header (a web page's script or form) is refused, so a browser that
 * can reach the admin port cannot be used to trigger it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Decision } from '../policy/decision.js';
import type { ParseWarning } from '../robots/types.js';
import type { ProxyMetrics } from '../audit/metrics.js';
import type { RobotsView } from './robots-view.js';
import type { LimitEvent } from '../audit/limit-events.js';
import type { ReloadReport } from '../lifecycle/reload.js';
import type { ReportAnswer } from '../audit/report/report-service.js';
import { systemClock, type Clock } from '../clock.js';
import { hasBearerToken } from '../access/admin-token.js';
import { originOf } from '../proxy/target-origin.js';

/** What `/healthz` reports. */
export interface HealthReport {
  ok: boolean;
  /** Extra facts for the JSON body, under `details` (keep them small and free of secrets). */
  details?: object;
}

/** The `/explain` answer: the Decision, and the warnings of the robots.txt it was made with. */
export type ExplainAnswer = Decision & {
  /** Parse warnings of the origin's robots snapshot (ignored lines, clamped values, truncation, HTML body); [] when none or no file. */
  robotsWarnings?: readonly ParseWarning[];
};

/** The collaborators of {@link AdminServer}. */
export interface AdminServerOptions {
  metrics: ProxyMetrics;
  /**
   * Answers "what would the proxy do for this User-Agent and URL?": the
   * Decision the pipeline would reach (fetching robots.txt if needed), without
   * forwarding anything, for the client identity named, if any (rejects with code
   * `ERR_UNKNOWN_IDENTITY` for a name the configuration does not know). Absent: `/explain` answers 404.
   */
  explain?: (url: string, userAgent: string, identity: string | undefined) => Promise<ExplainAnswer>;
  /**
   * The view of the cached robots snapshot of `origin` (`scheme://host[:port]`, normalised),
   * without fetching; undefined when the origin has none. Absent: `/robots` answers 404.
   */
  robots?: (origin: string) => Promise<RobotsView | undefined>;
  /** The proxy CA certificate, PEM, or undefined when there is none (HTTPS interception off). */
  caCertPem?: () => string | undefined;
  /** Readiness. Absent: always healthy. */
  health?: () => HealthReport;
  /**
   * Re-reads the configuration file and applies it (`POST /reload`), as SIGHUP does.
   * Absent: `/reload` answers 404 `reload-unavailable`.
   */
  reload?: () => ReloadReport;
  logger: Logger;
  /** Bearer token every request but `GET /healthz` and `GET /ca.pem` must carry; undefined: open. Never logged. */
  token?: string;
  /** Longest request target accepted, in bytes; longer gets 414. @default 8192 */
  maxUrlBytes?: number;
  /** Longest wait for `explain`, ms; past it the answer is 504 `explain-timeout`. @default 30000 */
  explainTimeoutMs?: number;
  /** Timer source for the explain timeout. @default systemClock */
  clock?: Clock;
  /**
   * Connections open at once; one more is closed at once (Node's `maxConnections`). Keeps the
   * admin listener within the descriptors reserved for it. @default 32
   */
  maxConnections?: number;
  /** Told of each connection closed over `maxConnections` (counted and logged as `admin-max-connections`). */
  onLimit?: (event: LimitEvent) => void;
  /**
   * Answers `GET /report` and every path below it (the compliance report, see
   * `audit/report/report-service.ts`). Absent: those paths answer 404.
   */
  report?: (pathname: string, params: URLSearchParams) => ReportAnswer | Promise<ReportAnswer>;
}

/** Error codes in admin JSON error bodies (`{"error": code}`); stable, branch on these. */
export type AdminErrorCode =
  | 'not-found'
  | 'method-not-allowed'
  | 'uri-too-long'
  | 'missing-url'
  | 'bad-url'
  | 'unknown-parameter'
  | 'explain-unavailable'
  | 'explain-failed'
  | 'explain-timeout'
  | 'missing-origin'
  | 'bad-origin'
  | 'not-cached'
  | 'robots-unavailable'
  | 'metrics-failed'
  | 'reload-unavailable'
  | 'cross-origin'
  | 'config-invalid'
  | 'shutting-down'
  | 'unauthorized'
  | 'unknown-identity'
  | 'internal-error';

const DEFAULT_MAX_URL_BYTES = 8192;
const DEFAULT_EXPLAIN_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_CONNECTIONS = 32;
/** Slowloris bounds: whole headers within 10 s, a whole request within 30 s. */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** Request headers cap (the request line counts too), bytes; past it Node answers 431. */
const MAX_HEADER_BYTES = 16 * 1024;
/** The query parameters `/explain` reads; any other is a 400 `unknown-parameter`. */
const EXPLAIN_PARAMETERS: ReadonlySet<string> = new Set(['url', 'ua', 'identity']);
/** The query parameters `/robots` reads; any other is a 400 `unknown-parameter`, as for `/explain`. */
const ROBOTS_PARAMETERS: ReadonlySet<string> = new Set(['origin']);

/**
 * Answers 400 `unknown-parameter` naming the first parameter of `params` not in `accepted`, and
 * `takes` (what the route reads, in words); a misspelt parameter (`orgin=`, `agent=`) would
 * otherwise be ignored and the answer be for something else than asked.
 * @returns true when it answered (the caller stops), false when every parameter is accepted.
 */
function refuseUnknownParameter(params: URLSearchParams, accepted: ReadonlySet<string>, takes: string, res: ServerResponse): boolean {
  for (const name of params.keys()) {
    if (!accepted.has(name)) {
      sendError(res, 400, 'unknown-parameter', `unknown parameter ${JSON.stringify(name.slice(0, 64))}: ${takes}`);
      return true;
    }
  }
  return false;
}
/** Base for parsing origin-form targets; never contacted. */
const PLACEHOLDER_BASE = 'http://admin.invalid';

/**
 * The admin listener. Routes (GET, and HEAD as GET without a body per
 * RFC 9110 §9.3.2, except `/reload`, which is POST only; any other method gets 405 with `Allow`):
 * - `GET /healthz`: 200 `{"status":"ok"}`, or 503 `{"status":"unavailable"}`, plus `details` when given;
 * - `GET /metrics`: Prometheus text from {@link ProxyMetrics.render};
 * - `GET /explain?url=<absolute http(s) URL>&ua=<User-Agent>&identity=<name>`: 200 with the
 *   Decision as JSON; 400 `missing-url` / `bad-url`; 400 `unknown-parameter` for any other
 *   parameter (`agent=` for `ua=` would otherwise explain for no User-Agent); `ua` absent means
 *   no User-Agent (`''`);
 *   `identity` (optional) decides as that identity would be (its bound tokens, its
 *   `onMismatch`); 400 `unknown-identity` for a name the configuration does not know;
 *   504 `explain-timeout` past `explainTimeoutMs`;
 *   the body carries `robotsWarnings`, the parse warnings of the robots.txt used;
 * - `GET /robots?origin=<http(s) URL>`: 200 with the {@link RobotsView} of the
 *   origin's cached robots snapshot (any path of the URL is ignored); 400
 *   `missing-origin` / `bad-origin`; 400 `unknown-parameter` for any other parameter; 404 `not-cached` when robots.txt has not
 *   been fetched for it (it never fetches: `/explain` does);
 * - `GET /ca.pem`: 200 `application/x-pem-file`, or 404 when there is no CA;
 * - `GET /report`, `/report/data/<table>.json|csv`, `/report/robots-diff.json`: the
 *   compliance report and its data (answered by `report`);
 * - `POST /reload`: re-reads the configuration file (see {@link AdminServerOptions.reload}):
 *   200 `{"status":"reloaded","applied":[...],"restartRequired":[...]}` (with `"credentials":
 *   {"users","added","removed","changed"}` when a credentials file is configured); 422 `config-invalid`
 *   with `file`, `key`, `line`, `column` (nothing changed); 503 `shutting-down`; 403
 *   `cross-origin` when the request carries an `Origin` header; 404 `reload-unavailable`;
 * - anything else: 404. A target longer than `maxUrlBytes`: 414.
 * With a `token`, every route but `/healthz` and `/ca.pem` answers 401 `unauthorized` without
 * `Authorization: Bearer <token>`.
 *
 * Request bodies are never read: they are discarded, and the connection is
 * closed after the answer so a large body cannot hold it. Errors are JSON
 * `{"error": AdminErrorCode, "message": ...}`.
 */
export class AdminServer {
  readonly #server: Server;
  readonly #options: AdminServerOptions;
  readonly #maxUrlBytes: number;

  /** Builds the server (not listening yet); see {@link AdminServerOptions}. Never throws. */
  constructor(options: AdminServerOptions) {
    this.#options = options;
    this.#maxUrlBytes = options.maxUrlBytes ?? DEFAULT_MAX_URL_BYTES;
    this.#server = createServer(
      { maxHeaderSize: MAX_HEADER_BYTES, headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS },
      (req, res) => {
        this.#handle(req, res).catch((err: unknown) => {
          options.logger.error({ event: 'admin-request-failed', err }, 'admin request failed');
          if (!res.headersSent) sendError(res, 500, 'internal-error', 'internal error');
          else res.destroy();
        });
      },
    );
    this.#server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
    const maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
    this.#server.maxConnections = maxConnections;
    // Node closes a connection over the cap before any listener sees it; this is the one trace of it.
    this.#server.on('drop', (data?: { remoteAddress?: string }) => {
      options.onLimit?.({
        kind: 'connection-refused',
        limit: 'admin-max-connections',
        client: data?.remoteAddress ?? '',
        cap: maxConnections,
        open: maxConnections,
        openFromClient: 0,
        answered: false,
      });
    });
  }

  /**
   * Starts listening.
   * @param host address to bind, e.g. `127.0.0.1` (keep it loopback: there is no authentication).
   * @param port TCP port; 0 picks a free one.
   * @returns the bound address.
   * @throws the listen error (e.g. `EADDRINUSE`) as Node reports it.
   */
  listen(host: string, port: number): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.#server.once('error', onError);
      this.#server.listen(port, host, () => {
        this.#server.off('error', onError);
        resolve(this.#server.address() as AddressInfo);
      });
    });
  }

  /**
   * Stops listening and closes every connection, idle or busy, so no handle
   * is left. Resolves when the server has closed; resolves at once if it never listened.
   */
  close(): Promise<void> {
    if (!this.#server.listening) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.#server.close((err) => (err ? reject(err) : resolve()));
      this.#server.closeAllConnections();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Never read a body: discard it, and close afterwards so it cannot hold the connection.
    const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';
    if (hasBody) res.setHeader('Connection', 'close');
    req.resume();
    const target = req.url ?? '/';
    // Node hands the target over one character per byte, so length is the byte count.
    if (target.length > this.#maxUrlBytes) {
      sendError(res, 414, 'uri-too-long', `request target longer than ${this.#maxUrlBytes} bytes`);
      return;
    }
    let url: URL;
    try {
      url = new URL(target, PLACEHOLDER_BASE);
    } catch {
      sendError(res, 404, 'not-found', 'no such route');
      return;
    }
    // Health checks (load balancers, the image's HEALTHCHECK) and the public CA certificate need no token.
    const isOpen = url.pathname === '/healthz' || url.pathname === '/ca.pem';
    if (this.#options.token !== undefined && !isOpen && !hasBearerToken(req.headers.authorization, this.#options.token)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="robots-proxy admin"');
      sendError(res, 401, 'unauthorized', 'this admin API requires "Authorization: Bearer <token>" (admin.token or admin.tokenFile)');
      return;
    }
    if (url.pathname === '/reload') {
      this.#serveReload(req, res);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      sendError(res, 405, 'method-not-allowed', 'only GET and HEAD are supported');
      return;
    }
    switch (url.pathname) {
      case '/healthz':
        this.#serveHealth(res);
        return;
      case '/metrics':
        await this.#serveMetrics(res);
        return;
      case '/explain':
        await this.#serveExplain(url.searchParams, res);
        return;
      case '/robots':
        await this.#serveRobots(url.searchParams, res);
        return;
      case '/ca.pem':
        this.#serveCa(res);
        return;
      default:
        if (this.#options.report !== undefined && (url.pathname === '/report' || url.pathname.startsWith('/report/'))) {
          const answer = await this.#options.report(url.pathname, url.searchParams);
          send(res, answer.status, answer.contentType, answer.body, answer.headers);
          return;
        }
        sendError(res, 404, 'not-found', 'no such route');
    }
  }

  #serveReload(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      sendError(res, 405, 'method-not-allowed', 'reload with POST');
      return;
    }
    // Browsers send Origin with every cross-origin POST (forms included); curl and scripts do not.
    if (req.headers.origin !== undefined) {
      sendError(res, 403, 'cross-origin', 'POST /reload is refused from a web page (the request has an Origin header)');
      return;
    }
    const reload = this.#options.reload;
    if (!reload) {
      sendError(res, 404, 'reload-unavailable', 'this proxy was not started from a configuration file');
      return;
    }
    const report = reload();
    if (report.ok) {
      sendJson(res, 200, { status: 'reloaded', file: report.file, applied: report.applied, restartRequired: report.restartRequired, ...(report.credentials ? { credentials: report.credentials } : {}) });
      return;
    }
    const { ok: _ok, error, message, ...where } = report;
    sendJson(res, error === 'shutting-down' ? 503 : 422, { error, message, ...where });
  }

  #serveHealth(res: ServerResponse): void {
    let report: HealthReport;
    try {
      report = this.#options.health?.() ?? { ok: true };
    } catch (err) {
      this.#options.logger.warn({ event: 'health-check-failed', err }, 'health check threw');
      report = { ok: false, details: { error: 'health-check-failed' } };
    }
    const status = report.ok ? 'ok' : 'unavailable';
    const body = report.details === undefined ? { status } : { status, details: report.details };
    sendJson(res, report.ok ? 200 : 503, body);
  }

  async #serveMetrics(res: ServerResponse): Promise<void> {
    let text: string;
    try {
      text = await this.#options.metrics.render();
    } catch (err) {
      this.#options.logger.error({ event: 'metrics-failed', err }, 'metrics rendering failed');
      sendError(res, 500, 'metrics-failed', 'metrics could not be rendered');
      return;
    }
    send(res, 200, this.#options.metrics.contentType, text);
  }

  async #serveExplain(params: URLSearchParams, res: ServerResponse): Promise<void> {
    const explain = this.#options.explain;
    if (!explain) {
      sendError(res, 404, 'explain-unavailable', 'explain is not configured');
      return;
    }
    if (refuseUnknownParameter(params, EXPLAIN_PARAMETERS, '/explain takes url=, ua= (the User-Agent) and identity=', res)) return;
    const target = requireHttpUrl(params, 'url', res, ['missing-url', 'give the absolute URL to explain as ?url='], 'bad-url');
    if (target === undefined) return;
    let decision: ExplainAnswer | 'timeout';
    try {
      decision = await this.#withTimeout(explain(target, params.get('ua') ?? '', params.get('identity') ?? undefined));
    } catch (err) {
      if (hasCode(err, 'ERR_UNKNOWN_IDENTITY')) {
        sendError(res, 400, 'unknown-identity', 'identity names no identity of this configuration (identities, access.clients or the credentials file)');
        return;
      }
      if (hasCode(err, 'ERR_INVALID_TARGET')) {
        sendError(res, 400, 'bad-url', 'url is not a valid proxy target');
        return;
      }
      this.#options.logger.error({ event: 'explain-failed', err }, 'explain failed');
      sendError(res, 500, 'explain-failed', 'the decision could not be computed');
      return;
    }
    if (decision === 'timeout') {
      sendError(res, 504, 'explain-timeout', 'the decision took too long');
      return;
    }
    sendJson(res, 200, decision);
  }

  async #serveRobots(params: URLSearchParams, res: ServerResponse): Promise<void> {
    const view = this.#options.robots;
    if (!view) {
      sendError(res, 404, 'robots-unavailable', 'the robots snapshot view is not configured');
      return;
    }
    if (refuseUnknownParameter(params, ROBOTS_PARAMETERS, '/robots takes origin= only', res)) return;
    const origin = requireHttpUrl(params, 'origin', res, ['missing-origin', 'give the origin as ?origin=, e.g. ?origin=https://example.com'], 'bad-origin');
    if (origin === undefined) return;
    // Keyed as the proxy keys it (an IPv4-mapped host is its IPv4 address: target-origin.ts).
    const normalised = originOf(new URL(origin));
    const answer = await view(normalised);
    if (answer === undefined) {
      sendError(res, 404, 'not-cached', `no robots snapshot for ${normalised} yet; GET /explain?url=${normalised}/ fetches it`);
      return;
    }
    sendJson(res, 200, answer);
  }

  /** Resolves with `work`'s value, or `'timeout'` after `explainTimeoutMs`. */
  #withTimeout<T>(work: Promise<T>): Promise<T | 'timeout'> {
    const clock = this.#options.clock ?? systemClock;
    let timer: unknown;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = clock.setTimer(() => resolve('timeout'), this.#options.explainTimeoutMs ?? DEFAULT_EXPLAIN_TIMEOUT_MS);
    });
    return Promise.race([work, timeout]).finally(() => clock.clearTimer(timer));
  }

  #serveCa(res: ServerResponse): void {
    const pem = this.#options.caCertPem?.();
    if (pem === undefined) {
      sendError(res, 404, 'not-found', 'no CA certificate: HTTPS interception is not configured');
      return;
    }
    send(res, 200, 'application/x-pem-file', pem);
  }
}

/**
 * The query parameter `name` when it is an absolute http(s) URL; otherwise answers 400
 * (`missing` when absent or empty, `bad` when not such a URL) and returns undefined.
 */
function requireHttpUrl(params: URLSearchParams, name: string, res: ServerResponse, missing: [AdminErrorCode, string], bad: AdminErrorCode): string | undefined {
  const value = params.get(name);
  if (value === null || value === '') {
    sendError(res, 400, missing[0], missing[1]);
    return undefined;
  }
  if (!isAbsoluteHttpUrl(value)) {
    sendError(res, 400, bad, `${name} must be an absolute http: or https: URL`);
    return undefined;
  }
  return value;
}

/** True for a URL WHATWG can parse with scheme `http:` or `https:` and a host. */
function isAbsoluteHttpUrl(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const url = new URL(text);
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
}

function hasCode(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}

function send(res: ServerResponse, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    ...headers,
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', `${JSON.stringify(value)}\n`);
}

function sendError(res: ServerResponse, status: number, error: AdminErrorCode, message: string): void {
  sendJson(res, status, { error, message });
}
