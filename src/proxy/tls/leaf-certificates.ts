/**
 * Issues short-lived leaf certificates for intercepted TLS, signed by the
 * proxy's CA, and caches them per host as TLS secure contexts.
 * Extension, not in RFC 9309.
 */
import { webcrypto } from 'node:crypto';
import { createSecureContext, type SecureContext, type TlsOptions } from 'node:tls';
import { LRUCache } from 'lru-cache';
import { systemClock, type Clock } from '../../clock.js';
import { CertificateError } from '../../errors.js';
import type { CaMaterial } from './certificate-authority.js';
import { normalizeLeafHost, type LeafHost } from './leaf-host.js';
import { createSerialNumber, getSubjectKeyId, x509 } from './x509-support.js';

/** Options of {@link LeafCertificateIssuer}. */
export interface LeafCertificateIssuerOptions {
  /** Most hosts kept in the cache (least recently used evicted). @default 1000, at least 1. */
  maxEntries?: number;
  /** Lifetime of a leaf from its issue time, in ms (the CA's notAfter caps it). @default 7 days, at least 1 minute. */
  leafValidityMs?: number;
  /** A cached leaf is re-signed once it has less than this left, in ms. @default a quarter of `leafValidityMs`; below it. */
  renewBeforeMs?: number;
  /** Time source for validity and renewal. @default systemClock */
  clock?: Clock;
}

/** Counters since construction, for metrics. */
export interface LeafIssuerStats {
  /** Leaf certificates signed successfully. */
  readonly issued: number;
  /** Lookups answered by a cached (possibly still pending) leaf. */
  readonly cacheHits: number;
  /** Lookups that had to sign: first sight, evicted, or due for renewal. */
  readonly cacheMisses: number;
  /** Misses caused by a cached leaf close to its expiry. */
  readonly renewals: number;
  /** Signings that failed (not cached; the next lookup tries again). */
  readonly failures: number;
  /** Hosts in the cache now. */
  readonly cachedHosts: number;
}

/** The `SNICallback` shape of `tls.createServer`. */
export type SniCallback = NonNullable<TlsOptions['SNICallback']>;

interface CacheEntry {
  readonly secureContext: Promise<SecureContext>;
  /** When to sign again, ms since the epoch. */
  readonly renewAtMs: number;
}

interface LeafKeyPair {
  readonly publicKey: webcrypto.CryptoKey;
  readonly privateKeyPem: string;
}

const MINUTE_MS = 60 * 1000;
const HOUR_MS = 60 * MINUTE_MS;
/** Leaves start an hour in the past so clients with a slow clock accept them. */
const LEAF_BACKDATE_MS = HOUR_MS;
const DEFAULT_LEAF_VALIDITY_MS = 7 * 24 * HOUR_MS;
/** X.520 ub-common-name: longer hosts get no CN, the SAN alone names them. */
const MAX_COMMON_NAME_LENGTH = 64;

/**
 * Signs leaf certificates with the CA and hands out TLS secure contexts,
 * one per host. All leaves share one ECDSA P-256 key pair, generated on first
 * use. The cache holds the promise of a context, so concurrent handshakes for
 * a new host sign exactly once; a failed signing is dropped from the cache.
 *
 * Each leaf: subject CN = host (when at most 64 characters), SAN dNSName or
 * iPAddress, extendedKeyUsage serverAuth, keyUsage digitalSignature, CA:FALSE,
 * authority key identifier of the CA, validity from one hour ago to
 * `leafValidityMs` ahead. The context's chain is the leaf then the CA file's
 * certificates.
 */
export class LeafCertificateIssuer {
  readonly #ca: CaMaterial;
  readonly #clock: Clock;
  #leafValidityMs: number;
  #renewBeforeMs: number;
  readonly #cache: LRUCache<string, CacheEntry>;
  #leafKeyPair: Promise<LeafKeyPair> | undefined;
  #authorityKeyId: Promise<x509.AuthorityKeyIdentifierExtension> | undefined;
  #issued = 0;
  #cacheHits = 0;
  #cacheMisses = 0;
  #renewals = 0;
  #failures = 0;

