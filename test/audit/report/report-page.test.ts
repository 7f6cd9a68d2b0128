/**
 * The report page in a real browser: Debian's chromium, driven by
 * playwright-core (no browser is downloaded), loads /report from a proxy that
 * served real traffic, and the page shows the ledger's numbers, answers the
 * three questions, draws its charts, narrows its tables when a filter changes
 * and shows a robots.txt diff. A screenshot is kept in test-artifacts/.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';
import { chromium, type Browser, type Page } from 'playwright-core';
import { LedgerReader } from '../../../src/audit/report/ledger-reader.js';
import { buildReport, diffsOfChangedVersions } from '../../../src/audit/report/report-data.js';
import { renderReportPage } from '../../../src/audit/report/report-page.js';
import { openReadOnly, tempDir } from '../ledger/support.js';
import { startTrafficScenario, type TrafficScenario } from './support.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/', import.meta.url));
/** The flags this machine's closed network needs; never a downloaded browser. */
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/**
 * The few DOM shapes the callbacks below use. They run in the browser; the
 * project's TypeScript program has no DOM library (it would clash with Node's
 * own `crypto` types), so they are declared here.
 */
interface BrowserCanvas {
  width: number;
  height: number;
  getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } | null;
}
interface BrowserDocument {
  getElementById(id: string): { textContent: string | null } | null;
  querySelectorAll(selector: string): { length: number };
}
/** What `globalThis` holds in the browser (callbacks are sent there as source: no helper functions, only casts). */
type BrowserGlobal = { document: BrowserDocument };

/** Pixels of a chart's canvas that are not blank. */
function paintedPixels(page: Page, selector: string): Promise<number> {
  return page.$eval(selector, (canvas) => {
    const c = canvas as unknown as BrowserCanvas;
    const pixels = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
    let painted = 0;
    for (let i = 3; i < pixels.length; i += 4) if (pixels[i]! > 0) painted++;
    return painted;
  });
}

