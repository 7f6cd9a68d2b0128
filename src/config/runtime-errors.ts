/**
 * Configuration errors that only show when the configuration is used: an
 * address that cannot be bound, a file that cannot be read, a directory that
 * cannot be created. Each becomes a {@link ConfigError} that names the key,
 * its value and what to do; {@link placeConfigError} then adds the file, line
 * and column of the key. Extension, not in RFC 9309.
 */
import { X509Certificate } from 'node:crypto';
import { LineCounter, parseDocument } from 'yaml';
import { ConfigError } from '../errors.js';
import { readFileBounded } from '../read-bounded.js';
import { findKeyOffset, positionAt } from './yaml-positions.js';

/** Largest `upstream.caFile` read, bytes (bounded everything; a system bundle is about 200 KiB). */
const MAX_CA_FILE_BYTES = 16 * 1_048_576;
/** Largest configuration file read to place a key (as `loadConfig` refuses beyond it). */
const MAX_CONFIG_BYTES = 1_048_576;

/** Short readings of the `fs`/`net` error codes people meet here. */
const CODE_MEANING: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOTDIR: 'not a directory',
  EISDIR: 'is a directory',
  ENOSPC: 'no space left on device',
  ENOTFOUND: 'the name does not resolve',
  EAI_AGAIN: 'the name does not resolve (temporary DNS failure)',
};

function codeOf(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.message : String(error);
}

function describeCode(code: string): string {
  const meaning = CODE_MEANING[code];
  return meaning === undefined ? code : `${code}: ${meaning}`;
}

/**
 * The error of a listener that could not start, naming the key to change.
 * @param section `listen` (the proxy) or `admin`.
 * @param error what `server.listen` failed with (`EADDRINUSE`, `EADDRNOTAVAIL`,
 *   `EACCES`, `ENOTFOUND`...).
 * @returns a ConfigError whose `key` is `<section>.port` or `<section>.host`.
 */
export function listenConfigError(section: 'listen' | 'admin', host: string, port: number, error: unknown): ConfigError {
  const code = codeOf(error);
  const where = `${host}:${port}`;
  let key: string;
  let text: string;
  switch (code) {
    case 'EADDRINUSE':
      key = `${section}.port`;
      text = `${key}: ${port} is already in use on ${host} (another robots-proxy, or another program); stop it, or set ${key} to a free port (0 picks one)`;
      break;
    case 'EACCES':
    case 'EPERM':
      key = `${section}.port`;
      text =
        port < 1024
          ? `${key}: ${port} is a privileged port (below 1024) and this process may not bind it (${code}); use a port from 1024 up, or grant the process CAP_NET_BIND_SERVICE`
          : `${key}: binding ${where} was refused (${code}); choose another port, or check the sandbox or firewall policy`;
      break;
    case 'EADDRNOTAVAIL':
      key = `${section}.host`;
      text = `${key}: ${host} is not an address of this machine (EADDRNOTAVAIL); use one of its addresses: 127.0.0.1 (loopback only), or 0.0.0.0 (every interface: then restrict who can connect)`;
      break;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      key = `${section}.host`;
      text = `${key}: ${host} does not resolve to an address (${code}); use an IP address such as 127.0.0.1, or a name in /etc/hosts`;
      break;
    case 'EAFNOSUPPORT':
      key = `${section}.host`;
      text = `${key}: ${host} is of an address family this machine does not support (IPv6 disabled?); use an IPv4 address such as 127.0.0.1`;
      break;
    default:
      key = `${section}.host`;
      text = `${section}: cannot listen on ${where} (${code}); check ${section}.host and ${section}.port`;
  }
  return new ConfigError(text, { key }, { cause: error });
}

/**
 * Checks that the files a restart would read for restart-only keys that changed are readable
 * now (`https.caCert`, `https.caKey`): a reload cannot apply them, but a typo found only at the
 * next restart would stop the proxy then. Reads the CA pair's files without parsing them, and
 * `upstream.caFile` as a start does ({@link readCaFile}).
 * @param config the newly loaded configuration (before the running values are put back).
 * @param changed the restart-only keys whose value changed (`ReloadPlan.restartRequired`).
 * @throws {ConfigError} (the key) when a named file cannot be read (or `upstream.caFile` holds no certificate).
 */
