/**
 * `npm run demo`: the proxy on real robots.txt files.
 *
 * Starts one loopback origin per file of {@link SITES} (each on its own
 * 127.0.0.1 port, serving the real robots.txt file read by path from the
 * curated fixtures in test/fixtures/robots/ (so it runs on a fresh clone) and
 * a 200 page for any other path), plus one whose
 * robots.txt answers 503, one whose robots.txt answers 404 and one whose
 * robots.txt changes twice during the crawl (short max-age), in a child
 * process so their timestamps are not skewed by the load here; starts the
 * proxy in this process (log to a file in a temp dir); drives a concurrent
 * crawl with real bot User-Agents through it; prints a table per origin, and
 * writes the compliance report of the crawl (report.html, from the ledger)
 * next to the proxy log. `npm run demo -- --keep` keeps the proxy running
 * afterwards and prints the address of its live report (/report on the admin
 * listener) until Ctrl-C.
 *
 * Robust by construction, not by timing: the requests with a Crawl-delay are
 * planned offline to fit a budget per origin, `pacing.maxWait` is far above
 * that budget, and each origin gets at most {@link LANES_PER_ORIGIN} client
 * requests at a time, so no origin's queue can starve another's. Timing
 * figures are reported, never judged. Exit code 0; 1 when a fixture is
 * missing, a refused request reached an origin, or a verdict differs from the
 * offline engine's.
 */
import http from 'node:http';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfig } from '../src/config/index.js';
import { startProxy, type RunningProxy } from '../src/main.js';
import { createLogger } from '../src/audit/index.js';
import { BOTS, CHANGING_MAX_AGE_SECONDS, SITES, planSite, type PlannedRequest, type PlannedSite } from './demo/crawl-plan.js';
import { parseDecisionHeader, renderFooter, renderTable, type CrawlResult, type SiteOutcome } from './demo/report-table.js';
import { startOriginFleet } from './demo/origin-fleet.js';
import { LedgerReader } from '../src/audit/report/ledger-reader.js';
import { buildReport, diffsOfChangedVersions } from '../src/audit/report/report-data.js';
import { renderReportPage } from '../src/audit/report/report-page.js';
import { ROBOTS_FIXTURES_DIR } from '../test/robots/corpus-checks.js';

/** Client connections to the proxy (keep-alive sockets). */
const CONNECTIONS = 32;
/** Client requests in flight per origin at most: several per origin, so the proxy has to queue them. */
const LANES_PER_ORIGIN = 4;
/** Sum of the delays of the allowed, delayed requests planned per origin, seconds. */
const DELAY_BUDGET_SECONDS = 14;
/** Time an origin takes to answer a page, ms. */
const PAGE_DELAY_MS = 5;
/** A request that has not finished by then is abandoned (counted under "other"). */
const REQUEST_TIMEOUT_MS = 60_000;
/** The whole demo gives up after this long (it normally takes under half a minute). */
const WATCHDOG_MS = 180_000;

/** The real robots.txt files the origins serve: the curated fixtures, which every clone has. */
const corpusDir = ROBOTS_FIXTURES_DIR;

/** Sends one absolute-form GET through the proxy; never rejects. */
function fetchThroughProxy(proxyPort: number, agent: http.Agent, url: string, request: PlannedRequest): Promise<{ result: CrawlResult; body: string }> {
  return new Promise((done) => {
    const finish = (status: number, header: string | string[] | undefined, body: string): void => {
      const { verdict, reason } = header === undefined && status === 0 ? { verdict: 'error', reason: body } : parseDecisionHeader(header);
      done({ result: { botName: request.bot.name, path: request.path, status, verdict, reason, expected: request.expected }, body });
    };
    const req = http.request(
      { host: '127.0.0.1', port: proxyPort, method: 'GET', path: url, agent, headers: { 'user-agent': request.bot.userAgent, accept: 'text/html,*/*;q=0.8' } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => finish(res.statusCode ?? 0, res.headers['x-robots-proxy-decision'], body));
        res.on('error', (err) => finish(0, undefined, (err as NodeJS.ErrnoException).code ?? 'response-error'));
      },
    );
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(Object.assign(new Error('client timeout'), { code: 'CLIENT_TIMEOUT' })));
    req.on('error', (err) => finish(0, undefined, (err as NodeJS.ErrnoException).code ?? 'request-error'));
    req.end();
  });
}

