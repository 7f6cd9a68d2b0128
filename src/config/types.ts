/**
 * The validated configuration, as the rest of the proxy sees it. Every
 * duration is a whole number of milliseconds (name ends in `Ms`), every size a
 * whole number of bytes (name ends in `Bytes`/`maxBytes`). The YAML file uses
 * the same names without the unit suffix (`robots.ttl: 24h` -> `robots.ttlMs`);
 * `config/default.yaml` documents each key and `schema.ts` holds the bounds.
 */

/** Pacing timing models (extension, not in RFC 9309). */
export type PacingModel = 'start-to-start' | 'end-to-start' | 'window';

/** How CONNECT requests are handled. */
export type HttpsMode = 'intercept' | 'tunnel' | 'deny';

/** pino log levels, `silent` turns logging off. */
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** A listening address. */
export interface ListenConfig {
  /** IP address or hostname to bind; no scheme, no port. @default '127.0.0.1' */
  readonly host: string;
  /** TCP port, 0..65535; 0 picks a free ephemeral port (tests). @default 8080 */
  readonly port: number;
}

/** The admin listener (health, metrics, explain, CA download). */
export interface AdminConfig extends ListenConfig {
  /** Whether the admin listener starts at all. @default true */
  readonly enabled: boolean;
  /**
   * Admin connections open at once, 1..1024; one more is closed at once. Their descriptors come
   * out of `clients.reservedDescriptors`, so the admin API stays reachable when the proxy is
   * saturated. @default 32
   */
  readonly maxConnections: number;
  /**
   * Bearer token every admin request must carry (`Authorization: Bearer <token>`), except
   * `GET /healthz` and `GET /ca.pem`; at least 16 characters. Required (or `tokenFile`) when
   * `host` is beyond loopback. Never logged.
   */
  readonly token?: string;
  /**
   * A file holding the admin token (its first line, trimmed); created with a random token (mode
   * 0600) when it does not exist. Instead of `token`.
   */
  readonly tokenFile?: string;
}

/** One `access.clients` entry: a CIDR range allowed to use the proxy, and the identity of its clients. */
export interface ClientRangeConfig {
  /** CIDR, normalised (`10.1.0.0/16`, `::1/128`). */
  readonly range: string;
  /** The identity of clients in this range that give no proxy credentials; absent: anonymous. */
  readonly identity?: string;
  /**
   * True: the range's clients are always `identity`; valid proxy credentials for another identity
   * are refused (403 `identity-mismatch`). Absent: valid credentials name the identity. Needs `identity`.
   */
  readonly binding?: boolean;
}

/** Who may use the proxy (issue 8; extension, not in RFC 9309). */
export interface AccessConfig {
  /** Ranges whose clients may connect; anyone else gets 403 `client-not-allowed`. @default loopback: 127.0.0.0/8 and ::1/128 */
  readonly clients: readonly ClientRangeConfig[];
  /**
   * Credentials file (`user:bcrypt-hash[:identity]` lines, see `robots-proxy passwd`). When set,
   * a client gives `Proxy-Authorization: Basic` credentials unless its range names an identity;
   * missing or wrong ones get 407. Re-read on every reload. Absent: no proxy authentication.
   */
  readonly credentialsFile?: string;
  /** The realm of the 407's `Proxy-Authenticate: Basic realm="..."`. @default 'robots-proxy' */
  readonly realm: string;
  /** Failed credential checks allowed per client address (IPv6: per /64) per window, 1..1000; beyond: 429 `proxy-auth-throttled`. @default 10 */
  readonly maxAuthFailures: number;
  /** The window of `maxAuthFailures`, ms, 1 s..24 h, counted from the first failure. @default 60_000 */
  readonly authFailureWindowMs: number;
  /**
   * bcrypt checks of new credentials in flight at once across all clients, 1..1000; beyond: 429
   * `proxy-auth-throttled` with `Retry-After: 1`, unchecked and not counted as a failure
   * (credentials verified before need no check). @default 8
   */
  readonly maxCredentialChecks: number;
}

/** What the proxy does with an identity's outgoing User-Agent (`identities.<name>.userAgent`). */
export type UserAgentMode = 'keep' | 'set' | 'append';

/** One `identities` entry: what an identity is bound to. */
export interface IdentityConfig {
  /** Product tokens the identity is decided for, whatever its User-Agent says; empty: unbound. @default [] */
  readonly tokens: readonly string[];
  /** `keep` the client's User-Agent, `set` it to `userAgentValue`, or `append` the first bound token to it. @default 'keep' */
  readonly userAgent: UserAgentMode;
  /** The User-Agent sent when `userAgent` is `set` (printable ASCII). */
  readonly userAgentValue?: string;
  /** Overrides `identity.onMismatch` for this identity. */
  readonly onMismatch?: 'flag' | 'deny';
}

