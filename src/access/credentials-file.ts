/**
 * The proxy credentials file (`access.credentialsFile`): one user per line,
 * `user:bcrypt-hash` or `user:bcrypt-hash:identity`, `#` comments and blank lines
 * ignored. The format is htpasswd's with bcrypt (`htpasswd -B` entries work), plus an
 * optional identity. Passwords are never stored in plain text: a line whose password
 * field is not a bcrypt hash is refused, naming the line (and never echoing the value).
 * Parsing is pure; {@link readCredentialsFile} reads the file. Extension, not in RFC 9309.
 */
import { ConfigError } from '../errors.js';
import { readFileBounded } from '../read-bounded.js';

/** One user of the credentials file. */
export interface CredentialEntry {
  /** The user (Basic auth user-id, RFC 7617 §2: no `:`). */
  readonly user: string;
  /** The bcrypt hash of the password (`$2a$`, `$2b$` or `$2y$`, cost 4..31). */
  readonly hash: string;
  /** The identity the user authenticates as: the line's third field, else the user name. */
  readonly identity: string;
  /** 1-based line in the file, for messages. */
  readonly line: number;
}

/** The parsed file: users by name. */
export type Credentials = ReadonlyMap<string, CredentialEntry>;

/**
 * How a reloaded credentials file differs from the one in force, in users (no names: the
 * answer of `POST /reload` and the reload's log line say that the file took effect, not who
 * is in it).
 */
export interface CredentialsChange {
  /** Users in the new file. */
  readonly users: number;
  /** Users in the new file and not in the old one. */
  readonly added: number;
  /** Users in the old file and not in the new one. */
  readonly removed: number;
  /** Users in both whose hash or identity differs. */
  readonly changed: number;
}

/**
 * Compares two parsed credentials files (`before` undefined: no file was in force). Pure.
 * @returns the counts; all of `added`, `removed`, `changed` 0 when the files name the same users with the same hashes and identities.
 */
export function compareCredentials(before: Credentials | undefined, after: Credentials): CredentialsChange {
  let added = 0;
  let changed = 0;
  for (const [user, entry] of after) {
    const old = before?.get(user);
    if (old === undefined) added += 1;
    else if (old.hash !== entry.hash || old.identity !== entry.identity) changed += 1;
  }
  let removed = 0;
  if (before !== undefined) for (const user of before.keys()) if (!after.has(user)) removed += 1;
  return { users: after.size, added, removed, changed };
}

/** Largest credentials file read, bytes (bounded everything). */
export const MAX_CREDENTIALS_FILE_BYTES = 16 * 1_048_576;

/** A user name: printable ASCII without `:` (RFC 7617 §2) or spaces, 1..128 characters. */
const USER = /^[\x21-\x39\x3b-\x7e]{1,128}$/;
/** An identity name, as in the config's `identities` keys. */
const IDENTITY = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;
/** A bcrypt hash in the modular crypt format: `$2b$10$` + 22 salt + 31 hash characters. */
const BCRYPT = /^\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$/;

/** Describes what a password field holds without repeating it (it may be a plain password). */
function describeSecretField(field: string): string {
  if (field === '') return 'an empty password field';
  if (field.startsWith('$argon2')) return 'an argon2 hash, which this proxy does not read (use bcrypt)';
  if (/^\$(1|apr1|5|6)\$/.test(field) || field.startsWith('{SHA}')) return 'a hash bcrypt is not (MD5, SHA: too fast to guess against)';
  if (field.startsWith('$2')) return 'a malformed bcrypt hash';
  return 'no bcrypt hash: plain-text passwords are refused';
}

/**
 * Parses the text of a credentials file. Pure.
 * @param fileName named in error messages.
 * @throws {ConfigError} (key `access.credentialsFile`) for the first bad line, naming the file,
 *   the line and the user (never the password field): a missing `:`, a bad user or identity
 *   name, a password field that is not a bcrypt hash (plain text, MD5, argon2), a user listed twice.
 */
export function parseCredentials(text: string, fileName: string): Credentials {
  const users = new Map<string, CredentialEntry>();
  const lines = text.split(/\r?\n/);
  const fail = (line: number, message: string): never => {
    throw new ConfigError(`access.credentialsFile: ${fileName}:${line}: ${message}`, { key: 'access.credentialsFile' });
  };
  lines.forEach((raw, index) => {
    const line = index + 1;
    const text = raw.trim();
    if (text === '' || text.startsWith('#')) return;
    const colon = text.indexOf(':');
    if (colon < 0) fail(line, 'expected "user:bcrypt-hash" (write entries with `robots-proxy passwd FILE USER`)');
    const user = text.slice(0, colon);
    const rest = text.slice(colon + 1);
    if (!USER.test(user)) fail(line, 'the user name must be 1 to 128 printable ASCII characters without ":" or spaces');
    // A bcrypt hash holds no ":", so a third field is the identity.
    const second = rest.indexOf(':');
    const hash = second < 0 ? rest : rest.slice(0, second);
    const identity = second < 0 ? user : rest.slice(second + 1);
    if (!BCRYPT.test(hash)) {
      fail(line, `user ${JSON.stringify(user)} has ${describeSecretField(hash)}; write the entry with \`robots-proxy passwd ${fileName} ${user}\` (or htpasswd -B)`);
    }
    if (!IDENTITY.test(identity)) fail(line, `user ${JSON.stringify(user)}: the identity must be 1 to 128 letters, digits, ".", "_", "@" or "-", starting with a letter or digit`);
    const earlier = users.get(user);
    if (earlier !== undefined) fail(line, `user ${JSON.stringify(user)} is already listed on line ${earlier.line}`);
    users.set(user, { user, hash, identity, line });
  });
  return users;
}

/**
 * Reads and parses the credentials file (synchronously: at start and on a reload).
 * @param path the configured path (relative to the working directory).
 * @throws {ConfigError} (key `access.credentialsFile`) when the file cannot be read, is larger
 *   than {@link MAX_CREDENTIALS_FILE_BYTES}, or has a bad line (see {@link parseCredentials}).
 */
export function readCredentialsFile(path: string): Credentials {
  const fix = 'point access.credentialsFile at a readable file of "user:bcrypt-hash" lines, or remove the key';
  let text: string;
  try {
    const { bytes, tooLarge } = readFileBounded(path, MAX_CREDENTIALS_FILE_BYTES);
    if (tooLarge) {
      throw new ConfigError(`access.credentialsFile: ${path} is larger than ${MAX_CREDENTIALS_FILE_BYTES} bytes`, { key: 'access.credentialsFile' });
    }
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new ConfigError(`access.credentialsFile: cannot read ${JSON.stringify(path)} (${code}); ${fix}`, { key: 'access.credentialsFile' }, { cause: error });
  }
  return parseCredentials(text, path);
}
