/**
 * `robots-proxy passwd FILE USER`: writes one user's entry in a credentials file (see
 * credentials-file.ts): the bcrypt hash of a password read from stdin, never the password.
 * The file's other lines (comments included) are kept; it is replaced atomically: the new text
 * goes to `FILE.tmp` in the same directory, created exclusively (O_EXCL, mode 0600, so a file or
 * symlink planted at that name is never written through), given the file's mode and owner, then
 * renamed over it. `FILE.tmp` is also the lock that keeps two concurrent runs from losing one
 * another's entry: it is taken before the file is read, and a run finding it waits up to
 * {@link LOCK_WAIT_MS} for it to go; a stale one (a run killed mid-write) is named in the error,
 * never removed. A new file gets mode 0600. Extension, not in RFC 9309.
 */
import { closeSync, constants, fchmodSync, fchownSync, fstatSync, fsyncSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync, type Stats } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Readable } from 'node:stream';
import bcrypt from 'bcryptjs';
import { UsageError } from '../errors.js';
import { parseCredentials } from './credentials-file.js';

/** bcrypt reads at most this many bytes of a password; a longer one would be cut silently. */
export const MAX_PASSWORD_BYTES = 72;
/** Default bcrypt cost: 2^10 rounds, a few hundred ms per check (the proxy caches verified credentials). */
export const DEFAULT_BCRYPT_COST = 10;

/** How long a run waits for another run's `FILE.tmp` (the lock) to go before giving up, ms. */
export const LOCK_WAIT_MS = 3_000;

/** What {@link writeCredential} did. */
export type CredentialWrite = 'added' | 'replaced' | 'removed';

/** Options of {@link writeCredential}. */
export interface WriteCredentialOptions {
  /** The identity the user authenticates as, when not the user name. */
  identity?: string;
  /** bcrypt cost, 4..15. @default 10 */
  cost?: number;
}

/**
 * Sets (adds or replaces) `user`'s entry in `file` with the bcrypt hash of `given` (the password,
 * in Unicode Normalization Form C); with `given` null, removes it. The result is validated as a credentials file before it is
 * written, so the file is never left unreadable by the proxy.
 * The existing file's mode (and owner, when it is not this user's) is kept.
 * @throws {UsageError} for a bad user, identity, cost or password (empty, over 72 bytes), a
 *   user to remove that is not there, an existing file the proxy could not read (its line named),
 *   FILE that exists and is not a regular file (a directory, a device),
 *   `FILE.tmp` still there after {@link LOCK_WAIT_MS} (another run, or a stale one: named), or an
 *   owner this user cannot give the new file.
 */
export async function writeCredential(file: string, user: string, given: string | null, options: WriteCredentialOptions = {}): Promise<CredentialWrite> {
  // Hashed in Unicode Normalization Form C, as clients are to send it (RFC 7617 §2.1) and the proxy
  // compares it (credential-verifier.ts): `é` typed as e + U+0301 (NFD) is the same password as U+00E9.
  const password = given === null ? null : given.normalize('NFC');
  if (!/^[\x21-\x39\x3b-\x7e]{1,128}$/.test(user)) throw new UsageError('passwd: USER must be 1 to 128 printable ASCII characters without ":" or spaces');
  if (user.startsWith('#')) throw new UsageError('passwd: USER must not start with "#" (the credentials file reads such a line as a comment: nobody could log in as it)');
  if (options.identity !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/.test(options.identity)) {
    throw new UsageError('passwd: --identity must be 1 to 128 letters, digits, ".", "_", "@" or "-", starting with a letter or digit');
  }
  const cost = options.cost ?? DEFAULT_BCRYPT_COST;
  if (!Number.isInteger(cost) || cost < 4 || cost > 15) throw new UsageError(`passwd: --cost must be an integer 4..15, got ${cost}`);
  if (password !== null) {
    if (password === '') throw new UsageError('passwd: the password is empty');
    if (Buffer.byteLength(password) > MAX_PASSWORD_BYTES) throw new UsageError(`passwd: the password is longer than ${MAX_PASSWORD_BYTES} bytes, which bcrypt would cut`);
  }
  // Checked before anything is created next to it: a directory or a device (`/dev/null`) would be
  // read to no end or, renamed over as root, replaced by a regular file.
  const before = statIfExists(file);
  if (before !== undefined && !before.isFile()) throw new UsageError(`passwd: ${file} is not a regular file; FILE is the credentials file to write`);
  // Hashed before the lock is taken: bcrypt takes seconds at high costs, and the lock is held only to read and write.
  const hash = password === null ? undefined : await bcrypt.hash(password, cost);
  const temporary = `${file}.tmp`;
  const fd = await lockFile(temporary, file);
  let isClosed = false;
  let isRenamed = false;
  try {
    const existing = statIfExists(file);
    const next = editedCredentials(existing === undefined ? '' : readFileSync(file, 'utf8'), existing !== undefined, file, user, hash, options.identity);
    writeFileSync(fd, next.text);
    if (existing !== undefined) {
      fchmodSync(fd, existing.mode & 0o777);
      // As root, editing a file the proxy's user owns must not hand it to root (the proxy could no longer read it).
      const own = fstatSync(fd);
      if (own.uid !== existing.uid || own.gid !== existing.gid) {
        try {
          fchownSync(fd, existing.uid, existing.gid);
        } catch (err) {
          throw new UsageError(
            `passwd: ${file} belongs to uid ${existing.uid} gid ${existing.gid}, and this user cannot give the new file that owner (${(err as NodeJS.ErrnoException).code}); run passwd as its owner or as root`,
            { cause: err },
          );
        }
      }
    }
    fsyncSync(fd);
    closeSync(fd);
    isClosed = true;
    renameSync(temporary, file);
    isRenamed = true;
    return next.outcome;
  } finally {
    // The lock is ours (created above): release it whatever failed.
    if (!isClosed) closeSync(fd);
    if (!isRenamed) unlinkSync(temporary);
  }
}

