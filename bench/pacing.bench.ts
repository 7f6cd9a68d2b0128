/**
 * Pacing (issue #3, "Benchmarks"): one origin whose robots.txt says
 * `Crawl-delay: 0.05` (20 starts/s at most), pages answered in 10 ms, and 64
 * keep-alive clients hammering it through robots-proxy for ~10 s.
 * Prints the achieved rate against 20/s (target >= 0.99 of it) and the
 * smallest gap between request starts, as seen
 *   - at the origin, in its own child process (so client load here does not
 *     delay its timestamps), and
 *   - in the proxy: when the pacer granted the slot and when undici handed the
 *     request to the upstream connection (`Slot.markSent`), recorded by
 *     wrapping `pacer.acquire` of the running proxy (bench-only instrumentation).
 * Prints figures; asserts nothing. Contacts 127.0.0.1 only. Runtime ~15 s.
 *
 * Processes: origin in a child process; robots-proxy (`startProxy`, log level
 * silent) and the 64 clients in this process (the clients' load is light: the
 * proxy lets 20 requests/s through and holds the rest in its queue).
 */
import http from 'node:http';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { validateConfig } from '../src/config/index.js';
import { systemClock } from '../src/clock.js';
import { startProxy } from '../src/main.js';
import type { AcquireOutcome } from '../src/pacing/index.js';
import { startOriginsProcess } from '../test/helpers/processes.js';

const CLIENTS = 64;
const RUN_MS = 10_000;
const CRAWL_DELAY_S = 0.05;
const PAGE_DELAY_MS = 10;
const TARGET_RATE = 1 / CRAWL_DELAY_S;
const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';

const nowEpochMs = (): number => systemClock.nowMs();

/** Gaps between consecutive values of a sorted list. */
function gapsOf(sorted: number[]): number[] {
  const gaps: number[] = [];
  for (let i = 1; i < sorted.length; i++) gaps.push(sorted[i]! - sorted[i - 1]!);
  return gaps;
}

function quantile(values: number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.round(q * (s.length - 1))))] ?? NaN;
}

/** One line of figures for a list of start times (ms). */
function describeStarts(label: string, startsMs: number[]): void {
  const s = [...startsMs].sort((a, b) => a - b);
  const gaps = gapsOf(s);
  const spanS = ((s.at(-1) ?? 0) - (s[0] ?? 0)) / 1000;
  const rate = spanS > 0 ? (s.length - 1) / spanS : NaN;
  console.log(
    `  ${label.padEnd(34)} ${String(s.length).padStart(4)} starts over ${spanS.toFixed(2)} s: ${rate.toFixed(3)}/s = ${(rate / TARGET_RATE).toFixed(4)} of ${TARGET_RATE}/s;` +
      ` gap min ${Math.min(...gaps).toFixed(2)} ms, p1 ${quantile(gaps, 0.01).toFixed(2)}, median ${quantile(gaps, 0.5).toFixed(2)}, max ${Math.max(...gaps).toFixed(2)} ms;` +
      ` gaps < 50 ms: ${gaps.filter((g) => g < CRAWL_DELAY_S * 1000).length}, < 49 ms: ${gaps.filter((g) => g < CRAWL_DELAY_S * 1000 - 1).length}`,
  );
}

async function main(): Promise<void> {
  const origins = await startOriginsProcess({
    B: { robots: `User-agent: *\nDisallow: /private/\nCrawl-delay: ${CRAWL_DELAY_S}\n`, pageDelayMs: PAGE_DELAY_MS },
  });
  const proxy = await startProxy(
    validateConfig({
      listen: { host: '127.0.0.1', port: 0 },
      admin: { enabled: false },
      log: { level: 'silent' },
      upstream: { allowPrivateNetworks: true },
      pacing: { maxConcurrency: 64, maxWait: '60s', maxQueue: 1000 },
      https: { mode: 'tunnel' },
      stateDir: mkdtempSync(join(os.tmpdir(), 'robots-proxy-bench-')),
    }),
    { logger: pino({ level: 'silent' }) },
  );

  // Instrument the running pacer: grant times and "sent" times of every slot.
  const grantedMs: number[] = [];
  const sentMs: number[] = [];
  const pacer = proxy.pacer;
  const acquire = pacer.acquire.bind(pacer);
  pacer.acquire = async (...args: Parameters<typeof acquire>): Promise<AcquireOutcome> => {
    const outcome = await acquire(...args);
    if (outcome.granted) {
      const slot = outcome.slot;
      grantedMs.push(slot.startedAtMs);
      const markSent = slot.markSent.bind(slot);
      let isSent = false;
      slot.markSent = () => {
        if (!isSent) sentMs.push(nowEpochMs());
        isSent = true;
        markSent();
      };
    }
    return outcome;
  };

  const proxyPort = proxy.proxyAddress.port;
  const statuses = new Map<number | string, number>();
  const count = (key: number | string): void => void statuses.set(key, (statuses.get(key) ?? 0) + 1);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
  const startedAt = nowEpochMs();
  const deadline = startedAt + RUN_MS;
  let seq = 0;
  const oneRequest = (path: string): Promise<void> =>
    new Promise((resolve) => {
      const req = http.request({ host: '127.0.0.1', port: proxyPort, path: origins.urlOf('B') + path, agent, headers: { 'user-agent': BOT_UA } }, (res) => {
        res.resume();
        res.on('end', () => {
          count(res.statusCode ?? 0);
          resolve();
        });
        res.on('error', () => resolve());
      });
      req.on('error', () => {
        if (nowEpochMs() < deadline) count('error');
        resolve();
      });
      req.end();
    });
  const worker = async (): Promise<void> => {
    while (nowEpochMs() < deadline) await oneRequest(`/page/${seq++}`);
  };
  const workers = Promise.all(Array.from({ length: CLIENTS }, worker));
  // At the deadline the clients still queued in the proxy hang up: they leave the queue, nothing goes upstream.
  await new Promise((resolve) => setTimeout(resolve, RUN_MS));
  agent.destroy();
  await workers;
  await new Promise((resolve) => setTimeout(resolve, 200));

  const hits = (await origins.hits('B')).filter((h) => h.url.startsWith('/page/'));
  console.log(`pacing: node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; origin in a child process, robots-proxy and ${CLIENTS} keep-alive clients in this process`);
  console.log(`  robots.txt "Crawl-delay: ${CRAWL_DELAY_S}" (start-to-start model), pages answered after ${PAGE_DELAY_MS} ms, ${CLIENTS} clients for ${RUN_MS / 1000} s`);
  console.log(`  client statuses: ${[...statuses].map(([k, v]) => `${k}: ${v}`).join(', ')} (requests still queued at the deadline were abandoned by their clients)`);
  describeStarts('at the origin (its own process)', hits.map((h) => h.atMs));
  describeStarts('proxy: slot granted by the pacer', grantedMs);
  describeStarts('proxy: sent upstream (markSent)', sentMs);
  console.log(`  page requests the origin received: ${hits.length}; granted slots: ${grantedMs.length}; sent: ${sentMs.length}`);

  await proxy.close();
  await origins.close();
}

await main();
