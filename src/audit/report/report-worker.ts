/**
 * The worker-thread side of {@link ReportRunner}: answers report requests
 * with a {@link ReportService} of its own (its own read-only SQLite
 * connection per request), so the aggregation of a long range runs off the
 * proxy's event loop. Messages in: {@link ReportJob}; out: {@link ReportReply}.
 * Extension, not in RFC 9309.
 */
import { parentPort } from 'node:worker_threads';
import { ReportService, type ReportAnswer } from './report-service.js';

/** One request for the worker. `nowMs`: the proxy's current time, ms since the epoch. */
export interface ReportJob {
  id: number;
  ledgerPath: string | undefined;
  pathname: string;
  /** The URL query, as `URLSearchParams.toString()` gives it. */
  search: string;
  nowMs: number;
}

/** The worker's answer to job `id`: the report answer, or the message of what it threw. */
export type ReportReply = { id: number; answer: ReportAnswer } | { id: number; error: string };

parentPort?.on('message', (job: ReportJob) => {
  let reply: ReportReply;
  try {
    const service = new ReportService({ ledgerPath: job.ledgerPath, nowMs: () => job.nowMs });
    reply = { id: job.id, answer: service.answer(job.pathname, new URLSearchParams(job.search)) };
  } catch (err) {
    reply = { id: job.id, error: err instanceof Error ? err.message : String(err) };
  }
  parentPort?.postMessage(reply);
});
