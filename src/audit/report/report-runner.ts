/**
 * Runs the report's reads on a worker thread: a `/report` query over a long
 * range aggregates every per-minute rollup in it (30 days of a busy ledger:
 * seconds of synchronous SQLite work), which on the event loop would stall
 * every proxied request meanwhile. The event loop only flushes the ledger
 * (`beforeRead`) and posts the job. At most {@link MAX_PENDING_REPORTS} queries
 * wait or run at once; beyond, 503 `report-busy` with `Retry-After`. The
 * worker starts on the first query and is started again after a failure.
 * Extension, not in RFC 9309.
 */
import { Worker } from 'node:worker_threads';
import type { ReportAnswer } from './report-service.js';
import type { ReportJob, ReportReply } from './report-worker.js';

/** Report queries waiting or running at once, at most. */
export const MAX_PENDING_REPORTS = 4;

/** Options of {@link ReportRunner}. */
export interface ReportRunnerOptions {
  /** The ledger file, or undefined when the ledger is off. */
  ledgerPath: string | undefined;
  /** Called on the event loop before each query (writes what the ledger holds in memory, so the report is current). */
  beforeRead?: () => void;
  /** The current time, ms since the epoch (ranges end now). */
  nowMs: () => number;
}

const JSON_TYPE = 'application/json; charset=utf-8';

function failure(status: number, code: string, message: string, headers?: Record<string, string>): ReportAnswer {
  return { status, contentType: JSON_TYPE, body: `${JSON.stringify({ error: code, message })}\n`, ...(headers ? { headers } : {}) };
}

/**
 * The worker's entry. Under tsx (the tests) the module is TypeScript and the
 * worker loads it through tsx's API; built, it is the compiled `.js`.
 */
function startWorker(): Worker {
  const isTypeScript = import.meta.url.endsWith('.ts');
  const entry = new URL(isTypeScript ? './report-worker.ts' : './report-worker.js', import.meta.url).href;
  if (!isTypeScript) return new Worker(new URL(entry));
  const api = import.meta.resolve('tsx/esm/api');
  return new Worker(`import(${JSON.stringify(api)}).then((tsx) => tsx.tsImport(${JSON.stringify(entry)}, ${JSON.stringify(entry)}))`, { eval: true });
}

/** Answers report requests on a worker thread (lifecycle: `close()`). */
export class ReportRunner {
  readonly #options: ReportRunnerOptions;
  #worker: Worker | undefined;
  readonly #pending = new Map<number, (answer: ReportAnswer) => void>();
  #nextId = 1;
  #closed = false;

  constructor(options: ReportRunnerOptions) {
    this.#options = options;
  }

  /**
   * Answers one GET of `/report` or below (see `report-service.ts`). Never rejects: a worker
   * that fails answers 500 `report-failed`; too many queries at once, 503 `report-busy`.
   */
  answer(pathname: string, params: URLSearchParams): Promise<ReportAnswer> {
    if (this.#closed) return Promise.resolve(failure(503, 'report-busy', 'the proxy is shutting down', { 'retry-after': '1' }));
    if (this.#pending.size >= MAX_PENDING_REPORTS) {
      return Promise.resolve(failure(503, 'report-busy', `${MAX_PENDING_REPORTS} report queries are already running; retry when one is done`, { 'retry-after': '1' }));
    }
    this.#options.beforeRead?.();
    const id = this.#nextId++;
    const job: ReportJob = { id, ledgerPath: this.#options.ledgerPath, pathname, search: params.toString(), nowMs: this.#options.nowMs() };
    return new Promise<ReportAnswer>((resolve) => {
      this.#pending.set(id, resolve);
      this.#workerNow().postMessage(job);
    });
  }

  /** Stops the worker; queries still running are answered 503. */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = undefined;
    this.#settleAll(failure(503, 'report-busy', 'the proxy is shutting down', { 'retry-after': '1' }));
    await worker?.terminate();
  }

  #workerNow(): Worker {
    if (this.#worker !== undefined) return this.#worker;
    const worker = startWorker();
    worker.unref();
    worker.on('message', (reply: ReportReply) => {
      const resolve = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      resolve?.('answer' in reply ? reply.answer : failure(500, 'report-failed', reply.error));
    });
    const lost = (message: string): void => {
      if (this.#worker === worker) this.#worker = undefined;
      this.#settleAll(failure(500, 'report-failed', message));
    };
    worker.on('error', (err) => lost(`the report worker failed: ${err.message}`));
    worker.on('exit', (code) => lost(`the report worker exited (code ${code})`));
    this.#worker = worker;
    return worker;
  }

  #settleAll(answer: ReportAnswer): void {
    const waiting = [...this.#pending.values()];
    this.#pending.clear();
    for (const resolve of waiting) resolve(answer);
  }
}
