/**
 * Admission (DESIGN.md "Request flow": admit): who may use the proxy and who they are. For
 * every request and every CONNECT, before anything is fetched or sent upstream:
 * 1. the client's address must be in `access.clients` (else 403 `client-not-allowed`);
 * 2. `Proxy-Authorization: Basic` credentials, when given, must match the credentials file
 *    (else 407 `proxy-auth-required`; an address past its failure budget gets 429
 *    `proxy-auth-throttled` without a check, unless they are credentials this exact address
 *    verified before: see auth-throttle.ts); valid ones name the identity, even from a
 *    range that names another one, unless that range is `binding` (then 403 `identity-mismatch`);
 * 3. without credentials, the range's identity applies, if it names one; else, when a
 *    credentials file is configured, 407; else the client is anonymous.
 * Requests inside a CONNECT tunnel are covered by the CONNECT's admission (its credentials are
 * re-checked against the current file, its address against the current ranges; a tunnel opened
 * without credentials is admitted as such a request is now: so a reload applies to open tunnels too). The identity's binding is read from `identities` at each
 * request. Extension, not in RFC 9309.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Clock } from '../clock.js';
import type { Config } from '../config/index.js';
import { decideWithoutRobots } from '../policy/decide.js';
import type { Decision } from '../policy/decision.js';
import type { Identity, UserAgentRewrite } from '../policy/identity.js';
import { AuthThrottle } from './auth-throttle.js';
import { clientPeerOf } from './client-peer.js';
import { ClientRanges, type RangeMatch } from './client-ranges.js';
import { CredentialVerifier, parseBasicCredentials } from './credential-verifier.js';
import { readCredentialsFile, type CredentialEntry, type Credentials } from './credentials-file.js';
import { checkSecretFileMode, type SecretFileWarning } from './secret-file-mode.js';

/** A configuration with its credentials file read: what {@link AccessControl.apply} puts in force. */
export interface PreparedAccess {
  readonly config: Config;
  /** The parsed credentials file, or undefined when `access.credentialsFile` is not set. */
  readonly credentials: Credentials | undefined;
  /** The credentials file's mode warning (others may read or write it), to log once per start or reload. */
  readonly warnings: readonly SecretFileWarning[];
}

/**
 * Reads what admission needs from `config` (the credentials file): at start, and before a
 * reload is applied, so a bad file fails the reload and changes nothing.
 * @throws {ConfigError} (key `access.credentialsFile`) for a file that cannot be read, has a bad
 *   line, or is world-writable (see secret-file-mode.ts).
 */
export function prepareAccess(config: Config): PreparedAccess {
  const file = config.access.credentialsFile;
  if (file === undefined) return { config, credentials: undefined, warnings: [] };
  const warning = checkSecretFileMode(file, 'access.credentialsFile');
  return { config, credentials: readCredentialsFile(file), warnings: warning === undefined ? [] : [warning] };
}

/** A client admitted once (by a CONNECT): what the requests inside its tunnel inherit. */
export interface AdmittedClient {
  /** The identity's name, or null for an anonymous client. */
  readonly name: string | null;
  readonly source: Identity['source'] | null;
  /** The credentials entry that was verified (user and hash), when the identity came from credentials. */
  readonly credential?: Pick<CredentialEntry, 'user' | 'hash'>;
}

/** The outcome of {@link AccessControl.admit}. */
export type Admission =
  | { isAdmitted: true; identity: Identity | null; client: AdmittedClient }
  | { isAdmitted: false; refusal: Decision };

/** What the caller knows of the request being admitted. */
export interface AdmissionContext {
  /** The target's origin (`scheme://host[:port]`; for a CONNECT, `https://host:port`), for the refusal's Decision. */
  origin?: string;
  /** The CONNECT admission of the tunnel the request came through. */
  tunnel?: AdmittedClient;
}

/** What {@link AccessControl} is built with. */
export interface AccessControlDeps {
  clock: Clock;
}

