/**
 * Forwarding-loop detection: does a connection to an address and port reach
 * one of this process's own listeners (the proxy, the admin API)? The target
 * guard asks it for every address a connection is about to use (requests,
 * robots.txt fetches and their redirects, Upgrades, tunnel-mode CONNECTs), so
 * a host alias of loopback, a DNS answer or a redirect cannot reach them.
 */
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';

/** A listener of this process, as bound (`server.address()`: an IP address and a port). */
export interface OwnListener {
  host: string;
  port: number;
}

/**
 * `address` (an IP literal, brackets and a zone allowed) in one spelling:
 * lower case, IPv4-mapped IPv6 (`::ffff:7f00:1`) as its IPv4 address, no zone.
 * @returns undefined when `address` is not an IP literal.
 */
export function canonicalAddress(address: string): string | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (isIP(bare) === 0) return undefined;
  try {
    return ipaddr.process(bare.replace(/%.*$/, '')).toString();
  } catch {
    return undefined;
  }
}

function isUnspecified(canonical: string): boolean {
  return canonical === '0.0.0.0' || canonical === '::';
}

/** True when a canonical address is this machine's: loopback, unspecified, or an interface's address. */
function isLocalAddress(canonical: string): boolean {
  if (isUnspecified(canonical) || canonical === '::1' || (isIP(canonical) === 4 && canonical.startsWith('127.'))) return true;
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (canonicalAddress(a.address) === canonical) return true;
  }
  return false;
}

/**
 * True when a connection to `address`:`port` reaches `listener`. `address` is
 * the IP a connection uses (after DNS). A listener on `0.0.0.0` or `::` is
 * reached through every local address (all of 127/8, `::1` and each
 * interface's); a connection to `0.0.0.0` or `::` reaches this machine, so
 * every listener on that port. Never throws.
 */
export function reachesListener(address: string, port: number, listener: OwnListener): boolean {
  if (port !== listener.port) return false;
  const target = canonicalAddress(address);
  const bound = canonicalAddress(listener.host);
  if (target === undefined || bound === undefined) return false;
  if (target === bound || isUnspecified(target)) return true;
  // A listener on 0.0.0.0 takes no IPv6 connection, but judging it like `::` costs only a refusal of the
  // same port on another local socket, and keeps one rule for both.
  return isUnspecified(bound) && isLocalAddress(target);
}

/** True when a connection to `address`:`port` reaches any of `listeners`. Never throws. */
export function reachesOwnListener(address: string, port: number, listeners: readonly OwnListener[]): boolean {
  // A loop, not `some` with a closure: the target guard asks this for every request's target (issue 11).
  for (const listener of listeners) if (reachesListener(address, port, listener)) return true;
  return false;
}

/** True when one of `listeners` is on `port` (nothing else can be reached on another port). */
function isListenedPort(port: number, listeners: readonly OwnListener[]): boolean {
  for (const listener of listeners) if (listener.port === port) return true;
  return false;
}

/**
 * A quick check by the target's host as written, before any DNS: true when
 * `hostname` (as in a URL: brackets, a trailing dot and any case allowed) is
 * an IP literal, `localhost` or a `*.localhost` name (RFC 6761 §6.3: always
 * loopback) that reaches one of `own` on `port`. Other names are judged by the
 * target guard on the addresses they resolve to. Never throws.
 */
export function targetsOwnListener(hostname: string, port: number, own: readonly OwnListener[]): boolean {
  // Nearly every request's port is none of ours: answered before the host is spelled out (issue 11).
  if (!isListenedPort(port, own)) return false;
  const host = hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return ['127.0.0.1', '::1'].some((a) => reachesOwnListener(a, port, own));
  return reachesOwnListener(host, port, own);
}
