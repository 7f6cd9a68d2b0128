/**
 * The target guard: refuses connections to addresses an open egress proxy must
 * not reach (SSRF), and to this process's own listeners (forwarding loops,
 * the admin API). Two checks:
 * - before the request, on the target's host (so robots.txt is not fetched
 *   either): {@link TargetGuard.check};
 * - at connect time, on the address the connection actually uses, with its
 *   port: the guarded lookup ({@link TargetGuard.lookupFor}), the undici
 *   connector ({@link TargetGuard.connector}) and the http(s) agents
 *   ({@link TargetGuard.agentFor}) judge every DNS answer and every IP literal,
 *   so a DNS answer that changes between the two ("DNS rebinding"), a host
 *   alias of loopback or a robots.txt redirect is still caught.
 *
 * Which addresses are public is ipaddr.js's table of special-purpose ranges
 * (IANA IPv4/IPv6 Special-Purpose Address Registries); an IPv6 address that
 * embeds an IPv4 address (IPv4-mapped, IPv4-translated, IPv4-compatible,
 * NAT64, 6to4, Teredo) is judged by the IPv4 address(es) inside.
 */
import http from 'node:http';
import https from 'node:https';
import net, { isIP, type LookupFunction } from 'node:net';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';
import { LRUCache } from 'lru-cache';
import { buildConnector } from 'undici';
import { reachesOwnListener, type OwnListener } from './loop-guard.js';

/** Error code of a connection refused because its address is not public. */
export const PRIVATE_TARGET_CODE = 'ERR_PRIVATE_TARGET';
/** Error code of a connection refused because it would reach one of this process's listeners. */
export const OWN_LISTENER_CODE = 'ERR_OWN_LISTENER';

/** 2000::/3, the IPv6 global unicast space (RFC 4291 §2.4); everything else is reserved or special. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
/** 64:ff9b:1::/48, local-use IPv4/IPv6 translation (RFC 8215): not globally reachable, and its IPv4 position depends on a local prefix length. */
const LOCAL_USE_NAT64 = ipaddr.parseCIDR('64:ff9b:1::/48');

function ipv4Of(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([(hi >> 8) & 0xff, hi & 0xff, (lo >> 8) & 0xff, lo & 0xff]);
}

/**
 * The IPv4 addresses an IPv6 address carries, by its range: IPv4-mapped
 * `::ffff:a.b.c.d` (RFC 4291), IPv4-translated `::ffff:0:a.b.c.d` (RFC 6145),
 * NAT64 `64:ff9b::a.b.c.d` (RFC 6052), IPv4-compatible `::a.b.c.d` (RFC 4291
 * §2.5.5.1, deprecated), 6to4 `2002:AABB:CCDD::` (RFC 3056), Teredo
 * `2001:0:server:...:~client` (RFC 4380: the server, and the client address,
 * stored inverted). Empty when there is none. Never throws.
 */
export function embeddedIpv4Addresses(ip: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = ip.parts;
  switch (ip.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return [ipv4Of(p[6]!, p[7]!)];
    case 'rfc6052':
      return ip.match(LOCAL_USE_NAT64) ? [] : [ipv4Of(p[6]!, p[7]!)];
    case '6to4':
      return [ipv4Of(p[1]!, p[2]!)];
    case 'teredo':
      return [ipv4Of(p[2]!, p[3]!), ipv4Of(~p[6]! & 0xffff, ~p[7]! & 0xffff)];
    case 'unspecified':
    case 'loopback':
      return [];
    default:
      return p.slice(0, 6).every((part) => part === 0) ? [ipv4Of(p[6]!, p[7]!)] : [];
  }
}

/** True when an IPv4 address is globally reachable unicast (no special-purpose range, multicast or broadcast). */
function isPublicIpv4(ip: ipaddr.IPv4): boolean {
  return ip.range() === 'unicast';
}

/** True when an IPv6 address is global unicast, and so is every IPv4 address it carries. */
function isPublicIpv6(ip: ipaddr.IPv6): boolean {
  if (ip.match(LOCAL_USE_NAT64)) return false;
  const embedded = embeddedIpv4Addresses(ip);
  if (embedded.length > 0) return embedded.every(isPublicIpv4);
  return ip.range() === 'unicast' && ip.match(GLOBAL_UNICAST_V6);
}

/**
 * True when `address` (an IPv4 or IPv6 literal in standard notation, brackets
 * and a zone allowed) is not a public address: loopback, private, shared
 * (100.64/10), link-local, unique-local, multicast, broadcast, unspecified,
 * documentation, benchmarking, reserved, or an IPv6 address outside 2000::/3;
 * an IPv6 address that embeds IPv4 addresses is judged by them (see
 * {@link embeddedIpv4Addresses}). A string that is not an IP address (a host
 * name) gives false: names are judged by what they resolve to. Never throws.
 */