describe('report page in a real browser', { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install -y chromium)` }, () => {
  let s: TrafficScenario;
  let browser: Browser;
  let page: Page;
  let db: Database.Database;
  const errors: string[] = [];

  before(async () => {
    s = await startTrafficScenario();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.on('pageerror', (error) => errors.push(String(error)));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    await page.goto(`${s.proxy.adminUrl}/report?range=1h`);
    await page.waitForSelector('#summary [data-key="requests"]');
    db = openReadOnly(s.ledgerPath);
  });
  after(async () => {
    db?.close();
    await browser?.close();
    await s?.close();
  });

  it('shows the numbers the ledger holds', async () => {
    const ledger = db.prepare("SELECT sum(requests) AS requests, sum(CASE WHEN verdict = 'deny' THEN requests ELSE 0 END) AS refused, sum(CASE WHEN reason = 'rule-disallow' THEN requests ELSE 0 END) AS byRule FROM rollups").get() as Record<string, number>;
    const shown = async (key: string): Promise<string> => (await page.textContent(`#summary [data-key="${key}"] .value`)) ?? '';
    assert.equal(await shown('requests'), String(ledger['requests']));
    assert.equal(await shown('refused'), String(ledger['refused']));
    assert.equal(await shown('refusedByRule'), String(ledger['byRule']));
    const botRows = await page.$$eval('table[data-table="bots"] tbody tr', (rows) => rows.map((r) => [r.querySelector('[data-key="token"]')!.textContent, Number(r.querySelector('[data-key="requests"]')!.textContent)]));
    const fromLedger = db.prepare('SELECT token, sum(requests) AS n FROM rollups GROUP BY token ORDER BY n DESC').all() as Array<{ token: string; n: number }>;
    assert.deepEqual(botRows, fromLedger.map((r) => [r.token, r.n]));
    // A delay applied above the file's crawl-delay (2000 ms beside "*: 1s") puzzled an operator of a
    // fleet whose instance had paced alone without Redis: the note says what raises it.
    assert.match((await page.textContent('#section-origins .note')) ?? '', /longest delay the queue applied \(more than the crawl-delay in the file when pacing\.minDelay or a policy rule raised it, or while an instance of a fleet paced alone without Redis: delay x state\.fleetSize\)/);
  });

  it('answers which bot was refused most and by which line, which robots.txt changed or failed, which bot waited longest', async () => {
    const gptRequests = (db.prepare("SELECT sum(requests) AS n FROM rollups WHERE token = 'GPTBot'").get() as { n: number }).n;
    assert.equal(await page.textContent('#answer-refused-bot'), `GPTBot: 6 of ${gptRequests} requests refused (6 by robots.txt rules)`);
    const rules = await page.$$eval('#answer-refused-rules li', (items) => items.map((i) => i.textContent));
    assert.deepEqual(rules, [`${s.shop.url}/robots.txt line 2 (Disallow: /private/) 4×`, `${s.shop.url}/robots.txt line 3 (Disallow: /cart/) 2×`]);
    assert.match((await page.textContent('#answer-refused')) ?? '', /Rule that refused it most:/, 'no tie at the top: one rule is named the most');
    const robots = (await page.textContent('#answer-robots .answer')) ?? '';
    assert.ok(robots.includes(`${s.shop.url}: 1 change (now ok 200)`), robots);
    assert.ok(robots.includes(`${s.down.url}: 1 failed fetch (now unreachable 503)`), robots);
    assert.match((await page.textContent('#answer-wait .answer')) ?? '', /^GPTBot: p95 \d+ ms, max \d+ ms over \d+ paced requests$/);
  });

  it('draws the charts', async () => {
    assert.equal(await page.locator('#chart-outcomes canvas').count(), 1);
    assert.equal(await page.locator('#chart-wait canvas').count(), 1);
    assert.ok((await paintedPixels(page, '#chart-outcomes canvas')) > 500, 'the outcome chart has lines and axes on it');
    assert.ok((await paintedPixels(page, '#chart-wait canvas')) > 500, 'the wait chart has lines and axes on it');
  });

  it('shows the diff of a changed robots.txt, with its parse warnings, from the answer and from the versions table', async () => {
    const showsDiff = () => page.waitForFunction(() => (globalThis as unknown as BrowserGlobal).document.getElementById('diff')!.textContent!.includes('@@'));
    await page.click(`#answer-robots li[data-origin="${s.shop.url}"] [data-answer-diff]`);
    await showsDiff();
    const diff = (await page.textContent('#diff')) ?? '';
    assert.match(diff, /^\+Disallow: \/cart\/$/m);
    assert.match(diff, /^\+Noindex: \/tmp\/$/m);
    assert.match(diff, /^parse warning: line 8: unknown-directive/m);
    assert.ok(diff.startsWith(`${s.shop.url}: version `), diff);
    const warned = await page.$$eval('table[data-table="robots-versions"] [data-key="warningList"]', (cells) => cells.map((c) => c.textContent));
    assert.ok(warned.includes('line 8: unknown-directive'), warned.join(' | '));
    await page.evaluate(() => {
      (globalThis as unknown as BrowserGlobal).document.getElementById('diff')!.textContent = '';
    });
    // The same version's row in the versions table (rows are newest first; another origin's may be on top).
    const changedId = await page.getAttribute(`#answer-robots li[data-origin="${s.shop.url}"] [data-answer-diff]`, 'data-answer-diff');
    assert.equal(await page.textContent(`table[data-table="robots-versions"] [data-diff="${changedId}"]`), 'diff');
    await page.click(`table[data-table="robots-versions"] [data-diff="${changedId}"]`);
    await showsDiff();
    assert.match((await page.textContent('#diff')) ?? '', /^\+Disallow: \/cart\/$/m);
    // A first version has no diff to show, only its body and warnings.
    const down = await page.$eval(`table[data-table="robots-versions"] tr:has(td[data-key="origin"]:text-is("${s.down.url}")) [data-diff]`, (b) => b.textContent);
    assert.equal(down, 'show');
  });

  it('narrows the tables when a filter changes, and keeps the filter in the export links', async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'report-page.png'), fullPage: true });
    await page.selectOption('#filter-token', 'CCBot');
    await page.waitForFunction(() => (globalThis as unknown as BrowserGlobal).document.querySelectorAll('table[data-table="bots"] tbody tr').length === 1);
    const tokens = await page.$$eval('table[data-table="bots"] [data-key="token"]', (cells) => cells.map((c) => c.textContent));
    assert.deepEqual(tokens, ['CCBot']);
    const ccbot = (db.prepare("SELECT sum(requests) AS n FROM rollups WHERE token = 'CCBot'").get() as { n: number }).n;
    assert.equal(await page.textContent('#summary [data-key="requests"] .value'), String(ccbot));
    assert.match((await page.getAttribute('#section-bots a[data-export="csv"]', 'href')) ?? '', /^\/report\/data\/bots\.csv\?range=1h&token=CCBot$/);
    assert.match(page.url(), /token=CCBot/, 'the address keeps the filter');
    assert.deepEqual(errors, [], 'no error in the page');
  });

  it('switches the time range: a preset, then a custom range', async () => {
    const ranged = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    ranged.on('pageerror', (error) => errors.push(String(error)));
    try {
      await ranged.goto(`${s.proxy.adminUrl}/report?range=1h`);
      await ranged.waitForSelector('#summary [data-key="requests"]');
      const total = String((db.prepare('SELECT sum(requests) AS n FROM rollups').get() as { n: number }).n);
      const spanMs = async (): Promise<number> => {
        const [from, to] = ((await ranged.textContent('#range-text')) ?? '').split(' · ')[0]!.split(' – ');
        return Date.parse(to!) - Date.parse(from!);
      };
      assert.equal(await spanMs(), 3_600_000);
      await ranged.selectOption('#range', '7d');
      await ranged.waitForURL(/range=7d/);
      await ranged.waitForFunction(() => ((globalThis as unknown as BrowserGlobal).document.getElementById('range-text')!.textContent ?? '').length > 0);
      await ranged.waitForFunction((ms) => {
        const [from, to] = ((globalThis as unknown as BrowserGlobal).document.getElementById('range-text')!.textContent ?? '').split(' · ')[0]!.split(' – ');
        return Date.parse(to!) - Date.parse(from!) === ms;
      }, 7 * 86_400_000);
      assert.equal(await ranged.textContent('#summary [data-key="requests"] .value'), total, 'all the traffic is within 7 days');
      assert.equal(await ranged.getAttribute('#section-bots a[data-export="json"]', 'href'), '/report/data/bots.json?range=7d');

      // A custom range after the traffic: nothing in it.
      await ranged.selectOption('#range', 'custom');
      await ranged.waitForSelector('#from');
      const local = (offsetMs: number): Promise<string> =>
        ranged.evaluate((ms) => {
          const d = new Date(Date.now() + ms);
          return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
        }, offsetMs);
      await ranged.fill('#from', await local(3_600_000));
      await ranged.fill('#to', await local(7_200_000));
      await ranged.click('#apply');
      await ranged.waitForURL(/from=.*&to=/);
      await ranged.waitForFunction(() => (globalThis as unknown as BrowserGlobal).document.getElementById('summary') !== null && ((globalThis as unknown as BrowserGlobal).document.getElementById('answer-refused')!.textContent ?? '').includes('No bot was refused'));
      assert.equal(await ranged.textContent('#summary [data-key="requests"] .value'), '0');
      assert.equal(await ranged.locator('table[data-table="bots"]').count(), 0, 'no bot row in an empty range');
    } finally {
      await ranged.close();
    }
    assert.deepEqual(errors, [], 'no error in the page');
  });

  it('renders the static file the CLI writes, without any request', async () => {
    const reader = LedgerReader.open(s.ledgerPath);
    const nowMs = Date.now();
    const data = buildReport(reader, { fromMs: nowMs - 3_600_000, toMs: nowMs, limit: 200 }, nowMs);
    const html = renderReportPage(data, 'static', diffsOfChangedVersions(reader, data));
    reader.close();
    const file = join(tempDir(), 'report.html');
    writeFileSync(file, html);
    const requests: string[] = [];
    const staticPage = await browser.newPage();
    staticPage.on('request', (r) => requests.push(r.url()));
    await staticPage.goto(`file://${file}`);
    await staticPage.waitForSelector('#summary [data-key="requests"]');
    assert.equal(await staticPage.textContent('#summary [data-key="requests"] .value'), '17');
    await staticPage.click(`#answer-robots li[data-origin="${s.shop.url}"] [data-answer-diff]`);
    assert.match((await staticPage.textContent('#diff')) ?? '', /^\+Disallow: \/cart\/$/m, 'the static file carries its diffs');
    assert.equal(await staticPage.locator('table[data-table="robots-versions"] [data-diff]').count(), 1, 'a button only where the file has the diff');
    assert.deepEqual(requests, [`file://${file}`], 'only the file itself is loaded');
    await staticPage.close();

    // A long table shows its first 25 rows and a button for the rest.
    const refusals = data.tables.refusals.rows;
    const many = Array.from({ length: 40 }, (_, i) => ({ ...refusals[i % refusals.length]!, requestId: `long-${i}` }));
    const longFile = join(tempDir(), 'long.html');
    writeFileSync(longFile, renderReportPage({ ...data, tables: { ...data.tables, refusals: { ...data.tables.refusals, rows: many } } }, 'static'));
    const longPage = await browser.newPage();
    try {
      await longPage.goto(`file://${longFile}`);
      await longPage.waitForSelector('table[data-table="refusals"]');
      assert.equal(await longPage.locator('table[data-table="refusals"] tbody tr').count(), 25);
      assert.equal(await longPage.textContent('[data-more="refusals"]'), 'Show all 40 rows (25 shown)');
      await longPage.click('[data-more="refusals"]');
      assert.equal(await longPage.locator('table[data-table="refusals"] tbody tr').count(), 40);
      assert.equal(await longPage.locator('[data-more="refusals"]').count(), 0);
    } finally {
      await longPage.close();
    }
  });
});
