/**
 * The admin API's bearer token (`admin.token`, or `admin.tokenFile`), and its check. A token
 * file that does not exist is created with a random token (mode 0600), as the CA is on first
 * start. Comparison is in constant time over SHA-256 digests, so neither the token's content
 * nor its length leaks through timing. Extension, not in RFC 9309.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { AdminConfig } from '../config/index.js';
import { ConfigError } from '../errors.js';
import { makeDirectorySync } from '../make-directory.js';
import { readFileBounded } from '../read-bounded.js';
import { checkSecretFileMode, type SecretFileWarning } from './secret-file-mode.js';

/** Bytes of a token file read: its first line is the token (bounded everything). */
const MAX_TOKEN_FILE_BYTES = 65_536;
/** Shortest token read from a file. */
const MIN_TOKEN_CHARS = 16;

/**
 * The admin token in force: `admin.token`, else the first line of `admin.tokenFile` (created
 * with a random 43-character token when it does not exist), else undefined (no token: the admin
 * API is open, which the schema allows on loopback only).
 * @returns the token; when a file was created, its path (to log; the token itself is never logged);
 *   when the group or others may read or write the file, the warning to log.
 * @throws {ConfigError} (key `admin.tokenFile`) when the file cannot be read or created, is
 *   world-writable, or holds a token shorter than 16 characters.
 */
export function resolveAdminToken(admin: Pick<AdminConfig, 'token' | 'tokenFile'>): { token: string | undefined; createdFile?: string; warning?: SecretFileWarning } {
  if (admin.token !== undefined) return { token: admin.token };
  const file = admin.tokenFile;
  if (file === undefined) return { token: undefined };
  const key = 'admin.tokenFile';
  let text: string;
  try {
    text = readFileBounded(file, MAX_TOKEN_FILE_BYTES).bytes.toString('utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ConfigError(`${key}: cannot read ${JSON.stringify(file)} (${(error as NodeJS.ErrnoException).code ?? String(error)})`, { key }, { cause: error });
    }
    const token = randomBytes(32).toString('base64url');
    try {
      makeDirectorySync(dirname(file), 0o700);
      // wx: never overwrite a file another process created meanwhile.
      writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
    } catch (writeError) {
      throw new ConfigError(
        `${key}: ${JSON.stringify(file)} does not exist and cannot be created (${(writeError as NodeJS.ErrnoException).code ?? String(writeError)}); create it with a token, or set admin.token`,
        { key },
        { cause: writeError },
      );
    }
    return { token, createdFile: file };
  }
  const warning = checkSecretFileMode(file, key);
  const token = (text.split(/\r?\n/)[0] ?? '').trim();
  if (token.length < MIN_TOKEN_CHARS) throw new ConfigError(`${key}: the first line of ${JSON.stringify(file)} must hold a token of at least ${MIN_TOKEN_CHARS} characters`, { key });
  return warning === undefined ? { token } : { token, warning };
}

/**
 * True when an `Authorization` header value carries `Bearer <token>` (RFC 6750 §2.1) with
 * the expected token. Constant time in the token's content and length. Never throws.
 */
export function hasBearerToken(authorization: string | undefined, expected: string): boolean {
  if (authorization === undefined) return false;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization);
  if (match === null) return false;
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(match[1] as string), digest(expected));
}
