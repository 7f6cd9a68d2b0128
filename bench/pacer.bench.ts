/**
 * The pacer's own CPU cost per request (issue 11, "Queued requests cost CPU"):
 * 50 workers loop acquire -> one event-loop turn of "exchange" -> release on one
 * origin, in-process, on the real clock, with an abort signal, a hold callback
 * and `maxSlotHoldMs: 30000` as the pipeline and the default config use them.
 * At `maxConcurrency: 64` nothing waits; at 4, 46 of the 50 wait in the queue,
 * so the difference between the two series is what waiting costs.
 * Series: the signal the proxy passes (`CancelSignal`) at 64 and at 4, the 50
 * workers spread over 5 identities (round-robin between them) at 4, and a
 * standard `AbortController` signal per request at 64 and at 4.
 *
 * Prints CPU µs per request (user + system of this process, over the whole
 * series, divided by requests served), medians over interleaved rounds.
 * With `Pacer.acquireFor` (a {@link SlotTaker} instead of a promise, as the
 * proxy's exchange waits), two more series, `taker` at 64 and at 4: each
 * worker is its own taker, as an exchange is (skipped for a build without it).
 *
 * Asserts nothing. Runtime ~1 min on an idle machine.
 * Options: `--rounds N`, `--requests N`; `--dist` runs the compiled pacer in
 * dist/ (what `npm start` runs; `npm run build` first) instead of src/ through tsx;
 * `--repo DIR` runs DIR's compiled pacer (DIR/dist: e.g. a checkout of main, for a before/after).
 */
import os from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as ClockModule from '../src/clock.js';
import type * as PacerModule from '../src/pacing/pacer.js';
import type * as CancelModule from '../src/pacing/cancel-signal.js';
import type { AcquireOutcome, SlotTaker } from '../src/pacing/types.js';
import { median } from './support.js';

const repoAt = process.argv.indexOf('--repo');
const repoDist = repoAt >= 0 ? pathToFileURL(`${resolve(process.argv[repoAt + 1] as string)}/dist/`).href : undefined;
const isDist = process.argv.includes('--dist') || repoDist !== undefined;
const from = (path: string): string => (repoDist !== undefined ? new URL(path, repoDist).href : isDist ? `../dist/${path}` : `../src/${path}`);
const { systemClock } = (await import(from('clock.js'))) as typeof ClockModule;
const { Pacer } = (await import(from('pacing/pacer.js'))) as typeof PacerModule;
const { CancelSignal } = (await import(from('pacing/cancel-signal.js'))) as typeof CancelModule;
/** True when the pacer has `acquireFor` (the taker series run). */
const hasTaker = typeof (Pacer.prototype as { acquireFor?: unknown }).acquireFor === 'function';

const WORKERS = 50;
const ORIGIN = 'http://origin.test';