export function isPrivateAddress(address: string): boolean {
  const bare = (address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address).replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return false;
  try {
    return family === 4 ? !isPublicIpv4(ipaddr.IPv4.parse(bare)) : !isPublicIpv6(ipaddr.IPv6.parse(bare));
  } catch {
    return true; // Node calls it an address and ipaddr.js cannot read it: refuse rather than guess.
  }
}

/** Why a connection is refused: its stable code and the address it would have used. */
export interface TargetRefusal {
  code: typeof PRIVATE_TARGET_CODE | typeof OWN_LISTENER_CODE;
  address: string;
  port: number;
}

/** Result of {@link TargetGuard.check}. */
export type TargetCheck = { allowed: true } | ({ allowed: false } & TargetRefusal);

/** The verdict of every allowed target (shared: verdicts are never changed once made). */
const ALLOWED: TargetCheck = Object.freeze({ allowed: true });

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * How every message names an address the guard refuses (the IANA special-purpose ranges: loopback,
 * private, CGNAT, link-local, unique-local, metadata, ...): one wording in the 403 body, its
 * detail and the connection errors.
 */
export const NON_PUBLIC_ADDRESS = 'a loopback, private, link-local or other non-public address';

/** The error a refused connection fails with; `code` is the refusal's code. */
export function targetRefusalError(hostname: string, refusal: TargetRefusal): NodeJS.ErrnoException {
  const what = refusal.code === OWN_LISTENER_CODE ? 'a listener of this proxy' : NON_PUBLIC_ADDRESS;
  const via = hostname === refusal.address ? '' : `${hostname} resolves to `;
  const err: NodeJS.ErrnoException = new Error(`${via}${refusal.address} port ${refusal.port} is ${what}`);
  err.code = refusal.code;
  return err;
}

/** Options of {@link TargetGuard}. */
export interface TargetGuardOptions {
  /** `upstream.allowPrivateNetworks`: when true, only this process's own listeners are refused. */
  allowPrivate: boolean;
  /** Resolves names, `dns.lookup`'s signature (tests inject a resolver). @default dns.lookup */
  resolve?: typeof dnsLookup;
}

/**
 * Judges targets and the addresses connections use. Lifecycle: tell it the
 * listeners once they are bound ({@link TargetGuard.setOwnListeners}).
 */
export class TargetGuard {
  readonly #allowPrivate: boolean;
  readonly #resolve: typeof dnsLookup;
  /** DNS answers of the pre-request check by name, briefly (bounded). */
  readonly #answers = new LRUCache<string, string[]>({ max: 10_000, ttl: 30_000 });
  #listeners: readonly OwnListener[] = [];

  constructor(options: TargetGuardOptions) {
    this.#allowPrivate = options.allowPrivate;
    this.#resolve = options.resolve ?? dnsLookup;
  }

  /** The listeners of this process, as bound (every proxy and admin address); replaces the earlier list. */
  setOwnListeners(listeners: readonly OwnListener[]): void {
    this.#listeners = [...listeners];
  }

  /** Why a connection to `address`:`port` (an IP literal) is refused; undefined when it may go ahead. Never throws. */
  refusalFor(address: string, port: number): TargetRefusal | undefined {
    if (reachesOwnListener(address, port, this.#listeners)) return { code: OWN_LISTENER_CODE, address, port };
    if (!this.#allowPrivate && isPrivateAddress(address)) return { code: PRIVATE_TARGET_CODE, address, port };
    return undefined;
  }

  /** True when a name on `port` needs resolving to be judged: some refusal could apply. */
  #needsJudging(port: number): boolean {
    return !this.#allowPrivate || this.#listeners.some((l) => l.port === port);
  }

  /**
   * Pre-request check of a target: `hostname` as in a URL (a name or an IP
   * literal, brackets allowed), `port` the one the connection will use. IP
   * literals are judged at once; names are resolved (answers cached 30 s,
   * bounded) and refused when any answer is. A name that does not resolve is
   * let through: the connection attempt reports it as an upstream error.
   * Never rejects.
   */
  async check(hostname: string, port: number): Promise<TargetCheck> {
    const known = this.checkNow(hostname, port);
    if (known !== undefined) return known;
    const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    const addresses = await new Promise<string[]>((resolve) => {
      this.#resolve(bare, { all: true }, (err, found) => resolve(err ? [] : found.map((a) => a.address)));
    });
    this.#answers.set(bare, addresses);
    return this.#judge(addresses, port);
  }

  /**
   * {@link TargetGuard.check} when it needs no resolution (an IP literal, a port not judged, a
   * name whose answers are cached): the verdict at once; undefined when the name must be
   * resolved first. Never throws.
   */
  checkNow(hostname: string, port: number): TargetCheck | undefined {
    const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    if (isIP(bare) !== 0) return this.#verdict(this.refusalFor(bare, port));
    if (!this.#needsJudging(port)) return ALLOWED;
    const addresses = this.#answers.get(bare);
    return addresses === undefined ? undefined : this.#judge(addresses, port);
  }

  /** The verdict on a name from its addresses: refused when any one is. */
  #judge(addresses: readonly string[], port: number): TargetCheck {
    for (const address of addresses) {
      const refusal = this.refusalFor(address, port);
      if (refusal) return this.#verdict(refusal);
    }
    return ALLOWED;
  }

  #verdict(refusal: TargetRefusal | undefined): TargetCheck {
    return refusal === undefined ? ALLOWED : { allowed: false, ...refusal };
  }

  /**
   * A `lookup` function for `net.connect` / `tls.connect` to `port`: resolves
   * like `dns.lookup` and fails with the refusal's code
   * ({@link PRIVATE_TARGET_CODE}, {@link OWN_LISTENER_CODE}) when any answer
   * is refused. Node does not call it for IP literals: judge those with
   * {@link TargetGuard.refusalFor} first.
   */
  lookupFor(port: number): LookupFunction {
    const guarded = (hostname: string, options: LookupOptions | number | LookupCallback, callback?: LookupCallback): void => {
      const cb = (typeof options === 'function' ? options : callback) as LookupCallback;
      const opts: LookupOptions = typeof options === 'object' ? options : typeof options === 'number' ? { family: options } : {};
      this.#resolve(hostname, { ...opts, all: true }, (err, addresses) => {
        if (err) return cb(err, []);
        for (const a of addresses) {
          const refusal = this.refusalFor(a.address, port);
          if (refusal) return cb(targetRefusalError(hostname, refusal), []);
        }
        if (opts.all) return cb(null, addresses);
        const first = addresses[0];
        if (!first) return cb(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
        cb(null, first.address, first.family);
      });
    };
    return guarded as unknown as LookupFunction;
  }

