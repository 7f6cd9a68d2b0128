/**
 * Reading a file the operator named, with a bound in bytes.
 *
 * `readFileSync` trusts the size `fstat` reports; a character device or a pipe
 * reports 0 and is read to its end, so `--config /dev/zero` (or `/dev/urandom`,
 * or a credentials file pointed at one) grew the process by about 100 MB a
 * second, measured to 1.9 GB in 20 s, and never answered. Here at most
 * `maxBytes + 1` bytes are ever read, whatever the file is.
 *
 * A named pipe (FIFO) blocked the whole process instead: `open` waits for a
 * writer and `read` for data, and both are synchronous, so a credentials file
 * or configuration file replaced by a FIFO froze the proxy on the next SIGHUP
 * (no request, no admin /healthz, not even SIGTERM answered; found in
 * session 30's fuzzing hunt, which scripts/fuzz-proxy.ts now repeats). So the
 * file is opened non-blocking: a
 * pipe, socket or device with nothing to read at once is refused (`EAGAIN`), a
 * FIFO nobody writes to too (`ENODATA`), unless the caller may wait (`check
 * --robots <(curl ...)`, a one-shot command). See open(2), O_NONBLOCK, and
 * fifo(7).
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/** What {@link readFileBounded} read. */
export interface BoundedRead {
  /** The file's bytes, at most `maxBytes` of them. */
  readonly bytes: Buffer;
  /** True when the file holds more than `maxBytes` bytes (`bytes` is then its first `maxBytes`). */
  readonly tooLarge: boolean;
}

/** Options of {@link readFileBounded}. */
export interface ReadBoundedOptions {
  /**
   * True: wait for a pipe's writer and data, as `readFileSync` does (a one-shot
   * command reading `<(...)`). Otherwise nothing waits. @default false
   */
  readonly mayWait?: boolean;
}

/** An `fs`-style error with `code`, for a pipe the read refused. */
function pipeError(code: 'EAGAIN' | 'ENODATA', path: string): NodeJS.ErrnoException {
  const what = code === 'EAGAIN' ? 'nothing to read at once' : 'a named pipe nobody writes to';
  return Object.assign(new Error(`${code}: ${what}, read '${path}'`), { code, path, syscall: 'read' });
}

/**
 * Reads a file synchronously, never more than `maxBytes + 1` bytes of it
 * (regular files, pipes, devices alike), and never waits on a pipe unless
 * `options.mayWait`. For files read at start and on a reload (configuration,
 * credentials, tokens, certificates), where a wait would stop the whole process.
 * @param path the file, relative paths against the working directory.
 * @param maxBytes the largest size accepted, in bytes (a non-negative integer).
 * @throws the `fs` error of `open` or `read` (`ENOENT`, `EACCES`, `EISDIR`...);
 *   without `mayWait`, `EAGAIN` for a pipe, socket or device with nothing to
 *   read at once and `ENODATA` for a FIFO without a writer (open(2), fifo(7)).
 */
export function readFileBounded(path: string, maxBytes: number, options: ReadBoundedOptions = {}): BoundedRead {
  const mayWait = options.mayWait ?? false;
  const fd = openSync(path, mayWait ? constants.O_RDONLY : constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = mayWait ? undefined : fstatSync(fd);
    const isPipe = stats !== undefined && (stats.isFIFO() || stats.isSocket());
    const buffer = Buffer.allocUnsafe(Math.min(maxBytes + 1, 65_536));
    const chunks: Buffer[] = [];
    let total = 0;
    while (total <= maxBytes) {
      let n: number;
      try {
        n = readSync(fd, buffer, 0, Math.min(buffer.length, maxBytes + 1 - total), null);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') throw pipeError('EAGAIN', path);
        throw error;
      }
      if (n === 0) {
        if (isPipe && total === 0) throw pipeError('ENODATA', path);
        break;
      }
      chunks.push(Buffer.from(buffer.subarray(0, n)));
      total += n;
    }
    const bytes = Buffer.concat(chunks, total);
    return total > maxBytes ? { bytes: bytes.subarray(0, maxBytes), tooLarge: true } : { bytes, tooLarge: false };
  } finally {
    closeSync(fd);
  }
}

/** Words for the `fs` error codes a file the operator named most often fails with. */
const READ_ERROR_WORDS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file',
  EISDIR: 'a directory, not a file',
  EACCES: 'not allowed to read it',
  ENOTDIR: 'a part of the path is not a directory',
  EAGAIN: 'a pipe or device with nothing to read at once',
  ENODATA: 'a named pipe nobody writes to',
};

/**
 * Why a named file could not be read, for a message an operator acts on: the
 * error code with its plain words (`ENOENT: no such file`), or the code alone
 * for a rarer one, or the error's message when it has no code.
 * @param error what {@link readFileBounded} (or another `fs` call) threw.
 * @returns a short reason, e.g. `ENOENT: no such file`, `EIO`.
 */
export function readErrorReason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== 'string') return error instanceof Error ? error.message : String(error);
  const words = READ_ERROR_WORDS[code];
  return words === undefined ? code : `${code}: ${words}`;
}