const ANONYMOUS: AdmittedClient = { name: null, source: null };
/** The admission of every anonymous client (shared: admissions are never changed once made). */
const ADMITTED_ANONYMOUS: Admission = { isAdmitted: true, identity: null, client: ANONYMOUS };

/**
 * Credentials verified on one client connection: the `Proxy-Authorization` value as sent, the
 * configuration generation it was verified under, and the admission it gave.
 */
interface ConnectionCredential {
  readonly authorization: string;
  readonly generation: number;
  readonly admission: Admission;
}

/**
 * True when `req` asks for its connection to be closed after it (`Connection: close`, RFC 9112
 * §9.6): no request follows on that connection, so nothing is remembered on it. Pure.
 */
function closesAfter(req: IncomingMessage): boolean {
  const connection = req.headers.connection;
  return connection !== undefined && CLOSE_OPTION.test(connection);
}
/** The `close` option in a `Connection` value (a comma-separated list, case-insensitive: RFC 9110 §7.6.1). */
const CLOSE_OPTION = /(?:^|,)[ \t]*close[ \t]*(?:,|$)/i;

/** A client socket with the credentials verified on it (see AccessControl's `#verifiedOnConnection`). */
type CredentialHolder = Socket & { [key: symbol]: ConnectionCredential | undefined };

/** The range an admitted client's address is in. */
type AllowedRange = Extract<RangeMatch, { isAllowed: true }>;

/** Admission of clients (lifecycle: none; {@link AccessControl.apply} swaps in a reloaded configuration). */
export class AccessControl {
  #config!: Config;
  #ranges!: ClientRanges;
  #verifier: CredentialVerifier | undefined;
  #credentials: Credentials | undefined;
  #identities = new Map<string, Identity>();
  readonly #throttle: AuthThrottle;
  /** Bumped by every {@link AccessControl.apply}: a credential verified under an older generation is checked again. */
  #generation = 0;
  /**
   * The property, on each client connection's socket, holding the credentials last verified on it:
   * a keep-alive client sends the same `Proxy-Authorization` with every request, and its later
   * requests are admitted without even the verified cache's SHA-256 (issue 8: authentication
   * within 5% of none). A different value, or a reload since, takes the full check. Gone with the
   * socket. A property of the socket rather than a WeakMap entry: with `Connection: close` every
   * request is a new socket, and a WeakMap keyed by sockets would add an ephemeron per request,
   * which the garbage collector processes specially (as request-id.ts). One symbol per instance:
   * another AccessControl (a test's) never reads this one's memo. Not set on a connection whose
   * request says `Connection: close` (no request follows on it): the property would be one more
   * object and one more hidden-class transition of the socket per request, for nothing.
   */
  readonly #verifiedOnConnection = Symbol('robots-proxy.verifiedOnConnection');
  /**
   * The admission of each verified credentials entry (its identity, the client a tunnel inherits),
   * made once per entry and configuration generation: emptied by {@link AccessControl.apply},
   * since the identity's binding comes from the configuration. Admissions are never changed once made.
   */
  #admissionOfEntry = new WeakMap<CredentialEntry, Admission>();

  constructor(prepared: PreparedAccess, private readonly deps: AccessControlDeps) {
    this.#throttle = new AuthThrottle({ maxFailures: prepared.config.access.maxAuthFailures, windowMs: prepared.config.access.authFailureWindowMs });
    this.apply(prepared);
  }