/** What one origin's crawl gave: results in plan order, and the first 403 body (in plan order). */
interface OriginCrawl {
  results: CrawlResult[];
  firstRefusal: { title: string; body: string } | undefined;
}

/** Crawls one origin with up to {@link LANES_PER_ORIGIN} requests in flight, taken in plan order. */
async function crawlOrigin(site: PlannedSite, originUrl: string, proxyPort: number, agent: http.Agent): Promise<OriginCrawl> {
  const results: CrawlResult[] = new Array(site.requests.length);
  const bodies: Array<string | undefined> = new Array(site.requests.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < site.requests.length) {
      const index = next++;
      const request = site.requests[index]!;
      const { result, body } = await fetchThroughProxy(proxyPort, agent, originUrl + request.path, request);
      results[index] = result;
      if (result.status === 403) bodies[index] = body;
    }
  };
  await Promise.all(Array.from({ length: LANES_PER_ORIGIN }, lane));
  const first = bodies.findIndex((b) => b !== undefined);
  const firstRefusal = first < 0 ? undefined : { title: `${site.requests[first]!.bot.name} -> ${site.spec.label} ${site.requests[first]!.path}`, body: bodies[first]! };
  return { results, firstRefusal };
}

/** A pino destination that writes the proxy's log to a file and keeps, in memory, when each request left for upstream. */
function createLogTap(path: string): { destination: { write(chunk: string): void }; sent: Array<{ url: string; userAgent: string; atMs: number }>; close(): void } {
  const fd = openSync(path, 'w');
  const sent: Array<{ url: string; userAgent: string; atMs: number }> = [];
  const destination = {
    write(chunk: string): void {
      writeSync(fd, chunk);
      for (const line of chunk.split('\n')) {
        if (line.trim() === '') continue;
        const record = JSON.parse(line) as { url?: unknown; userAgent?: unknown; upstreamStartedAt?: unknown };
        if (typeof record.url === 'string' && typeof record.upstreamStartedAt === 'string') {
          sent.push({ url: record.url, userAgent: typeof record.userAgent === 'string' ? record.userAgent : '', atMs: Date.parse(record.upstreamStartedAt) });
        }
      }
    },
  };
  return { destination, sent, close: () => closeSync(fd) };
}

function indent(text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}

/** Writes the static report of the whole ledger (the crawl just made) to `out`. */
function writeStaticReport(ledgerPath: string, out: string): void {
  const reader = LedgerReader.open(ledgerPath);
  try {
    const nowMs = Date.now();
    const data = buildReport(reader, { fromMs: nowMs - 3_600_000, toMs: nowMs, limit: 200 }, nowMs);
    writeFileSync(out, renderReportPage(data, 'static', diffsOfChangedVersions(reader, data)));
  } finally {
    reader.close();
  }
}

