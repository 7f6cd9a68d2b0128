/**
 * The proxy's own certificate authority for TLS interception: loads the one
 * the operator configured, or creates one in the state directory on first
 * start and reuses it afterwards. Extension, not in RFC 9309.
 */
import { createPrivateKey, webcrypto, X509Certificate as NodeX509Certificate, type KeyObject } from 'node:crypto';
import { mkdtemp, open, rename, rm, stat, chmod } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { CertificateError } from '../../errors.js';
import { makeDirectory } from '../../make-directory.js';
import { readFileBounded } from '../../read-bounded.js';
import { createSerialNumber, importSigningKey, x509, type SigningKey } from './x509-support.js';

/** The subset of a pino logger this module uses. */
export interface CaLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** Options of {@link loadOrCreateCa}. */
export interface LoadOrCreateCaOptions {
  /** Directory for generated state; the CA goes to `<stateDir>/ca/`. Created (mode 0700) if missing. */
  stateDir: string;
  /** PEM certificate of an operator-provided CA (`https.caCert`). Needs `caKeyPath` too. */
  caCertPath?: string;
  /** PEM private key (unencrypted PKCS#8, SEC1 or PKCS#1) of that CA (`https.caKey`). */
  caKeyPath?: string;
  /** Current time, ms since the Unix epoch. @default Date.now() */
  nowMs?: number;
  /** Receives one info line saying where the CA is and how to trust it. Never receives key material. */
  logger?: CaLogger;
}

/** Where the CA came from: operator configuration, reused from the state directory, or generated just now. */
export type CaSource = 'configured' | 'state-dir' | 'generated';

/** A usable CA: its PEM, where it lives, and the parsed objects the leaf issuer signs with. */
export interface CaMaterial {
  /** The CA certificate (the first certificate of the file), PEM. This is what clients must trust. */
  readonly certPem: string;
  /** Every certificate of the CA file, PEM: the CA and any intermediates above it, sent after each leaf. */
  readonly chainPem: string;
  /** The CA private key as read from disk or generated (PKCS#8 PEM when generated). Keep it out of logs. */
  readonly keyPem: string;
  /** Absolute path of the certificate file. */
  readonly certPath: string;
  /** Absolute path of the key file. */
  readonly keyPath: string;
  /** True only for the call that generated and stored the CA. */
  readonly created: boolean;
  readonly source: CaSource;
  /** Subject distinguished name, e.g. `CN=robots-proxy CA (host 2025-01-31), O=robots-proxy`. */
  readonly subject: string;
  /** SHA-256 fingerprint as colon-separated upper-case hex (what browsers show). */
  readonly sha256Fingerprint: string;
  /** Validity bounds, ms since the Unix epoch. */
  readonly notBeforeMs: number;
  readonly notAfterMs: number;
  /** Parsed CA certificate. */
  readonly certificate: x509.X509Certificate;
  /** The CA key, ready to sign leaf certificates. */
  readonly signingKey: SigningKey;
}

/** Sub-directory of the state directory holding a generated CA. */
export const CA_DIR_NAME = 'ca';
/** File names inside {@link CA_DIR_NAME}. */
export const CA_CERT_FILE_NAME = 'ca.pem';
export const CA_KEY_FILE_NAME = 'ca-key.pem';

const DAY_MS = 24 * 60 * 60 * 1000;
/** Generated CAs are valid for about ten years, backdated a day for clients with a slow clock. */
const CA_VALIDITY_MS = 3650 * DAY_MS;
const CA_BACKDATE_MS = DAY_MS;
/** X.520 ub-common-name: a CN longer than 64 characters is invalid. */
const MAX_COMMON_NAME_LENGTH = 64;

/** Paths of the generated CA inside `stateDir`. Pure. */
export function getCaPaths(stateDir: string): { dir: string; certPath: string; keyPath: string } {
  const dir = join(resolve(stateDir), CA_DIR_NAME);
  return { dir, certPath: join(dir, CA_CERT_FILE_NAME), keyPath: join(dir, CA_KEY_FILE_NAME) };
}

