/**
 * The origin of a CONNECT tunnel, and how it binds the requests inside it.
 * A CONNECT names one `host:port`; every request inside the tunnel (plain
 * requests and Upgrades alike, over TLS or plain HTTP) must be for that origin
 * and nothing else. Pure: no I/O; never throws.
 */
import { redactUserInfo } from '../audit/redact.js';
import { parseProxyTarget } from './proxy-target.js';
import { withQueryAsSent } from './query-as-sent.js';
import { hostKeyOf, originOf } from './target-origin.js';
import type { TargetUrl } from './canonical-target.js';

/** The target of a CONNECT request (RFC 9112 §3.2.3), normalised. */
export interface TunnelTarget {
  /** `host:port`: host lower-case, IDN in punycode, no trailing dot, IPv6 in brackets. */
  authority: string;
  /** As in a URL: lower-case, no trailing dot, IPv6 in brackets. */
  hostname: string;
  port: number;
}

/** What the client speaks inside the tunnel: TLS (intercepted as `https`) or plain HTTP. */
export type TunnelScheme = 'https' | 'http';

/** Drops the one trailing dot of a fully qualified name: `example.com.` is `example.com` (one origin). */
function withoutTrailingDot(hostname: string): string {
  return hostname.endsWith('.') && hostname.length > 1 ? hostname.slice(0, -1) : hostname;
}

/** `host:port` (`[v6]:port`) of a URL's host, with `defaultPort` when the URL names none. */
function authorityOf(url: URL, defaultPort: number): string {
  return `${withoutTrailingDot(url.hostname)}:${url.port === '' ? defaultPort : url.port}`;
}

/**
 * Parses a CONNECT request target (authority-form, RFC 9112 §3.2.3): `host:port`,
 * port required. Never throws.
 * @returns the target, or a reason string for a 400.
 */
export function parseConnectTarget(raw: string | undefined): TunnelTarget | string {
  if (!raw || raw.includes('/') || raw.includes('@') || raw.includes('?') || raw.includes('#')) {
    return `CONNECT needs host:port, got "${redactUserInfo((raw ?? '').slice(0, 100))}"`;
  }
  let url: URL;
  try {
    url = new URL(`https://${raw}`);
  } catch {
    return `"${raw.slice(0, 100)}" is not a valid host:port`;
  }
  // The URL parser elides :443 for https; any other way of writing no port is refused.
  const port = url.port === '' ? (/:0*443$/.test(raw) ? 443 : NaN) : Number(url.port);
  if (!Number.isInteger(port) || port <= 0) return `CONNECT target "${raw.slice(0, 100)}" has no port`;
  const hostname = withoutTrailingDot(url.hostname);
  if (hostname.length === 0 || hostname === '.') return `CONNECT target "${raw.slice(0, 100)}" has no host`;
  return { authority: `${hostname}:${port}`, hostname, port };
}

/** The origin `scheme://host[:port]` of a tunnel read as `scheme` (default port elided, as `URL.origin` writes it). */
export function tunnelOrigin(target: TunnelTarget, scheme: TunnelScheme): string {
  const defaultPort = scheme === 'https' ? 443 : 80;
  return target.port === defaultPort ? `${scheme}://${target.hostname}` : `${scheme}://${target.hostname}:${target.port}`;
}

/**
 * The scheme a relayed tunnel (`https.mode: tunnel`) is decided as, from its port alone: the
 * proxy answers before the client's first byte, so it cannot tell TLS from plain HTTP as an
 * intercepted tunnel does. Port 80 is `http` (a client that tunnels its `http://` URLs: undici's
 * `ProxyAgent`, `curl -p`; TLS on port 80 is not a thing clients do); any other port is `https`.
 * Read as `https`, a plain-HTTP origin on port 80 failed its robots.txt fetch
 * (`ERR_SSL_WRONG_VERSION_NUMBER`) and every such CONNECT was refused 503 robots-unreachable.
 * Pure.
 */
