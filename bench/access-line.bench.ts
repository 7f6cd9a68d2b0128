/**
 * The access line's own cost, in process (issue 11): CPU µs per line of
 * `writeAccessLog` with a logger made by `createLogger` writing to a real
 * file, for entries shaped like the proxy bench's (`50o-ka`: an allowed GET,
 * forwarded, 1.1 KB of JSON), and the parts: building the record, serialising
 * it, and the whole path with the write(2) calls. GC time (PerformanceObserver
 * `gc` entries) and bytes allocated per line alongside (run with
 * `--min-semi-space-size=64 --max-semi-space-size=64` so that a burst of 2,000 lines fits without a GC).
 *
 * Builds compared in one process, interleaved rounds: this checkout's `dist/`
 * and any `--base DIR` (another checkout, built with `npm run build`), e.g.
 * main's. Prints medians over rounds. Asserts nothing; ~30 s.
 *
 *   npm run build && node --min-semi-space-size=64 --max-semi-space-size=64 --import tsx bench/access-line.bench.ts [--base DIR] [--rounds N] [--lines N]
 *
 * ACCESS_LINE_ONLY=encode|write ACCESS_LINE_LINES=N [ACCESS_LINE_BUILD=DIR]: only `encodeAccessLine` into a
 * buffer (encode) or `writeAccessLog` to a file (write) of DIR's build (default this checkout), 100,000 lines
 * of warm-up then N lines, nothing timed, then exit. For an instruction count that the machine's load does not
 * move: the difference of two runs (N and 0) under `valgrind --tool=cachegrind --cache-sim=no
 * --smc-check=all-non-file node --single-threaded ...` (bench/PROFILE.md, "The access line, session 19").
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';
import { pathToFileURL } from 'node:url';
import type * as AccessLine from '../src/audit/access-line.js';
import type * as AccessLog from '../src/audit/access-log.js';
import type * as LoggerModule from '../src/audit/logger.js';
import type * as LineBufferModule from '../src/audit/line-buffer.js';
import type { AccessEntry } from '../src/audit/access-entry.js';
import type { SnapshotInfo } from '../src/policy/decision.js';
import { median } from './support.js';

function argOf(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
}
const ROUNDS = Number(argOf('rounds') ?? 7);
const LINES = Number(argOf('lines') ?? 50_000);

interface Build {
  label: string;
  line: Partial<typeof AccessLine> & Pick<typeof AccessLine, 'writeAccessLog'>;
  log: typeof AccessLog;
  logger: typeof LoggerModule;
}

async function loadBuild(label: string, root: string): Promise<Build> {
  const at = (file: string): string => pathToFileURL(path.join(root, 'dist/audit', file)).href;
  return {
    label,
    line: (await import(at('access-line.js'))) as typeof AccessLine,
    log: (await import(at('access-log.js'))) as typeof AccessLog,
    logger: (await import(at('logger.js'))) as typeof LoggerModule,
  };
}

/** 1,000 entries like the proxy bench's, differing where requests differ (id, port, times, origin); one snapshot object per origin. */
function makeEntries(): AccessEntry[] {
  const entries: AccessEntry[] = [];
  const snapshots: SnapshotInfo[] = [];
  const t0 = Date.now();
  for (let i = 0; i < 1000; i++) {
    const port = 40_000 + (i % 50);
    const origin = `http://127.0.0.1:${port}`;
    const started = t0 + i * 0.37;
    entries.push({
      requestId: `m3k2q9x1ab-${i + 1}`,
      startedAtMs: started,
      client: { address: '127.0.0.1', port: 50_000 + (i % 50) },
      request: {
        method: 'GET',
        url: `${origin}/page/1?q=1`,
        userAgent: 'Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot-info)',
        via: 'http',
      },
      identity: null,
      decision: {
        verdict: 'allow',
        reason: 'rule-allow',
        origin,
        path: '/page/1?q=1',
        productToken: null,
        agentTokens: ['ExampleBot'],
        group: '*',
        rule: { kind: 'allow', pattern: '/', line: 2 },
        crawlDelaySeconds: null,
        // One object per origin, shared by its requests, as the robots cache hands it out.
        snapshot: (snapshots[i % 50] ??= {
          url: `${origin}/robots.txt`,
          state: 'ok',
          status: 200,
          fetchedAtMs: t0 - 5000,
          expiresAtMs: t0 - 5000 + 86_400_000,
          bytes: 23,
          truncated: false,
          error: undefined,
        }),
        identity: null,
        pacing: { delayMs: 0, waitedMs: 0 },
        upstream: { status: 200 },
      },
      productTokens: ['ExampleBot'],
      timings: { queueWaitMs: 0, upstreamStartedAtMs: started + 0.21, upstreamMs: 0.93, durationMs: 1.41 },
      response: { status: 200, upstreamStatus: 200, bytesSent: 96, bytesReceived: 0, clientAborted: false },
      error: null,
    });
  }
  return entries;
}

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration;
}).observe({ entryTypes: ['gc'] });