/**
 * Returns the CA to sign leaf certificates with.
 *
 * - With `caCertPath` and `caKeyPath`: loads that pair; `stateDir` is not touched.
 * - Otherwise reuses `<stateDir>/ca/ca.pem` and `ca-key.pem` if present, or
 *   generates an ECDSA P-256 CA (CA:TRUE, keyCertSign + cRLSign, about ten years)
 *   and stores it: certificate mode 0644, key 0600, directory 0700. Both files are
 *   written into a temporary directory that is renamed into place, so processes
 *   starting together agree on one CA (the losers load the winner's).
 *
 * An existing CA is never overwritten, even when broken: that is for the operator.
 * @throws {CertificateError} when a file cannot be read or written, a certificate
 *   or key cannot be parsed, the certificate is not a CA (no CA:TRUE, or a
 *   keyUsage without keyCertSign), is outside its validity at `nowMs`, the key
 *   does not match it, the key type is unsupported, or only one of
 *   `caCertPath`/`caKeyPath` is given.
 */
export async function loadOrCreateCa(options: LoadOrCreateCaOptions): Promise<CaMaterial> {
  const nowMs = options.nowMs ?? Date.now();
  const { caCertPath, caKeyPath, logger } = options;
  let ca: CaMaterial;
  if (caCertPath !== undefined || caKeyPath !== undefined) {
    if (caCertPath === undefined || caKeyPath === undefined) {
      throw new CertificateError('https.caCert and https.caKey must be configured together');
    }
    ca = await loadCaFiles(resolve(caCertPath), resolve(caKeyPath), nowMs, 'configured', logger);
  } else {
    ca = await loadOrCreateInStateDir(options.stateDir, nowMs, logger);
  }
  logger?.info(
    { event: 'tls-ca-ready', certPath: ca.certPath, source: ca.source, subject: ca.subject, sha256Fingerprint: ca.sha256Fingerprint, notAfter: new Date(ca.notAfterMs).toISOString() },
    `TLS interception CA ${ca.created ? 'generated' : 'loaded'}; clients must trust ${ca.certPath} (curl --cacert, NODE_EXTRA_CA_CERTS, or the system trust store)`,
  );
  if (logger) warnIfCaExpiring(ca, nowMs, logger);
  return ca;
}

/** How long before its `notAfter` a CA is warned about (`tls-ca-expiring`): 30 days. */
export const CA_EXPIRY_WARNING_MS = 30 * DAY_MS;

/**
 * Logs one `tls-ca-expiring` warning (with the certificate file, its `notAfter` as ISO 8601 and
 * the whole days left) when `ca` expires within {@link CA_EXPIRY_WARNING_MS} of `nowMs` (ms since
 * the Unix epoch), and nothing otherwise: once the CA has expired no leaf can be signed, so the
 * operator is told while there is time to replace it and have clients trust the new one. Called
 * at start ({@link loadOrCreateCa}) and at each reload (the CA itself needs a restart to change).
 * @returns true when it warned.
 */
export function warnIfCaExpiring(ca: Pick<CaMaterial, 'certPath' | 'notAfterMs'>, nowMs: number, logger: CaLogger): boolean {
  const warning = caExpiryWarning(ca, nowMs);
  if (warning === undefined) return false;
  logger.warn({ event: 'tls-ca-expiring', certPath: ca.certPath, notAfter: warning.notAfter, daysLeft: warning.daysLeft }, warning.message);
  return true;
}

/**
 * The words of {@link warnIfCaExpiring}'s warning, or undefined when `ca` (its `notAfterMs`, ms since the
 * Unix epoch) has more than {@link CA_EXPIRY_WARNING_MS} left at `nowMs`. `notAfter` is ISO 8601, `daysLeft`
 * whole days (0 once expired). Also printed by `robots-proxy ca`.
 */
export function caExpiryWarning(ca: Pick<CaMaterial, 'certPath' | 'notAfterMs'>, nowMs: number): { notAfter: string; daysLeft: number; message: string } | undefined {
  const leftMs = ca.notAfterMs - nowMs;
  if (leftMs > CA_EXPIRY_WARNING_MS) return undefined;
  const notAfter = new Date(ca.notAfterMs).toISOString();
  const daysLeft = Math.max(0, Math.floor(leftMs / DAY_MS));
  const message =
    leftMs <= 0
      ? `TLS interception CA ${ca.certPath} expired ${notAfter}: every CONNECT to intercept is refused 500; replace it (clients must then trust the new one)`
      : `TLS interception CA ${ca.certPath} expires ${notAfter} (${daysLeft} day${daysLeft === 1 ? '' : 's'} left): after that every CONNECT to intercept is refused 500; replace it (clients must then trust the new one)`;
  return { notAfter, daysLeft, message };
}

