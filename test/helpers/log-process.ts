/**
 * A child process for the logger and last-resort tests: the real process
 * logger on stdout (batched, as `serve` uses it) and, for the fatal modes,
 * the real signal and error handlers of `serve`.
 * argv[2], the mode:
 * - `idle`: writes one line, then stays up 3 s doing nothing;
 * - `exit`: writes three lines, then `process.exit(0)` at once;
 * - `end`: writes three lines and lets the event loop run dry;
 * - `throw` / `reject`: installs the handlers, writes three lines, then an
 *   uncaught exception / an unhandled rejection 10 ms later.
 * The lines are `{"msg":"line","n":<i>}`; `abandonInFlight` logs `{"event":"abandoned","error":...}`.
 */
import { createLogger } from '../../src/audit/logger.js';

const mode = process.argv[2] ?? 'idle';
const logger = createLogger({ level: 'info' });

if (mode === 'throw' || mode === 'reject') {
  const { runUntilStopped } = await import('../../src/lifecycle/process-handlers.js');
  void runUntilStopped({
    logger,
    reload: () => undefined,
    stop: async () => undefined,
    forceStop: () => undefined,
    abandonInFlight: (error) => logger.info({ event: 'abandoned', error }, 'requests in flight audited'),
  });
}

const count = mode === 'idle' ? 1 : 3;
for (let n = 0; n < count; n++) logger.info({ n }, 'line');

switch (mode) {
  case 'idle':
    setTimeout(() => undefined, 3000);
    break;
  case 'exit':
    process.exit(0);
    break;
  case 'throw':
    setTimeout(() => {
      throw new Error('boom: a bug nobody caught');
    }, 10);
    break;
  case 'reject':
    setTimeout(() => void Promise.reject(new Error('boom: a rejection nobody handled')), 10);
    break;
  default:
    break;
}