/** Heap bytes allocated per line of `work`: the growth of the used heap over 2,000 lines, in a burst without a GC (the lowest of 5 tries). */
function allocatedPerLine(entries: AccessEntry[], work: (entry: AccessEntry) => void): number {
  const newSpace = (): number => v8.getHeapStatistics().used_heap_size;
  let best = Infinity;
  for (let attempt = 0; attempt < 5; attempt++) {
    const before = newSpace();
    for (let i = 0; i < 2000; i++) work(entries[i % entries.length] as AccessEntry);
    const grown = newSpace() - before;
    if (grown >= 0) best = Math.min(best, grown / 2000);
  }
  return best;
}

/** CPU µs and GC µs per line of `work(entry)` over {@link LINES} lines. */
async function measure(entries: AccessEntry[], work: (entry: AccessEntry) => void): Promise<[number, number]> {
  await new Promise((resolve) => setImmediate(resolve));
  gcMs = 0;
  const before = process.cpuUsage();
  for (let i = 0; i < LINES; i++) work(entries[i % entries.length] as AccessEntry);
  const used = process.cpuUsage(before);
  await new Promise((resolve) => setTimeout(resolve, 5)); // GC entries arrive asynchronously
  return [(used.user + used.system) / LINES, (gcMs * 1000) / LINES];
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'access-line-bench-'));
const only = process.env['ACCESS_LINE_ONLY'];
if (only !== undefined) {
  const root = path.resolve(process.env['ACCESS_LINE_BUILD'] ?? process.cwd());
  const build = await loadBuild(only, root);
  const out = new (await import(pathToFileURL(path.join(root, 'dist/audit/line-buffer.js')).href) as typeof LineBufferModule).LineBuffer(64 * 1024);
  const logger = build.logger.createLogger({ level: 'info', file: path.join(dir, 'count.log') });
  const work = only === 'encode'
    ? (entry: AccessEntry): void => {
      out.length = 0;
      build.line.encodeAccessLine?.(out, entry, ',"pid":1,"hostname":"vm"', 1_764_547_200_000 + entry.startedAtMs % 1000);
    }
    : (entry: AccessEntry): void => build.line.writeAccessLog(logger, entry);
  if (only !== 'encode' && only !== 'write') throw new Error('ACCESS_LINE_ONLY: encode or write');
  const entries = makeEntries();
  for (let i = 0; i < 100_000; i++) work(entries[i % entries.length] as AccessEntry);
  const n = Number(process.env['ACCESS_LINE_LINES'] ?? 0);
  for (let i = 0; i < n; i++) work(entries[i % entries.length] as AccessEntry);
  build.logger.flushLogSync(logger);
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
const builds = [await loadBuild('this checkout', process.cwd())];
const base = argOf('base');
if (base !== undefined) builds.push(await loadBuild(`base ${base}`, path.resolve(base)));
const entries = makeEntries();
const scratch = builds[0] === undefined ? undefined : new (await import(pathToFileURL(path.join(process.cwd(), 'dist/audit/line-buffer.js')).href) as typeof LineBufferModule).LineBuffer(64 * 1024);

type Part = 'record' | 'encode' | 'writeAccessLog';
const results = new Map<string, number[]>();
const push = (key: string, value: number): void => void (results.get(key) ?? results.set(key, []).get(key))?.push(value);

const sink: unknown[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? builds : [...builds].reverse();
  for (const build of order) {
    const file = path.join(dir, `${build.label.replace(/\W+/g, '_')}-${round}.log`);
    const logger = build.logger.createLogger({ level: 'info', file });
    const parts: [Part, (entry: AccessEntry) => void][] = [
      ['record', (entry) => void (sink[0] = build.log.toAccessLogRecord(entry))],
      // This checkout only: the line encoded into a buffer, no write (main has no encoder: its figure is n/a).
      ['encode', (entry) => {
        if (build.line.encodeAccessLine === undefined || scratch === undefined) return;
        scratch.length = 0;
        build.line.encodeAccessLine(scratch, entry, ',"pid":1,"hostname":"vm"', Date.now());
      }],
      ['writeAccessLog', (entry) => build.line.writeAccessLog(logger, entry)],
    ];
    for (const [part, work] of parts) {
      const [cpu, gc] = await measure(entries, work);
      push(`${build.label}|${part}|cpu`, cpu);
      push(`${build.label}|${part}|gc`, gc);
      push(`${build.label}|${part}|alloc`, allocatedPerLine(entries, work));
    }
    build.logger.flushLogSync(logger);
    push(`${build.label}|bytes`, statSync(file).size / (LINES + 10_000));
  }
}

console.log(`access-line bench: node ${process.version}, ${LINES} lines per round, ${ROUNDS} rounds, load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
console.log('CPU µs per line (GC µs per line, heap bytes allocated per line), medians; record: toAccessLogRecord alone (main builds it on the way); encode: encodeAccessLine into a buffer (this checkout; main has none); writeAccessLog: the whole path to a file');
for (const build of builds) {
  const cell = (part: Part): string =>
    `${median(results.get(`${build.label}|${part}|cpu`) ?? []).toFixed(2)} (GC ${median(results.get(`${build.label}|${part}|gc`) ?? []).toFixed(2)}, ${median(results.get(`${build.label}|${part}|alloc`) ?? []).toFixed(0)} B allocated)`;
  console.log(`  ${build.label.padEnd(40)} record ${cell('record')}  encode ${cell('encode')}  writeAccessLog ${cell('writeAccessLog')}  ${median(results.get(`${build.label}|bytes`) ?? []).toFixed(0)} B/line`);
}
rmSync(dir, { recursive: true, force: true });
