/**
 * The process logger: pino writing JSON lines, with secret header values
 * redacted. Extension, not in RFC 9309.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pino, stdSerializers, type DestinationStream, type Level, type Logger } from 'pino';
import { createIsoFormatter } from './iso-time.js';
import { redactSecrets } from './redact.js';

/** A pino level, or `silent` to turn logging off. */
export type LoggerLevel = Level | 'silent';

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Lowest level written. */
  level: LoggerLevel;
  /** A stream to write JSON lines to (tests); when given, `file` is ignored. */
  destination?: DestinationStream;
  /**
   * File descriptor or path written in batches of 8 KiB; a line waits at most
   * {@link LOG_FLUSH_INTERVAL_MS} (see BatchedDestination). @default 1 (stdout)
   */
  file?: number | string;
}

/** Bytes of log lines gathered before one write. */
const BUFFER_BYTES = 8 * 1024;
/** Longest time a log line waits in that buffer, ms: all a SIGKILL can lose. */
export const LOG_FLUSH_INTERVAL_MS = 100;

/** Batched destinations still open: each is flushed synchronously when the process exits. */
const openDestinations = new Set<BatchedDestination>();
let isExitHookInstalled = false;

/**
 * Lines gathered and written synchronously in batches: one write(2) per
 * {@link BUFFER_BYTES} on the event loop costs less than a write per line (or
 * a thread-pool hop per line). The first line into an empty buffer arms a
 * timer, so no line waits longer than {@link LOG_FLUSH_INTERVAL_MS}, however
 * idle the process is afterwards; an idle process with nothing buffered does
 * no writes at all. What is left is written when the process exits, however it
 * exits (`process.exit`, the end of the event loop, a fatal error handler);
 * only SIGKILL (or a crash of Node itself) can lose the last interval.
 */
class BatchedDestination implements DestinationStream {
  readonly #sink: ReturnType<typeof pino.destination>;
  #timer: NodeJS.Timeout | undefined;

  constructor(file: number | string) {
    // pino.destination is sonic-boom: it retries EAGAIN on a full pipe, and in sync mode
    // pino registers no exit hook of its own (that is ours, below).
    this.#sink = pino.destination({ dest: file, sync: true, minLength: BUFFER_BYTES });
    openDestinations.add(this);
    installExitHook();
  }

  write(line: string): void {
    this.#sink.write(line);
    // Armed once per batch, not per line; unref'd: a pending flush never keeps the process up (the exit hook writes it).
    this.#timer ??= setTimeout(this.#onTimer, LOG_FLUSH_INTERVAL_MS).unref();
  }

  readonly #onTimer = (): void => {
    this.#timer = undefined;
    this.#sink.flush();
  };

  /** Writes what is buffered now (pino's `logger.flush()` calls this), then calls `callback`. */
  flush(callback?: (err?: Error) => void): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    try {
      this.#sink.flushSync();
    } catch (err) {
      callback?.(err as Error);
      return;
    }
    callback?.();
  }
}

function installExitHook(): void {
  if (isExitHookInstalled) return;
  isExitHookInstalled = true;
  process.on('exit', () => {
    for (const destination of openDestinations) destination.flush();
  });
}

/**
 * Writes every line the logger still buffers, synchronously, before returning.
 * Safe in an `uncaughtException` handler and right before `process.exit`. Never throws.
 */
export function flushLogSync(logger: Logger): void {
  try {
    logger.flush();
  } catch {
    // A log that cannot be written (EPIPE, closed descriptor) must not turn an exit into a crash.
  }
}

/**
 * Marks a log record built only from fields we choose (no headers, no
 * errors): the redaction walk skips it. Symbol keys are not serialised.
 */
export const SAFE_RECORD = Symbol('robots-proxy.safe-record');

/** Set on every logger {@link createLogger} makes (children inherit it): its lines have the shape {@link writeSerializedInfo} writes. */
const LINE_FORMAT = Symbol('robots-proxy.line-format');
const isoLineTime = createIsoFormatter();

/**
 * Writes one `info` line whose fields are already JSON, through the logger's
 * destination: `{"level":"info","time":"<ISO>"<bindings>,<fields>,"msg":"<msg>"}`,
 * the line `logger.info(object, msg)` writes for an object with those fields
 * (pino's key order: level, time, bindings, the object's keys, msg). The
 * caller checks the level first.
 * @param fields the record's fields as JSON without the enclosing braces; must not be empty.
 * @returns false, writing nothing, when `logger` was not made by {@link createLogger} (its format is unknown).
 */
export function writeSerializedInfo(logger: Logger, fields: string, msg: string): boolean {
  const internals = logger as unknown as Record<symbol, unknown>;
  if (internals[LINE_FORMAT] !== true) return false;
  const stream = internals[pino.symbols.streamSym] as DestinationStream;
  const bindings = internals[pino.symbols.chindingsSym] as string;
  stream.write(`{"level":"info","time":"${isoLineTime(Date.now())}"${bindings},${fields},"msg":${JSON.stringify(msg)}}\n`);
  return true;
}

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
  const destination = options.destination ?? new BatchedDestination(options.file ?? 1);
  const logger = pino(
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
  Object.defineProperty(logger, LINE_FORMAT, { value: true });
  return logger;
}
