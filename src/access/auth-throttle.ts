/**
 * The budget of failed proxy credential checks per client address: at most
 * `access.maxAuthFailures` failures in `access.authFailureWindow` (a fixed window from the
 * address's first failure); beyond it the address is answered 429 `proxy-auth-throttled`
 * until the window ends, without any bcrypt work. So password guessing runs at a few tries a
 * minute per address, and a guesser cannot spend the proxy's CPU on bcrypt for long; other
 * addresses keep their own budget. An IPv6 client is counted per /64 (one host usually holds
 * a whole /64). A check in flight counts against the budget until it settles, so concurrent
 * guesses from one address get no more checks than sequential ones. Bounded: the addresses
 * with the most recent failures are kept (LRU); checks in flight are bounded by open connections.
 *
 * IPv6 and /64: a host given a /64 (SLAAC, privacy addresses) can send from any of its 2^64
 * addresses, so counting per address would give it unlimited budgets; the price is that every
 * host of one /64 (a whole LAN, usually) shares one budget, and a guesser there throttles its
 * neighbours' new logins. Each /64 (and each IPv4 address, IPv4-mapped ones included) has a
 * budget of its own that no other one can spend. What softens the sharing: the throttle also
 * remembers, per exact address, the users whose credentials were verified from it
 * ({@link AuthThrottle.recordVerified}; a wrong password for the user from there forgets it), and
 * the caller admits such remembered credentials while the /64 is throttled (see access-control.ts).
 * Clock given by the caller (`nowMs`). Extension, not in RFC 9309.
 */
import { isIPv4 } from 'node:net';
import ipaddr from 'ipaddr.js';
import { LRUCache } from 'lru-cache';
import { quietGet } from './lru-get.js';

/** Options of {@link AuthThrottle}. */
export interface AuthThrottleOptions {
  /** Failures allowed per address per window, at least 1. */
  maxFailures: number;
  /** Window length, ms. */
  windowMs: number;
  /** Addresses tracked at once (least recently failed dropped first), and as many for verified credentials. @default 10000 */
  maxAddresses?: number;
}

/** Users remembered per exact address by {@link AuthThrottle.recordVerified} (NAT: several users share one address); the oldest is dropped. */
const MAX_VERIFIED_PER_ADDRESS = 16;

/** The key an address is counted under: the IPv4 address, or the IPv6 /64; the text as is when it does not parse. Pure. */
export function throttleKeyOf(address: string): string {
  // A socket's IPv4 address is already its key (dotted decimal, as the kernel gives it): no parse per check.
  if (isIPv4(address)) return address;
  try {
    const parsed = ipaddr.process(address.replace(/%.*$/, ''));
    if (parsed.kind() === 'ipv4') return parsed.toString();
    const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
    return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
  } catch {
    return address;
  }
}

/** Failed credential checks per client address (lifecycle: none). */
export class AuthThrottle {
  #maxFailures: number;
  #windowMs: number;
  readonly #failures: LRUCache<string, { count: number; windowStartMs: number }>;
  /** Credential checks begun and not yet settled, per key (deleted at zero). */
  readonly #inFlight = new Map<string, number>();
  /** Per exact client address (not its /64): the users whose credentials were verified from it, with the hash they matched. */
  readonly #verified: LRUCache<string, Map<string, string>>;

  constructor(options: AuthThrottleOptions) {
    this.#maxFailures = options.maxFailures;
    this.#windowMs = options.windowMs;
    this.#failures = new LRUCache({ max: options.maxAddresses ?? 10_000 });
    this.#verified = new LRUCache({ max: options.maxAddresses ?? 10_000 });
  }

  /**
   * Remembers that `credential` (a user and the hash its password matched) was verified from
   * exactly `address`. Bounded (LRU of addresses, {@link MAX_VERIFIED_PER_ADDRESS} users each). Never throws.
   */
  recordVerified(address: string, credential: { user: string; hash: string }): void {
    let users = this.#verified.get(address, quietGet<string, Map<string, string>>());
    if (users === undefined) {
      users = new Map();
      this.#verified.set(address, users);
    } else if (users.get(credential.user) === credential.hash) {
      return;
    } else if (!users.has(credential.user) && users.size >= MAX_VERIFIED_PER_ADDRESS) {
      users.delete(users.keys().next().value as string);
    }
    users.set(credential.user, credential.hash);
  }

