/**
 * The process logger: pino writing JSON lines, with secret header values
 * redacted. Extension, not in RFC 9309.
 */
import { fstatSync, openSync, writeSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { pino, stdSerializers, type DestinationStream, type Level, type Logger } from 'pino';
import { LineBuffer } from './line-buffer.js';
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
   * File descriptor or path written in batches of 32 KiB; a line waits at most
   * {@link LOG_FLUSH_INTERVAL_MS} (see LogWriter). @default 1 (stdout)
   */
  file?: number | string;
  /**
   * When `file` is stdout or stderr on a pipe: most bytes of lines held
   * while its reader falls behind, past which lines are dropped and counted (see LogWriter).
   * Not a config key. @default LOG_MAX_BUFFER_BYTES
   */
  maxBufferBytes?: number;
}

/** Bytes of log lines gathered before one write(2). */
const BATCH_BYTES = 32 * 1024;
/** Size of a destination's batch buffer, bytes; it grows for a longer batch (a full pipe) and shrinks back once written. */
const BUFFER_CAPACITY = 64 * 1024;
/** Longest time a log line waits in that buffer, ms: all a SIGKILL can lose. */
export const LOG_FLUSH_INTERVAL_MS = 100;
/**
 * Most bytes of log lines held in memory while stdout is a pipe whose
 * reader does not keep up (4 MiB: about 3,500 access lines); past it, new
 * lines are dropped and counted (see {@link LogWriter}).
 */
export const LOG_MAX_BUFFER_BYTES = 4 * 1024 * 1024;
/** How often a full pipe is tried again, ms (a non-blocking write that may take nothing). */
const PIPE_RETRY_MS = 10;
/** Longest time the exit flush waits for a full pipe's reader, ms; what is still unwritten then is lost. */
export const LOG_EXIT_FLUSH_TIMEOUT_MS = 5000;

/** Log writers still open: each is flushed synchronously when the process exits. */
const openDestinations = new Set<LogWriter>();
let isExitHookInstalled = false;

/** Options of {@link LogWriter}. */
export interface LogWriterOptions {
  /** Most bytes held (lines waiting plus the unwritten part of the batch being written). @default LOG_MAX_BUFFER_BYTES */
  maxBufferBytes?: number;
  /** Longest wait for a pipe's reader in a synchronous flush, ms. @default LOG_EXIT_FLUSH_TIMEOUT_MS */
  flushTimeoutMs?: number;
}

/**
 * A destination that lines can be encoded into directly: append a line's
 * bytes to {@link out} (from `out.length` on), then call {@link commitLine}
 * with the length before it. The access line is written this way
 * (access-line.ts): no string is made for it.
 */
export interface EncodedLineSink {
  /** Where the next line's bytes go. */
  readonly out: LineBuffer;
  /**
   * Takes the line just appended (`out.buf[start, out.length)`, one whole line
   * ending in a newline) as if it had been passed to `write`: it is kept and
   * written in order, or dropped and counted (then removed from `out`).
   */
  commitLine(start: number): void;
}