/** Defaults for every identity (`identity:`). */
export interface IdentityDefaultsConfig {
  /**
   * A bound identity whose User-Agent names none of its tokens: `flag` decides it for its bound
   * tokens and flags it (access line, metric); `deny` refuses it, 403 `identity-mismatch`. @default 'flag'
   */
  readonly onMismatch: 'flag' | 'deny';
}

/**
 * A connection cap as written: a number, or `auto` to derive it from the process's open-file
 * limit (see `resolveConnectionLimits` in `proxy/connection-limits.ts`).
 */
export type ConnectionCap = number | 'auto';

/** Client connections to the proxy listener and their timeouts (extension, not in RFC 9309). */
export interface ClientsConfig {
  /**
   * Connections to the proxy listener open at once, CONNECT tunnels included; one more is
   * answered `503` + `Retry-After` and closed. `auto`: half of the open-file limit left after
   * `reservedDescriptors` (each connection may need an upstream socket too), at most 10 000.
   * A number above that ceiling is lowered to it, with a warning. @default 'auto'
   */
  readonly maxConnections: ConnectionCap;
  /**
   * Connections open at once from one client address (IPv4-mapped IPv6 counts as IPv4); one more
   * is answered `429` + `Retry-After` and closed. `auto`: a quarter of `maxConnections`, at most
   * 256. Never above `maxConnections`. @default 'auto'
   */
  readonly maxConnectionsPerClient: ConnectionCap;
  /**
   * Open files kept out of the connection cap for everything else: admin connections, robots.txt
   * fetches, log files, the CA, DNS. @default 128
   */
  readonly reservedDescriptors: number;
  /**
   * Longest time a client connection may stay open with no request in progress, ms: from accept
   * to a complete request head, and from the end of a response to the next request head. Also
   * the `Keep-Alive: timeout` the proxy advertises. @default 10_000
   */
  readonly idleTimeoutMs: number;
  /** Longest silence while a request body is being read from the client, ms; exceeded: 408 and close. @default 30_000 */
  readonly requestBodyTimeoutMs: number;
  /** Longest time the client may leave response bytes unread, ms; exceeded: the connection is closed. @default 30_000 */
  readonly responseWriteTimeoutMs: number;
}

/** Fetching and caching robots.txt (RFC 9309 §2.3, §2.4, §2.5). */
export interface RobotsConfig {
  /** User-Agent the proxy sends when fetching robots.txt itself; printable ASCII. */
  readonly userAgent: string;
  /** Longest time a fetched robots.txt is used, ms; at most 24 h (RFC 9309 §2.4). @default 86_400_000 */
  readonly ttlMs: number;
  /**
   * Floor for a shorter lifetime asked by `Cache-Control: max-age`, ms; never
   * above `ttlMs` (when `minTtl` is not written it is min(1 min, ttl)). @default 60_000
   */
  readonly minTtlMs: number;
  /** First retry after robots.txt was unreachable (5xx, 429, network), ms; doubles per failure. @default 60_000 */
  readonly errorRetryMs: number;
  /** Ceiling of that doubling, ms; at least `errorRetryMs`. @default 1_800_000 */
  readonly errorRetryMaxMs: number;
  /**
   * Bytes of robots.txt parsed; the rest is not read. RFC 9309 §2.5 asks for at
   * least 500 KiB: smaller values are accepted (for tests) but deviate. @default 512_000
   */
  readonly maxBytes: number;
  /** Redirects followed, across hosts too; more -> unavailable. RFC 9309 §2.3.1.2 asks for at least 5. @default 5 */
  readonly maxRedirects: number;
  /** Time allowed for one robots.txt fetch, redirects included, ms; exceeded -> unreachable. @default 10_000 */
  readonly timeoutMs: number;
  /** Most origins whose robots.txt is kept in memory (LRU bound). @default 10_000 */
  readonly maxOrigins: number;
  /**
   * Estimated heap bytes of the robots cache: stored snapshots with their
   * parsed files and rule indexes, plus about twice `maxBytes` per robots.txt
   * fetch in flight; least recently used origins are dropped first. Bounds
   * [1 MiB, 64 GiB]. @default 268_435_456 (256 MiB)
   */
  readonly cacheBytes: number;
}

