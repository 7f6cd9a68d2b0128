/**
 * The process logger: pino writing JSON lines, with secret header values
 * redacted. Extension, not in RFC 9309.
 */
import { fstatSync, openSync, writeSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostname } from 'node:os';
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
   * {@link LOG_FLUSH_INTERVAL_MS} (see LogWriter). @default 1 (stdout)
   */
  file?: number | string;
  /**
   * When `file` is stdout or stderr on a pipe: most characters of lines held
   * while its reader falls behind, past which lines are dropped and counted (see LogWriter).
   * Not a config key. @default LOG_MAX_BUFFER_CHARS
   */
  maxBufferChars?: number;
}

/** Bytes of log lines gathered before one write. */
const BUFFER_BYTES = 8 * 1024;
/** Longest time a log line waits in that buffer, ms: all a SIGKILL can lose. */
export const LOG_FLUSH_INTERVAL_MS = 100;
/**
 * Most characters of log lines held in memory while stdout is a pipe whose
 * reader does not keep up (4 MiB of ASCII JSON: about 3,500 access lines);
 * past it, new lines are dropped and counted (see {@link LogWriter}).
 */
export const LOG_MAX_BUFFER_CHARS = 4 * 1024 * 1024;
/** How often a full pipe is tried again, ms (a non-blocking write that may take nothing). */
const PIPE_RETRY_MS = 10;
/** Longest time the exit flush waits for a full pipe's reader, ms; what is still unwritten then is lost. */
export const LOG_EXIT_FLUSH_TIMEOUT_MS = 5000;

/** Log writers still open: each is flushed synchronously when the process exits. */
const openDestinations = new Set<LogWriter>();
let isExitHookInstalled = false;

/** Options of {@link LogWriter}. */
export interface LogWriterOptions {
  /** Most characters held (lines waiting plus the unwritten part of the batch being written). @default LOG_MAX_BUFFER_CHARS */
  maxBufferChars?: number;
  /** Longest wait for a pipe's reader in a synchronous flush, ms. @default LOG_EXIT_FLUSH_TIMEOUT_MS */
  flushTimeoutMs?: number;
}

/**
 * The logger's destination: lines gathered and written in batches, one
 * write(2) per {@link BUFFER_BYTES} on the event loop (cheaper than a write
 * per line, or a thread-pool hop per batch). The first line into an empty
 * buffer arms a timer, so no line waits longer than
 * {@link LOG_FLUSH_INTERVAL_MS}, however idle the process is afterwards; an
 * idle process with nothing buffered does no writes at all. What is held is
 * written when the process exits, however it exits (`process.exit`, the end
 * of the event loop, a fatal error handler); only SIGKILL (or a crash of Node
 * itself) can lose the last interval.
 *
 * On a file or a terminal the descriptor blocks: each batch is written whole.
 * On stdout or stderr as a pipe or a socket (`npm start | tee`, a container's
 * log driver, systemd), the event loop never waits for the reader: Node's
 * stdout stream puts the descriptor in non-blocking mode (libuv's
 * `uv_pipe_open`; see {@link createDestination}), so a full pipe answers
 * EAGAIN or takes part of a batch at once. What it did not take is kept,
 * byte-exact, and tried again every {@link PIPE_RETRY_MS} ms.
 *
 * The policy when a reader falls behind: lines wait in memory up to
 * `maxBufferChars` ({@link LOG_MAX_BUFFER_CHARS}); past that, each new line is
 * dropped and counted ({@link LogWriter.droppedLines}), never blocking a
 * request. When the reader catches up, the next line written is preceded by
 * one line `{"level":"warn",...,"event":"log-lines-dropped","droppedLines":N,...}`
 * at the place of the gap; at exit, a gap still open is reported the same way
 * at the end. Lines are never reordered, split or duplicated. A reader that is
 * gone (EPIPE) turns every later line into a dropped one.
 *
 * Flush (at exit, and pino's `logger.flush()`): everything held is written
 * synchronously, waiting for a pipe's reader up to `flushTimeoutMs`; what is
 * still unwritten then is lost. Why not Node's own stdout stream: it buffers
 * without bound (gigabytes behind a stalled reader) and loses its queue at
 * `process.exit`; nor sonic-boom's asynchronous mode: it writes from the
 * thread pool and cannot flush a write in flight at exit (and its synchronous
 * mode, used before, measures every line's UTF-8 length: 13 µs per access
 * line under load, bench/PROFILE.md).
 */
export class LogWriter implements DestinationStream {
  readonly #fd: number;
  readonly #maxChars: number;
  readonly #flushTimeoutMs: number;
  #lines: string[] = [];
  #lineChars = 0;
  /** The batch being written: what write(2) has not taken yet (a full pipe). */
  #unwritten: Buffer | undefined;
  #timer: NodeJS.Timeout | undefined;
  #dropped = 0;
  #droppedTotal = 0;
  #isBroken = false;

  /**
   * @param fd an open descriptor; in non-blocking mode for the pipe behaviour above.
   */
  constructor(fd: number, options: LogWriterOptions = {}) {
    this.#fd = fd;
    this.#maxChars = options.maxBufferChars ?? LOG_MAX_BUFFER_CHARS;
    this.#flushTimeoutMs = options.flushTimeoutMs ?? LOG_EXIT_FLUSH_TIMEOUT_MS;
    openDestinations.add(this);
    installExitHook();
  }

  /** Lines dropped since start because the buffer was full or the reader gone. */
  get droppedLines(): number {
    return this.#droppedTotal + this.#dropped;
  }