function argOf(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : NaN;
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

const ROUNDS = argOf('rounds', 7);
const REQUESTS = argOf('requests', 40_000);

interface Series {
  label: string;
  maxConcurrency: number;
  identities: number;
  signal: 'cancel' | 'abort-controller' | 'taker';
}

const SERIES: Series[] = [
  { label: 'maxConcurrency 64 (nothing waits)', maxConcurrency: 64, identities: 1, signal: 'cancel' },
  { label: 'maxConcurrency 4 (46 of 50 wait)', maxConcurrency: 4, identities: 1, signal: 'cancel' },
  { label: 'maxConcurrency 4, 5 identities', maxConcurrency: 4, identities: 5, signal: 'cancel' },
  { label: 'AbortController, maxConcurrency 64', maxConcurrency: 64, identities: 1, signal: 'abort-controller' },
  { label: 'AbortController, maxConcurrency 4', maxConcurrency: 4, identities: 1, signal: 'abort-controller' },
  ...(hasTaker
    ? [
        { label: 'taker, maxConcurrency 64', maxConcurrency: 64, identities: 1, signal: 'taker' as const },
        { label: 'taker, maxConcurrency 4', maxConcurrency: 4, identities: 1, signal: 'taker' as const },
      ]
    : []),
];

/** One event-loop turn, as an upstream exchange takes at least. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

type BenchPacer = InstanceType<typeof Pacer> & {
  acquireFor(origin: string, delayMs: number, options: { identity: string; signal?: InstanceType<typeof CancelSignal>; onHoldExceeded?: () => void }, taker: SlotTaker): AcquireOutcome | undefined;
};

/**
 * One worker of a taker series: its own {@link SlotTaker}, as the proxy's exchange is; loops
 * acquireFor -> one event-loop turn -> release, with a new `CancelSignal` per request.
 */
class TakerWorker implements SlotTaker {
  readonly #onTurn = (): void => this.#turnDone();
  #slot: AcquireOutcome | undefined;

  constructor(
    readonly pacer: BenchPacer,
    readonly identity: string,
    readonly run: { remaining: number; refused: number; onHoldExceeded: () => void; done: () => void },
  ) {}

  next(): void {
    const run = this.run;
    if (run.remaining <= 0) return run.done();
    run.remaining -= 1;
    const outcome = this.pacer.acquireFor(ORIGIN, 0, { identity: this.identity, signal: new CancelSignal(), onHoldExceeded: run.onHoldExceeded }, this);
    if (outcome !== undefined) this.takeSlot(outcome);
  }

  takeSlot(outcome: AcquireOutcome): void {
    if (!outcome.granted) {
      this.run.refused += 1;
      return this.next();
    }
    this.#slot = outcome;
    setImmediate(this.#onTurn);
  }

  #turnDone(): void {
    const outcome = this.#slot;
    this.#slot = undefined;
    if (outcome?.granted) outcome.slot.release({ status: 200 });
    this.next();
  }
}

/** A taker series: `requests` acquireFor/release cycles over {@link WORKERS} workers; returns CPU µs per request. */
async function runTakerSeries(series: Series, requests: number): Promise<number> {
  const pacer = new Pacer({ maxConcurrency: series.maxConcurrency, maxWaitMs: 30_000, maxQueue: 1000, maxSlotHoldMs: 30_000 }, systemClock) as BenchPacer;
  let left = WORKERS;
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const run = { remaining: requests, refused: 0, onHoldExceeded: (): void => undefined, done: (): void => void (--left === 0 && finish()) };
  const before = process.cpuUsage();
  for (let i = 0; i < WORKERS; i++) new TakerWorker(pacer, `127.0.0.${1 + (i % series.identities)}`, run).next();
  await finished;
  const used = process.cpuUsage(before);
  pacer.close();
  if (run.refused > 0) throw new Error(`${series.label}: ${run.refused} refused`);
  return (used.user + used.system) / requests;
}

/** Runs `requests` acquire/release cycles over {@link WORKERS} workers; returns CPU µs per request. */
async function runSeries(series: Series, requests: number): Promise<number> {
  if (series.signal === 'taker') return runTakerSeries(series, requests);
  const pacer = new Pacer({ maxConcurrency: series.maxConcurrency, maxWaitMs: 30_000, maxQueue: 1000, maxSlotHoldMs: 30_000 }, systemClock);
  let remaining = requests;
  let refused = 0;
  const onHoldExceeded = (): void => undefined;
  const worker = async (index: number): Promise<void> => {
    const identity = `127.0.0.${1 + (index % series.identities)}`;
    while (remaining > 0) {
      remaining -= 1;
      const signal = series.signal === 'cancel' ? new CancelSignal() : new AbortController().signal;
      // As the pipeline does: await only a promise (a free slot is granted synchronously).
      let outcome = pacer.acquire(ORIGIN, 0, { identity, signal, onHoldExceeded });
      if (outcome instanceof Promise) outcome = await outcome;
      if (!outcome.granted) {
        refused += 1;
        continue;
      }
      await turn();
      outcome.slot.release({ status: 200 });
    }
  };
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: WORKERS }, (_, i) => worker(i)));
  const used = process.cpuUsage(before);
  pacer.close();
  if (refused > 0) throw new Error(`${series.label}: ${refused} refused`);
  return (used.user + used.system) / requests;
}

async function main(): Promise<void> {
  console.log(`pacer (${repoDist ?? (isDist ? 'dist/, compiled' : 'src/ through tsx')}): node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`  ${WORKERS} workers on one origin, delay 0, ${REQUESTS} requests per series, ${ROUNDS} rounds interleaved (first round is warm-up)`);
  const results = new Map<string, number[]>(SERIES.map((s) => [s.label, []]));
  for (let round = 0; round <= ROUNDS; round++) {
    for (const series of SERIES) {
      const usPerRequest = await runSeries(series, REQUESTS);
      if (round > 0) results.get(series.label)?.push(usPerRequest);
    }
  }
  const medianOf = (series: Series): number => median(results.get(series.label) ?? []);
  for (const series of SERIES) {
    const values = results.get(series.label) ?? [];
    const m = medianOf(series);
    const baseline = SERIES.find((s) => s.signal === series.signal && s.maxConcurrency === 64);
    const delta = baseline ? m - medianOf(baseline) : NaN;
    const extra = series === baseline ? '' : `  (${delta >= 0 ? '+' : ''}${delta.toFixed(2)} µs vs nothing waiting)`;
    console.log(
      `  ${series.label.padEnd(36)} ${m.toFixed(2).padStart(6)} µs CPU per request, median; range ${Math.min(...values).toFixed(2)}..${Math.max(...values).toFixed(2)}${extra}`,
    );
  }
}

await main();
