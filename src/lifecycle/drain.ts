/**
 * The stop of a running proxy (SIGTERM, SIGINT, `RunningProxy.close`): drain,
 * then close. Extension, not in RFC 9309.
 *
 * 1. Stop accepting connections; answer every queued request, and every
 *    request that arrives on a connection already open, 503 + `Retry-After`
 *    (`proxy-shutting-down`); close idle keep-alive connections and idle
 *    intercepted tunnels; send `Connection: close` on the responses still to
 *    come, and close each busy connection after its response.
 * 2. Let the requests in flight finish, for at most `drainTimeoutMs`.
 * 3. Whatever is still running then (or at once, on {@link Drain.force}) is cut:
 *    its access line is written first, with error `PROXY_DRAIN_TIMEOUT` or
 *    `PROXY_SHUTDOWN_FORCED`.
 * 4. Close what is left: opaque streams (tunnel-mode CONNECT relays, upgraded
 *    WebSocket streams) never hold the drain open, as the proxy cannot see a
 *    request boundary in them; they are closed here, as is the admin listener.
 *
 * The start and the end are logged (`shutdown-start`, `shutdown-end`) with counts.
 */
import type { Logger } from 'pino';
import type { AccessEntry } from '../audit/access-entry.js';

/** Error code in the access line of a request cut because the drain timed out. */
export const DRAIN_TIMEOUT_ERROR = 'PROXY_DRAIN_TIMEOUT';
/** Error code in the access line of a request cut by a second stop signal. */
export const SHUTDOWN_FORCED_ERROR = 'PROXY_SHUTDOWN_FORCED';

/** What the drain sees of the running proxy. */
export interface DrainTarget {
  /** Counts for the log lines. */
  counts(): { requestsInFlight: number; queued: number; httpConnections: number; tunnels: number };
  /** True when no request is in progress anywhere (the drain is done). */
  isIdle(): boolean;
  /** Step 1 (see the module comment). */
  beginDrain(): void;
  /** Writes the access line of every request still in flight with `error`; returns how many. */
  abandonInFlight(error: string): number;
  /** Step 4: closes every listener, connection, pool and agent. */
  teardown(): Promise<void>;
}

/** How a drain ended. */
export interface DrainReport {
  /** `drained`: every request finished; `timeout`: some were cut at `drainTimeoutMs`; `forced`: cut by {@link Drain.force}. */
  outcome: 'drained' | 'timeout' | 'forced';
  durationMs: number;
  /** Requests that finished normally during the drain. */
  completed: number;
  /** Requests answered 503 `proxy-shutting-down` (queued, or arrived during the drain). */
  refused: number;
  /** Requests cut at the timeout or by force. */
  cut: number;
}

/** How often the drain checks whether the requests in flight are done, ms. */
const POLL_MS = 20;

/** One stop of one proxy (lifecycle: {@link Drain.run} once; later calls share it). */
export class Drain {
  readonly #target: DrainTarget;
  readonly #logger: Logger;
  #run: Promise<DrainReport> | undefined;
  #force: ((trigger: string) => void) | undefined;
  #tally = { completed: 0, refused: 0, cut: 0 };

  /**
   * Its timers are real, ref'd Node timers, whatever clock the rest of the proxy runs on: a drain
   * waits for sockets, and the process must not end while it waits.
   */
  constructor(target: DrainTarget, options: { logger: Logger }) {
    this.#target = target;
    this.#logger = options.logger;
  }

  /** True once {@link Drain.run} was called. */
  get isDraining(): boolean {
    return this.#run !== undefined;
  }

  /** Counts one finished request (call it from the access log hook); ignored unless draining. */
  observe(entry: AccessEntry): void {
    if (!this.isDraining) return;
    if (entry.error === DRAIN_TIMEOUT_ERROR || entry.error === SHUTDOWN_FORCED_ERROR) this.#tally.cut += 1;
    else if (entry.decision.reason === 'proxy-shutting-down') this.#tally.refused += 1;
    else this.#tally.completed += 1;
  }

  /**
   * Drains and closes (see the module comment). Idempotent: a second call returns the first
   * call's promise. Never rejects: a teardown failure is logged.
   * @param options.trigger what asked for the stop, for the log (`SIGTERM`, `SIGINT`, `close`).
   * @param options.drainTimeoutMs time the requests in flight get, ms (>= 0).
   */
  run(options: { trigger: string; drainTimeoutMs: number }): Promise<DrainReport> {
    this.#run ??= this.#drain(options.trigger, options.drainTimeoutMs);
    return this.#run;
  }

  /**
   * Ends a drain under way at once (a second SIGTERM/SIGINT): the requests still in flight are
   * cut now. Does nothing before {@link Drain.run} or after the wait ended.
   */
  force(trigger: string): void {
    this.#force?.(trigger);
  }

  async #drain(trigger: string, drainTimeoutMs: number): Promise<DrainReport> {
    const startedAtMs = performance.now();
    this.#logger.info(
      { event: 'shutdown-start', trigger, drainTimeoutMs, ...this.#target.counts() },
      'stopping: no new connections; queued requests get 503; requests in flight may finish',
    );
    this.#target.beginDrain();
    const outcome = await this.#waitForIdle(drainTimeoutMs);
    if (outcome !== 'drained') {
      const requestsInFlight = this.#target.counts().requestsInFlight;
      if (outcome === 'timeout') {
        this.#logger.warn({ event: 'shutdown-timeout', drainTimeoutMs, requestsInFlight }, `drain timed out: cutting ${requestsInFlight} request(s) in flight`);
      }
      this.#target.abandonInFlight(outcome === 'timeout' ? DRAIN_TIMEOUT_ERROR : SHUTDOWN_FORCED_ERROR);
    }
    try {
      await this.#target.teardown();
    } catch (err) {
      this.#logger.error({ event: 'shutdown-error', err }, 'closing the proxy failed');
    }
    const report: DrainReport = { outcome, durationMs: Math.round(performance.now() - startedAtMs), ...this.#tally };
    this.#logger.info({ event: 'shutdown-end', ...report }, 'stopped');
    return report;
  }

  #waitForIdle(drainTimeoutMs: number): Promise<DrainReport['outcome']> {
    return new Promise((resolve) => {
      let poller: NodeJS.Timeout | undefined;
      const end = (outcome: DrainReport['outcome']): void => {
        clearTimeout(poller);
        clearTimeout(deadline);
        this.#force = undefined;
        resolve(outcome);
      };
      this.#force = (trigger) => {
        this.#logger.warn({ event: 'shutdown-forced', trigger, requestsInFlight: this.#target.counts().requestsInFlight }, 'second stop signal: ending the drain now');
        end('forced');
      };
      const poll = (): void => {
        if (this.#target.isIdle()) return end('drained');
        poller = setTimeout(poll, POLL_MS);
      };
      const deadline = setTimeout(() => end('timeout'), drainTimeoutMs);
      poll();
    });
  }
}
