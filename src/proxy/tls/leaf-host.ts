/**
 * Normalises the host a leaf certificate is issued for. The host comes from
 * the client (TLS SNI or the CONNECT target), so it is checked before it can
 * reach a certificate or a cache key. Extension, not in RFC 9309.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { domainToASCII } from 'node:url';
import { CertificateError } from '../../errors.js';

/** A host ready to be a leaf certificate's subject alternative name. */
export interface LeafHost {
  /** Lower-case A-label DNS name without trailing dot, or an IP address (IPv6 canonical, no brackets). */
  readonly name: string;
  /** `dns` becomes a dNSName SAN, `ip` an iPAddress SAN (RFC 5280 §4.2.1.6). */
  readonly kind: 'dns' | 'ip';
}

/** RFC 1035 §2.3.4: at most 253 characters in text form, 63 per label. */
const MAX_DNS_NAME_LENGTH = 253;
/**
 * Letters, digits, hyphen, and underscore (seen in real host names and
 * accepted by Node's checkServerIdentity). `*` is refused: we never issue
 * wildcards from client input.
 */
const DNS_LABEL = /^[a-z0-9_-]{1,63}$/;

/**
 * Normalises `host`: lower-case, trailing dot stripped, IPv6 brackets
 * stripped and the address canonicalised (`0:0::1` becomes `::1`), Unicode
 * names converted to punycode A-labels.
 * @throws {CertificateError} if the result is neither an IP address nor a
 *   DNS name of LDH(+underscore) labels within RFC 1035 lengths (for example
 *   empty, a wildcard, an IPv6 zone id, or spaces).
 */
export function normalizeLeafHost(host: string): LeafHost {
  let name = host.trim().toLowerCase();
  if (name.startsWith('[') && name.endsWith(']')) {
    name = name.slice(1, -1);
  }
  if (isIPv4(name)) {
    return { name, kind: 'ip' };
  }
  if (name.includes(':')) {
    const canonical = canonicalizeIPv6(name);
    if (canonical === undefined) {
      throw new CertificateError(`not a host name or IP address: ${JSON.stringify(host.slice(0, 300))}`);
    }
    return { name: canonical, kind: 'ip' };
  }
  if (name.endsWith('.')) {
    name = name.slice(0, -1);
  }
  if (/[^\x00-\x7f]/.test(name)) {
    name = domainToASCII(name);
  }
  const isDnsName = name.length > 0 && name.length <= MAX_DNS_NAME_LENGTH && name.split('.').every((label) => DNS_LABEL.test(label));
  if (!isDnsName) {
    throw new CertificateError(`not a host name or IP address: ${JSON.stringify(host.slice(0, 300))}`);
  }
  return { name, kind: 'dns' };
}

/**
 * True when a leaf certificate can be issued for `host` ({@link normalizeLeafHost} accepts it): so a
 * CONNECT to a host no certificate can name (a wildcard, a label over 63 characters) is refused
 * before its 200, not reset after it. Never throws.
 */
export function isLeafHost(host: string): boolean {
  try {
    normalizeLeafHost(host);
    return true;
  } catch {
    return false;
  }
}

/** The WHATWG URL serialisation of an IPv6 address, or undefined if it is not one (zone ids included). */
function canonicalizeIPv6(address: string): string | undefined {
  if (!isIPv6(address)) {
    return undefined;
  }
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
}
