/**
 * What the `serve` process does on signals and on an internal error. The only
 * place that handles process signals. Extension, not in RFC 9309.
 *
 * | event | action | exit |
 * |---|---|---|
 * | SIGHUP | reload the configuration file (a bad file changes nothing; logged) | keeps running |
 * | SIGTERM, SIGINT | drain, then close (see `drain.ts`) | 0 |
 * | a second SIGTERM/SIGINT during the drain, {@link REPEATED_SIGNAL_MS} or more after the first | cut the drain short (logged) | 0 |
 * | the same signal again within {@link REPEATED_SIGNAL_MS} | nothing (logged): one Ctrl-C under `npm start` arrives twice | |
 * | run by an npm script, and the npm process is gone | drain, then close, as SIGTERM | 0 |
 * | uncaught exception, unhandled rejection | log it (`fatal`), write the access line of every request in flight, flush the log | 1 |
 * | SIGKILL | (cannot be handled) at most the last 100 ms of log lines are lost | |
 */
import type { Logger } from 'pino';
import { flushLogSync } from '../audit/logger.js';

/** Error code in the access line of a request in flight when the process died of an internal error. */
export const FATAL_ERROR = 'PROXY_FATAL_ERROR';

/** Once stopped, the process exits this long after at the latest, ms, should a stray handle keep it up. */
const EXIT_GRACE_MS = 2000;

/**
 * The same stop signal again within this time of the first is the same request, ms: a terminal's
 * Ctrl-C reaches every process of the foreground group, `npm start` and this one, and npm passes
 * its SIGINT on to this process as well, so one keypress arrives twice within a few ms.
 */
export const REPEATED_SIGNAL_MS = 1000;

/** How often the parent process is checked for (see {@link ProcessLifecycle.watchParent}), ms. */
const PARENT_CHECK_MS = 500;

/** What the handlers act on. */
export interface ProcessLifecycle {
  logger: Logger;
  /** SIGHUP. Must not throw (it is guarded anyway). */
  reload(): void;
  /** The first SIGTERM/SIGINT: drain and close; resolves when closed. */
  stop(trigger: string): Promise<unknown>;
  /** A further SIGTERM/SIGINT while `stop` runs. */
  forceStop(trigger: string): void;
  /** Before a fatal exit: audits the requests in flight with `error`. */
  abandonInFlight(error: string): void;
  /**
   * The pid of a parent whose end stops the proxy (drain, as SIGTERM), checked every
   * {@link PARENT_CHECK_MS}: `npm start` exits on SIGHUP (and SIGKILL) without passing it on, and
   * would otherwise leave this process running, detached, on its ports. Undefined: no check.
   */
  watchParent?: number;
}

/**
 * Installs the handlers of the table above and resolves with the exit code once the proxy has
 * stopped (0). A fatal error does not resolve: it exits the process with 1 after flushing the log.
 * Once stopped, the process is left to end on its own, and exits after {@link EXIT_GRACE_MS} at
 * the latest.
 */
export function runUntilStopped(lifecycle: ProcessLifecycle): Promise<number> {
  const { logger } = lifecycle;
  return new Promise<number>((resolve) => {
    let stopping: Promise<unknown> | undefined;
    let firstStop: { trigger: string; atMs: number } | undefined;
    let parentCheck: NodeJS.Timeout | undefined;

    const onReload = (): void => {
      logger.info({ event: 'signal', signal: 'SIGHUP' }, 'SIGHUP: reloading the configuration');
      try {
        lifecycle.reload();
      } catch (err) {
        logger.error({ event: 'config-reload-failed', err }, 'configuration reload failed');
      }
    };

    /** Drains and closes (the first stop), or cuts the drain short (a later one). */
    const stopFor = (trigger: string): void => {
      if (stopping) return lifecycle.forceStop(trigger);
      firstStop = { trigger, atMs: Date.now() };
      clearInterval(parentCheck);
      stopping = lifecycle.stop(trigger).then(
        () => 0,
        (err: unknown) => {
          logger.error({ event: 'shutdown-error', err }, 'the stop failed');
          return 1;
        },
      );
      void stopping.then((code) => {
        process.off('SIGHUP', onReload);
        flushLogSync(logger);
        setTimeout(() => process.exit(code as number), EXIT_GRACE_MS).unref();
        resolve(code as number);
      });
    };

    const onStop = (signal: NodeJS.Signals): void => {
      if (firstStop?.trigger === signal && Date.now() - firstStop.atMs < REPEATED_SIGNAL_MS) {
        logger.info({ event: 'signal', signal, repeated: true }, `${signal} again within ${REPEATED_SIGNAL_MS} ms: the same stop (send it again later to stop now)`);
        return;
      }
      logger.info({ event: 'signal', signal }, `${signal}: ${stopping ? 'stopping now' : 'stopping'}`);
      stopFor(signal);
    };

    const onFatal = (err: unknown, origin: string): void => {
      try {
        logger.fatal({ event: 'fatal', origin, err }, `internal error (${origin}): exiting`);
        lifecycle.abandonInFlight(FATAL_ERROR);
      } finally {
        flushLogSync(logger);
        process.exit(1);
      }
    };

    if (lifecycle.watchParent !== undefined) {
      const parent = lifecycle.watchParent;
      parentCheck = setInterval(() => {
        if (process.ppid === parent) return;
        logger.warn({ event: 'parent-exited', parentPid: parent }, `the parent process (pid ${parent}, the npm script that started this one) is gone: stopping`);
        stopFor('parent-exited');
      }, PARENT_CHECK_MS).unref();
    }

    process.on('SIGHUP', onReload);
    process.on('SIGTERM', onStop);
    process.on('SIGINT', onStop);
    process.on('uncaughtException', (err) => onFatal(err, 'uncaughtException'));
    process.on('unhandledRejection', (reason) => onFatal(reason, 'unhandledRejection'));
  });
}