/**
 * The logger's destination: lines gathered as UTF-8 in one buffer and written
 * in batches, one write(2) per {@link BATCH_BYTES} on the event loop (cheaper
 * than a write per line, or a thread-pool hop per batch). pino's lines arrive
 * as strings (`write`); the access line is encoded into the buffer directly
 * ({@link EncodedLineSink}). The first line into an empty
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
 * `maxBufferBytes` ({@link LOG_MAX_BUFFER_BYTES}); past that, each new line is
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
export class LogWriter implements DestinationStream, EncodedLineSink {
  readonly out = new LineBuffer(BUFFER_CAPACITY);
  readonly #fd: number;
  readonly #maxBytes: number;
  readonly #flushTimeoutMs: number;
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
    this.#maxBytes = options.maxBufferBytes ?? LOG_MAX_BUFFER_BYTES;
    this.#flushTimeoutMs = options.flushTimeoutMs ?? LOG_EXIT_FLUSH_TIMEOUT_MS;
    openDestinations.add(this);
    installExitHook();
  }

  /** Lines dropped since start because the buffer was full or the reader gone. */
  get droppedLines(): number {
    return this.#droppedTotal + this.#dropped;
  }

  /** Bytes held now: lines waiting plus the unwritten part of the batch being written. */
  get bufferedBytes(): number {
    return this.#heldBytes();
  }

  /** Takes one line (pino's, ending in a newline) as UTF-8. */
  write(line: string): void {
    const start = this.out.length;
    this.out.utf8(line);
    this.commitLine(start);
  }

  commitLine(start: number): void {
    if (this.#isBroken || this.#heldBytes() > this.#maxBytes) {
      this.out.length = start;
      this.#dropped++;
      return;
    }
    if (this.#dropped > 0) this.#insertDropNotice(start);
    if (this.#unwritten !== undefined) return; // the retry timer is armed
    if (this.out.length >= BATCH_BYTES) this.#writeSome();
    // Armed once per batch, not per line; unref'd: a pending flush never keeps the process up (the exit hook writes it).
    else this.#timer ??= setTimeout(this.#onTimer, LOG_FLUSH_INTERVAL_MS).unref();
  }

  /** Writes everything held, synchronously, waiting for a pipe's reader up to the flush timeout; then calls `callback`. */
  flush(callback?: (err?: Error) => void): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#dropped > 0) this.#insertDropNotice(this.out.length);
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

  #heldBytes(): number {
    return this.out.length + (this.#unwritten?.length ?? 0);
  }

  /** Puts the notice of the lines dropped so far at `start` (before the line just appended there, if any). */
  #insertDropNotice(start: number): void {
    const notice = Buffer.from(
      `{"level":"warn","time":"${new Date().toISOString()}","pid":${process.pid},"hostname":${JSON.stringify(hostname())},"event":"log-lines-dropped","droppedLines":${this.#dropped},"msg":"log lines dropped: the reader of the log did not keep up"}\n`,
    );
    const out = this.out;
    out.ensure(notice.length);
    out.buf.copy(out.buf, start + notice.length, start, out.length);
    notice.copy(out.buf, start);
    out.length += notice.length;
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
    const out = this.out;
    for (;;) {
      const unwritten = this.#unwritten;
      if (unwritten === undefined && out.length === 0) return true;
      let written: number;
      try {
        written = unwritten === undefined ? writeSync(this.#fd, out.buf, 0, out.length) : writeSync(this.#fd, unwritten);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') {
          if (unwritten === undefined) this.#keepUnwritten(0);
          if (!isFlushing) this.#timer ??= setTimeout(this.#onTimer, PIPE_RETRY_MS).unref();
          return false;
        }
        // EPIPE (the reader is gone), EBADF...: what is held, and every later line, is lost.
        this.#isBroken = true;
        this.#dropped += linesIn(out.buf, 0, out.length) + (unwritten === undefined ? 0 : linesIn(unwritten, 0, unwritten.length));
        out.reset(BUFFER_CAPACITY);
        this.#unwritten = undefined;
        return true;
      }
      if (unwritten !== undefined) this.#unwritten = written >= unwritten.length ? undefined : unwritten.subarray(written);
      else if (written >= out.length) out.reset(BUFFER_CAPACITY);
      // A pipe took part of it: keep the rest, byte-exact.
      else this.#keepUnwritten(written);
    }
  }

  /** Moves the batch's bytes from `from` on out of the line buffer, as the unwritten rest of a batch. */
  #keepUnwritten(from: number): void {
    const out = this.out;
    this.#unwritten = Buffer.from(out.buf.subarray(from, out.length));
    out.reset(BUFFER_CAPACITY);
  }
}

/** Newlines in `buf[start, end)`: the lines (or line ends) there. */
function linesIn(buf: Buffer, start: number, end: number): number {
  let count = 0;
  for (let at = buf.indexOf(0x0a, start); at !== -1 && at < end; at = buf.indexOf(0x0a, at + 1)) count++;
  return count;
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

/** Set on every logger {@link createLogger} makes (children inherit it): its lines have pino's shape as configured there. */
const LINE_FORMAT = Symbol('robots-proxy.line-format');

/**
 * The {@link EncodedLineSink} of a destination that takes only strings (a
 * test's capture stream): the line is encoded into a scratch buffer, then
 * written as one string.
 */
class StringLineSink implements EncodedLineSink {
  readonly out = new LineBuffer(16 * 1024);
  readonly #stream: DestinationStream;

  constructor(stream: DestinationStream) {
    this.#stream = stream;
  }

  commitLine(start: number): void {
    const line = this.out.buf.toString('utf8', start, this.out.length);
    this.out.reset(16 * 1024);
    this.#stream.write(line);
  }
}
const stringSinks = new WeakMap<DestinationStream, StringLineSink>();

/**
 * Where a logger made by {@link createLogger} takes lines encoded as bytes
 * (its {@link LogWriter}, or a wrapper of a string-only destination); such a
 * line must have the shape pino gives it there:
 * `{"level":"<label>","time":"<ISO>"<bindings>,<fields>,"msg":"<msg>"}` and a
 * newline, with bindings from {@link bindingsOf}. The caller checks the level.
 * @returns undefined when `logger` was not made by {@link createLogger} (its format is unknown).
 */
export function encodedLineSinkOf(logger: Logger): EncodedLineSink | undefined {
  const internals = logger as unknown as Record<symbol, unknown>;
  if (internals[LINE_FORMAT] !== true) return undefined;
  const stream = internals[pino.symbols.streamSym] as DestinationStream;
  if (stream instanceof LogWriter) return stream;
  let sink = stringSinks.get(stream);
  if (sink === undefined) stringSinks.set(stream, (sink = new StringLineSink(stream)));
  return sink;
}

/** A pino logger's bindings as its lines carry them, already JSON: `,"pid":1,"hostname":"h"` and a child's. */
export function bindingsOf(logger: Logger): string {
  return (logger as unknown as Record<symbol, unknown>)[pino.symbols.chindingsSym] as string;
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
  const destination = options.destination ?? createDestination(options.file ?? 1, options.maxBufferBytes === undefined ? {} : { maxBufferBytes: options.maxBufferBytes });
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
