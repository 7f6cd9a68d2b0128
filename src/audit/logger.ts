/**
 * The process logger: pino writing JSON lines, with secret header values
 * redacted. Extension, not in RFC 9309.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pino, stdSerializers, type DestinationStream, type Level, type Logger } from 'pino';
import { redactSecrets } from './redact.js';

/** A pino level, or `silent` to turn logging off. */
export type LoggerLevel = Level | 'silent';

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Lowest level written. */
  level: LoggerLevel;
  /** A stream to write JSON lines to (tests); when given, `file` is ignored. */
  destination?: DestinationStream;
  /** File descriptor or path written in batches (see BUFFER_BYTES). @default 1 (stdout) */
  file?: number | string;
}

/** Bytes of log lines gathered before one write. */
const BUFFER_BYTES = 8 * 1024;
/** Longest time a log line waits in that buffer, ms. */
const FLUSH_INTERVAL_MS = 100;

/**
 * Marks a log record built only from fields we choose (no headers, no
 * errors): the redaction walk skips it. Symbol keys are not serialised.
 */
export const SAFE_RECORD = Symbol('robots-proxy.safe-record');

/**
 * Creates the process logger: pino 10, one JSON object per line, ISO-8601
 * `time`, the level as a word (`"level":"info"`).
 *
 * The values of `authorization`, `proxy-authorization`, `cookie` and
 * `set-cookie` (any case) are replaced by `[Redacted]` wherever they appear
 * in a logged object (see `redactSecrets`: plain objects and arrays to a
 * bounded depth, `rawHeaders` arrays, errors), and in `req` / `res` values,
 * which are serialized with pino's standard serializers first. Known limit:
 * bindings of `logger.child(...)` are not redacted; do not bind headers.
 * Log client-controlled values under keys we choose; never spread a headers
 * object's keys into the top level of a line.
 * @param options.level lowest level written (`silent` writes nothing).
 * @param options.destination a stream to write to (tests pass a capture stream); stdout by default.
 * @throws Error from pino when `level` is not a pino level.
 */
export function createLogger(options: LoggerOptions): Logger {
  // Lines are gathered and written synchronously in batches of BUFFER_BYTES: one write(2) per
  // batch on the event loop costs less than a write per line (or a thread-pool hop per line).
  // A line waits at most FLUSH_INTERVAL_MS; pino flushes what is left when the process exits.
  let destination = options.destination;
  if (destination === undefined) {
    const buffered = pino.destination({ dest: options.file ?? 1, sync: true, minLength: BUFFER_BYTES });
    setInterval(() => buffered.flush(), FLUSH_INTERVAL_MS).unref();
    destination = buffered;
  }
  return pino(
    {
      level: options.level,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label: string) => ({ level: label }),
        // Access log records are built from fields we choose and hold no headers: no walk needed.
        log: (object: Record<string | symbol, unknown>) => (object[SAFE_RECORD] === true ? object : redactSecrets(object)),
      },
      serializers: {
        // An error that held a secret arrives already serialized (and redacted) as a plain object.
        err: (err: unknown) => (err instanceof Error ? stdSerializers.err(err) : err),
        req: (req: IncomingMessage) => redactSecrets(stdSerializers.req(req)),
        res: (res: ServerResponse) => redactSecrets(stdSerializers.res(res)),
      },
    },
    destination,
  );
}
