/**
 * Checks `Proxy-Authorization: Basic` credentials (RFC 7617) against the credentials file's
 * bcrypt hashes. bcrypt is slow on purpose (hundreds of ms of CPU at cost 10), so a verified
 * credential is remembered: the cache is keyed by a salted SHA-256 of the header value as sent
 * (see {@link CredentialVerifier.cacheKeyOf}), and holds the user and the hash it matched, never
 * the password. A credential seen again costs one SHA-256 and a map lookup; a reloaded file that
 * changes or removes the user's hash invalidates it. Concurrent checks of one credential share
 * one bcrypt run. Extension, not in RFC 9309.
 */
import { hash as sha, randomBytes } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { LRUCache } from 'lru-cache';
import type { CredentialEntry, Credentials } from './credentials-file.js';
import { quietGet } from './lru-get.js';

/** Longest `Proxy-Authorization` value read, characters; a longer one is malformed. */
export const MAX_AUTHORIZATION_CHARS = 4096;

/**
 * Random bytes of the cache keys' salt: 12, written as 16 base64 characters. SHA-256 hashes its input
 * in 64-byte blocks, the last one holding 9 bytes of padding and length, so an input of up to 55 bytes
 * costs one block: a 16-character salt leaves 39 for the header, which holds `Basic ` and the base64 of
 * a `user:password` of up to 24 bytes; the 44-character salt before (32 bytes) made every header two
 * blocks (issue 8: ~9,300 → ~6,700 instructions per key, bench/PROFILE.md). 96 bits are plenty for a
 * salt, whose job is only that keys computed elsewhere (precomputed tables) are useless here.
 */
const SALT_BYTES = 12;

/** bcrypt cost of the decoy hash when the file has no user (the passwd helper's default). */
const DEFAULT_DECOY_COST = 10;

/** The bcrypt cost most users of `users` have (the lowest on a tie), or the default for an empty file. Pure. */
function commonCostOf(users: Credentials): number {
  const counts = new Map<number, number>();
  for (const { hash } of users.values()) {
    const cost = Number(hash.slice(4, 6));
    counts.set(cost, (counts.get(cost) ?? 0) + 1);
  }
  let best = DEFAULT_DECOY_COST;
  let bestCount = 0;
  for (const [cost, count] of counts) if (count > bestCount || (count === bestCount && cost < best)) [best, bestCount] = [cost, count];
  return best;
}

/**
 * Why credentials were not accepted: `busy` means they were not checked at all, because
 * {@link CredentialVerifierOptions.maxChecks} bcrypt runs were already in flight.
 */
export type VerificationFailure = 'malformed' | 'wrong-credentials' | 'busy';

/** The outcome of {@link CredentialVerifier.verify}. */
export type Verification = { ok: true; entry: CredentialEntry } | { ok: false; failure: VerificationFailure; user?: string };

/** Basic credentials decoded from a header value. */
interface BasicCredentials {
  user: string;
  password: string;
  /** The base64 token as sent. */
  token: string;
}

/** The base64 token of a `Basic` value (RFC 7617 §2; the scheme is case-insensitive), or undefined. Pure. */
function basicTokenOf(header: string): string | undefined {
  if (header.length > MAX_AUTHORIZATION_CHARS) return undefined;
  return /^\s*basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(header)?.[1];
}

/**
 * Strict UTF-8 (throws on invalid bytes; a BOM is kept as a character): decoded leniently, every
 * invalid byte would become U+FFFD, and `caf\xff` would pass for a password stored as `caf\uFFFD`.
 */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** `user:password` from a Basic token (UTF-8, as the challenge's `charset` says: RFC 7617 §2.1; the password in NFC), or undefined without a user and a colon or for bytes that are not UTF-8. Pure. */
function decodeBasicToken(token: string): BasicCredentials | undefined {
  let decoded: string;
  try {
    decoded = UTF8.decode(Buffer.from(token, 'base64'));
  } catch {
    return undefined;
  }
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  // Unicode Normalization Form C (RFC 7617 §2.1: with charset UTF-8 the server expects NFC; RFC 8265's
  // OpaqueString profile): a client that sends `é` decomposed (e + U+0301, macOS file names, some
  // input methods) gives the same password as one that sends U+00E9, and the passwd helper hashes NFC.
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1).normalize('NFC'), token };
}