/** Per-origin queues (extension, not in RFC 9309; Crawl-delay is an RFC 9309 §2.2.4 extension record). */
export interface PacingConfig {
  /** Timing model. @default 'start-to-start' */
  readonly model: PacingModel;
  /** Requests in flight per origin when no delay is in force. @default 4 */
  readonly maxConcurrency: number;
  /** Delay between requests to every origin, ms, even without Crawl-delay; the minDelay of the policy rule that matched replaces it. @default 0 */
  readonly minDelayMs: number;
  /**
   * False: no delay between request starts (neither Crawl-delay nor a minimum delay nor a rate
   * cap); `maxConcurrency` still bounds requests in flight per origin. For a report-mode
   * roll-out that must not slow anyone down. @default true
   */
  readonly enabled: boolean;
  /** Longest expected queue wait, ms; a request that would wait longer gets 429 + Retry-After. @default 30_000 */
  readonly maxWaitMs: number;
  /** Requests waiting per origin; one more gets 429. 0: never queue. @default 1000 */
  readonly maxQueue: number;
  /**
   * Requests waiting per identity per origin; one more gets 429 (`queue-full`, limit
   * `max-queue-per-identity`). In effect at most `maxQueue`. The origin's queue serves
   * identities round-robin, so this bounds what one client can pile up, not how fast it is
   * served. The identity is the client's identity name (proxy credentials, a named client range),
   * else its address (`identityOf` in src/proxy/pipeline.ts). @default 100
   */
  readonly maxQueuePerIdentity: number;
  /** Window length for the `window` model, ms; ignored by the other models. @default 1000 */
  readonly windowMs: number;
  /** First pause after an upstream 429/503 without Retry-After, ms; doubles, full jitter. @default 1000 */
  readonly backoffMs: number;
  /** Ceiling of that backoff, ms; at least `backoffMs`. @default 300_000 */
  readonly maxBackoffMs: number;
  /**
   * Cap on a Retry-After pause, ms: an upstream 429/503's pause of the origin, and the wait
   * before robots.txt is fetched again after a 429/503 with Retry-After. @default 600_000
   */
  readonly maxRetryAfterMs: number;
  /**
   * Ceiling of a robots.txt Crawl-delay (and of the interval a Request-rate implies), ms,
   * 1 s..30 d. A longer or infinite crawl-delay is clamped to it, never ignored; the file's
   * value shows in the robots snapshot's warnings. @default 86_400_000 (24 h)
   */
  readonly maxCrawlDelayMs: number;
  /**
   * Longest time one request holds its origin's start slot, ms. Past it the slot is released
   * (the next request may start, still spaced by the crawl-delay from this one's start) and the
   * transfer goes on, bounded by the `clients` and `upstream` timeouts. @default 30_000
   */
  readonly maxSlotHoldMs: number;
}

/** What a policy rule does with the requests it matches (extension, not in RFC 9309). */
export type PolicyAction = 'deny' | 'allow' | 'report' | 'pace';

/** A request-rate cap: at most `requests` starts per `periodMs` (`rate: 30/m`). */
export interface PolicyRate {
  /** Requests per period, an integer >= 1. */
  readonly requests: number;
  /** The period, ms: 1_000 (`/s`), 60_000 (`/m`) or 3_600_000 (`/h`). */
  readonly periodMs: number;
}

/**
 * One operator policy rule (`policy.rules[i]`), validated and normalised. Every match field
 * that is set must match (a field lists alternatives, any of which may match); a rule with no
 * match field matches every request. Extension, not in RFC 9309.
 */
export interface PolicyRuleConfig {
  /** Unique name (`[A-Za-z0-9._:/*@[\]-]`, 1-300 chars): shown in the 403 body, the header, the log line and the ledger. */
  readonly name: string;
  readonly action: PolicyAction;
  /** Identity names, exact. */
  readonly identities?: readonly string[];
  /** Product tokens, lower-cased: one of the request's candidate (or bound) tokens must equal one, whole name (RFC 9309 §2.2.1 comparison). */
  readonly tokens?: readonly string[];
  /** Origins (`https://example.com`), bare hostnames (`example.com`: every scheme and port) or host globs (`*.example.com`), normalised as `hosts` keys. */
  readonly origins?: readonly string[];
  /** Path patterns as in robots.txt rules (prefix, `*`, final `$`), percent-encoding normalised (RFC 9309 §2.2.2, §2.2.3). */
  readonly paths?: readonly string[];
  /** HTTP methods, upper case (`CONNECT` for a tunnel-mode CONNECT). */
  readonly methods?: readonly string[];
  /** Minimum delay between request starts to the origin, ms; replaces `pacing.minDelay`, never lowers the site's Crawl-delay. */
  readonly minDelayMs?: number;
  /** Requests in flight to the origin when no delay is in force; replaces `pacing.maxConcurrency`. */
  readonly maxConcurrency?: number;
  /** Request-rate cap: enforced as a minimum delay of `periodMs / requests` between starts. */
  readonly rate?: PolicyRate;
}

