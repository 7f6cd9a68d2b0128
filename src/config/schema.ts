/**
 * The zod schema of the configuration file: YAML names, defaults, bounds, and
 * the mapping to the {@link Config} the proxy reads (durations -> `...Ms`).
 * Every object is strict: an unknown key is an error. A section written with
 * no children (`listen:` with everything commented out) counts as empty.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { normaliseClientRange } from '../access/client-ranges.js';
import type {
  AccessConfig,
  ClientRangeConfig,
  ClientsConfig,
  IdentityConfig,
  Config,
  ConnectionCap,
  HostOverride,
  HttpsConfig,
  LedgerConfig,
  MetricsConfig,
  PacingConfig,
  PolicyConfig,
  PolicyRate,
  PolicyRuleConfig,
  RobotsConfig,
  ShutdownConfig,
  StateConfig,
  UpstreamConfig,
} from './types.js';
import { formatDuration, formatSize, parseDuration, parseSize, type UnitParse } from './units.js';
import { normalisePattern } from '../robots/encoding.js';
import { hostKeyOf } from '../proxy/target-origin.js';

export type * from './types.js';

const SECOND_MS = 1_000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
/** Node timers overflow above 2^31-1 ms (about 24.8 days); no duration may exceed it. */
const MAX_TIMER_MS = 2_147_483_647;

function withUnit(parse: (v: unknown) => UnitParse, format: (n: number) => string, min: number, max: number) {
  return z.unknown().transform((value, ctx) => {
    const parsed = parse(value);
    if (!parsed.ok) {
      ctx.issues.push({ code: 'custom', message: parsed.reason, input: value });
      return z.NEVER;
    }
    if (parsed.value < min || parsed.value > max) {
      const bound = parsed.value < min ? `at least ${format(min)}` : `at most ${format(max)}`;
      ctx.issues.push({ code: 'custom', message: `must be ${bound}, got ${JSON.stringify(value)}`, input: value });
      return z.NEVER;
    }
    return parsed.value;
  });
}

/** A duration field (`500ms`, `10s`, `24h`) -> milliseconds, within [minMs, maxMs]. */
function duration(minMs: number, maxMs: number = MAX_TIMER_MS) {
  return withUnit(parseDuration, formatDuration, minMs, maxMs);
}

/** A size field (`500KiB`, or bare bytes) -> bytes, within [min, max]. */
function size(minBytes: number, maxBytes: number) {
  return withUnit(parseSize, formatSize, minBytes, maxBytes);
}

function int(min: number, max: number) {
  return z.number().int().min(min).max(max);
}

const port = () => int(0, 65_535);

/** Largest connection cap that may be written (a sanity bound; the open-file limit lowers it further). */
const MAX_CONNECTION_CAP = 1_000_000;

/** A connection cap: `auto` or an integer 1..{@link MAX_CONNECTION_CAP}. */
function connectionCap() {
  return z.unknown().transform((value, ctx): ConnectionCap => {
    if (value === 'auto') return 'auto';
    if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_CONNECTION_CAP) return value;
    ctx.issues.push({ code: 'custom', message: `must be auto or an integer 1..${MAX_CONNECTION_CAP}, got ${JSON.stringify(value)}`, input: value });
    return z.NEVER;
  });
}

/** DNS name (labels of letters, digits, `-`, `_`) or an IP address; no scheme, port or path. */
const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;
const bindHost = () =>
  z.string().refine((h) => isIP(h) !== 0 || HOSTNAME.test(h), {
    message: 'must be an IP address or a hostname, without scheme or port (e.g. "127.0.0.1", "::1", "localhost")',
  });
const filePath = () => z.string().min(1);

/** Turns a missing or empty (`null`) section into `{}` so that its defaults apply. */
function section<S extends z.ZodRawShape>(shape: S) {
  return z.preprocess((value) => value ?? {}, z.strictObject(shape));
}

/** The RFC 9309 §2.4 ceiling on caching robots.txt. */
const MAX_ROBOTS_TTL_MS = DAY_MS;

const listenShape = { host: bindHost().default('127.0.0.1'), port: port().default(8080) };
/** Shortest admin token accepted: a guessable token is no protection. */
const MIN_ADMIN_TOKEN_CHARS = 16;
const adminShape = {
  host: bindHost().default('127.0.0.1'),
  port: port().default(9090),
  enabled: z.boolean().default(true),
  maxConnections: int(1, 1024).default(32),
  // The message never repeats the value: it is a secret.
  token: z
    .string()
    .refine((t) => t.trim().length >= MIN_ADMIN_TOKEN_CHARS && /^[\x21-\x7e]+$/.test(t), {
      message: `must be at least ${MIN_ADMIN_TOKEN_CHARS} printable characters without spaces (e.g. the output of \`openssl rand -base64 32\`)`,
    })
    .optional(),
  tokenFile: filePath().optional(),
};