async function loadOrCreateInStateDir(stateDir: string, nowMs: number, logger: CaLogger | undefined): Promise<CaMaterial> {
  const paths = getCaPaths(stateDir);
  if ((await pathExists(paths.certPath)) || (await pathExists(paths.keyPath))) {
    return loadCaFiles(paths.certPath, paths.keyPath, nowMs, 'state-dir', logger);
  }
  const generated = await generateCa(nowMs);
  const isStored = await storeCa(resolve(stateDir), paths.dir, generated);
  if (!isStored) {
    // Another process stored its CA between our check and our rename: use theirs.
    return loadCaFiles(paths.certPath, paths.keyPath, nowMs, 'state-dir', logger);
  }
  const material = await parseCa(generated.certPem, generated.keyPem, paths.certPath, nowMs);
  return { ...material, keyPath: paths.keyPath, created: true, source: 'generated' };
}

async function loadCaFiles(certPath: string, keyPath: string, nowMs: number, source: CaSource, logger: CaLogger | undefined): Promise<CaMaterial> {
  const certPem = readPemFile(certPath, 'certificate');
  const keyPem = readPemFile(keyPath, 'key');
  const keyStat = await stat(keyPath);
  if ((keyStat.mode & 0o077) !== 0) {
    logger?.warn({ event: 'tls-ca-key-mode', keyPath, mode: (keyStat.mode & 0o777).toString(8) }, 'CA key file is readable by group or others; chmod 600 it');
  }
  const material = await parseCa(certPem, keyPem, certPath, nowMs);
  return { ...material, keyPath, created: false, source };
}

/** Largest CA certificate or key file read, bytes (bounded everything: `/dev/zero` is refused, not read for ever). */
const MAX_PEM_FILE_BYTES = 16 * 1_048_576;

