/**
 * `robots-proxy passwd FILE USER`: writes one user's entry in a credentials file (see
 * credentials-file.ts): the bcrypt hash of a password read from stdin, never the password.
 * The file's other lines (comments included) are kept; it is replaced atomically (a temporary
 * file renamed over it), created with mode 0600. Extension, not in RFC 9309.
 */
import { chmodSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import bcrypt from 'bcryptjs';
import { UsageError } from '../errors.js';
import { parseCredentials } from './credentials-file.js';

/** bcrypt reads at most this many bytes of a password; a longer one would be cut silently. */
export const MAX_PASSWORD_BYTES = 72;
/** Default bcrypt cost: 2^10 rounds, a few hundred ms per check (the proxy caches verified credentials). */
export const DEFAULT_BCRYPT_COST = 10;

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
 * Sets (adds or replaces) `user`'s entry in `file` with the bcrypt hash of `password`; with
 * `password` null, removes it. The result is validated as a credentials file before it is
 * written, so the file is never left unreadable by the proxy.
 * @throws {UsageError} for a bad user, identity, cost or password (empty, over 72 bytes), a
 *   user to remove that is not there, or an existing file the proxy could not read (its line named).
 */
export async function writeCredential(file: string, user: string, password: string | null, options: WriteCredentialOptions = {}): Promise<CredentialWrite> {
  if (!/^[\x21-\x39\x3b-\x7e]{1,128}$/.test(user)) throw new UsageError('passwd: USER must be 1 to 128 printable ASCII characters without ":" or spaces');
  if (options.identity !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/.test(options.identity)) {
    throw new UsageError('passwd: --identity must be 1 to 128 letters, digits, ".", "_", "@" or "-", starting with a letter or digit');
  }
  const cost = options.cost ?? DEFAULT_BCRYPT_COST;
  if (!Number.isInteger(cost) || cost < 4 || cost > 15) throw new UsageError(`passwd: --cost must be an integer 4..15, got ${cost}`);
  if (password !== null) {
    if (password === '') throw new UsageError('passwd: the password is empty');
    if (Buffer.byteLength(password) > MAX_PASSWORD_BYTES) throw new UsageError(`passwd: the password is longer than ${MAX_PASSWORD_BYTES} bytes, which bcrypt would cut`);
  }
  const exists = existsSync(file);
  const text = exists ? readFileSync(file, 'utf8') : '';
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
  if (password === null) {
    if (index < 0) throw new UsageError(`passwd: user ${JSON.stringify(user)} is not in ${file}`);
    lines.splice(index, 1);
    outcome = 'removed';
  } else {
    const hash = await bcrypt.hash(password, cost);
    const entry = `${user}:${hash}${options.identity !== undefined ? `:${options.identity}` : ''}`;
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
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, next, { mode: 0o600 });
  if (exists) chmodSync(temporary, statSync(file).mode & 0o777);
  renameSync(temporary, file);
  return outcome;
}

/**
 * Reads a password: the first line of `input` (without its line end). From a terminal, the
 * characters are not echoed (raw mode) and `prompt` is written to `echo` first.
 * @throws {UsageError} when the input ends before any character, or Ctrl-C is typed.
 */
export async function readPassword(input: Readable & { isTTY?: boolean; setRawMode?: (mode: boolean) => void }, echo: NodeJS.WritableStream, prompt: string): Promise<string> {
  const isTerminal = input.isTTY === true && typeof input.setRawMode === 'function';
  if (isTerminal) {
    echo.write(prompt);
    input.setRawMode?.(true);
  }
  let text = '';
  try {
    for await (const chunk of input) {
      for (const char of String(chunk)) {
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