/** `file`'s stats, or undefined when it does not exist. */
function statIfExists(file: string): Stats | undefined {
  try {
    return statSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new UsageError(`passwd: cannot read ${file} (${(err as NodeJS.ErrnoException).code})`, { cause: err });
  }
}

/**
 * Creates `temporary` exclusively (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600), waiting up to
 * {@link LOCK_WAIT_MS} while another run holds it.
 * @returns its file descriptor, open for writing.
 * @throws {UsageError} when it still exists after the wait (named, with what to do), or cannot be created.
 */
async function lockFile(temporary: string, file: string): Promise<number> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      return openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o600);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') throw new UsageError(`passwd: cannot create ${temporary} next to ${file} (${code})`, { cause: err });
      if (Date.now() >= deadline) {
        throw new UsageError(
          `passwd: ${temporary} exists: another \`robots-proxy passwd\` is writing ${file}, or one was interrupted; if none is running, remove ${temporary} and run again`,
          { cause: err },
        );
      }
      await sleep(50);
    }
  }
}

/**
 * The credentials file's text with `user`'s entry set to `hash` (added or replaced), or removed
 * when `hash` is undefined; validated as a credentials file.
 * @throws {UsageError} for an existing text the proxy could not read (its line named), a user to
 *   remove that is not there, or a result that would not read.
 */
function editedCredentials(text: string, exists: boolean, file: string, user: string, hash: string | undefined, identity: string | undefined): { text: string; outcome: CredentialWrite } {
  try {
    if (exists) parseCredentials(text, file);
  } catch (err) {
    throw new UsageError(`passwd: ${(err as Error).message.replace(/^access\.credentialsFile: /, '')}; fix that line first`, { cause: err });
  }
  const lines = text === '' ? [] : text.replace(/\r?\n$/, '').split(/\r?\n/);
  const index = lines.findIndex((line) => {
    const trimmed = line.trim();
    return !trimmed.startsWith('#') && trimmed.slice(0, trimmed.indexOf(':')) === user;
  });
  let outcome: CredentialWrite;
  if (hash === undefined) {
    if (index < 0) throw new UsageError(`passwd: user ${JSON.stringify(user)} is not in ${file}`);
    lines.splice(index, 1);
    outcome = 'removed';
  } else {
    const entry = `${user}:${hash}${identity !== undefined ? `:${identity}` : ''}`;
    if (index >= 0) lines[index] = entry;
    else lines.push(entry);
    outcome = index >= 0 ? 'replaced' : 'added';
  }
  const next = lines.length === 0 ? '' : `${lines.join('\n')}\n`;
  try {
    parseCredentials(next, file);
  } catch (err) {
    throw new UsageError(`passwd: ${(err as Error).message.replace(/^access\.credentialsFile: /, '')}`, { cause: err });
  }
  return { text: next, outcome };
}

/**
 * Reads a password: the first line of `input` (without its line end). From a terminal, the
 * characters are not echoed (raw mode) and `prompt` is written to `echo` first.
 * @throws {UsageError} when the input ends before any character, is not UTF-8, or Ctrl-C is typed.
 */
export async function readPassword(input: Readable & { isTTY?: boolean; setRawMode?: (mode: boolean) => void }, echo: NodeJS.WritableStream, prompt: string): Promise<string> {
  const isTerminal = input.isTTY === true && typeof input.setRawMode === 'function';
  if (isTerminal) {
    echo.write(prompt);
    input.setRawMode?.(true);
  }
  let text = '';
  // Strict and streaming: a character split across chunks is joined, and bytes that are not UTF-8
  // are refused rather than hashed as U+FFFD (clients send UTF-8: RFC 7617 §2.1).
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  try {
    for await (const chunk of input) {
      let chars: string;
      try {
        chars = typeof chunk === 'string' ? chunk : decoder.decode(chunk as Uint8Array, { stream: true });
      } catch {
        throw new UsageError('passwd: the password is not valid UTF-8 (clients send it in UTF-8); set the terminal or the input to UTF-8');
      }
      for (const char of chars) {
        if (char === '\n' || char === '\r') return text;
        if (isTerminal && char === '\u0003') throw new UsageError('passwd: cancelled');
        if (isTerminal && (char === '\u007f' || char === '\b')) text = text.slice(0, -1);
        else text += char;
      }
    }
  } finally {
    if (isTerminal) {
      input.setRawMode?.(false);
      echo.write('\n');
      input.pause();
    }
  }
  if (text === '') throw new UsageError('passwd: no password on stdin (give it on the first line)');
  return text;
}