  /** Characters held now: lines waiting plus the unwritten part of the batch being written. */
  get bufferedChars(): number {
    return this.#heldChars();
  }

  write(line: string): void {
    if (this.#isBroken || this.#heldChars() + line.length > this.#maxChars) {
      this.#dropped++;
      return;
    }
    if (this.#dropped > 0) this.#pushDropNotice();
    this.#lines.push(line);
    this.#lineChars += line.length;
    if (this.#unwritten !== undefined) return; // the retry timer is armed
    if (this.#lineChars >= BUFFER_BYTES) this.#writeSome();
    // Armed once per batch, not per line; unref'd: a pending flush never keeps the process up (the exit hook writes it).
    else this.#timer ??= setTimeout(this.#onTimer, LOG_FLUSH_INTERVAL_MS).unref();
  }

  /** Writes everything held, synchronously, waiting for a pipe's reader up to the flush timeout; then calls `callback`. */
  flush(callback?: (err?: Error) => void): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#dropped > 0) this.#pushDropNotice();
    const deadline = Date.now() + this.#flushTimeoutMs;
    let pause: Int32Array | undefined;
    while (!this.#isBroken && !this.#writeSome(true)) {
      if (Date.now() >= deadline) break;
      pause ??= new Int32Array(new SharedArrayBuffer(4));
      Atomics.wait(pause, 0, 0, 1); // a full pipe: let the reader drain for 1 ms
    }
    // Timed out (a stalled reader) and the process goes on: keep trying in the background.
    if (!this.#isBroken && this.#unwritten !== undefined) this.#timer = setTimeout(this.#onTimer, PIPE_RETRY_MS).unref();
    callback?.();
  }

  #heldChars(): number {
    return this.#lineChars + (this.#unwritten?.length ?? 0);
  }

  #pushDropNotice(): void {
    const notice = `{"level":"warn","time":"${new Date().toISOString()}","pid":${process.pid},"hostname":${JSON.stringify(hostname())},"event":"log-lines-dropped","droppedLines":${this.#dropped},"msg":"log lines dropped: the reader of the log did not keep up"}\n`;
    this.#lines.push(notice);
    this.#lineChars += notice.length;
    this.#droppedTotal += this.#dropped;
    this.#dropped = 0;
  }

  readonly #onTimer = (): void => {
    this.#timer = undefined;
    this.#writeSome();
  };

  /**
   * Writes as much as the descriptor takes now (all of it, on a blocking one): the unwritten
   * rest of the current batch, then the waiting lines as the next batch. Arms the retry timer
   * when a pipe is full, unless flushing. @returns true when nothing is left.
   */
  #writeSome(isFlushing = false): boolean {
    for (;;) {
      let batch: string | Buffer | undefined = this.#unwritten;
      if (batch === undefined) {
        if (this.#lines.length === 0) return true;
        batch = this.#lines.length === 1 ? (this.#lines[0] as string) : this.#lines.join('');
        this.#lines = [];
        this.#lineChars = 0;
      }
      let written: number;
      try {
        written = typeof batch === 'string' ? writeSync(this.#fd, batch) : writeSync(this.#fd, batch);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') {
          this.#unwritten = typeof batch === 'string' ? Buffer.from(batch) : batch;
          if (!isFlushing) this.#timer ??= setTimeout(this.#onTimer, PIPE_RETRY_MS).unref();
          return false;
        }
        // EPIPE (the reader is gone), EBADF...: what is held, and every later line, is lost.
        this.#isBroken = true;
        this.#dropped += this.#lines.length + 1;
        this.#lines = [];
        this.#lineChars = 0;
        this.#unwritten = undefined;
        return true;
      }
      const size = typeof batch === 'string' ? Buffer.byteLength(batch) : batch.length;
      if (written >= size) this.#unwritten = undefined;
      // A pipe took part of it: keep the rest, byte-exact (a string is converted only then).
      else this.#unwritten = (typeof batch === 'string' ? Buffer.from(batch) : batch).subarray(written);
    }
  }
}

/**
 * The {@link LogWriter} for `file`: a descriptor, or a path opened for
 * appending. When it is stdout or stderr on a pipe or a socket, Node's stream
 * on it is opened first (`process.stdout`), which puts the descriptor in
 * non-blocking mode: the writer then never waits for the reader.
 * @throws Error from `openSync` for a path that cannot be opened.
 */
function createDestination(file: number | string, options: LogWriterOptions): LogWriter {
  if (typeof file === 'string') return new LogWriter(openSync(file, 'a'), options);
  if (file === 1 || file === 2) {
    let isPipe = false;
    try {
      const stat = fstatSync(file);
      isPipe = stat.isFIFO() || stat.isSocket();
    } catch {
      // A closed descriptor: the first write reports it (the lines are counted as dropped).
    }
    if (isPipe) void (file === 1 ? process.stdout : process.stderr);
  }
  return new LogWriter(file, options);
}

function installExitHook(): void {
  if (isExitHookInstalled) return;
  isExitHookInstalled = true;
  process.on('exit', () => {
    for (const destination of openDestinations) destination.flush();
  });
}

/**
 * Log lines dropped since start because stdout's reader did not keep up (or
 * was gone): the logger's {@link LogWriter} count; 0 for any other destination.
 */
export function droppedLogLinesOf(logger: Logger): number {
  const destination = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym];
  return destination instanceof LogWriter ? destination.droppedLines : 0;
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
  const destination = options.destination ?? createDestination(options.file ?? 1, options.maxBufferChars === undefined ? {} : { maxBufferChars: options.maxBufferChars });
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
