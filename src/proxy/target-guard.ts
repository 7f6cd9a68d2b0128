/**
 * Refuses targets in loopback, private, link-local, unique-local, multicast,
 * reserved and cloud-metadata ranges (an open egress proxy must not become a
 * way into the operator's own network: SSRF). The check is made twice: before
 * the request (so robots.txt is not fetched either) and on the address the
 * connection actually uses (a DNS answer that changes between the two, "DNS
 * rebinding", is still caught).
 */
import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { LRUCache } from 'lru-cache';
import { buildConnector } from 'undici';

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // RFC 6598 carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, includes 169.254.169.254 (cloud metadata)
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // RFC 1918
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, includes broadcast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local, includes fd00:ec2::254 (AWS metadata)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** Error code of a connection refused because its address is private. */
export const PRIVATE_TARGET_CODE = 'ERR_PRIVATE_TARGET';

/**
 * True when `address` (an IPv4 or IPv6 literal, brackets allowed) is in a
 * range a public egress proxy must not reach. IPv4-mapped and NAT64 IPv6
 * addresses are judged by their embedded IPv4 address. A string that is not
 * an IP address gives false. Never throws.
 */
export function isPrivateAddress(address: string): boolean {
  const ip = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(ip);
  if (family === 4) return blocked.check(ip, 'ipv4');
  if (family !== 6) return false;
  const embedded = embeddedIpv4(ip.toLowerCase());
  return embedded !== undefined ? blocked.check(embedded, 'ipv4') : blocked.check(ip, 'ipv6');
}

/**
 * The IPv4 address inside an IPv4-mapped (`::ffff:7f00:1`, `::ffff:127.0.0.1`)
 * or NAT64 (`64:ff9b::a.b.c.d`) IPv6 address, lower case, no brackets; undefined otherwise.
 */
export function embeddedIpv4(ipv6: string): string | undefined {
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(ipv6);
  if (dotted) return dotted[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(ipv6);
  if (!hex) return undefined;
  const hi = parseInt(hex[1]!, 16);
  const lo = parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

function privateTargetError(hostname: string, address: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`${hostname} resolves to ${address}, a private or loopback address`);
  err.code = PRIVATE_TARGET_CODE;
  return err;
}

/**
 * A `lookup` function for `net.connect` / `tls.connect` (and undici's
 * `connect` options) that fails with code {@link PRIVATE_TARGET_CODE} when a
 * resolved address is private. With `allowPrivate`, plain `dns.lookup`.
 */
export function createGuardedLookup(allowPrivate: boolean): typeof dnsLookup {
  if (allowPrivate) return dnsLookup;
  const guarded = (hostname: string, options: LookupOptions | number | LookupCallback, callback?: LookupCallback): void => {
    const cb = (typeof options === 'function' ? options : callback) as LookupCallback;
    const opts: LookupOptions = typeof options === 'object' ? options : typeof options === 'number' ? { family: options } : {};
    dnsLookup(hostname, { ...opts, all: true }, (err, addresses) => {
      if (err) return cb(err, []);
      const list = addresses as LookupAddress[];
      const bad = list.find((a) => isPrivateAddress(a.address));
      if (bad) return cb(privateTargetError(hostname, bad.address), []);
      if (opts.all) return cb(null, list);
      const first = list[0];
      if (!first) return cb(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      cb(null, first.address, first.family);
    });
  };
  return guarded as unknown as typeof dnsLookup;
}

/** Result of {@link TargetGuard.check}. */
export type TargetCheck = { allowed: true } | { allowed: false; address: string } | { allowed: false; error: string };

/**
 * Pre-request check of a target host: IP literals are judged at once, names
 * are resolved (answers cached briefly, bounded). Unresolvable names are
 * let through: the connection attempt reports them as upstream errors.
 */
export class TargetGuard {
  private readonly answers = new LRUCache<string, TargetCheck>({ max: 10_000, ttl: 30_000 });

  /** @param allowPrivate `upstream.allowPrivateNetworks`: when true every check passes. */
  constructor(private readonly allowPrivate: boolean) {}

  /** Whether `hostname` (a name or an IP literal, brackets allowed) may be contacted. Never rejects. */
  async check(hostname: string): Promise<TargetCheck> {
    if (this.allowPrivate) return { allowed: true };
    const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    if (isIP(bare) !== 0) return isPrivateAddress(bare) ? { allowed: false, address: bare } : { allowed: true };
    const cached = this.answers.get(bare);
    if (cached) return cached;
    const answer = await new Promise<TargetCheck>((resolve) => {
      dnsLookup(bare, { all: true }, (err, addresses) => {
        if (err) return resolve({ allowed: true });
        const bad = addresses.find((a) => isPrivateAddress(a.address));
        resolve(bad ? { allowed: false, address: bad.address } : { allowed: true });
      });
    });
    this.answers.set(bare, answer);
    return answer;
  }
}

/**
 * An undici connector that refuses private addresses, also for IP-literal
 * hosts (where no DNS lookup runs): robots.txt redirects may point anywhere,
 * e.g. at `http://169.254.169.254/`. Names are checked by the guarded lookup on
 * the address actually connected to. With `allowPrivate`, the plain connector.
 * @param options undici connect options (timeout, secureContext, ...).
 */
export function createGuardedConnector(allowPrivate: boolean, options: buildConnector.BuildOptions): buildConnector.connector {
  const connect = buildConnector({ ...options, lookup: createGuardedLookup(allowPrivate) } as buildConnector.BuildOptions);
  if (allowPrivate) return connect;
  return (opts, callback) => {
    const host = opts.hostname.startsWith('[') ? opts.hostname.slice(1, -1) : opts.hostname;
    if (isPrivateAddress(host)) return callback(privateTargetError(opts.hostname, host), null);
    return connect(opts, callback);
  };
}
