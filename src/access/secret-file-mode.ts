/**
 * The permissions of the files that hold the proxy's secrets (`access.credentialsFile`,
 * `admin.tokenFile`), checked as ssh checks a private key's. A file others may read or write is
 * reported (one warning, naming the file and its mode); one any user of the machine may write is
 * refused, since anyone could then add a user or replace the admin token. Group or world *read*
 * is only warned about: container secret mounts are commonly 0644 or 0444 (Kubernetes Secret
 * volumes, Docker secrets) where the proxy is the machine's only user, the credentials file holds
 * bcrypt hashes rather than passwords, and a reload refused for a mode would leave an operator's
 * real change out. Not checked on Windows (no POSIX modes). Extension, not in RFC 9309.
 */
import { statSync } from 'node:fs';
import { ConfigError } from '../errors.js';

/** The config keys whose files are checked. */
export type SecretFileKey = 'access.credentialsFile' | 'admin.tokenFile';

/** A secret file others may read or write: what the one warning line says. */
export interface SecretFileWarning {
  key: SecretFileKey;
  /** The path as configured. */
  file: string;
  /** The permission bits in octal, e.g. `0644`. */
  mode: string;
  message: string;
}

/** What a writer of each file could do: for the refusal's message. */
const THREAT: Record<SecretFileKey, string> = {
  'access.credentialsFile': 'add a user or change a password',
  'admin.tokenFile': 'replace the admin token',
};

/** `mode`'s permission bits in octal, four digits (`0640`). Pure. */
export function octalMode(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, '0')}`;
}

/**
 * Who besides the owner may read or write a file of permission bits `mode`, e.g.
 * `['group-readable', 'world-readable']`; empty when nobody may. Execute bits are ignored. Pure.
 */
export function looseAccessOf(mode: number): string[] {
  const found: string[] = [];
  if (mode & 0o040) found.push('group-readable');
  if (mode & 0o020) found.push('group-writable');
  if (mode & 0o004) found.push('world-readable');
  if (mode & 0o002) found.push('world-writable');
  return found;
}

/**
 * Checks the mode of the secret file `file` (configured under `key`); call it where the file is
 * read (at start; for the credentials file, on every reload too).
 * @returns the warning to log when the group or others may read or write it, else undefined;
 *   undefined too when the file cannot be stat'ed (its reader reports that) or on Windows.
 * @throws {ConfigError} (key `key`) when any user may write it (world-writable).
 */
export function checkSecretFileMode(file: string, key: SecretFileKey): SecretFileWarning | undefined {
  if (process.platform === 'win32') return undefined;
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    return undefined;
  }
  const loose = looseAccessOf(mode);
  if (loose.length === 0) return undefined;
  const octal = octalMode(mode);
  if (mode & 0o002) {
    throw new ConfigError(`${key}: ${JSON.stringify(file)} is world-writable (mode ${octal}): any user of this machine could ${THREAT[key]}; chmod 600 it`, { key });
  }
  return { key, file, mode: octal, message: `${key}: ${file} is ${loose.join(', ')} (mode ${octal}): it holds secrets; chmod 600 it (or 640, with a group only the proxy is in)` };
}
