/**
 * `access.clients`: the CIDR ranges whose clients may use the proxy, each optionally naming the
 * identity of its clients. Pure (no I/O); ipaddr.js parses and matches. Extension, not in RFC 9309.
 */
import ipaddr from 'ipaddr.js';
import { LRUCache } from 'lru-cache';
import { quietGet } from './lru-get.js';

/** One allowed range as configured (normalised), with the identity its clients get, if any. */
export interface ClientRangeEntry {
  /** CIDR, normalised by ipaddr.js (`10.1.0.0/16`, `::1/128`); an IPv4-mapped IPv6 range is written as its IPv4 range. */
  readonly range: string;
  /** The identity of clients in this range (when they give no proxy credentials); absent: anonymous. */
  readonly identity?: string;
  /** True: the range's clients are always its `identity`; valid credentials for another identity are refused (needs `identity`). */
  readonly binding?: boolean;
}

/** What {@link ClientRanges.match} found for an address. */
export type RangeMatch = { isAllowed: true; range: string; identity: string | undefined; isBinding: boolean } | { isAllowed: false };

/** A parsed range: the address family, the network, the prefix length. */
type ParsedRange = { entry: ClientRangeEntry; cidr: [ipaddr.IPv4 | ipaddr.IPv6, number] };

/**
 * Parses a CIDR (`10.0.0.0/8`, `::1/128`) or a bare address (a /32 or /128). An IPv4-mapped IPv6
 * range (`::ffff:10.0.0.0/104`) becomes its IPv4 range, since clients' mapped addresses are
 * matched as IPv4. Pure; never throws.
 * @returns the normalised CIDR, or the reason it does not parse.
 */
export function normaliseClientRange(text: string): { ok: true; range: string } | { ok: false; reason: string } {
  const trimmed = text.trim();
  const written = trimmed.split('/')[0] ?? '';
  // ipaddr.js also reads "10.0.0", hex and octal ("010.0.0.1" is 8.0.0.1): only dotted decimal is meant.
  if (!written.includes(':') && !ipaddr.IPv4.isValidFourPartDecimal(written)) {
    return { ok: false, reason: `is not a CIDR range or an IP address (e.g. "10.1.0.0/16", "192.0.2.7", "2001:db8::/32"): ${JSON.stringify(text)}` };
  }
  let cidr: [ipaddr.IPv4 | ipaddr.IPv6, number];
  try {
    cidr = trimmed.includes('/') ? ipaddr.parseCIDR(trimmed) : [ipaddr.parse(trimmed), ipaddr.parse(trimmed).kind() === 'ipv4' ? 32 : 128];
  } catch {
    return { ok: false, reason: `is not a CIDR range or an IP address (e.g. "10.1.0.0/16", "192.0.2.7", "2001:db8::/32"): ${JSON.stringify(text)}` };
  }
  let [address, bits] = cidr;
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    address = (address as ipaddr.IPv6).toIPv4Address();
    bits -= 96;
  }
  // The network address, so that 10.1.2.3/16 and 10.1.0.0/16 read the same.
  const network = address.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${bits}`) : ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/${bits}`);
  return { ok: true, range: `${network.toString()}/${bits}` };
}

/** The default `access.clients`: loopback only. */
export const DEFAULT_CLIENT_RANGES: readonly ClientRangeEntry[] = [{ range: '127.0.0.0/8' }, { range: '::1/128' }];

/**
 * The allowed ranges, matched against client addresses. The most specific range that contains
 * the address applies (longest prefix; the first listed on a tie), so a named /24 inside an
 * anonymous /8 names its clients. An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, how a
 * dual-stack listener sees IPv4 clients) is matched as its IPv4 address. Results are cached
 * per address (bounded).
 */
export class ClientRanges {
  readonly #ranges: ParsedRange[];
  readonly #cache = new LRUCache<string, RangeMatch>({ max: 4096 });

  /**
   * @param entries normalised ranges (see {@link normaliseClientRange}).
   * @throws Error for a range that does not parse (the config schema has validated them).
   */
  constructor(entries: readonly ClientRangeEntry[]) {
    this.#ranges = entries.map((entry) => ({ entry, cidr: ipaddr.parseCIDR(entry.range) }));
  }

  /** The range `address` is allowed by, or `isAllowed: false` (also for an address that does not parse, e.g. `''`). Never throws. */
  match(address: string): RangeMatch {
    const cached = this.#cache.get(address, quietGet<string, RangeMatch>());
    if (cached !== undefined) return cached;
    const result = this.#find(address);
    this.#cache.set(address, result);
    return result;
  }

  #find(address: string): RangeMatch {
    let parsed: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      // process(): an IPv4-mapped IPv6 address becomes the IPv4 address.
      parsed = ipaddr.process(address.replace(/%.*$/, ''));
    } catch {
      return { isAllowed: false };
    }
    let best: ParsedRange | undefined;
    for (const range of this.#ranges) {
      if (range.cidr[0].kind() !== parsed.kind()) continue;
      if (!parsed.match(range.cidr)) continue;
      if (best === undefined || range.cidr[1] > best.cidr[1]) best = range;
    }
    return best === undefined ? { isAllowed: false } : { isAllowed: true, range: best.entry.range, identity: best.entry.identity, isBinding: best.entry.binding === true };
  }
}