export function checkRestartFiles(
  config: { readonly https: { readonly caCert?: string; readonly caKey?: string }; readonly upstream: { readonly caFile?: string } },
  changed: readonly string[],
): void {
  if (config.upstream.caFile !== undefined && changed.includes('upstream.caFile')) readCaFile(config.upstream.caFile);
  for (const [key, path] of [['https.caCert', config.https.caCert], ['https.caKey', config.https.caKey]] as const) {
    if (path === undefined || !changed.includes(key)) continue;
    try {
      readFileBounded(path, 0);
    } catch (error) {
      throw new ConfigError(
        `${key}: cannot read ${JSON.stringify(path)} (${describeCode(codeOf(error))}); a restart would fail to start with it: point it at a readable PEM file, or remove https.caCert and https.caKey to use the CA generated under stateDir`,
        { key },
        { cause: error },
      );
    }
  }
}

/**
 * Reads `upstream.caFile` and checks that it holds PEM certificates.
 * @param path the configured value (relative paths against the working directory).
 * @returns the file's text.
 * @throws {ConfigError} (key `upstream.caFile`) when it cannot be read, holds
 *   no `BEGIN CERTIFICATE` block, or a block does not parse.
 */
export function readCaFile(path: string): string {
  const key = 'upstream.caFile';
  const fix = 'point it at a PEM file of CA certificates, or remove the key';
  let text: string;
  try {
    const read = readFileBounded(path, MAX_CA_FILE_BYTES);
    if (read.tooLarge) throw new ConfigError(`${key}: ${JSON.stringify(path)} is larger than ${MAX_CA_FILE_BYTES} bytes; ${fix}`, { key });
    text = read.bytes.toString('utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`${key}: cannot read ${JSON.stringify(path)} (${describeCode(codeOf(error))}); ${fix}`, { key }, { cause: error });
  }
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new ConfigError(`${key}: ${JSON.stringify(path)} holds no PEM certificate (no "BEGIN CERTIFICATE" block); ${fix}`, { key });
  blocks.forEach((block, index) => {
    try {
      new X509Certificate(block);
    } catch (error) {
      throw new ConfigError(`${key}: certificate ${index + 1} of ${JSON.stringify(path)} does not parse (${(error as Error).message}); ${fix}`, { key }, { cause: error });
    }
  });
  return text;
}

/**
 * The error of a state directory that cannot be created.
 * @param stateDir the configured value.
 * @returns a ConfigError with key `stateDir`.
 */
export function stateDirConfigError(stateDir: string, error: unknown): ConfigError {
  const code = codeOf(error);
  const failed = (error as NodeJS.ErrnoException | undefined)?.path;
  const at = failed !== undefined && failed !== stateDir ? ` (at ${failed})` : '';
  return new ConfigError(
    `stateDir: cannot create the directory ${JSON.stringify(stateDir)}${at} (${describeCode(code)}); set stateDir to a writable directory (the generated CA is kept there), or set https.caCert and https.caKey`,
    { key: 'stateDir' },
    { cause: error },
  );
}

/**
 * Adds where a key is to a ConfigError raised after loading (it has a `key`
 * but no line): `file:line:column: <message>` when the key is written in
 * `file`, `file: <message> (not set in the file: the default applies)` when not.
 * Any other error is returned unchanged. Never throws.
 * @param error what the start failed with.
 * @param file the configuration file the proxy was started with.
 */
export function placeConfigError(error: unknown, file: string): unknown {
  if (!(error instanceof ConfigError) || error.key === undefined || error.line !== undefined) return error;
  let position: { line: number; column: number } | undefined;
  try {
    const { bytes, tooLarge } = readFileBounded(file, MAX_CONFIG_BYTES);
    if (tooLarge) throw new Error('too large to place the key');
    const text = bytes.toString('utf8');
    const lineCounter = new LineCounter();
    const doc = parseDocument(text, { lineCounter });
    const path = error.key.split('.');
    const offset = findKeyOffset(doc, path);
    // findKeyOffset falls back to the deepest existing ancestor: only the key itself counts here.
    const found = offset === undefined ? undefined : positionAt(lineCounter, offset);
    if (found !== undefined && findKeyOffset(doc, path.slice(0, -1)) !== offset) position = found;
  } catch {
    position = undefined;
  }
  const message =
    position === undefined
      ? `${file}: ${error.message} (${error.key} is not set in the file: the default applies)`
      : `${file}:${position.line}:${position.column}: ${error.message}`;
  return new ConfigError(message, { key: error.key, ...(position ?? {}) }, { cause: error.cause });
}