  /** Puts a (reloaded) configuration and credentials file in force, for requests admitted from now on and for open tunnels' next requests. */
  apply(prepared: PreparedAccess): void {
    const { config } = prepared;
    this.#config = config;
    this.#credentials = prepared.credentials;
    this.#generation += 1;
    this.#ranges = new ClientRanges(config.access.clients);
    this.#identities = new Map();
    this.#admissionOfEntry = new WeakMap();
    this.#throttle.setLimits({ maxFailures: config.access.maxAuthFailures, windowMs: config.access.authFailureWindowMs });
    if (prepared.credentials === undefined) this.#verifier = undefined;
    else if (this.#verifier === undefined) this.#verifier = new CredentialVerifier(prepared.credentials, { maxChecks: config.access.maxCredentialChecks });
    else {
      this.#verifier.setCredentials(prepared.credentials);
      this.#verifier.setMaxChecks(config.access.maxCredentialChecks);
    }
  }

  /** The credentials file in force (parsed), or undefined without `access.credentialsFile`. */
  get credentials(): Credentials | undefined {
    return this.#credentials;
  }

  /** The credential verifier in force (undefined without a credentials file), for figures. */
  get verifier(): CredentialVerifier | undefined {
    return this.#verifier;
  }

  /**
   * The {@link Identity} named `name` with what `identities` binds to it (unbound when it has
   * no entry). Never throws.
   */
  identityNamed(name: string, source: Identity['source']): Identity {
    const key = `${source}\n${name}`;
    let identity = this.#identities.get(key);
    if (identity === undefined) {
      const entry = Object.hasOwn(this.#config.identities, name) ? this.#config.identities[name] : undefined;
      const userAgent: UserAgentRewrite =
        entry?.userAgent === 'set' && entry.userAgentValue !== undefined ? { mode: 'set', value: entry.userAgentValue } : { mode: entry?.userAgent === 'append' ? 'append' : 'keep' };
      identity = { name, source, boundTokens: entry?.tokens ?? [], onMismatch: entry?.onMismatch ?? this.#config.identity.onMismatch, userAgent };
      this.#identities.set(key, identity);
    }
    return identity;
  }

  /**
   * True when `name` is an identity the configuration knows: an `identities` key, a range's
   * identity, or a credentials user's identity (for `/explain?identity=`). Never throws.
   */
  isKnownIdentity(name: string): boolean {
    if (Object.hasOwn(this.#config.identities, name)) return true;
    if (this.#config.access.clients.some((range) => range.identity === name)) return true;
    return this.#verifier?.namesIdentity(name) ?? false;
  }

  /**
   * Admits one request or CONNECT (see the module comment). Takes `Proxy-Authorization` out of
   * `req.headers` (it is for this proxy only, and must reach no log or upstream): its value is set
   * to undefined, not deleted, since deleting a field that was not the last one added turns the
   * headers object into a dictionary (V8's slow properties), and every later read of the request's
   * headers (the User-Agent, the copy forwarded upstream) then costs more; an undefined value is
   * skipped by that copy and by JSON. Never throws
   * or rejects. Synchronous (no promise) unless credentials must be verified: a client without
   * them, a request inside a tunnel, a connection's repeated credentials, and credentials this
   * process verified before from an address with failure budget left are answered at once.
   * @returns the identity (null: anonymous), or the refusal to answer with.
   */
  admit(req: IncomingMessage, context: AdmissionContext = {}): Admission | Promise<Admission> {
    const authorization = req.headers['proxy-authorization'];
    if (authorization !== undefined) req.headers['proxy-authorization'] = undefined;
    // Read once per connection (client-peer.ts).
    const address = clientPeerOf(req.socket).address;
    const origin = context.origin ?? '';
    const range = this.#ranges.match(address);
    if (!range.isAllowed) {
      const detail = `the client address ${address || '(unknown)'} is in none of the ranges allowed to use this proxy (access.clients)`;
      return { isAdmitted: false, refusal: decideWithoutRobots('client-not-allowed', { origin, detail }) };
    }
    const tunnel = context.tunnel;
    if (tunnel?.credential !== undefined) return this.#admitTunnelled(tunnel, tunnel.credential, range, origin);
    // A tunnel opened without credentials is admitted as a request without them is now, so a
    // reload that adds a credentials file or renames a range's identity applies to it too.
    if (tunnel !== undefined) return this.#admitWithoutCredentials(range.identity, origin);
    if (authorization !== undefined && this.#verifier !== undefined) {
      const socket = req.socket;
      const remembered = socket === undefined ? undefined : (socket as CredentialHolder)[this.#verifiedOnConnection];
      if (remembered !== undefined && remembered.authorization === authorization && remembered.generation === this.#generation) return remembered.admission;
      // A new connection (Connection: close: every request) with credentials verified before: one
      // SHA-256 and a lookup, no bcrypt, no check begun or settled, no promise. Only while the
      // address has budget, i.e. while a check could run: a right guess is then admitted at cache
      // speed and a wrong one goes on to bcrypt and counts, as before; a throttled address goes
      // through #authenticate, which admits only credentials verified from it.
      if (this.#throttle.hasBudget(address, this.deps.clock.nowMs())) {
        const entry = this.#verifier.rememberedEntry(authorization);
        if (entry !== undefined) return this.#admitVerified(entry, address, range, origin, authorization, req, socket, this.#generation);
      }
      return this.#authenticate(authorization, address, range, origin, this.#verifier, req, socket);
    }
    return this.#admitWithoutCredentials(range.identity, origin);
  }

  /** A client without credentials: its range's identity, else 407 when a credentials file is configured, else anonymous. */
  #admitWithoutCredentials(rangeIdentity: string | undefined, origin: string): Admission {
    if (rangeIdentity !== undefined) return this.#admitted(this.identityNamed(rangeIdentity, 'client-range'), { name: rangeIdentity, source: 'client-range' });
    if (this.#verifier !== undefined) return { isAdmitted: false, refusal: this.#challenge(origin, 'this proxy requires credentials: none were given (Proxy-Authorization: Basic)') };
    return ADMITTED_ANONYMOUS;
  }

  #admitted(identity: Identity, client: AdmittedClient): Admission {
    return { isAdmitted: true, identity, client };
  }

  /**
   * A client whose valid credentials name `entry`'s identity: admitted as it, unless the client's
   * range is `binding` and names another identity (403 `identity-mismatch`: a client of a bound
   * range cannot leave the identity, and the rules written for it, with someone else's credentials).
   */
  #admitWithCredentials(entry: CredentialEntry, client: AdmittedClient | undefined, range: AllowedRange, origin: string): Admission {
    if (range.isBinding && range.identity !== entry.identity) {
      const detail = `the client address is in ${range.range}, bound to identity ${JSON.stringify(range.identity)} (access.clients binding: true); credentials for identity ${JSON.stringify(entry.identity)} are not accepted from it`;
      return { isAdmitted: false, refusal: decideWithoutRobots('identity-mismatch', { origin, detail }) };
    }
    if (client !== undefined) return this.#admitted(this.identityNamed(entry.identity, 'credentials'), client);
    let admission = this.#admissionOfEntry.get(entry);
    if (admission === undefined) {
      admission = this.#admitted(this.identityNamed(entry.identity, 'credentials'), this.#clientOf(entry));
      this.#admissionOfEntry.set(entry, admission);
    }
    return admission;
  }

  /**
   * Credentials `entry` verified (by bcrypt now, or before: the cache) from `address`: recorded
   * as verified from it (see AuthThrottle.recordVerified), admitted unless the range's binding
   * refuses them, and the admission remembered for the connection's next requests (unless a
   * reload came since `generation`, e.g. while bcrypt ran); a refusal is not: its Decision names
   * this request's origin and is the request's own.
   */
  #admitVerified(entry: CredentialEntry, address: string, range: AllowedRange, origin: string, authorization: string, req: IncomingMessage, socket: Socket | undefined, generation: number): Admission {
    this.#throttle.recordVerified(address, entry);
    const admission = this.#admitWithCredentials(entry, undefined, range, origin);
    if (admission.isAdmitted && socket !== undefined && generation === this.#generation && !closesAfter(req)) (socket as CredentialHolder)[this.#verifiedOnConnection] = { authorization, generation, admission };
    return admission;
  }

  /** A request inside a tunnel opened with credentials: the CONNECT's identity, while its credentials are still in the file. */
  #admitTunnelled(tunnel: AdmittedClient, credential: NonNullable<AdmittedClient['credential']>, range: AllowedRange, origin: string): Admission {
    const entry = this.#verifier?.currentEntry(credential);
    if (entry === undefined) {
      return { isAdmitted: false, refusal: this.#challenge(origin, 'the credentials this tunnel was opened with are no longer valid (the credentials file changed); open a new one') };
    }
    // The user's identity as the file names it now (a reload may have moved the user to another one).
    const client = entry.identity === tunnel.name ? tunnel : { name: entry.identity, source: 'credentials' as const, credential };
    return this.#admitWithCredentials(entry, client, range, origin);
  }

  async #authenticate(authorization: string, address: string, range: AllowedRange, origin: string, verifier: CredentialVerifier, req: IncomingMessage, socket: Socket | undefined): Promise<Admission> {
    // The check counts against the address's budget from now on, so concurrent guesses cannot outrun it.
    const waitMs = this.#throttle.begin(address, this.deps.clock.nowMs());
    if (waitMs !== undefined) {
      // The budget slows guessing; credentials this very address verified before are no guess, and
      // cost no bcrypt (remembered): admitted, so one guesser does not lock out its /64 or NAT
      // neighbours' running clients. Only its own: the cache is shared by every client, and a lookup
      // in all of it would let a throttled guesser test passwords at cache speed (a right
      // guess admitted, a wrong one 429).
      const remembered = verifier.rememberedEntry(authorization);
      if (remembered !== undefined && this.#throttle.hasVerified(address, remembered)) {
        return this.#admitWithCredentials(remembered, undefined, range, origin);
      }
      // A wrong password for a user verified from here ends that user's pass from here: one who
      // shares the address (a NAT) and guesses gets one answer per window, not a stream of them.
      const user = remembered === undefined ? parseBasicCredentials(authorization)?.user : undefined;
      if (user !== undefined) this.#throttle.forgetVerified(address, user);
      const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
      const detail = `more than ${this.#config.access.maxAuthFailures} failed credential checks from this address within access.authFailureWindow; credentials are not checked for ${retryAfterSeconds} s`;
      return { isAdmitted: false, refusal: { ...decideWithoutRobots('proxy-auth-throttled', { origin, detail }), retryAfterSeconds } };
    }
    const generation = this.#generation;
    const verification = await verifier.verify(authorization);
    if (!verification.ok && verification.failure === 'busy') {
      // Not checked, so not a failure of this address: 429 and come back in a second.
      this.#throttle.settle(address, this.deps.clock.nowMs(), false);
      const detail = `the proxy is already checking ${this.#config.access.maxCredentialChecks} new credentials (access.maxCredentialChecks); these were not checked, retry in 1 s`;
      return { isAdmitted: false, refusal: { ...decideWithoutRobots('proxy-auth-throttled', { origin, detail }), retryAfterSeconds: 1 } };
    }
    this.#throttle.settle(address, this.deps.clock.nowMs(), !verification.ok);
    if (verification.ok) return this.#admitVerified(verification.entry, address, range, origin, authorization, req, socket, generation);
    if (verification.user !== undefined) this.#throttle.forgetVerified(address, verification.user);
    const detail =
      verification.failure === 'malformed'
        ? 'the Proxy-Authorization header is not Basic credentials (RFC 7617: "Basic" and base64 of user:password in UTF-8)'
        : `the credentials for user ${JSON.stringify(verification.user?.slice(0, 128))} were not accepted`;
    return { isAdmitted: false, refusal: this.#challenge(origin, detail) };
  }

  /** The admitted client of verified credentials `entry` (what a CONNECT's tunnel inherits). */
  #clientOf(entry: CredentialEntry): AdmittedClient {
    return { name: entry.identity, source: 'credentials', credential: { user: entry.user, hash: entry.hash } };
  }

  /** The 407 refusal, with the Basic challenge (RFC 7617 §2). */
  #challenge(origin: string, detail: string): Decision {
    return decideWithoutRobots('proxy-auth-required', { origin, detail, proxyAuthenticate: `Basic realm="${this.#config.access.realm}", charset="UTF-8"` });
  }
}