/** An identity name: a credentials user or a client range's identity. */
const IDENTITY_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;
const IDENTITY_NAME_HINT = '1 to 128 letters, digits, ".", "_", "@" or "-", starting with a letter or digit';
const identityName = () => z.string().regex(IDENTITY_NAME, { message: `must be an identity name: ${IDENTITY_NAME_HINT}` });

/** An `access.clients` entry: a CIDR string, or `{ range, identity, binding }`. */
const clientRange = () =>
  z
    .union([z.string(), z.strictObject({ range: z.string(), identity: identityName().optional(), binding: z.boolean().optional() })])
    .transform((value, ctx): ClientRangeConfig => {
      const written: { range: string; identity?: string | undefined; binding?: boolean | undefined } = typeof value === 'string' ? { range: value } : value;
      const parsed = normaliseClientRange(written.range);
      if (!parsed.ok) {
        ctx.issues.push({ code: 'custom', message: parsed.reason, input: value, ...(typeof value === 'string' ? {} : { path: ['range'] }) });
        return z.NEVER;
      }
      if (written.binding === true && written.identity === undefined) {
        ctx.issues.push({ code: 'custom', message: 'binding: true needs an identity (the identity its clients are bound to)', input: value, path: ['binding'] });
        return z.NEVER;
      }
      return { range: parsed.range, ...(written.identity === undefined ? {} : { identity: written.identity }), ...(written.binding === true ? { binding: true } : {}) };
    });

/** Realm of the 407 challenge: a quoted-string without `"` or `\` (RFC 9110 §5.6.4), printable ASCII. */
const realm = () => z.string().regex(/^[\x20\x21\x23-\x5b\x5d-\x7e]{1,128}$/, { message: 'must be 1 to 128 printable ASCII characters, without " or \\' });

const accessShape = {
  clients: z
    .array(clientRange())
    .min(1, { message: 'must list at least one range (the default is loopback only: 127.0.0.0/8 and ::1/128)' })
    .default(['127.0.0.0/8', '::1/128'].map((range) => ({ range }))),
  credentialsFile: filePath().optional(),
  realm: realm().default('robots-proxy'),
  maxAuthFailures: int(1, 1_000).default(10),
  authFailureWindow: duration(SECOND_MS, DAY_MS).prefault('1m'),
  maxCredentialChecks: int(1, 1_000).default(8),
};

const printableAscii = () => z.string().regex(/^[\x20-\x7e]*[\x21-\x7e][\x20-\x7e]*$/, { message: 'must be printable ASCII and not blank' });
const identityEntryShape = {
  tokens: z
    // A whole name as the proxy reads names on both sides of a match (robots/product-token.ts): digits
    // included, so a bot named MJ12bot or 360Spider can be bound (the message always said so).
    .array(z.string().regex(/^[A-Za-z0-9_-]+$/, { message: 'must be a product token: letters, digits, "_" and "-" (RFC 9309 §2.2.1)' }))
    .default([]),
  userAgent: z.enum(['keep', 'set', 'append']).default('keep'),
  userAgentValue: printableAscii().optional(),
  onMismatch: z.enum(['flag', 'deny']).optional(),
};
const identityDefaultsShape = { onMismatch: z.enum(['flag', 'deny']).default('flag') };

/** Descriptors the process needs besides client, admin and upstream sockets (stdio, log, listeners, DNS). */
const OWN_DESCRIPTORS = 16;

const clientsShape = {
  maxConnections: connectionCap().prefault('auto'),
  maxConnectionsPerClient: connectionCap().prefault('auto'),
  reservedDescriptors: int(OWN_DESCRIPTORS, MAX_CONNECTION_CAP).default(128),
  idleTimeout: duration(1, HOUR_MS).prefault('10s'),
  requestBodyTimeout: duration(1, HOUR_MS).prefault('30s'),
  responseWriteTimeout: duration(1, HOUR_MS).prefault('30s'),
};

const robotsShape = {
  userAgent: z
    .string()
    .regex(/^[\x20-\x7e]*[\x21-\x7e][\x20-\x7e]*$/, { message: 'must be printable ASCII and not blank' })
    .default('robots-proxy/0.1 (+https://github.com/robots-proxy)'),
  ttl: duration(1, MAX_ROBOTS_TTL_MS).prefault('24h'),
  minTtl: duration(0, MAX_ROBOTS_TTL_MS).optional(),
  errorRetry: duration(1).prefault('1m'),
  errorRetryMax: duration(1).optional(),
  maxBytes: size(1, 64 * 1_048_576).prefault('500KiB'),
  maxRedirects: int(0, 20).default(5),
  timeout: duration(1).prefault('10s'),
  maxOrigins: int(1, 10_000_000).default(10_000),
  cacheBytes: size(1_048_576, 64 * 1_073_741_824).prefault('256MiB'),
};

