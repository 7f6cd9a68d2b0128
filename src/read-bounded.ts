/**
 * Reading a file the operator named, with a bound in bytes.
 *
 * `readFileSync` trusts the size `fstat` reports; a character device or a pipe
 * reports 0 and is read to its end, so `--config /dev/zero` (or `/dev/urandom`,
 * or a credentials file pointed at one) grew the process by about 100 MB a
 * second, measured to 1.9 GB in 20 s, and never answered. Here at most
 * `maxBytes + 1` bytes are ever read, whatever the file is.
 */
import { closeSync, openSync, readSync } from 'node:fs';

/** What {@link readFileBounded} read. */
export interface BoundedRead {
  /** The file's bytes, at most `maxBytes` of them. */
  readonly bytes: Buffer;
  /** True when the file holds more than `maxBytes` bytes (`bytes` is then its first `maxBytes`). */
  readonly tooLarge: boolean;
}

/**
 * Reads a file synchronously, never more than `maxBytes + 1` bytes of it
 * (regular files, pipes, devices alike). For files read at start and on a
 * reload (configuration, credentials, tokens, certificates).
 * @param path the file, relative paths against the working directory.
 * @param maxBytes the largest size accepted, in bytes (a non-negative integer).
 * @throws the `fs` error of `open` or `read` (`ENOENT`, `EACCES`, `EISDIR`...).
 */
export function readFileBounded(path: string, maxBytes: number): BoundedRead {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(Math.min(maxBytes + 1, 65_536));
    const chunks: Buffer[] = [];
    let total = 0;
    while (total <= maxBytes) {
      const n = readSync(fd, buffer, 0, Math.min(buffer.length, maxBytes + 1 - total), null);
      if (n === 0) break;
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