async function main(): Promise<number> {
  const missing = SITES.filter((s) => s.file !== undefined && !existsSync(join(corpusDir, s.file)));
  if (missing.length > 0) {
    console.error(`demo: robots.txt fixtures missing in ${corpusDir}: ${missing.map((s) => s.file).join(', ')}`);
    return 1;
  }

  const plans = SITES.map((spec) => planSite(spec, corpusDir, DELAY_BUDGET_SECONDS));
  const workDir = mkdtempSync(join(tmpdir(), 'robots-proxy-demo-'));
  const logPath = join(workDir, 'proxy.log');
  const ledgerPath = join(workDir, 'ledger.sqlite');
  const reportPath = join(workDir, 'report.html');
  const isKept = process.argv.includes('--keep');
  const logTap = createLogTap(logPath);
  const logger = createLogger({ level: 'info', destination: logTap.destination });
  const config = validateConfig({
    listen: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    upstream: { allowPrivateNetworks: true },
    ledger: { path: ledgerPath },
    // Far above the planned per-origin delay budget: no request is refused for waiting.
    pacing: { maxWait: '60s' },
    // The 5xx origin's robots.txt is fetched once, however long a loaded machine makes the run;
    // the changing one again each time its short max-age runs out.
    robots: { errorRetry: '10m', minTtl: `${CHANGING_MAX_AGE_SECONDS}s` },
    https: { mode: 'tunnel' },
    log: { level: 'info' },
    stateDir: join(workDir, 'state'),
  });

  const origins = await startOriginFleet(
    plans.map((p) =>
      p.spec.versions !== undefined
        ? { robotsVersions: p.spec.versions, maxAgeSeconds: CHANGING_MAX_AGE_SECONDS }
        : p.spec.file === undefined
          ? { robotsStatus: p.spec.robotsStatus ?? 404 }
          : { robotsFile: join(corpusDir, p.spec.file) },
    ),
    PAGE_DELAY_MS,
  );
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  let outcomes: SiteOutcome[];
  let crawls: OriginCrawl[];
  let elapsedS: number;
  let proxy: RunningProxy | undefined;
  try {
    proxy = await startProxy(config, { logger });
    const proxyPort = proxy.proxyAddress.port;
    const total = plans.reduce((n, p) => n + p.requests.length, 0);
    console.log(`robots-proxy demo: ${total} requests from ${BOTS.length} bots to ${plans.length} origins through the proxy on 127.0.0.1:${proxyPort}, ${CONNECTIONS} connections...`);
    const startedAt = performance.now();
    crawls = await Promise.all(plans.map((plan, i) => crawlOrigin(plan, origins.urls[i]!, proxyPort, agent)));
    elapsedS = (performance.now() - startedAt) / 1000;
    const hits = await origins.hits();
    outcomes = plans.map((site, i) => {
      const prefix = `${origins.urls[i]!}/`;
      const sent = logTap.sent.filter((s) => s.url.startsWith(prefix)).map((s) => ({ path: s.url.slice(prefix.length - 1), userAgent: s.userAgent, atMs: s.atMs }));
      return { site, results: crawls[i]!.results, hits: hits[i] ?? [], sent };
    });
    // The report names origins by address: say which robots.txt each one serves.
    console.log(`\nOrigins (as the report names them):`);
    for (const [i, plan] of plans.entries()) console.log(`  ${origins.urls[i]!}  ${plan.spec.label}`);
    if (isKept) {
      console.log(`\nThe proxy keeps running: open http://127.0.0.1:${proxy.adminAddress!.port}/report (Ctrl-C to stop).`);
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    }
  } finally {
    agent.destroy();
    await proxy?.close();
    await origins.close();
    logTap.close();
  }
  rmSync(join(workDir, 'state'), { recursive: true, force: true });
  writeStaticReport(ledgerPath, reportPath);

  const userAgentToBot = new Map(BOTS.map((b) => [b.userAgent, b.name]));
  const { lines, leaks, mismatches } = renderTable(outcomes, userAgentToBot);
  const requests = outcomes.reduce((n, o) => n + o.results.length, 0);
  console.log(`\nDone: ${requests} requests in ${elapsedS.toFixed(1)} s.\n`);
  for (const line of lines) console.log(line);
  console.log('');
  for (const line of renderFooter({ connections: CONNECTIONS, budgetSeconds: DELAY_BUDGET_SECONDS })) console.log(line);
  console.log(`Machine during the run: ${availableParallelism()} CPUs, load average ${loadavg()[0]!.toFixed(1)} (1 min).`);
  console.log(`\nRefused requests that reached an origin: ${leaks}. Verdicts that differ from the offline engine's plan: ${mismatches}.`);
  const example = crawls.find((c) => c.firstRefusal !== undefined)?.firstRefusal;
  if (example) console.log(`\nThe first refusal, as the bot received it (${example.title}):\n${indent(example.body)}`);
  console.log(`\nProxy log (one JSON line per request): ${logPath}`);
  console.log(`Compliance report of this crawl (from the ledger ${ledgerPath}): ${reportPath}`);
  if (leaks > 0 || mismatches > 0) {
    console.error('demo: FAILED: the proxy let a refused request through or decided differently from the engine (see above)');
    return 1;
  }
  return 0;
}

const watchdog = setTimeout(() => {
  console.error(`demo: still running after ${WATCHDOG_MS / 1000} s; giving up`);
  process.exit(1);
}, WATCHDOG_MS);
watchdog.unref();

main().then(
  (code) => {
    process.exitCode = code;
    // Everything is closed by now; if some handle still keeps the process alive, say so and leave.
    setTimeout(() => {
      console.error('demo: a handle was still open 5 s after closing; exiting anyway');
      process.exit(code);
    }, 5000).unref();
  },
  (err: unknown) => {
    console.error('demo failed:', err);
    process.exitCode = 1;
  },
);
