/**
 * What the `serve` process does on signals and on an internal error. The only
 * place that handles process signals. Extension, not in RFC 9309.
 *
 * | event | action | exit |
 * |---|---|---|
 * | SIGHUP | reload the configuration file (a bad file changes nothing; logged) | keeps running |
 * | SIGTERM, SIGINT | drain, then close (see `drain.ts`) | 0 |
 * | a second SIGTERM/SIGINT during the drain | cut the drain short (logged) | 0 |
 * | uncaught exception, unhandled rejection | log it (`fatal`), write the access line of every request in flight, flush the log | 1 |
 * | SIGKILL | (cannot be handled) at most the last 100 ms of log lines are lost | |
 */
import type { Logger } from 'pino';
import { flushLogSync } from '../audit/logger.js';

/** Error code in the access line of a request in flight when the process died of an internal error. */
export const FATAL_ERROR = 'PROXY_FATAL_ERROR';

/** Once stopped, the process exits this long after at the latest, ms, should a stray handle keep it up. */
const EXIT_GRACE_MS = 2000;

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

    const onReload = (): void => {
      logger.info({ event: 'signal', signal: 'SIGHUP' }, 'SIGHUP: reloading the configuration');
      try {
        lifecycle.reload();
      } catch (err) {
        logger.error({ event: 'config-reload-failed', err }, 'configuration reload failed');
      }
    };

    const onStop = (signal: NodeJS.Signals): void => {
      logger.info({ event: 'signal', signal }, `${signal}: ${stopping ? 'stopping now' : 'stopping'}`);
      if (stopping) return lifecycle.forceStop(signal);
      stopping = lifecycle.stop(signal).then(
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

    const onFatal = (err: unknown, origin: string): void => {
      try {
        logger.fatal({ event: 'fatal', origin, err }, `internal error (${origin}): exiting`);
        lifecycle.abandonInFlight(FATAL_ERROR);
      } finally {
        flushLogSync(logger);
        process.exit(1);
      }
    };

    process.on('SIGHUP', onReload);
    process.on('SIGTERM', onStop);
    process.on('SIGINT', onStop);
    process.on('uncaughtException', (err) => onFatal(err, 'uncaughtException'));
    process.on('unhandledRejection', (reason) => onFatal(reason, 'unhandledRejection'));
  });
}