  /**
   * Forgets that `user` was verified from exactly `address`: called when a wrong password for
   * `user` comes from it, so that a guesser sharing the address (a NAT) learns at most one
   * right-or-wrong answer from the throttled path per window. Never throws.
   */
  forgetVerified(address: string, user: string): void {
    this.#verified.peek(address)?.delete(user);
  }

  /** True when `credential` was verified from exactly `address` (see {@link AuthThrottle.recordVerified}). Never throws. */
  hasVerified(address: string, credential: { user: string; hash: string }): boolean {
    return this.#verified.peek(address)?.get(credential.user) === credential.hash;
  }

  /** Applies reloaded limits; failures already counted stay. */
  setLimits(limits: { maxFailures: number; windowMs: number }): void {
    this.#maxFailures = limits.maxFailures;
    this.#windowMs = limits.windowMs;
  }

  /**
   * How long `address` must wait before its credentials are checked again, ms; undefined
   * when it still has budget. Never throws.
   */
  retryAfterMs(address: string, nowMs: number): number | undefined {
    const record = this.#failures.peek(throttleKeyOf(address));
    if (record === undefined) return undefined;
    const endsAtMs = record.windowStartMs + this.#windowMs;
    if (nowMs >= endsAtMs) return undefined;
    return record.count >= this.#maxFailures ? endsAtMs - nowMs : undefined;
  }

  /**
   * Starts a credential check for `address` when it has budget left, counting the check as in
   * flight until {@link AuthThrottle.settle}: failures recorded plus checks in flight may not
   * exceed `maxFailures`. Never throws.
   * @returns undefined when the check may run (call `settle` once it is done), else how long to wait, ms.
   */
  begin(address: string, nowMs: number): number | undefined {
    const key = throttleKeyOf(address);
    const record = this.#failures.peek(key);
    const isCurrent = record !== undefined && nowMs < record.windowStartMs + this.#windowMs;
    const inFlight = this.#inFlight.get(key) ?? 0;
    if ((isCurrent ? record.count : 0) + inFlight >= this.#maxFailures) return isCurrent ? record.windowStartMs + this.#windowMs - nowMs : this.#windowMs;
    this.#inFlight.set(key, inFlight + 1);
    return undefined;
  }

  /**
   * True when {@link AuthThrottle.begin} would let a check for `address` run now (failures in
   * the current window plus checks in flight below `maxFailures`), without starting one: for
   * credentials answered from the verified cache, which need no check (and count nothing) as
   * long as the address could have one; a throttled address goes through `begin`. Never throws.
   */
  hasBudget(address: string, nowMs: number): boolean {
    // No failure tracked and no check in flight anywhere: every address has its whole budget (no key to compute).
    if (this.#failures.size === 0 && this.#inFlight.size === 0) return true;
    const key = throttleKeyOf(address);
    const record = this.#failures.peek(key);
    const failures = record !== undefined && nowMs < record.windowStartMs + this.#windowMs ? record.count : 0;
    return failures + (this.#inFlight.get(key) ?? 0) < this.#maxFailures;
  }

  /** Ends a check begun with {@link AuthThrottle.begin}; a failed one is recorded. Never throws. */
  settle(address: string, nowMs: number, isFailure: boolean): void {
    const key = throttleKeyOf(address);
    const inFlight = (this.#inFlight.get(key) ?? 1) - 1;
    if (inFlight <= 0) this.#inFlight.delete(key);
    else this.#inFlight.set(key, inFlight);
    if (isFailure) this.recordFailure(address, nowMs);
  }

  /** Counts one failed check for `address`; a window that has ended starts again. Never throws. */
  recordFailure(address: string, nowMs: number): void {
    const key = throttleKeyOf(address);
    const record = this.#failures.get(key);
    if (record === undefined || nowMs >= record.windowStartMs + this.#windowMs) this.#failures.set(key, { count: 1, windowStartMs: nowMs });
    else record.count += 1;
  }

  /** Addresses with failures tracked now. */
  get size(): number {
    return this.#failures.size;
  }
}
