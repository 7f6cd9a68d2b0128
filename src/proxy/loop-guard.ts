/**
 * Forwarding-loop detection: does a target reach one of the proxy's own
 * listeners? Used for absolute-form requests, Upgrade and CONNECT alike.
 */
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { embeddedIpv4 } from './target-guard.js';

/**
 * A target host as a connection would use it: brackets and a trailing dot
 * dropped, lower case, IPv4-mapped IPv6 (`::ffff:7f00:1`) as its IPv4 address.
 */
function connectedHost(hostname: string): string {
  const host = hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  return embeddedIpv4(host) ?? host;
}

function isUnspecifiedHost(host: string): boolean {
  return host === '0.0.0.0' || host === '::';
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

/** Addresses of this machine's interfaces (lower case). */
function interfaceAddresses(): Set<string> {
  const found = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) found.add(a.address.toLowerCase());
  return found;
}

/**
 * True when a connection to `host` (see {@link connectedHost}) on the bound
 * port would reach a listener bound to `bound`. `0.0.0.0` and `::` as a
 * target reach this machine; a listener on `0.0.0.0`/`::` is reached through
 * loopback and every interface address, not through other hosts on that port.
 */
function reachesListener(host: string, bound: string): boolean {
  if (host === bound || isUnspecifiedHost(host)) return true;
  if (isUnspecifiedHost(bound)) return isLoopbackHost(host) || interfaceAddresses().has(host);
  return host === 'localhost' && isLoopbackHost(bound);
}

/**
 * True when a connection to `hostname`:`port` would reach one of the proxy's
 * own listeners (`own`, as bound): a forwarding loop. `hostname` as in a URL
 * (brackets allowed). Handles `localhost`, `0.0.0.0`/`::` as a target,
 * IPv4-mapped IPv6, a trailing dot, and listeners on `0.0.0.0`/`::` (reached
 * through loopback and this machine's interface addresses only). Names that
 * resolve to this machine through DNS are not detected; such a request comes
 * back in origin form and gets 400, so the loop ends there. Never throws.
 */
export function targetsOwnListener(hostname: string, port: number, own: ReadonlyArray<{ host: string; port: number }>): boolean {
  const host = connectedHost(hostname);
  return own.some((a) => a.port === port && reachesListener(host, a.host.toLowerCase()));
}