/** The operator's policy on top of robots.txt (extension, not in RFC 9309). */
export interface PolicyConfig {
  /** Ordered; the first rule that matches a request decides. @default [] */
  readonly rules: readonly PolicyRuleConfig[];
}

/** Forwarding to the target origin. */
export interface UpstreamConfig {
  /** Longest wait for the final response headers (interim 1xx heads do not extend it), and longest silence in the body, ms; exceeded -> 504. @default 30_000 */
  readonly timeoutMs: number;
  /** Time allowed to open the TCP (and TLS) connection, ms. @default 10_000 */
  readonly connectTimeoutMs: number;
  /** Allow targets in loopback, private, link-local, unique-local and metadata ranges. @default false */
  readonly allowPrivateNetworks: boolean;
  /** PEM file of extra CAs trusted for upstream TLS, besides the system CAs; path relative to the working directory. */
  readonly caFile?: string;
}

/** A per-origin override from `hosts`; an absent field falls back to `pacing`. */
export interface HostOverride {
  /** Minimum delay between requests to this origin, ms; raises a smaller Crawl-delay. */
  readonly minDelayMs?: number;
  /** Requests in flight to this origin when no delay is in force. */
  readonly maxConcurrency?: number;
}

/** CONNECT handling and the interception CA. */
export interface HttpsConfig {
  /** `intercept` (TLS termination), `tunnel` (decide on `/` at CONNECT), `deny` (403). @default 'intercept' */
  readonly mode: HttpsMode;
  /** PEM CA certificate; set with `caKey` or neither (then a CA is generated in `stateDir`). */
  readonly caCert?: string;
  /** PEM private key of `caCert`. */
  readonly caKey?: string;
  /** Validity of the leaf certificates the proxy signs, ms. @default 86_400_000 */
  readonly leafTtlMs: number;
  /**
   * A CONNECT tunnel (relayed in `tunnel` mode, or intercepted) with no byte in
   * either direction for this long is closed, ms. Bounds: 1 s to 24 h. @default 60_000
   */
  readonly idleTimeoutMs: number;
}

/** Logging. */
export interface LogConfig {
  /** Lowest level written. @default 'info' */
  readonly level: LogLevel;
}

/** Stopping on SIGTERM/SIGINT (extension, not in RFC 9309). */
export interface ShutdownConfig {
  /**
   * Time requests in flight get to finish once a stop begins, ms; 0..1 h. Queued requests are
   * answered 503 at once; whatever is still running after this is cut. @default 30_000
   */
  readonly drainTimeoutMs: number;
}

/**
 * The compliance ledger: an SQLite file of per-minute rollups, recent refusals and robots.txt
 * versions (extension, not in RFC 9309). Written off the request path, once per `flushIntervalMs`.
 */
export interface LedgerConfig {
  /** Whether the ledger is kept at all. @default true */
  readonly enabled: boolean;
  /** The SQLite file; relative to the working directory. Not set: `<stateDir>/ledger.sqlite`. */
  readonly path?: string;
  /** Time between two write transactions, ms, 10 ms..1 min. @default 1000 */
  readonly flushIntervalMs: number;
  /** Age past which per-minute rollups are deleted, ms, 1 h..3650 d. @default 7_776_000_000 (90 d) */
  readonly rollupRetentionMs: number;
  /** Age past which refusal rows are deleted, ms, 1 h..3650 d. @default 604_800_000 (7 d) */
  readonly refusalRetentionMs: number;
  /** Most refusal rows kept (the oldest go first), 1000..100000000. @default 1_000_000 */
  readonly maxRefusals: number;
  /**
   * Distinct (identity, product token, origin, verdict, reason) rows per minute, 100..10000000;
   * requests of further keys in that minute are counted under origin `(other)`. @default 50_000
   */
  readonly maxKeysPerMinute: number;
  /** robots.txt bodies kept per origin (the latest versions), 0..100. @default 5 */
  readonly robotsBodiesPerOrigin: number;
  /** Longest robots.txt body kept, bytes (a longer one is kept cut, and marked so), 0..64 MiB. @default 512_000 */
  readonly robotsBodyBytes: number;
  /** Time between two retention prunes, ms, 1 s..24 h. @default 600_000 */
  readonly pruneIntervalMs: number;
}