function readPemFile(path: string, what: string): string {
  try {
    const { bytes, tooLarge } = readFileBounded(path, MAX_PEM_FILE_BYTES);
    if (tooLarge) throw new CertificateError(`CA ${what} ${path} is larger than ${MAX_PEM_FILE_BYTES} bytes: not a PEM file`);
    return bytes.toString('utf8');
  } catch (error) {
    if (error instanceof CertificateError) throw error;
    throw new CertificateError(`cannot read CA ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, { cause: error });
  }
}

type ParsedCa = Omit<CaMaterial, 'keyPath' | 'created' | 'source'>;

/** Parses and checks a CA certificate and key; see {@link loadOrCreateCa} for what is checked. */
async function parseCa(fileText: string, keyPem: string, certPath: string, nowMs: number): Promise<ParsedCa> {
  let chain: x509.X509Certificate[];
  try {
    chain = x509.PemConverter.decodeWithHeaders(fileText)
      .filter((block) => block.type === 'CERTIFICATE')
      .map((block) => new x509.X509Certificate(block.rawData));
  } catch (error) {
    throw new CertificateError(`cannot parse CA certificate ${certPath}`, { cause: error });
  }
  const certificate = chain[0];
  if (certificate === undefined) {
    throw new CertificateError(`no PEM CERTIFICATE block in ${certPath}`);
  }
  if (certificate.getExtension(x509.BasicConstraintsExtension)?.ca !== true) {
    throw new CertificateError(`${certPath} is not a CA certificate (basicConstraints CA:TRUE is missing)`);
  }
  const keyUsage = certificate.getExtension(x509.KeyUsagesExtension);
  if (keyUsage !== null && (keyUsage.usages & x509.KeyUsageFlags.keyCertSign) === 0) {
    throw new CertificateError(`${certPath} may not sign certificates (keyUsage lacks keyCertSign)`);
  }
  const notBeforeMs = certificate.notBefore.getTime();
  const notAfterMs = certificate.notAfter.getTime();
  if (nowMs < notBeforeMs || nowMs > notAfterMs) {
    throw new CertificateError(
      `CA certificate ${certPath} is valid only from ${certificate.notBefore.toISOString()} to ${certificate.notAfter.toISOString()}; replace it (clients must then trust the new one)`,
    );
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(keyPem);
  } catch (error) {
    throw new CertificateError(`cannot parse the CA private key for ${certPath} (it must be unencrypted PEM)`, { cause: error });
  }
  const nodeCertificate = new NodeX509Certificate(certificate.toString('pem'));
  if (privateKey.asymmetricKeyType !== nodeCertificate.publicKey.asymmetricKeyType || !nodeCertificate.checkPrivateKey(privateKey)) {
    throw new CertificateError(`the CA private key does not match the certificate ${certPath}`);
  }
  const signingKey = await importSigningKey(privateKey);
  return {
    certPem: certificate.toString('pem'),
    chainPem: chain.map((c) => c.toString('pem')).join('\n'),
    keyPem,
    certPath,
    subject: certificate.subject,
    sha256Fingerprint: nodeCertificate.fingerprint256,
    notBeforeMs,
    notAfterMs,
    certificate,
    signingKey,
  };
}

/**
 * Generates an ECDSA P-256 self-signed CA valid from a day before `nowMs` (epoch ms) to `notAfterMs`
 * (epoch ms; default ten years on); returns its certificate and PKCS#8 key as PEM. Exported for
 * tests that need a CA about to expire.
 */
export async function generateCa(nowMs: number, notAfterMs = nowMs + CA_VALIDITY_MS): Promise<{ certPem: string; keyPem: string }> {
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const date = new Date(nowMs).toISOString().slice(0, 10);
  const commonName = `robots-proxy CA (${hostname().slice(0, 30)} ${date})`.slice(0, MAX_COMMON_NAME_LENGTH);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: createSerialNumber(),
    name: [{ CN: [commonName] }, { O: ['robots-proxy'] }],
    notBefore: new Date(nowMs - CA_BACKDATE_MS),
    notAfter: new Date(notAfterMs),
    keys,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey as webcrypto.CryptoKey);
  return { certPem: certificate.toString('pem'), keyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY') };
}

/**
 * Writes the CA into a fresh temporary directory inside `stateDir`, then
 * renames that directory to `caDir`. rename(2) onto a non-empty directory
 * fails, so exactly one of several racing processes wins.
 * @returns false if another process stored a CA first.
 */
async function storeCa(stateDir: string, caDir: string, pems: { certPem: string; keyPem: string }): Promise<boolean> {
  try {
    await makeDirectory(stateDir, 0o700);
  } catch (error) {
    throw new CertificateError(`cannot create state directory ${stateDir} (stateDir): ${(error as NodeJS.ErrnoException).code ?? String(error)}`, { cause: error });
  }
  let tempDir: string | undefined;
  try {
    tempDir = await mkdtemp(join(stateDir, `.${CA_DIR_NAME}-`));
    await chmod(tempDir, 0o700);
    await writeFileDurably(join(tempDir, CA_KEY_FILE_NAME), pems.keyPem, 0o600);
    await writeFileDurably(join(tempDir, CA_CERT_FILE_NAME), pems.certPem, 0o644);
    await rename(tempDir, caDir);
    tempDir = undefined;
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTEMPTY' || code === 'EEXIST') {
      return false;
    }
    throw new CertificateError(`cannot store the generated CA in ${caDir}`, { cause: error });
  } finally {
    if (tempDir !== undefined) {
      await rm(tempDir, { recursive: true, force: true });
    }
  }
}

/** Creates `path` (failing if it exists), writes `text`, sets `mode` exactly (despite the umask) and fsyncs. */
async function writeFileDurably(path: string, text: string, mode: number): Promise<void> {
  const file = await open(path, 'wx', mode);
  try {
    await file.chmod(mode);
    await file.writeFile(text, 'utf8');
    await file.sync();
  } finally {
    await file.close();
  }
}

async function pathExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      return false;
    }
    throw new CertificateError(`cannot inspect ${path}`, { cause: error });
  }
}