  /**
   * An undici connector (for an `Agent` or `Pool`'s `connect`) that judges IP
   * literal hosts before connecting and resolves names with the guarded
   * lookup for the connection's port.
   * @param options undici connect options (timeout, secureContext, ...).
   */
  connector(options: buildConnector.BuildOptions): buildConnector.connector {
    // One undici connector per port, so that the lookup knows the port; bounded (a connector holds only a TLS session cache).
    const byPort = new LRUCache<number, buildConnector.connector>({ max: 64 });
    return (opts, callback) => {
      const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
      const host = opts.hostname.startsWith('[') ? opts.hostname.slice(1, -1) : opts.hostname;
      if (isIP(host) !== 0) {
        const refusal = this.refusalFor(host, port);
        if (refusal) return callback(targetRefusalError(host, refusal), null);
      }
      let connect = byPort.get(port);
      if (connect === undefined) {
        connect = buildConnector({ ...options, lookup: this.lookupFor(port) } as buildConnector.BuildOptions);
        byPort.set(port, connect);
      }
      return connect(opts, callback);
    };
  }

  /**
   * Opens a TCP connection to `host`:`port` (tunnel-mode CONNECT) through the
   * guard: an IP literal is judged at once, a name by the guarded lookup. A
   * refused connection emits `error` with the refusal's code, asynchronously,
   * like any failed connect.
   */
  connect(host: string, port: number): net.Socket {
    const bare = host.startsWith('[') ? host.slice(1, -1) : host;
    const refusal = isIP(bare) !== 0 ? this.refusalFor(bare, port) : undefined;
    if (refusal !== undefined) {
      const socket = new net.Socket();
      process.nextTick(() => socket.destroy(targetRefusalError(bare, refusal)));
      return socket;
    }
    return net.connect({ host: bare, port, lookup: this.lookupFor(port) });
  }

  /**
   * An `http.Agent` (or `https.Agent` for `https: true`) whose connections
   * go through the guard, like {@link TargetGuard.connect}.
   * @param options agent options (e.g. `secureContext`).
   */
  agentFor(isHttps: boolean, options: https.AgentOptions = {}): http.Agent {
    const guard = this;
    const Base = isHttps ? https.Agent : http.Agent;
    class GuardedAgent extends (Base as typeof http.Agent) {
      override createConnection(opts: net.NetConnectOpts & { host?: string; port?: number }, callback?: (err: Error | null, socket: net.Socket) => void): net.Socket {
        const port = Number(opts.port) || (isHttps ? 443 : 80);
        const host = (opts.host ?? 'localhost').replace(/^\[|\]$/g, '');
        const refusal = isIP(host) !== 0 ? guard.refusalFor(host, port) : undefined;
        if (refusal !== undefined) {
          const socket = new net.Socket();
          process.nextTick(() => socket.destroy(targetRefusalError(host, refusal)));
          return socket;
        }
        const create = Base.prototype.createConnection as unknown as (this: http.Agent, o: object, cb?: unknown) => net.Socket;
        return create.call(this, { ...opts, lookup: guard.lookupFor(port) }, callback);
      }
    }
    return new GuardedAgent(options);
  }
}