export function relayedTunnelScheme(target: Pick<TunnelTarget, 'port'>): TunnelScheme {
  return target.port === 80 ? 'http' : 'https';
}

/** Why a request inside a tunnel is not served: `bad-request` (400) or `misdirected` (421). */
export interface TunnelRefusal {
  reason: 'bad-request' | 'misdirected';
  detail: string;
}

/** True when {@link resolveTunnelRequest} refused the request (a refusal has a `reason`; the URL's parts have none). */
export function isTunnelRefusal(bound: TargetUrl | TunnelRefusal): bound is TunnelRefusal {
  return 'reason' in bound;
}

/**
 * The absolute URL of a request received inside a tunnel, bound to the
 * tunnel's origin:
 * - origin-form (`/path`) is a path on the tunnel's origin (`//x` stays a
 *   path, not a host), and a `Host` header must name the tunnel's `host:port`
 *   (default port of `scheme` filled in, trailing dot ignored);
 * - absolute-form must be on the tunnel's origin, scheme included; its
 *   authority replaces `Host` (RFC 9112 §3.2.2);
 * - both compare hosts as the proxy keys them ({@link hostKeyOf}): an IPv4-mapped
 *   IPv6 host is its IPv4 address, so `Host: 127.0.0.1:P` in a tunnel to
 *   `[::ffff:127.0.0.1]:P` (and the other way round) is the same origin, not 421;
 * - anything else (authority-form, `*`, unparsable) is a bad request.
 * Never throws.
 * @returns the URL's parts (a `URL`, or canonical-target.ts's reading), or the refusal (400 for what
 *   cannot be parsed, 421 for another origin): tell them apart with {@link isTunnelRefusal}.
 */
export function resolveTunnelRequest(
  target: TunnelTarget,
  scheme: TunnelScheme,
  rawTarget: string | undefined,
  hostHeader: string | undefined,
): TargetUrl | TunnelRefusal {
  const origin = tunnelOrigin(target, scheme);
  const raw = rawTarget ?? '';
  if (raw.startsWith('/')) {
    if (hostHeader !== undefined) {
      const host = parseHostHeader(hostHeader, scheme);
      if (host === undefined) return { reason: 'bad-request', detail: `the Host header "${hostHeader.slice(0, 200)}" is not a valid host[:port]` };
      if (hostKeyOf(host) !== hostKeyOf(target.authority)) return { reason: 'misdirected', detail: `Host "${hostHeader.slice(0, 200)}" is not the tunnel's target ${target.authority}` };
    }
    try {
      // `origin + raw`, not `new URL(raw, origin)`: a path such as `//x/y` is a path here, not a host.
      return withQueryAsSent(new URL(origin + raw), raw);
    } catch {
      return { reason: 'bad-request', detail: `the request target "${raw.slice(0, 200)}" is not a valid path` };
    }
  }
  const url = parseProxyTarget(raw);
  if (typeof url === 'string') return { reason: 'bad-request', detail: url };
  if (originOf(url) !== keyedOrigin(target, scheme)) return { reason: 'misdirected', detail: `request target ${raw.slice(0, 200)} is not on the tunnel's origin ${origin}` };
  return url;
}

/** {@link tunnelOrigin} with its host as {@link hostKeyOf} keys it, as {@link originOf} writes a URL's origin. */
function keyedOrigin(target: TunnelTarget, scheme: TunnelScheme): string {
  return tunnelOrigin({ ...target, hostname: hostKeyOf(target.hostname) }, scheme);
}

/**
 * A `Host` header value as `host:port` (see {@link authorityOf}), the default
 * port of `scheme` filled in; undefined when it is not a valid `host[:port]`.
 */
function parseHostHeader(host: string, scheme: TunnelScheme): string | undefined {
  if (host.length === 0 || /[/?#@\\\s]/.test(host)) return undefined;
  try {
    // Parsed with the tunnel's own scheme, so only that scheme's default port is elided (and filled in again).
    return authorityOf(new URL(`${scheme}://${host}`), scheme === 'https' ? 443 : 80);
  } catch {
    return undefined;
  }
}