  /** @throws {RangeError} if an option is out of its bounds. */
  constructor(ca: CaMaterial, options: LeafCertificateIssuerOptions = {}) {
    const maxEntries = options.maxEntries ?? 1000;
    const leafValidityMs = options.leafValidityMs ?? DEFAULT_LEAF_VALIDITY_MS;
    const renewBeforeMs = options.renewBeforeMs ?? Math.floor(leafValidityMs / 4);
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`maxEntries must be a positive integer, got ${maxEntries}`);
    }
    if (!(leafValidityMs >= MINUTE_MS)) {
      throw new RangeError(`leafValidityMs must be at least ${MINUTE_MS} ms, got ${leafValidityMs}`);
    }
    if (!(renewBeforeMs >= 0 && renewBeforeMs < leafValidityMs)) {
      throw new RangeError(`renewBeforeMs must be in [0, leafValidityMs), got ${renewBeforeMs}`);
    }
    this.#ca = ca;
    this.#clock = options.clock ?? systemClock;
    this.#leafValidityMs = leafValidityMs;
    this.#renewBeforeMs = renewBeforeMs;
    this.#cache = new LRUCache({ max: maxEntries });
  }

  /**
   * Applies a reloaded `https.leafTtl` (ms, at least 1 minute): leaves signed from now on get it,
   * renewed when a quarter of it is left, and the cached leaves are dropped so none outlives the
   * new setting (each host is signed again on its next handshake).
   * @throws {RangeError} below 1 minute (the running value is kept).
   */
  setLeafValidity(leafValidityMs: number): void {
    if (!(leafValidityMs >= MINUTE_MS)) throw new RangeError(`leafValidityMs must be at least ${MINUTE_MS} ms, got ${leafValidityMs}`);
    if (leafValidityMs === this.#leafValidityMs) return;
    this.#leafValidityMs = leafValidityMs;
    this.#renewBeforeMs = Math.floor(leafValidityMs / 4);
    this.#cache.clear();
  }

  /**
   * The secure context for `host` (a DNS name or an IP address, IPv6 with or
   * without brackets; normalised by {@link normalizeLeafHost}), from the cache
   * or freshly signed. Use the SNI name when the client sent one, else the
   * CONNECT host (clients send no SNI for IP addresses).
   * @throws {CertificateError} (as a rejection) if `host` is not a valid host
   *   or signing fails, e.g. because the CA has expired.
   */
  getSecureContext(host: string): Promise<SecureContext> {
    let leafHost: LeafHost;
    try {
      leafHost = normalizeLeafHost(host);
    } catch (error) {
      return Promise.reject(error);
    }
    const nowMs = this.#clock.nowMs();
    const cached = this.#cache.get(leafHost.name);
    if (cached !== undefined && nowMs < cached.renewAtMs) {
      this.#cacheHits += 1;
      return cached.secureContext;
    }
    this.#cacheMisses += 1;
    if (cached !== undefined) {
      this.#renewals += 1;
    }
    return this.#issue(leafHost, nowMs);
  }

  /**
   * A `SNICallback` for `tls.createServer` that answers with
   * {@link getSecureContext} for the SNI name. A failure is passed to the
   * callback, which makes Node abort that handshake only.
   */
  createSniCallback(): SniCallback {
    return (servername, callback) => {
      this.getSecureContext(servername).then(
        (secureContext) => callback(null, secureContext),
        (error: unknown) => callback(error instanceof Error ? error : new CertificateError(String(error))),
      );
    };
  }

  /**
   * Why nothing can be signed now, or undefined while the CA is valid: its `notAfter` has passed
   * (the CA was valid at start; an operator's CA can run out while the proxy runs). Checked
   * before a CONNECT's 200, so the client is told, not reset once its handshake begins. Never throws.
   */
  expiredCaDetail(): string | undefined {
    // As #sign refuses: a leaf must end after its own back-dated start plus the backdate, i.e. after now.
    if (this.#clock.nowMs() < this.#ca.notAfterMs) return undefined;
    return `the proxy CA ${this.#ca.certPath} expired on ${new Date(this.#ca.notAfterMs).toISOString()}: no certificate can be signed until the operator replaces it (https.caCert and https.caKey, or a new stateDir CA) and clients trust the new one`;
  }

  /** The CA's certificate file and its `notAfter` (ms since the epoch), for the log line of an expired CA. */
  get caValidity(): { certPath: string; notAfterMs: number } {
    return { certPath: this.#ca.certPath, notAfterMs: this.#ca.notAfterMs };
  }

  /** A snapshot of the counters. */
  getStats(): LeafIssuerStats {
    return {
      issued: this.#issued,
      cacheHits: this.#cacheHits,
      cacheMisses: this.#cacheMisses,
      renewals: this.#renewals,
      failures: this.#failures,
      cachedHosts: this.#cache.size,
    };
  }

  #issue(host: LeafHost, nowMs: number): Promise<SecureContext> {
    const notBeforeMs = nowMs - LEAF_BACKDATE_MS;
    const notAfterMs = Math.min(nowMs + this.#leafValidityMs, this.#ca.notAfterMs);
    // Half the remaining life at most, so a leaf capped by a CA near its end is not re-signed on every lookup.
    const renewAtMs = notAfterMs - Math.min(this.#renewBeforeMs, (notAfterMs - nowMs) / 2);
    const secureContext = this.#sign(host, notBeforeMs, notAfterMs);
    const entry: CacheEntry = { secureContext, renewAtMs };
    this.#cache.set(host.name, entry);
    secureContext.then(
      () => {
        this.#issued += 1;
      },
      () => {
        this.#failures += 1;
        if (this.#cache.peek(host.name) === entry) {
          this.#cache.delete(host.name);
        }
      },
    );
    return secureContext;
  }

  async #sign(host: LeafHost, notBeforeMs: number, notAfterMs: number): Promise<SecureContext> {
    if (notAfterMs <= notBeforeMs + LEAF_BACKDATE_MS) {
      throw new CertificateError(`the CA ${this.#ca.certPath} expired on ${new Date(this.#ca.notAfterMs).toISOString()}; cannot issue for ${host.name}`);
    }
    try {
      const [keyPair, authorityKeyId] = await Promise.all([this.#getLeafKeyPair(), this.#getAuthorityKeyId()]);
      const hasCommonName = host.name.length <= MAX_COMMON_NAME_LENGTH;
      const certificate = await x509.X509CertificateGenerator.create({
        serialNumber: createSerialNumber(),
        subject: hasCommonName ? [{ CN: [host.name] }] : [],
        issuer: this.#ca.certificate.subjectName,
        notBefore: new Date(notBeforeMs),
        notAfter: new Date(notAfterMs),
        publicKey: keyPair.publicKey,
        signingKey: this.#ca.signingKey.cryptoKey,
        signingAlgorithm: this.#ca.signingKey.algorithm,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
          // RFC 5280 §4.2.1.6: the SAN must be critical when the subject is empty.
          new x509.SubjectAlternativeNameExtension([{ type: host.kind, value: host.name }], !hasCommonName),
          authorityKeyId,
        ],
      });
      return createSecureContext({
        key: keyPair.privateKeyPem,
        cert: `${certificate.toString('pem')}\n${this.#ca.chainPem}`,
      });
    } catch (error) {
      throw new CertificateError(`cannot issue a leaf certificate for ${host.name}`, { cause: error });
    }
  }

  #getLeafKeyPair(): Promise<LeafKeyPair> {
    this.#leafKeyPair ??= generateLeafKeyPair().catch((error: unknown) => {
      this.#leafKeyPair = undefined;
      throw error;
    });
    return this.#leafKeyPair;
  }

  #getAuthorityKeyId(): Promise<x509.AuthorityKeyIdentifierExtension> {
    // RFC 5280 §4.2.1.1: repeat the CA's own subject key identifier when it has one.
    const keyId = getSubjectKeyId(this.#ca.certificate);
    this.#authorityKeyId ??= (
      keyId !== undefined
        ? Promise.resolve(new x509.AuthorityKeyIdentifierExtension(keyId))
        : x509.AuthorityKeyIdentifierExtension.create(this.#ca.certificate.publicKey)
    ).catch((error: unknown) => {
      this.#authorityKeyId = undefined;
      throw error;
    });
    return this.#authorityKeyId;
  }
}

/** The one ECDSA P-256 key pair all leaves share. */
async function generateLeafKeyPair(): Promise<LeafKeyPair> {
  const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { publicKey: keys.publicKey, privateKeyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY') };
}