/**
 * Decodes `Basic <base64(user:password)>` (RFC 7617 §2; the scheme is case-insensitive).
 * Pure; never throws.
 * @returns the credentials, or undefined for another scheme or a malformed value.
 */
export function parseBasicCredentials(header: string): BasicCredentials | undefined {
  const token = basicTokenOf(header);
  return token === undefined ? undefined : decodeBasicToken(token);
}

/** A verified credential as the cache remembers it: the user and the bcrypt hash the password matched (never the password). */
interface VerifiedCredential {
  user: string;
  hash: string;
}

/** Options of {@link CredentialVerifier}. */
export interface CredentialVerifierOptions {
  /** Verified credentials remembered (least recently used dropped first). @default 10000 */
  cacheEntries?: number;
  /**
   * bcrypt runs in flight at once, across all clients (`access.maxCredentialChecks`): each costs
   * tens of ms of CPU on the event loop (bcryptjs), so without a bound many addresses, each within
   * its own failure budget, could keep the proxy busy checking guesses. Beyond it a new check is
   * not run (`busy`); credentials verified before never need a run. @default 8
   */
  maxChecks?: number;
}

/** Verifies Basic credentials against a credentials file, with a bounded cache (lifecycle: none; swap the file with {@link CredentialVerifier.setCredentials}). */
export class CredentialVerifier {
  #users: Credentials;
  /**
   * Per-process random salt of the cache keys (see {@link CredentialVerifier.cacheKeyOf}): 16 base64
   * characters (96 random bits, one byte each in UTF-8), so the salt and a typical header fit in one
   * SHA-256 block.
   */
  readonly #salt = randomBytes(SALT_BYTES).toString('base64');
  readonly #verified: LRUCache<string, VerifiedCredential>;
  readonly #pending = new Map<string, Promise<boolean>>();
  /** Decoy hashes by bcrypt cost, made on first use (see {@link CredentialVerifier.decoyHash}). */
  readonly #decoys = new Map<number, Promise<string>>();
  #decoyCost: number;
  #bcryptRuns = 0;
  #maxChecks: number;

  constructor(users: Credentials, options: CredentialVerifierOptions = {}) {
    this.#users = users;
    this.#decoyCost = commonCostOf(users);
    this.#verified = new LRUCache({ max: options.cacheEntries ?? 10_000 });
    this.#maxChecks = options.maxChecks ?? 8;
  }

  /** Sets {@link CredentialVerifierOptions.maxChecks} (a reload); runs already in flight finish. */
  setMaxChecks(maxChecks: number): void {
    this.#maxChecks = maxChecks;
  }

  /** Swaps in a reloaded credentials file; remembered credentials stay valid only while their user's hash is unchanged. */
  setCredentials(users: Credentials): void {
    this.#users = users;
    this.#decoyCost = commonCostOf(users);
  }

  /**
   * The hash an unknown user's password is checked against: bcrypt of a random password nobody
   * knows, at the cost most of the file's users have (htpasswd -B writes cost 5, the passwd helper
   * 10), so a check for an unknown user takes as long as for a known one (no user enumeration
   * by timing). Made once per cost. Never rejects.
   */
  decoyHash(): Promise<string> {
    const cost = this.#decoyCost;
    let decoy = this.#decoys.get(cost);
    if (decoy === undefined) {
      decoy = bcrypt.hash(randomBytes(24).toString('base64'), cost);
      this.#decoys.set(cost, decoy);
    }
    return decoy;
  }

  /** bcrypt comparisons run since start (cache misses), for tests and figures. */
  get bcryptRuns(): number {
    return this.#bcryptRuns;
  }