/**
 * Label bounds of the Prometheus metrics (extension, not in RFC 9309): the top N values by
 * traffic keep their own label value, the rest are counted as `other`.
 */
export interface MetricsConfig {
  /** Product tokens with a label value of their own, 1..1000. @default 20 */
  readonly tokenLabels: number;
  /** Identities with a label value of their own, 1..1000. @default 20 */
  readonly identityLabels: number;
  /** Origins with pacing gauges of their own (the busiest by queued and in-flight requests), 0..1000. @default 10 */
  readonly busiestOrigins: number;
}

/** Where the state a fleet shares lives (issue 10): `state.redis.*`. Extension, not in RFC 9309. */
export interface RedisStateConfig {
  /** `redis://[user:password@]host:port[/db]` or `rediss://...` (TLS). @default 'redis://127.0.0.1:6379' */
  readonly url: string;
  /** Prefix of every key and channel, so several fleets can share one Redis. @default 'robots-proxy:' */
  readonly keyPrefix: string;
  /**
   * What requests get while Redis cannot be reached: `local` paces each instance on its own with
   * every delay multiplied by `state.fleetSize` (and `maxConcurrency` divided by it), logged and
   * counted, until Redis answers again; `deny` answers 503 with `Retry-After`. @default 'local'
   */
  readonly onUnavailable: 'local' | 'deny';
  /** Longest wait for one Redis command (connecting included), ms, 10 ms..60 s; past it Redis counts as unavailable. @default 500 */
  readonly commandTimeoutMs: number;
  /**
   * Lease of a pacing slot, ms, 100 ms..1 h: a crashed instance's slot is free again after this.
   * Renewed while the request runs, so a long request keeps its slot. @default 30_000
   */
  readonly slotLeaseMs: number;
  /**
   * Lease of the fleet-wide robots.txt fetch lock, ms, 100 ms..1 h: when the instance fetching dies,
   * another one fetches after this. Should exceed `robots.timeout`. @default 15_000
   */
  readonly robotsLockLeaseMs: number;
}

/** What a fleet of instances shares (issue 10). Extension, not in RFC 9309. */
export interface StateConfig {
  /** `memory`: this process alone (the default; no Redis needed). `redis`: shared with the fleet through `state.redis`. @default 'memory' */
  readonly backend: 'memory' | 'redis';
  /** Instances in the fleet, 1..1000: the `local` fallback multiplies every delay by it. @default 1 */
  readonly fleetSize: number;
  readonly redis: RedisStateConfig;
}

/** The whole validated configuration. Build it with `parseConfig`, `loadConfig` or `defaultConfig`. */
export interface Config {
  readonly listen: ListenConfig;
  readonly admin: AdminConfig;
  readonly clients: ClientsConfig;
  readonly robots: RobotsConfig;
  readonly pacing: PacingConfig;
  readonly upstream: UpstreamConfig;
  /**
   * Per-origin overrides, deprecated: compiled as `pace` policy rules after `policy.rules`
   * (`hostOverrideRules`), a warning at start. Keys are normalised: an origin (`https://example.com`,
   * `http://example.com:8080`; lower case, punycode, default port elided), a
   * bare hostname (`example.com`, `[::1]`) that applies to every scheme and
   * port, or a host glob (`*.example.com`: any subdomain, not the apex).
   * Precedence: exact origin, then exact host, then the most specific glob.
   */
  readonly hosts: Readonly<Record<string, HostOverride>>;
  /**
   * The operator's policy rules. Deprecated `hosts` entries are not copied here; they are
   * compiled as `pace` rules after these (`hostOverrideRules`).
   */
  readonly policy: PolicyConfig;
  /**
   * `enforce`: refusals are answered (403, 503); `report`: nothing is refused by robots.txt or
   * policy, the request is forwarded with `wouldDeny` in its Decision. @default 'enforce'
   */
  readonly enforcement: 'enforce' | 'report';
  readonly https: HttpsConfig;
  /** Directory for generated state (the CA); relative to the working directory. @default './state' */
  readonly stateDir: string;
  readonly log: LogConfig;
  readonly shutdown: ShutdownConfig;
  readonly ledger: LedgerConfig;
  readonly metrics: MetricsConfig;
  /** Who may use the proxy: client ranges and proxy credentials. */
  readonly access: AccessConfig;
  /** Identities by name (credentials users, range identities) and what they are bound to. */
  readonly identities: Readonly<Record<string, IdentityConfig>>;
  readonly identity: IdentityDefaultsConfig;
  readonly state: StateConfig;
}
