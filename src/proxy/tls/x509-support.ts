/**
 * Glue between node:crypto and @peculiar/x509 for the TLS-interception CA and
 * its leaf certificates. Extension, not in RFC 9309.
 *
 * @peculiar/x509 needs `reflect-metadata` loaded before it and a WebCrypto
 * provider; importing this module does both once, so other modules import
 * `x509` from here rather than from the package.
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { randomBytes, webcrypto, type KeyObject } from 'node:crypto';
import { CertificateError } from '../../errors.js';

x509.cryptoProvider.set(webcrypto);

export { x509 };

/** A WebCrypto private key ready to sign certificates, with the signature algorithm that goes with it. */
export interface SigningKey {
  /** Non-extractable WebCrypto private key. */
  readonly cryptoKey: webcrypto.CryptoKey;
  /** Signature algorithm for {@link x509.X509CertificateGenerator}, e.g. ECDSA with SHA-256. */
  readonly algorithm: webcrypto.EcdsaParams | webcrypto.RsaHashedImportParams;
}

/** WebCrypto curve name and matching hash for each EC curve Node reports. */
const EC_CURVES: Readonly<Record<string, { namedCurve: string; hash: string }>> = {
  prime256v1: { namedCurve: 'P-256', hash: 'SHA-256' },
  secp384r1: { namedCurve: 'P-384', hash: 'SHA-384' },
  secp521r1: { namedCurve: 'P-521', hash: 'SHA-512' },
};

/**
 * Converts a node:crypto private key into a WebCrypto signing key.
 * Supports EC keys on P-256, P-384 and P-521 (ECDSA with SHA-256/384/512)
 * and RSA keys (PKCS#1 v1.5 with SHA-256).
 * @throws {CertificateError} for any other key type (RSA-PSS, Ed25519, DSA, ...).
 */
export async function importSigningKey(key: KeyObject): Promise<SigningKey> {
  const pkcs8 = key.export({ type: 'pkcs8', format: 'der' });
  if (key.asymmetricKeyType === 'ec') {
    const curve = EC_CURVES[key.asymmetricKeyDetails?.namedCurve ?? ''];
    if (curve === undefined) {
      throw new CertificateError(`unsupported EC curve ${String(key.asymmetricKeyDetails?.namedCurve)} (use P-256, P-384 or P-521)`);
    }
    const cryptoKey = await webcrypto.subtle.importKey('pkcs8', pkcs8, { name: 'ECDSA', namedCurve: curve.namedCurve }, false, ['sign']);
    return { cryptoKey, algorithm: { name: 'ECDSA', hash: curve.hash } };
  }
  if (key.asymmetricKeyType === 'rsa') {
    const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    const cryptoKey = await webcrypto.subtle.importKey('pkcs8', pkcs8, algorithm, false, ['sign']);
    return { cryptoKey, algorithm };
  }
  throw new CertificateError(`unsupported CA key type ${String(key.asymmetricKeyType)} (use EC or RSA)`);
}

/**
 * A fresh certificate serial number: 16 random bytes (128 bits, above the 64
 * bits CA/Browser Forum BR §7.1 asks for) as lower-case hex. The generator
 * encodes it as a positive DER INTEGER.
 */
export function createSerialNumber(): string {
  return randomBytes(16).toString('hex');
}

/**
 * The subject key identifier of `cert`, or `undefined` if it has none.
 * A leaf's authority key identifier must repeat it (RFC 5280 §4.2.1.1).
 */
export function getSubjectKeyId(cert: x509.X509Certificate): string | undefined {
  return cert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
}