  /** True when some user of the file authenticates as identity `name`. O(users); never throws. */
  namesIdentity(name: string): boolean {
    for (const entry of this.#users.values()) if (entry.identity === name) return true;
    return false;
  }

  /** True while `entry` (from an earlier verification) is still in the file with the same hash, e.g. for the requests of a tunnel. */
  isCurrent(entry: Pick<CredentialEntry, 'user' | 'hash'>): boolean {
    return this.currentEntry(entry) !== undefined;
  }

  /** The file's entry for `entry`'s user while it still has the same hash (with the identity the file names now), else undefined. Never throws. */
  currentEntry(entry: Pick<CredentialEntry, 'user' | 'hash'>): CredentialEntry | undefined {
    const current = this.#users.get(entry.user);
    return current?.hash === entry.hash ? current : undefined;
  }

  /**
   * The cache key of a `Proxy-Authorization` value: SHA-256(salt || value as sent), its 32 bytes as a
   * 32-character latin1 string (`binary`) (one byte per character: cheaper to make and to hash as a map key than
   * base64's 44), the salt 12 random bytes per process as 16 base64 characters (see {@link SALT_BYTES}:
   * one SHA-256 block for typical headers). Choices, for the cost of a new connection's admission
   * (issue 8: authentication within 5% of none):
   * - The value as sent, not its decoded token: a hit needs no parse; another spelling of the
   *   same credentials (`basic`, extra spaces) is another entry, verified once by bcrypt.
   * - One-shot SHA-256 (`crypto.hash`, ~0.3 µs) rather than an HMAC object (~1.3 µs): a key
   *   never leaves the process (not logged, not sent, not compared in an attacker's sight), so
   *   length extension, what HMAC guards against beyond a salted hash, gives nothing; what keeps
   *   a wrong password from hitting a right one's entry is SHA-256's collision resistance, the
   *   same in both. The salt makes keys useless outside this process (no precomputed tables).
   * - Not Squid's way (basic_auth's credentials cache keyed by user, holding the password in
   *   clear and compared with strcmp, with a TTL): a heap snapshot or core file of the proxy
   *   would then show every recent user's password in clear. Here it shows keys that need one
   *   SHA-256 per guessed password to test: no weaker than the HMAC's keys were, whose key sat
   *   in the same memory.
   */
  cacheKeyOf(header: string): string {
    return sha('sha256', this.#salt + header, 'binary');
  }

  /**
   * The entry of credentials `header` that were verified before (the same value, as sent) and
   * are still valid (their user's hash unchanged), from the cache alone: one SHA-256 and a
   * lookup, never a parse, never bcrypt, never a new entry (it refreshes the entry's recency).
   * Undefined for anything else (credentials never verified, forgotten, malformed). Never throws.
   */
  rememberedEntry(header: string): CredentialEntry | undefined {
    const remembered = this.#verified.get(this.cacheKeyOf(header), quietGet<string, VerifiedCredential>());
    if (remembered === undefined) return undefined;
    const entry = this.#users.get(remembered.user);
    return entry?.hash === remembered.hash ? entry : undefined;
  }

  /**
   * Checks a `Proxy-Authorization` value. Never rejects.
   * @returns the user's entry, or why not: `malformed` (not Basic, bad base64, no `:`, not UTF-8),
   *   `wrong-credentials` (unknown user or wrong password: not told apart, and as slow: see {@link CredentialVerifier.decoyHash}),
   *   `busy` (not checked: {@link CredentialVerifierOptions.maxChecks} bcrypt runs in flight; remembered credentials are never busy).
   */
  async verify(header: string): Promise<Verification> {
    const token = basicTokenOf(header);
    if (token === undefined) return { ok: false, failure: 'malformed' };
    // The cache is consulted before the token is even decoded: a hit costs one SHA-256 and two map lookups.
    const key = this.cacheKeyOf(header);
    const remembered = this.#verified.get(key, quietGet<string, VerifiedCredential>());
    if (remembered !== undefined) {
      const entry = this.#users.get(remembered.user);
      if (entry !== undefined && entry.hash === remembered.hash) return { ok: true, entry };
    }
    const credentials = decodeBasicToken(token);
    if (credentials === undefined) return { ok: false, failure: 'malformed' };
    const entry = this.#users.get(credentials.user);
    const hash = entry?.hash ?? (await this.decoyHash());
    const flightKey = `${key}\n${hash}`;
    let check = this.#pending.get(flightKey);
    if (check === undefined) {
      // Joining a run in flight costs nothing; a new one waits for room, or is not run at all.
      if (this.#pending.size >= this.#maxChecks) return { ok: false, failure: 'busy' };
      this.#bcryptRuns += 1;
      check = bcrypt.compare(credentials.password, hash).catch(() => false);
      this.#pending.set(flightKey, check);
      void check.finally(() => this.#pending.delete(flightKey));
    }
    const isMatch = await check;
    // The file may have been reloaded meanwhile: accept only if the hash checked is still the user's.
    const current = this.#users.get(credentials.user);
    if (!isMatch || entry === undefined || current?.hash !== hash) return { ok: false, failure: 'wrong-credentials', user: credentials.user };
    this.#verified.set(key, { user: current.user, hash });
    return { ok: true, entry: current };
  }
}