const pacingShape = {
  model: z.enum(['start-to-start', 'end-to-start', 'window']).default('start-to-start'),
  enabled: z.boolean().default(true),
  maxConcurrency: int(1, 1024).default(4),
  minDelay: duration(0).prefault('0'),
  maxWait: duration(0).prefault('30s'),
  maxQueue: int(0, 1_000_000).default(1000),
  maxQueuePerIdentity: int(0, 1_000_000).default(100),
  window: duration(1, DAY_MS).prefault('1s'),
  backoff: duration(1).prefault('1s'),
  maxBackoff: duration(1).optional(),
  maxRetryAfter: duration(SECOND_MS).prefault('10m'),
  // Above Node's 24.8-day timer limit on purpose: pacing timers are chained (src/clock.ts).
  maxCrawlDelay: duration(SECOND_MS, 30 * DAY_MS).prefault('24h'),
  maxSlotHold: duration(1).prefault('30s'),
};

const upstreamShape = {
  timeout: duration(1).prefault('30s'),
  connectTimeout: duration(1).prefault('10s'),
  allowPrivateNetworks: z.boolean().default(false),
  caFile: filePath().optional(),
};

const hostOverrideShape = { minDelay: duration(0).optional(), maxConcurrency: int(1, 1024).optional() };

const httpsShape = {
  mode: z.enum(['intercept', 'tunnel', 'deny']).default('intercept'),
  caCert: filePath().optional(),
  caKey: filePath().optional(),
  leafTtl: duration(MINUTE_MS, 7 * DAY_MS).prefault('24h'),
  idleTimeout: duration(SECOND_MS, DAY_MS).prefault('60s'),
};

/** Longest drain allowed: a stop that waits longer than this is a hang, not a drain. */
const MAX_DRAIN_MS = HOUR_MS;
const shutdownShape = { drainTimeout: duration(0, MAX_DRAIN_MS).prefault('30s') };
const ledgerShape = {
  enabled: z.boolean().default(true),
  path: filePath().optional(),
  flushInterval: duration(10, MINUTE_MS).prefault('1s'),
  rollupRetention: duration(HOUR_MS, 3650 * DAY_MS).prefault('90d'),
  refusalRetention: duration(HOUR_MS, 3650 * DAY_MS).prefault('7d'),
  maxRefusals: int(1_000, 100_000_000).default(1_000_000),
  maxKeysPerMinute: int(100, 10_000_000).default(50_000),
  robotsBodiesPerOrigin: int(0, 100).default(5),
  robotsBodyBytes: size(0, 64 * 1_048_576).prefault('500KiB'),
  pruneInterval: duration(SECOND_MS, DAY_MS).prefault('10m'),
};

const metricsShape = {
  tokenLabels: int(1, 1_000).default(20),
  identityLabels: int(1, 1_000).default(20),
  busiestOrigins: int(0, 1_000).default(10),
};

const redisStateShape = {
  url: z
    .string()
    .refine((u) => /^rediss?:\/\/[^\s]+$/.test(u) && URL.canParse(u), { message: 'must be a redis:// or rediss:// URL, e.g. redis://redis:6379' })
    .default('redis://127.0.0.1:6379'),
  keyPrefix: z.string().max(100).default('robots-proxy:'),
  onUnavailable: z.enum(['local', 'deny']).default('local'),
  commandTimeout: duration(10, MINUTE_MS).prefault('500ms'),
  slotLease: duration(100, HOUR_MS).prefault('30s'),
  robotsLockLease: duration(100, HOUR_MS).prefault('15s'),
};

const stateShape = {
  backend: z.enum(['memory', 'redis']).default('memory'),
  fleetSize: int(1, 1_000).default(1),
  redis: section(redisStateShape),
};

