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
 * Clock given by the caller (`nowMs`). Extension, not in RFC 9309.
 */
import ipaddr from 'ipaddr.js';
import { LRUCache } from 'lru-cache';

/** Options of {@link AuthThrottle}. */
export interface AuthThrottleOptions {
  /** Failures allowed per address per window, at least 1. */
  maxFailures: number;
  /** Window length, ms. */
  windowMs: number;
  /** Addresses tracked at once (least recently failed dropped first). @default 10000 */
  maxAddresses?: number;
}

/** The key an address is counted under: the IPv4 address, or the IPv6 /64; the text as is when it does not parse. Pure. */
export function throttleKeyOf(address: string): string {
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

  constructor(options: AuthThrottleOptions) {
    this.#maxFailures = options.maxFailures;
    this.#windowMs = options.windowMs;
    this.#failures = new LRUCache({ max: options.maxAddresses ?? 10_000 });
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
