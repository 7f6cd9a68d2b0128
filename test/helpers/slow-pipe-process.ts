/**
 * A child process for the logger's slow-pipe test: the real process logger on
 * stdout, which the parent makes a pipe that it does not read at first.
 * It writes {@link FIRST_LINES} lines `{"msg":"line","n":<i>,"pad":PAD}` in one
 * synchronous loop and reports over IPC `{ written, dropped }` (had a write
 * blocked on the full pipe, the loop would never end: the parent reads only
 * after this message). On the parent's `more`, it waits until its logger holds
 * nothing, writes {@link MORE_LINES} more lines (n from FIRST_LINES on) and
 * exits with `process.exit(0)`. On `exit`, it exits at once, holding what the
 * full pipe did not take (the exit flush writes it).
 */
import { pino } from 'pino';
import { createLogger, LogWriter } from '../../src/audit/logger.js';

export const FIRST_LINES = 4000;
export const MORE_LINES = 10;
const MAX_BUFFER_BYTES = 64 * 1024;

const logger = createLogger({ level: 'info', maxBufferBytes: MAX_BUFFER_BYTES });
const writer = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym];
if (!(writer instanceof LogWriter)) throw new Error('the logger has no LogWriter');
/** Multi-byte characters too: a pipe that takes part of a batch may cut one, which the writer must resume byte-exact. */
export const PAD = `${'p'.repeat(100)}${'é€😀'.repeat(20)}`;
const pad = PAD;
for (let n = 0; n < FIRST_LINES; n++) logger.info({ n, pad }, 'line');
process.send?.({ written: FIRST_LINES, dropped: writer.droppedLines, bufferedBytes: writer.bufferedBytes, maxBufferBytes: MAX_BUFFER_BYTES });

process.on('message', (message) => {
  if (message === 'exit') process.exit(0); // with the pipe still full: the exit flush waits for the reader
  if (message !== 'more') return;
  const poll = setInterval(() => {
    if (writer.bufferedBytes > 0) return;
    clearInterval(poll);
    for (let n = FIRST_LINES; n < FIRST_LINES + MORE_LINES; n++) logger.info({ n, pad }, 'line');
    process.exit(0);
  }, 10);
});