const logShape = { level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') };

type Issues = z.core.$RefinementCtx['issues'];
function fail(issues: Issues, path: (string | number)[], message: string, input: unknown): void {
  issues.push({ code: 'custom', message, input, path });
}

const robotsSchema = section(robotsShape).transform((r, ctx): RobotsConfig => {
  if (r.minTtl !== undefined && r.minTtl > r.ttl) {
    fail(ctx.issues, ['minTtl'], `must not exceed ttl (${formatDuration(r.ttl)})`, r.minTtl);
  }
  if (r.errorRetryMax !== undefined && r.errorRetryMax < r.errorRetry) {
    fail(ctx.issues, ['errorRetryMax'], `must be at least errorRetry (${formatDuration(r.errorRetry)})`, r.errorRetryMax);
  }
  return {
    userAgent: r.userAgent,
    ttlMs: r.ttl,
    minTtlMs: r.minTtl ?? Math.min(MINUTE_MS, r.ttl),
    errorRetryMs: r.errorRetry,
    errorRetryMaxMs: r.errorRetryMax ?? Math.max(30 * MINUTE_MS, r.errorRetry),
    maxBytes: r.maxBytes,
    maxRedirects: r.maxRedirects,
    timeoutMs: r.timeout,
    maxOrigins: r.maxOrigins,
    cacheBytes: r.cacheBytes,
  };
});

const pacingSchema = section(pacingShape).transform((p, ctx): PacingConfig => {
  if (p.maxBackoff !== undefined && p.maxBackoff < p.backoff) {
    fail(ctx.issues, ['maxBackoff'], `must be at least backoff (${formatDuration(p.backoff)})`, p.maxBackoff);
  }
  return {
    model: p.model,
    enabled: p.enabled,
    maxConcurrency: p.maxConcurrency,
    minDelayMs: p.minDelay,
    maxWaitMs: p.maxWait,
    maxQueue: p.maxQueue,
    maxQueuePerIdentity: p.maxQueuePerIdentity,
    windowMs: p.window,
    backoffMs: p.backoff,
    maxBackoffMs: p.maxBackoff ?? Math.max(5 * MINUTE_MS, p.backoff),
    maxRetryAfterMs: p.maxRetryAfter,
    maxCrawlDelayMs: p.maxCrawlDelay,
    maxSlotHoldMs: p.maxSlotHold,
  };
});

const clientsSchema = section(clientsShape).transform((c, ctx): ClientsConfig => {
  const { maxConnections, maxConnectionsPerClient } = c;
  if (typeof maxConnections === 'number' && typeof maxConnectionsPerClient === 'number' && maxConnectionsPerClient > maxConnections) {
    fail(ctx.issues, ['maxConnectionsPerClient'], `must not exceed maxConnections (${maxConnections})`, maxConnectionsPerClient);
  }
  return {
    maxConnections,
    maxConnectionsPerClient,
    reservedDescriptors: c.reservedDescriptors,
    idleTimeoutMs: c.idleTimeout,
    requestBodyTimeoutMs: c.requestBodyTimeout,
    responseWriteTimeoutMs: c.responseWriteTimeout,
  };
});

const upstreamSchema = section(upstreamShape).transform(
  (u): UpstreamConfig => ({
    timeoutMs: u.timeout,
    connectTimeoutMs: u.connectTimeout,
    allowPrivateNetworks: u.allowPrivateNetworks,
    ...(u.caFile === undefined ? {} : { caFile: u.caFile }),
  }),
);

const hostOverrideSchema = section(hostOverrideShape).transform(
  (h): HostOverride => ({
    ...(h.minDelay === undefined ? {} : { minDelayMs: h.minDelay }),
    ...(h.maxConcurrency === undefined ? {} : { maxConcurrency: h.maxConcurrency }),
  }),
);

const hostsSchema = z
  .preprocess((value, ctx) => {
    // z.record assigns keys, so "__proto__" would vanish silently; no real hostname is spelt so.
    if (value !== null && typeof value === 'object' && Object.hasOwn(value, '__proto__')) {
      fail(ctx.issues, ['__proto__'], 'is not a hostname', value);
      return {};
    }
    return value ?? {};
  }, z.record(z.string(), hostOverrideSchema))
  .transform((hosts, ctx) => {
    const normalised: [string, HostOverride][] = [];
    const seen = new Map<string, string>();
    for (const [key, override] of Object.entries(hosts)) {
      const result = normaliseHostKey(key);
      if (!result.ok) {
        fail(ctx.issues, [key], result.reason, key);
        continue;
      }
      const earlier = seen.get(result.value);
      if (earlier !== undefined) {
        const kind = result.value.includes('://') ? 'origin' : result.value.startsWith('*.') ? 'host glob' : 'host';
        fail(ctx.issues, [key], `names the same ${kind} as "${earlier}"`, key);
        continue;
      }
      seen.set(result.value, key);
      normalised.push([result.value, override]);
    }
    // Object.fromEntries defines own properties, so a key such as "__proto__" stays data.
    return Object.fromEntries(normalised) as Readonly<Record<string, HostOverride>>;
  });

/** A match field: one string or a non-empty list of them. */
function oneOrMany(item: z.ZodType<string>) {
  return z.union([item, z.array(item).min(1, { message: 'must list at least one value' })]).transform((v) => (Array.isArray(v) ? v : [v]));
}

/** Visible ASCII without spaces, quotes, `;`, `,` or `=`: it goes into the decision header as written. */
const RULE_NAME = /^[A-Za-z0-9._:/*@\[\]-]{1,300}$/;
const RATE = /^\s*(\d{1,7})\s*\/\s*(s|m|h)\s*$/;
const RATE_PERIOD_MS = { s: SECOND_MS, m: MINUTE_MS, h: HOUR_MS } as const;

/** `30/m` -> 30 requests per 60 000 ms; units `s`, `m`, `h`. */
const rateField = () =>
  z.unknown().transform((value, ctx): PolicyRate => {
    const m = typeof value === 'string' ? RATE.exec(value) : null;
    const requests = m ? Number(m[1]) : 0;
    if (!m || requests < 1) {
      ctx.issues.push({ code: 'custom', message: `must be "<requests>/<s|m|h>" with at least 1 request, e.g. "30/m", got ${JSON.stringify(value)}`, input: value });
      return z.NEVER;
    }
    return { requests, periodMs: RATE_PERIOD_MS[m[2] as keyof typeof RATE_PERIOD_MS] };
  });

const policyRuleShape = {
  name: z.string().regex(RULE_NAME, { message: 'must be 1-300 letters, digits and "._:/*@[]-" (no spaces: it is shown in the X-Robots-Proxy-Decision header)' }),
  action: z.enum(['deny', 'allow', 'report', 'pace']).optional(),
  identity: oneOrMany(z.string().min(1)).optional(),
  token: oneOrMany(z.string().regex(/^[A-Za-z0-9_-]+$/, { message: 'must be a product token: letters, digits, "-" and "_" (RFC 9309 §2.2.1), whole name' })).optional(),
  origin: oneOrMany(z.string()).optional(),
  path: oneOrMany(z.string().regex(/^[/*]/, { message: 'must be a path pattern starting with "/" or "*", as in robots.txt (e.g. "/admin", "/*.pdf$")' })).optional(),
  method: oneOrMany(z.string().regex(/^[A-Za-z]{1,20}$/, { message: 'must be an HTTP method, e.g. GET' })).optional(),
  minDelay: duration(0).optional(),
  maxConcurrency: int(1, 1024).optional(),
  rate: rateField().optional(),
};

/** A path pattern as written (UTF-8) -> the octet string the robots.txt matcher compares (RFC 9309 §2.2.2). */
function normaliseRulePath(path: string): string {
  return normalisePattern(Buffer.from(path, 'utf8').toString('latin1'));
}

const policyRuleSchema = z.strictObject(policyRuleShape).transform((r, ctx): PolicyRuleConfig => {
  const hasPacing = r.minDelay !== undefined || r.maxConcurrency !== undefined || r.rate !== undefined;
  const action = r.action ?? (hasPacing ? 'pace' : undefined);
  if (action === undefined) fail(ctx.issues, ['action'], 'is required: deny, allow, report, or pace (with minDelay, maxConcurrency or rate)', r.action);
  if (action === 'deny' && hasPacing) fail(ctx.issues, ['action'], 'deny sends nothing upstream: remove minDelay, maxConcurrency and rate, or use another action', r.action);
  if (action === 'pace' && !hasPacing) fail(ctx.issues, ['action'], 'pace needs minDelay, maxConcurrency or rate', r.action);
  const origins: string[] = [];
  for (const [i, key] of (r.origin ?? []).entries()) {
    const result = normaliseHostKey(key);
    if (result.ok) origins.push(result.value);
    else fail(ctx.issues, ['origin', ...(r.origin!.length > 1 ? [i] : [])], result.reason, key);
  }
  return {
    name: r.name,
    action: action ?? 'pace',
    ...(r.identity !== undefined ? { identities: r.identity } : {}),
    ...(r.token !== undefined ? { tokens: r.token.map((t) => t.toLowerCase()) } : {}),
    ...(r.origin !== undefined ? { origins } : {}),
    ...(r.path !== undefined ? { paths: r.path.map(normaliseRulePath) } : {}),
    ...(r.method !== undefined ? { methods: r.method.map((m) => m.toUpperCase()) } : {}),
    ...(r.minDelay !== undefined ? { minDelayMs: r.minDelay } : {}),
    ...(r.maxConcurrency !== undefined ? { maxConcurrency: r.maxConcurrency } : {}),
    ...(r.rate !== undefined ? { rate: r.rate } : {}),
  };
});

/** Most rules in `policy.rules`: matching is a linear scan, so a bound keeps it cheap. */
const MAX_POLICY_RULES = 1_000;

const policyShape = { rules: z.preprocess((v) => v ?? [], z.array(policyRuleSchema).max(MAX_POLICY_RULES)) };

const policySchema = section(policyShape).transform((p, ctx): PolicyConfig => {
  const seen = new Set<string>();
  p.rules.forEach((rule, i) => {
    if (seen.has(rule.name)) fail(ctx.issues, ['rules', i, 'name'], `"${rule.name}" names an earlier rule too: rule names must be unique`, rule.name);
    seen.add(rule.name);
  });
  return { rules: p.rules };
});

const shutdownSchema = section(shutdownShape).transform((s): ShutdownConfig => ({ drainTimeoutMs: s.drainTimeout }));

const httpsSchema = section(httpsShape).transform((h, ctx): HttpsConfig => {
  if ((h.caCert === undefined) !== (h.caKey === undefined)) {
    const [given, missing] = h.caCert === undefined ? ['caKey', 'caCert'] : ['caCert', 'caKey'];
    fail(ctx.issues, [given], `is set but ${missing} is not: set both, or neither to use a generated CA`, h.caCert ?? h.caKey);
  }
  return {
    mode: h.mode,
    ...(h.caCert === undefined ? {} : { caCert: h.caCert }),
    ...(h.caKey === undefined ? {} : { caKey: h.caKey }),
    leafTtlMs: h.leafTtl,
    idleTimeoutMs: h.idleTimeout,
  };
});

const ledgerSchema = section(ledgerShape).transform(
  (l): LedgerConfig => ({
    enabled: l.enabled,
    ...(l.path === undefined ? {} : { path: l.path }),
    flushIntervalMs: l.flushInterval,
    rollupRetentionMs: l.rollupRetention,
    refusalRetentionMs: l.refusalRetention,
    maxRefusals: l.maxRefusals,
    maxKeysPerMinute: l.maxKeysPerMinute,
    robotsBodiesPerOrigin: l.robotsBodiesPerOrigin,
    robotsBodyBytes: l.robotsBodyBytes,
    pruneIntervalMs: l.pruneInterval,
  }),
);

const metricsSchema = section(metricsShape).transform((m): MetricsConfig => ({ ...m }));

/**
 * Two `access.clients` entries for one range (after normalisation: `10.1.2.3/8` is `10.0.0.0/8`,
 * `::ffff:127.0.0.1` is `127.0.0.1/32`) that say different things (identity or binding): the
 * first would always apply and the second never, silently. Refused at the second, naming the first.
 * The same entry written twice says nothing new and is accepted.
 */
function checkDuplicateRanges(clients: readonly ClientRangeConfig[], issues: Issues): void {
  const seen = new Map<string, number>();
  clients.forEach((entry, i) => {
    const earlier = seen.get(entry.range);
    if (earlier === undefined) {
      seen.set(entry.range, i);
      return;
    }
    const first = clients[earlier] as ClientRangeConfig;
    if (first.identity === entry.identity && first.binding === entry.binding) return;
    const says = (e: ClientRangeConfig) => (e.identity === undefined ? 'no identity' : `identity ${JSON.stringify(e.identity)}${e.binding === true ? ' (binding)' : ''}`);
    fail(issues, ['clients', i], `is the range ${entry.range} again, already listed at access.clients[${earlier}] with ${says(first)}: only that entry would ever apply (one entry per range)`, entry.range);
  });
}

const accessSchema = section(accessShape).transform((a, ctx): AccessConfig => {
  checkDuplicateRanges(a.clients, ctx.issues);
  return {
    clients: a.clients,
    ...(a.credentialsFile === undefined ? {} : { credentialsFile: a.credentialsFile }),
    realm: a.realm,
    maxAuthFailures: a.maxAuthFailures,
    authFailureWindowMs: a.authFailureWindow,
    maxCredentialChecks: a.maxCredentialChecks,
  };
});

const identityEntrySchema = section(identityEntryShape).transform((i, ctx): IdentityConfig => {
  if (i.userAgent === 'set' && i.userAgentValue === undefined) {
    fail(ctx.issues, ['userAgentValue'], 'is required when userAgent is set: the User-Agent to send', i.userAgentValue);
  }
  if (i.userAgent === 'append' && i.tokens.length === 0) {
    fail(ctx.issues, ['userAgent'], 'append needs tokens: it appends the first bound token', i.userAgent);
  }
  return {
    tokens: i.tokens,
    userAgent: i.userAgent,
    ...(i.userAgentValue === undefined ? {} : { userAgentValue: i.userAgentValue }),
    ...(i.onMismatch === undefined ? {} : { onMismatch: i.onMismatch }),
  };
});

const identitiesSchema = z
  .preprocess((value, ctx) => {
    if (value !== null && typeof value === 'object' && Object.hasOwn(value, '__proto__')) {
      fail(ctx.issues, ['__proto__'], `is not an identity name: ${IDENTITY_NAME_HINT}`, value);
      return {};
    }
    return value ?? {};
  }, z.record(z.string(), identityEntrySchema))
  .transform((identities, ctx) => {
    for (const name of Object.keys(identities)) {
      if (!IDENTITY_NAME.test(name)) fail(ctx.issues, [name], `is not an identity name: ${IDENTITY_NAME_HINT}`, name);
    }
    return Object.fromEntries(Object.entries(identities)) as Readonly<Record<string, IdentityConfig>>;
  });

const stateSchema = section(stateShape).transform(
  (s): StateConfig => ({
    backend: s.backend,
    fleetSize: s.fleetSize,
    redis: {
      url: s.redis.url,
      keyPrefix: s.redis.keyPrefix,
      onUnavailable: s.redis.onUnavailable,
      commandTimeoutMs: s.redis.commandTimeout,
      slotLeaseMs: s.redis.slotLease,
      robotsLockLeaseMs: s.redis.robotsLockLease,
    },
  }),
);

const rootShape = {
  listen: section(listenShape),
  admin: section(adminShape),
  clients: clientsSchema,
  robots: robotsSchema,
  pacing: pacingSchema,
  upstream: upstreamSchema,
  hosts: hostsSchema,
  policy: policySchema,
  enforcement: z.enum(['enforce', 'report']).default('enforce'),
  https: httpsSchema,
  stateDir: filePath().default('./state'),
  log: section(logShape),
  shutdown: shutdownSchema,
  ledger: ledgerSchema,
  metrics: metricsSchema,
  access: accessSchema,
  identities: identitiesSchema,
  identity: section(identityDefaultsShape),
  state: stateSchema,
};

/** True for a bind host that is loopback only (`127.0.0.0/8`, `::1`, `localhost`). */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost' || host === '::1' || host === '[::1]') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::']);

/**
 * The configuration schema: parses the plain value of a YAML document (keys as
 * in `config/default.yaml`) into a {@link Config}. Use `safeParse`; issue paths
 * are YAML key paths. Missing keys take their defaults; `{}` is valid.
 */
export const configSchema: z.ZodType<Config> = z.strictObject(rootShape).transform((c, ctx): Config => {
  const { listen, admin } = c;
  const sameHost = listen.host === admin.host || WILDCARD_HOSTS.has(listen.host) || WILDCARD_HOSTS.has(admin.host);
  if (admin.enabled && listen.port !== 0 && listen.port === admin.port && sameHost) {
    fail(ctx.issues, ['admin', 'port'], `must differ from listen.port (${listen.port})`, admin.port);
  }
  if (admin.token !== undefined && admin.tokenFile !== undefined) {
    fail(ctx.issues, ['admin', 'tokenFile'], 'is set but so is admin.token: set one of them', admin.tokenFile);
  }
  // The admin API can reload the config and make the proxy fetch any URL: beyond loopback it needs a token.
  if (admin.enabled && !isLoopbackHost(admin.host) && admin.token === undefined && admin.tokenFile === undefined) {
    fail(
      ctx.issues,
      ['admin', 'host'],
      `${admin.host} is beyond loopback: set admin.token or admin.tokenFile (admin requests then need "Authorization: Bearer <token>"), or bind the admin API to 127.0.0.1`,
      admin.host,
    );
  }
  // The reserve is what keeps the admin API reachable when the proxy is saturated.
  const minReserve = admin.maxConnections + OWN_DESCRIPTORS;
  if (admin.enabled && c.clients.reservedDescriptors < minReserve) {
    fail(ctx.issues, ['clients', 'reservedDescriptors'], `must be at least admin.maxConnections + ${OWN_DESCRIPTORS} (${minReserve})`, c.clients.reservedDescriptors);
  }
  return c;
});

const KNOWN_KEYS: Readonly<Record<string, readonly string[]>> = {
  '': Object.keys(rootShape),
  listen: Object.keys(listenShape),
  admin: Object.keys(adminShape),
  clients: Object.keys(clientsShape),
  robots: Object.keys(robotsShape),
  pacing: Object.keys(pacingShape),
  upstream: Object.keys(upstreamShape),
  'hosts.*': Object.keys(hostOverrideShape),
  policy: Object.keys(policyShape),
  'policy.rules.*': Object.keys(policyRuleShape),
  https: Object.keys(httpsShape),
  log: Object.keys(logShape),
  shutdown: Object.keys(shutdownShape),
  ledger: Object.keys(ledgerShape),
  metrics: Object.keys(metricsShape),
  access: Object.keys(accessShape),
  'identities.*': Object.keys(identityEntryShape),
  identity: Object.keys(identityDefaultsShape),
  state: Object.keys(stateShape),
  'state.redis': Object.keys(redisStateShape),
};

/**
 * The keys allowed in the mapping at a YAML key path (`[]` for the top level,
 * `['pacing']`, `['hosts', 'example.com']`), for "did you mean" hints.
 * @returns the allowed keys, or an empty list where the path names no mapping.
 */
export function knownKeysAt(path: readonly PropertyKey[]): readonly string[] {
  const key =
    (path[0] === 'hosts' || path[0] === 'identities') && path.length === 2
      ? `${String(path[0])}.*`
      : path[0] === 'policy' && path[1] === 'rules' && path.length === 3
        ? 'policy.rules.*'
        : path.join('.');
  return KNOWN_KEYS[key] ?? [];
}

/**
 * Normalises a `hosts` key: an origin `scheme://host[:port]` (http or https)
 * becomes `URL.origin` (lower case, punycode, default port elided, RFC 9309
 * §2.3); a bare hostname or IP becomes `URL.hostname` (`::1` -> `[::1]`); in both an
 * IPv4-mapped IPv6 host is its IPv4 address, as requests are keyed (`hostKeyOf`); a host
 * glob `*.example.com` (a leading `*` label: any subdomain, at any depth, not
 * `example.com` itself) becomes `*.` plus the normalised rest. A `*` anywhere
 * else, in an origin, or alone is refused. Extension, not in RFC 9309. Never throws.
 */
export function normaliseHostKey(key: string): { ok: true; value: string } | { ok: false; reason: string } {
  const hint = 'write an origin "scheme://host[:port]", a bare hostname or a host glob, e.g. "https://example.com", "example.com" or "*.example.com"';
  if (key.includes('://')) {
    if (key.includes('*')) return { ok: false, reason: 'a host glob has no scheme or port: write "*.example.com" (it covers every scheme and port)' };
    let url: URL;
    try {
      url = new URL(key);
    } catch {
      return { ok: false, reason: `is not a valid origin: ${hint}` };
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: 'origin scheme must be http or https' };
    if (url.username !== '' || url.password !== '' || url.pathname !== '/' || url.search !== '' || url.hash !== '') {
      return { ok: false, reason: `must be an origin without path, query or credentials: ${hint}` };
    }
    // Keyed as the proxy keys a request's origin: an IPv4-mapped host is its IPv4 address.
    return { ok: true, value: `${url.protocol}//${hostKeyOf(url.host)}` };
  }
  if (key.includes('*')) {
    const rest = key.startsWith('*.') ? key.slice(2) : undefined;
    if (rest === undefined || rest.includes('*') || rest === '') {
      return { ok: false, reason: `a "*" is allowed only as the whole first label of a host glob, e.g. "*.example.com"; for every host, set pacing instead` };
    }
    if (isIP(rest) !== 0) return { ok: false, reason: 'a host glob needs a domain name after "*.", not an IP address' };
    const normalised = normaliseHostname(rest);
    if (normalised === undefined) return { ok: false, reason: `is not a host glob: ${hint}` };
    // `*.0.1`: the URL parser reads "0.1" as the IPv4 address 0.0.0.1.
    if (isIP(normalised) !== 0) return { ok: false, reason: 'a host glob needs a domain name after "*.", not an IP address' };
    return { ok: true, value: `*.${normalised}` };
  }
  const normalised = normaliseHostname(key);
  return normalised === undefined ? { ok: false, reason: `is not a hostname: ${hint}` } : { ok: true, value: normalised };
}

/**
 * `URL.hostname` of a bare hostname or IP (`::1` -> `[::1]`), or undefined when it is not one; an
 * IPv4-mapped IPv6 address is its IPv4 address (`::ffff:127.0.0.1` -> `127.0.0.1`), as the proxy
 * keys a request's host (target-origin.ts `hostKeyOf`), so that a rule written either way matches.
 * Never throws.
 */
function normaliseHostname(key: string): string | undefined {
  const host = isIP(key) === 6 ? `[${key}]` : key;
  if (/[/:@?#\s]/.test(host.replace(/^\[.*\]$/, '')) || host === '') return undefined;
  try {
    const url = new URL(`http://${host}/`);
    if (url.port !== '' || url.pathname !== '/') return undefined;
    return hostKeyOf(url.hostname);
  } catch {
    return undefined;
  }
}
