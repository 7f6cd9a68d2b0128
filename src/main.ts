/**
 * Composition root: the only place that wires real servers. `serve` loads the
 * configuration, builds every collaborator, starts the proxy and admin
 * listeners and handles signals until stopped; `startProxy` does the same from
 * a validated Config (tests use it with port 0). A reload swaps a new
 * configuration into the running components; a stop drains them.
 */
import { getHeapStatistics } from 'node:v8';
import type { lookup } from 'node:dns';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { Agent } from 'undici';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import type { Logger } from 'pino';
import { epochAheadOfMonotonicMs, systemClock, type Clock } from './clock.js';
import { hostOverridesAsYaml, listenConfigError, loadConfig, planReload, readCaFile, stateDirConfigError, type Config, type ReloadPlan } from './config/index.js';
import { makeDirectory } from './make-directory.js';
import { RobotsCache, RobotsFetcher, nextFetchAtMs, type RobotsFetcherOptions } from './cache/index.js';
import { FleetPacer, Pacer, type PacingOptions, type RequestPacer } from './pacing/index.js';
import type { RedisFleetState } from './state/index.js';
import { parseRobotsTxt } from './robots/index.js';
import { createLogger, droppedLogLinesOf, LimitReporter, ProxyMetrics, writeAccessLog, type AccessEntry } from './audit/index.js';
import { AdminServer, describeRobotsSnapshot } from './admin/index.js';
import { contentHashOf, Ledger } from './audit/ledger/index.js';
import { ReportRunner } from './audit/report/report-runner.js';
import { UpstreamForwarder } from './proxy/forwarder.js';
import { TargetGuard } from './proxy/target-guard.js';
import { makeViaPseudonym } from './proxy/headers.js';
import { RequestPipeline } from './proxy/pipeline.js';
import { parseProxyTarget } from './proxy/proxy-target.js';
import { ConnectHandler } from './proxy/connect.js';
import { UpgradeRelay } from './proxy/upgrade.js';
import { ProxyServer } from './proxy/proxy-server.js';
import { ConnectionGuard } from './proxy/connection-guard.js';
import { readOpenFileLimit, resolveConnectionLimits } from './proxy/connection-limits.js';
import { loadOrCreateCa, warnIfCaExpiring, caExpiryWarning, type CaMaterial } from './proxy/tls/certificate-authority.js';
import { LeafCertificateIssuer } from './proxy/tls/leaf-certificates.js';
import { CertificateError, ConfigError, UnknownIdentityError } from './errors.js';
import { AccessControl, prepareAccess, type PreparedAccess } from './access/access-control.js';
import { compareCredentials, type CredentialsChange } from './access/credentials-file.js';
import { resolveAdminToken } from './access/admin-token.js';
import type { SecretFileWarning } from './access/secret-file-mode.js';
import { unknownIdentityWarnings, type UnknownIdentityWarning } from './access/identity-names.js';
import { isLoopbackHost } from './config/schema.js';
import { Drain, type DrainReport } from './lifecycle/drain.js';
import { reloadConfigFile, type ReloadReport } from './lifecycle/reload.js';
import { ledgerPathOf } from './audit/report/run-report.js';
import { runUntilStopped } from './lifecycle/process-handlers.js';
import { decideWithoutRobots } from './policy/decide.js';
import { upstreamConnector } from './upstream-connector.js';

/** Options of {@link serve}. */
export interface ServeOptions {
  /** Path of the YAML configuration file. */
  configPath: string;
}

/** A running proxy, as returned by {@link startProxy}. */
export interface RunningProxy {
  /** Bound address of the proxy listener. */
  proxyAddress: AddressInfo;
  /** Bound address of the admin listener, or undefined when disabled. */
  adminAddress: AddressInfo | undefined;
  /** The interception CA, or undefined when `https.mode` is not `intercept`. */
  ca: CaMaterial | undefined;
  metrics: ProxyMetrics;
  robotsCache: RobotsCache;
  /** The pacer: this process's own, or a fleet's (`state.backend: redis`). */
  pacer: RequestPacer;
  /** The fleet's Redis stores, or undefined with `state.backend: memory`. */
  fleetState: RedisFleetState | undefined;
  pipeline: RequestPipeline;
  /** The proxy listener's connection caps and idle timeout, with the connections open now. */
  connections: ConnectionGuard;
  /** The process logger (access lines included). */
  logger: Logger;
  /** The configuration in force (the start one, or the latest reload's). */
  currentConfig(): Config;
  /**
   * Swaps `config` in without dropping a connection or a queued request: pacing options and
   * policy rules and enforcement (queued requests included), robots.txt fetching, upstream timeouts, the log
   * level, the leaf certificate lifetime, the tunnel idle timeout and the drain timeout change
   * now; the keys in
   * `RESTART_REQUIRED_KEYS` (listeners, `https.mode`, the CA, `stateDir`, ...) keep their
   * running value. Logs nothing (see {@link RunningProxy.reloadFromFile}).
   * @returns what changed live and what needs a restart.
   */
  reload(config: Config): ReloadPlan;
  /**
   * Re-reads the file given as `StartOptions.configPath` and reloads it (SIGHUP and
   * `POST /reload` call this); an invalid file changes nothing. Logs the outcome. Never throws.
   * @returns the outcome; `config-invalid` also when the proxy was not started from a file.
   */
  reloadFromFile(): ReloadReport;
  /**
   * Drains and closes (see `lifecycle/drain.ts`): queued requests get 503, requests in flight
   * get `drainTimeoutMs` (default: `shutdown.drainTimeout`) to finish. Idempotent.
   */
  shutdown(options: { trigger: string; drainTimeoutMs?: number }): Promise<DrainReport>;
  /** Cuts a shutdown under way short (a second SIGTERM/SIGINT). */
  forceShutdown(trigger: string): void;
  /** Writes the access line of every request in flight with `error`, and the ledger's pending aggregates (before a fatal exit). */
  abandonInFlight(error: string): void;
  /** The compliance ledger, or undefined when `ledger.enabled` is false. */
  ledger: Ledger | undefined;
  /** Stops both listeners (requests in flight get 1 s) and releases every pool, timer and socket. */
  close(): Promise<void>;
}

/** Collaborators a test may replace. */
export interface StartOptions {
  clock?: Clock;
  logger?: Logger;
  /** Resolves host names for the target guard, `dns.lookup`'s signature (tests map names to loopback). @default dns.lookup */
  resolve?: typeof lookup;
  /** Time a client has, from the 200 answer to a CONNECT, to complete its TLS handshake, ms (intercept mode). @default 10000 */
  handshakeTimeoutMs?: number;
  /** The file `config` was read from: enables {@link RunningProxy.reloadFromFile} and `POST /reload`. */
  configPath?: string;
}

/** The pacer's options from a config. */
export function pacingOptionsOf(config: Config): PacingOptions {
  return {
    model: config.pacing.model,
    maxConcurrency: config.pacing.maxConcurrency,
    maxWaitMs: config.pacing.maxWaitMs,
    maxQueue: config.pacing.maxQueue,
    maxQueuePerIdentity: config.pacing.maxQueuePerIdentity,
    windowMs: config.pacing.windowMs,
    retryAfterCapMs: config.pacing.maxRetryAfterMs,
    backoffBaseMs: config.pacing.backoffMs,
    backoffCapMs: config.pacing.maxBackoffMs,
    maxSlotHoldMs: config.pacing.maxSlotHoldMs,
  };
}

/** The robots.txt fetcher's options from a config (without its dispatcher). */
function fetcherOptionsOf(config: Config): RobotsFetcherOptions {
  return {
    userAgent: config.robots.userAgent,
    ttlMs: config.robots.ttlMs,
    minTtlMs: config.robots.minTtlMs,
    errorRetryMs: config.robots.errorRetryMs,
    errorRetryMaxMs: config.robots.errorRetryMaxMs,
    retryAfterCapMs: config.pacing.maxRetryAfterMs,
    maxCrawlDelayMs: config.pacing.maxCrawlDelayMs,
    maxBytes: config.robots.maxBytes,
    maxRedirects: config.robots.maxRedirects,
    timeoutMs: config.robots.timeoutMs,
  };
}

function readExtraCas(config: Config): string[] {
  return config.upstream.caFile ? [readCaFile(resolve(config.upstream.caFile))] : [];
}

/**
 * Logs a warning when `robots.cacheBytes` is more than half of V8's heap
 * limit (Node's default depends on the machine's memory; `--max-old-space-size`
 * raises it): the process would run out of heap before the cache is full.
 */
function warnIfCacheExceedsHeap(cacheBytes: number, logger: Logger): void {
  const heapLimitBytes = getHeapStatistics().heap_size_limit;
  if (cacheBytes > heapLimitBytes / 2) {
    logger.warn(
      { event: 'config-warning', key: 'robots.cacheBytes', cacheBytes, heapLimitBytes },
      'robots.cacheBytes is more than half of the heap limit: lower it, or raise the heap limit (node --max-old-space-size)',
    );
  }
}

/**
 * Warns when the proxy listens beyond loopback but `access.clients` admits loopback only: every
 * other machine would get 403 `client-not-allowed`; or admits every address (a `/0` range)
 * without a credentials file: an open proxy.
 */
function warnIfOpenToNobody(config: Config, logger: Logger): void {
  if (isLoopbackHost(config.listen.host)) return;
  const loopbackOnly = config.access.clients.every((range) => range.range.startsWith('127.') || range.range === '::1/128');
  if (loopbackOnly) {
    logger.warn(
      { event: 'config-warning', key: 'access.clients', listen: config.listen.host },
      'listen.host is beyond loopback but access.clients admits loopback clients only: other machines get 403 client-not-allowed; list their ranges in access.clients',
    );
  }
  // The opposite mistake: an open proxy, anyone who reaches the port crawls through it.
  const everyone = config.access.clients.filter((range) => range.range.endsWith('/0')).map((range) => range.range);
  if (everyone.length > 0 && config.access.credentialsFile === undefined) {
    logger.warn(
      { event: 'config-warning', key: 'access.clients', listen: config.listen.host, ranges: everyone },
      `access.clients admits every address (${everyone.join(', ')}) and no access.credentialsFile is set: anyone who can reach ${config.listen.host} may use the proxy; list your networks' ranges, or require credentials`,
    );
  }
}

/** Logs one warning line per secret file others may read or write (`config-warning`, with the file and its mode). */
function warnAboutSecretFiles(warnings: readonly SecretFileWarning[], logger: Logger): void {
  for (const { key, file, mode, message } of warnings) logger.warn({ event: 'config-warning', key, file, mode }, message);
}

/** Logs one warning line per identity name that names nobody (`config-warning`, with the key and the name; see identity-names.ts). */
function warnAboutUnknownIdentities(warnings: readonly UnknownIdentityWarning[], logger: Logger): void {
  for (const { key, identity, message } of warnings) logger.warn({ event: 'config-warning', key, identity }, message);
}

/**
 * Logs a warning (`event: config-deprecated`) when the configuration still has `hosts` entries:
 * they keep working, as `pace` policy rules after `policy.rules`; the message shows the rules to
 * write instead.
 */
function warnIfHostsDeprecated(config: Config, logger: Logger): void {
  if (Object.keys(config.hosts).length === 0) return;
  const replacement = hostOverridesAsYaml(config.hosts);
  logger.warn(
    { event: 'config-deprecated', key: 'hosts', replacement },
    `hosts is deprecated: its entries apply as pace policy rules after policy.rules; write them as policy rules instead (append to policy.rules, remove hosts):\n${replacement}`,
  );
}


/** The ledger the config asks for (undefined when `ledger.enabled` is false); never throws (see {@link Ledger}). */
function createLedger(config: Config, clock: Clock, logger: Logger): Ledger | undefined {
  if (!config.ledger.enabled) return undefined;
  const l = config.ledger;
  return new Ledger({
    path: ledgerPathOf(config),
    clock,
    logger,
    flushIntervalMs: l.flushIntervalMs,
    pruneIntervalMs: l.pruneIntervalMs,
    rollupRetentionMs: l.rollupRetentionMs,
    refusalRetentionMs: l.refusalRetentionMs,
    maxRefusals: l.maxRefusals,
    maxKeysPerMinute: l.maxKeysPerMinute,
    robotsBodiesPerOrigin: l.robotsBodiesPerOrigin,
    robotsBodyBytes: l.robotsBodyBytes,
  });
}

/**
 * Loads or creates the interception CA named by the config.
 * @throws {ConfigError} (key `stateDir`) when the state directory cannot be
 *   created, (key `https.caCert`) when the configured CA cannot be used;
 *   {@link CertificateError} for a bad CA in the state directory.
 */
export async function loadCa(config: Config, logger?: Logger): Promise<CaMaterial> {
  if (!config.https.caCert) {
    await makeDirectory(config.stateDir, 0o700).catch((err: unknown) => {
      throw stateDirConfigError(config.stateDir, err);
    });
  }
  return loadOrCreateCa({
    stateDir: resolve(config.stateDir),
    ...(config.https.caCert ? { caCertPath: resolve(config.https.caCert) } : {}),
    ...(config.https.caKey ? { caKeyPath: resolve(config.https.caKey) } : {}),
    ...(logger ? { logger } : {}),
  }).catch((err: unknown) => {
    // The operator's own CA files: the fix is in the config, so say which key.
    if (!config.https.caCert || !(err instanceof CertificateError)) throw err;
    throw new ConfigError(`https.caCert: ${err.message}; set https.caCert and https.caKey to a readable PEM CA certificate and its unencrypted key, or remove both to use a generated CA`, { key: 'https.caCert' }, { cause: err });
  });
}

/**
 * Builds and starts the proxy from a validated config.
 * @throws {ConfigError} naming the key for an unreadable `upstream.caFile`, a
 *   `stateDir` that cannot be created, or an address that cannot be bound
 *   (`EADDRINUSE`, `EADDRNOTAVAIL`, `EACCES`); {@link CertificateError} for bad CA material.
 */
export async function startProxy(config: Config, options: StartOptions = {}): Promise<RunningProxy> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger({ level: config.log.level });
  const extraCaPems = readExtraCas(config);
  // Read before any listener starts: a bad credentials file or admin token stops the start.
  const preparedAtStart = prepareAccess(config);
  const access = new AccessControl(preparedAtStart, { clock });
  const adminToken: ReturnType<typeof resolveAdminToken> = config.admin.enabled ? resolveAdminToken(config.admin) : { token: undefined };
  if (adminToken.createdFile !== undefined) logger.info({ event: 'admin-token-created', file: adminToken.createdFile }, 'created the admin token file (mode 0600): admin requests need "Authorization: Bearer <its first line>"');
  warnAboutSecretFiles([...preparedAtStart.warnings, ...(adminToken.warning !== undefined ? [adminToken.warning] : [])], logger);
  warnIfOpenToNobody(config, logger);
  warnAboutUnknownIdentities(unknownIdentityWarnings(config, preparedAtStart.credentials), logger);
  const guard = new TargetGuard({ allowPrivate: config.upstream.allowPrivateNetworks, ...(options.resolve ? { resolve: options.resolve } : {}) });
  const viaPseudonym = makeViaPseudonym();

  // Built once: a `ca` option would rebuild the trust store (~20 ms) for every upstream TLS connection.
  const upstreamTls: SecureContext | undefined = extraCaPems.length > 0 ? createSecureContext({ ca: [...rootCertificates, ...extraCaPems] }) : undefined;
  const createRobotsAgent = (connectTimeoutMs: number): Agent =>
    new Agent({
      // A reset fails the robots.txt body in flight: a cut file is unreachable, never parsed; an
      // unsolicited 100 Continue before the answer is read past (upstream-connector.ts).
      connect: upstreamConnector(
        guard.connector({
          timeout: connectTimeoutMs,
          ...(upstreamTls ? { secureContext: upstreamTls } : {}),
        }),
      ),
    });
  let robotsAgent = createRobotsAgent(config.upstream.connectTimeoutMs);
  let metrics: ProxyMetrics | undefined;
  // Opened once nothing before the listeners can fail; the closures below read it when called.
  let ledger: Ledger | undefined;
  const fetcher = new RobotsFetcher({ ...fetcherOptionsOf(config), dispatcher: robotsAgent, clock });
  warnIfCacheExceedsHeap(config.robots.cacheBytes, logger);
  // A fleet shares robots snapshots, pacing slots and pauses through Redis (issue 10). Its modules,
  // and ioredis with them, are loaded only then: ioredis defines `class VerbatimString extends
  // String`, and on Node 20's V8 that leaves String.prototype with dictionary (slow) properties for
  // the life of the process, so every string method call in optimised code (`charCodeAt` in the
  // access line's encoder, the path normalisation, the policy's path rules) becomes a generic
  // property lookup, 2-3x slower (bench/PROFILE.md, "Issue 8 under close, instructions").
  const fleetState =
    config.state.backend === 'redis'
      ? await (await import('./state/index.js')).openRedisFleetState(config.state, {
          clock,
          logger,
          retainMs: config.robots.ttlMs,
          maxBodyBytes: config.robots.maxBytes,
          parse: (body) => parseRobotsTxt(body, { maxBytes: config.robots.maxBytes, maxCrawlDelaySeconds: config.pacing.maxCrawlDelayMs / 1000 }),
        })
      : undefined;
  warnIfHostsDeprecated(config, logger);
  // Before the robots cache: a robots.txt answered 429/503 pauses the origin's pages (below).
  const localPacer = new Pacer(pacingOptionsOf(config), clock);
  const pacer: RequestPacer = fleetState
    ? new FleetPacer(localPacer, {
        slots: fleetState.slots,
        fleetSize: config.state.fleetSize,
        onUnavailable: config.state.redis.onUnavailable,
        pacing: pacingOptionsOf(config),
        clock,
        onFallback: (kind) => metrics?.observeFleetFallback(kind),
      })
    : localPacer;
  const robotsCache = new RobotsCache({
    fetch: async (origin, context) => {
      const { snapshot, body, retryAfter } = await fetcher.fetchWithBody(origin, context);
      metrics?.observeRobotsFetch(snapshot.info);
      // Once per real fetch (a cached snapshot pauses nothing): an origin that answers its robots.txt
      // 429/503 must not then get the pages at full speed, whether they are disallowed (enforce),
      // forwarded anyway (report mode, an operator allow rule) or allowed by a kept snapshot
      // (RFC 9309 §2.3.1.4; DESIGN.md "Pacing semantics"); for a fleet, every instance pauses.
      // The log's times are whole ms (README): the pause's end rounded up, never before the pause.
      const pausedUntilMs = pacer.applyOverload(origin, { status: snapshot.info.status, retryAfter });
      // The content hash goes to the log too, so `report --from-logs` sees which fetches changed the file.
      const sha256 = body === null ? null : contentHashOf(body);
      ledger?.recordRobotsFetch({ origin, snapshot, body, ...(sha256 === null ? {} : { sha256 }) });
      // Once per fetch: the parse warnings (ignored lines, clamped values, truncation, HTML body), at most ~100 short ones.
      logger.info(
        { event: 'robots-fetch', origin, robots: snapshot.info, sha256, warnings: snapshot.robots?.warnings ?? [], ...(pausedUntilMs === undefined ? {} : { pausedUntilMs: Math.ceil(pausedUntilMs) }) },
        'robots.txt fetched',
      );
      return { ...snapshot, body };
    },
    ...(fleetState ? { flight: fleetState.snapshots } : {}),
    clock,
    maxOrigins: config.robots.maxOrigins,
    maxBytes: config.robots.cacheBytes,
    // A fetch holds its body (up to maxBytes, once as chunks and once joined) until it is parsed and stored.
    fetchReserveBytes: 2 * config.robots.maxBytes,
    errorRetryMs: config.robots.errorRetryMs,
    errorRetryMaxMs: config.robots.errorRetryMaxMs,
    logger,
  });
  const forwarder = new UpstreamForwarder({
    connectTimeoutMs: config.upstream.connectTimeoutMs,
    timeoutMs: config.upstream.timeoutMs,
    responseWriteTimeoutMs: config.clients.responseWriteTimeoutMs,
    ...(upstreamTls ? { secureContext: upstreamTls } : {}),
    createConnector: (connectOptions) => guard.connector(connectOptions),
    // An exchange that outlives its client keeps that client's place in the connection caps (connection-guard.ts).
    holdClientPlace: (res) => connections.holdPlace(res.req.socket?.remoteAddress),
  });

  let ca: CaMaterial | undefined;
  let issuer: LeafCertificateIssuer | undefined;
  if (config.https.mode === 'intercept') {
    ca = await loadCa(config, logger);
    issuer = new LeafCertificateIssuer(ca, { leafValidityMs: config.https.leafTtlMs, clock });
  }

  const connectionLimits = resolveConnectionLimits(config.clients, readOpenFileLimit());
  for (const warning of connectionLimits.warnings) logger.warn({ event: 'connection-limits', openFileLimit: connectionLimits.openFileLimit ?? null }, warning);
  let limitReporter: LimitReporter | undefined;
  const onLimit = (event: Parameters<LimitReporter['report']>[0]): void => limitReporter?.report(event);
  const connections = new ConnectionGuard({
    maxConnections: connectionLimits.maxConnections,
    maxConnectionsPerClient: connectionLimits.maxConnectionsPerClient,
    idleTimeoutMs: config.clients.idleTimeoutMs,
    onLimit,
  });

  ledger = createLedger(config, clock, logger);
  const ledgerStats = ledger === undefined ? undefined : ledger.stats.bind(ledger);
  metrics = new ProxyMetrics({
    pacing: () => pacer.stats(),
    originPacing: () => pacer.stats().byOrigin,
    ...(ledgerStats ? { ledger: ledgerStats } : {}),
    ...(fleetState ? { fleetAvailable: () => fleetState.connection.isAvailable } : {}),
    connections: () => connections.stats(),
    log: () => ({ droppedLines: droppedLogLinesOf(logger) }),
    robotsCache: () => {
      const stats = robotsCache.stats();
      return { size: stats.entries, bytes: stats.bytes + stats.reservedBytes, evictions: stats.evictions };
    },
    ...(issuer ? { tls: () => issuer.getStats() } : {}),
    ...(ca ? { tlsCaNotAfterMs: ca.notAfterMs } : {}),
  }, { tokenLabels: config.metrics.tokenLabels, identityLabels: config.metrics.identityLabels, busiestOrigins: config.metrics.busiestOrigins });
  limitReporter = new LimitReporter({ logger, metrics, clock });
  let drain: Drain | undefined;
  const onFinished = (entry: AccessEntry): void => {
    writeAccessLog(logger, entry);
    metrics?.observe(entry);
    drain?.observe(entry);
    ledger?.observe(entry);
  };

  const upgrade = new UpgradeRelay({ clock, onFinished, guard, logger, ...(upstreamTls ? { secureContext: upstreamTls } : {}), timeoutMs: config.upstream.timeoutMs, viaPseudonym });
  const pipeline = new RequestPipeline({ config, robots: robotsCache, pacer, forwarder, guard, clock, viaPseudonym, onFinished, onLimit, access });
  upgrade.setPipeline(pipeline);
  const connect = new ConnectHandler({
    mode: config.https.mode,
    issuer,
    pipeline,
    upgrade,
    clock,
    logger,
    onFinished,
    guard,
    viaPseudonym,
    idleTimeoutMs: config.https.idleTimeoutMs,
    connectTimeoutMs: config.upstream.connectTimeoutMs,
    keepAliveTimeoutMs: config.clients.idleTimeoutMs,
    ...(options.handshakeTimeoutMs !== undefined ? { handshakeTimeoutMs: options.handshakeTimeoutMs } : {}),
  });
  const proxy = new ProxyServer({ pipeline, connect, upgrade, clock, logger, viaPseudonym, onFinished, connections });
  const proxyAddress = await proxy.listen(config.listen.host, config.listen.port).catch((err: unknown) => {
    ledger?.close();
    void fleetState?.close();
    throw listenConfigError('listen', config.listen.host, config.listen.port, err);
  });
  guard.setOwnListeners([{ host: proxyAddress.address, port: proxyAddress.port }]);

  let current = config;
  /** The credentials file read for the reload under way (see `prepare`), applied with its config. */
  let preparedAccess: PreparedAccess | undefined;
  /** Puts a reloaded config (restart-only keys already kept) into every component. */
  const apply = (next: Config): void => {
    // First, as it may throw (a bad credentials file) before anything changed.
    const prepared = preparedAccess?.config === next ? preparedAccess : prepareAccess(next);
    preparedAccess = undefined;
    const previous = current;
    current = next;
    access.apply(prepared);
    logger.level = next.log.level;
    warnAboutSecretFiles(prepared.warnings, logger);
    warnAboutUnknownIdentities(unknownIdentityWarnings(next, prepared.credentials), logger);
    pipeline.setConfig(next);
    warnIfHostsDeprecated(next, logger);
    // The CA is kept until a restart: a reload reminds the operator of its expiry.
    if (ca) warnIfCaExpiring(ca, clock.nowMs(), logger);
    pacer.reconfigure(pacingOptionsOf(next));
    robotsCache.setErrorRetry(next.robots.errorRetryMs, next.robots.errorRetryMaxMs);
    forwarder.setTimeouts({
      timeoutMs: next.upstream.timeoutMs,
      connectTimeoutMs: next.upstream.connectTimeoutMs,
      responseWriteTimeoutMs: next.clients.responseWriteTimeoutMs,
    });
    upgrade.setTimeoutMs(next.upstream.timeoutMs);
    issuer?.setLeafValidity(next.https.leafTtlMs);
    connect.setTimeouts({ idleTimeoutMs: next.https.idleTimeoutMs, connectTimeoutMs: next.upstream.connectTimeoutMs });
    if (next.upstream.connectTimeoutMs !== previous.upstream.connectTimeoutMs) {
      // The connect timeout is built into the agent: fetches from now on use a new one; the old one lets its own finish.
      const old = robotsAgent;
      robotsAgent = createRobotsAgent(next.upstream.connectTimeoutMs);
      void old.close().catch(() => undefined);
      fetcher.reconfigure({ ...fetcherOptionsOf(next), dispatcher: robotsAgent });
    } else {
      fetcher.reconfigure(fetcherOptionsOf(next));
    }
  };
  const reloadFromFile = (): ReloadReport => {
    if (options.configPath === undefined) {
      return { ok: false, error: 'config-invalid', file: '', message: 'the proxy was not started from a configuration file' };
    }
    const prepare = (next: Config): CredentialsChange | undefined => {
      preparedAccess = prepareAccess(next);
      return preparedAccess.credentials === undefined ? undefined : compareCredentials(access.credentials, preparedAccess.credentials);
    };
    return reloadConfigFile(options.configPath, { config: current, isDraining: drain?.isDraining ?? false, prepare, apply }, logger);
  };

  let admin: AdminServer | undefined;
  let reportRunner: ReportRunner | undefined;
  const activeDrain = new Drain(
    {
      counts: () => ({
        requestsInFlight: pipeline.requestsInFlight,
        queued: pacer.stats().queued,
        httpConnections: proxy.drainTracker.httpConnections,
        tunnels: proxy.drainTracker.detachedSockets,
      }),
      isIdle: () => pipeline.requestsInFlight === 0 && proxy.drainTracker.activeRequests === 0 && connect.activeRequests === 0,
      beginDrain: () => {
        pipeline.beginDrain();
        proxy.beginDrain();
        connect.beginDrain();
        pacer.close(); // queued requests: 503 proxy-shutting-down
      },
      abandonInFlight: (error) => pipeline.abandonInFlight(error),
      teardown: async () => {
        connect.close();
        upgrade.close();
        await Promise.all([proxy.close(), admin?.close(), reportRunner?.close()]);
        await Promise.all([forwarder.close(), robotsAgent.close().catch(() => undefined)]);
        // After the listeners: every request's access entry has reached the ledger, every slot is released.
        ledger?.close();
        await fleetState?.close();
        logger.flush();
      },
    },
    { logger },
  );
  drain = activeDrain;

  let adminAddress: AddressInfo | undefined;
  if (config.admin.enabled) {
    // The page reads the file: what the ledger holds in memory is written first, so it is current.
    // Read on a worker thread: a long range's aggregation would otherwise stall forwarding.
    const report = new ReportRunner({ ledgerPath: ledger === undefined ? undefined : ledgerPathOf(config), beforeRead: () => ledger?.flush(), nowMs: () => clock.nowMs() });
    reportRunner = report;
    admin = new AdminServer({
      metrics,
      logger,
      explain: async (url, userAgent, identityName) => {
        // Read as the proxy reads a request's target (`example.com.` is `example.com`), so the answer is the proxy's.
        const parsed = parseProxyTarget(url);
        // A target the proxy answers 400 (port 0, no written host, user information) is explained as
        // that 400, without fetching a robots.txt for it.
        if (typeof parsed === 'string') return { ...decideWithoutRobots('bad-request', { detail: parsed }), robotsWarnings: [] };
        const target = parsed;
        if (identityName !== undefined && !access.isKnownIdentity(identityName)) throw new UnknownIdentityError(`unknown identity ${JSON.stringify(identityName)}`);
        const source = current.access.clients.some((range) => range.identity === identityName) ? 'client-range' : 'credentials';
        const identity = identityName === undefined ? null : access.identityNamed(identityName, source);
        const { decision } = await pipeline.decideFor(target, userAgent, identity);
        const snapshot = decision.snapshot === null ? undefined : await robotsCache.peek(target.origin);
        return { ...decision, robotsWarnings: snapshot?.robots?.warnings ?? [] };
      },
      robots: async (origin) => {
        const snapshot = await robotsCache.peek(origin);
        return snapshot === undefined ? undefined : describeRobotsSnapshot(origin, snapshot, nextFetchAtMs(snapshot));
      },
      caCertPem: () => ca?.certPem,
      // A load balancer stops sending traffic once the drain begins.
      health: () => (activeDrain.isDraining ? { ok: false, details: { state: 'shutting-down' } } : { ok: true }),
      ...(options.configPath !== undefined ? { reload: reloadFromFile } : {}),
      report: (pathname, params) => report.answer(pathname, params),
      maxConnections: config.admin.maxConnections,
      onLimit,
      ...(adminToken.token !== undefined ? { token: adminToken.token } : {}),
    });
    try {
      adminAddress = await admin.listen(config.admin.host, config.admin.port);
      proxy.protectAddress(adminAddress);
      guard.setOwnListeners([proxyAddress, adminAddress].map((a) => ({ host: a.address, port: a.port })));
    } catch (err) {
      await proxy.close();
      ledger?.close();
      await fleetState?.close();
      throw listenConfigError('admin', config.admin.host, config.admin.port, err);
    }
  }
  logger.info(
    {
      event: 'listening',
      proxy: `${proxyAddress.address}:${proxyAddress.port}`,
      admin: adminAddress ? `${adminAddress.address}:${adminAddress.port}` : null,
      httpsMode: config.https.mode,
      connections: { ...connections.limits, openFileLimit: connectionLimits.openFileLimit ?? null },
      // The log's times less this are on the host's monotonic clock: comparable between the processes of a host.
      epochAheadOfMonotonicMs: Number(epochAheadOfMonotonicMs().toFixed(3)),
    },
    'robots-proxy is listening',
  );

  return {
    proxyAddress,
    adminAddress,
    ca,
    metrics,
    robotsCache,
    pacer,
    fleetState,
    pipeline,
    connections,
    logger,
    ledger,
    currentConfig: () => current,
    reload(next) {
      const plan = planReload(current, next);
      apply(plan.config);
      return plan;
    },
    reloadFromFile,
    shutdown: ({ trigger, drainTimeoutMs }) => activeDrain.run({ trigger, drainTimeoutMs: drainTimeoutMs ?? current.shutdown.drainTimeoutMs }),
    forceShutdown: (trigger) => activeDrain.force(trigger),
    abandonInFlight: (error) => {
      pipeline.abandonInFlight(error);
      // A fatal exit follows: what the ledger holds in memory is written now.
      ledger?.flush();
    },
    async close() {
      await activeDrain.run({ trigger: 'close', drainTimeoutMs: 1000 });
    },
  };
}

/** `http://host:port` of a bound address (IPv6 in brackets). */
function urlOf(address: AddressInfo): string {
  return `http://${address.family === 'IPv6' || address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}`;
}

/** Where the CA came from, for people: `generated just now`, `already in stateDir` or `from https.caCert`. */
export function describeCaSource(ca: CaMaterial): string {
  return ca.source === 'generated' ? 'generated just now' : ca.source === 'state-dir' ? 'already in stateDir' : 'from https.caCert';
}

/**
 * The one human line `serve` prints on stderr once both listeners are up:
 * `robots-proxy listening: proxy http://127.0.0.1:8080, admin http://127.0.0.1:9090, CA /path/ca.pem (generated just now; clients must trust it)`.
 */
export function describeListening(running: RunningProxy, config: Config): string {
  const admin = running.adminAddress ? urlOf(running.adminAddress) : 'off (admin.enabled: false)';
  const ca = running.ca ? `${running.ca.certPath} (${describeCaSource(running.ca)}; clients must trust it)` : `none (https.mode: ${config.https.mode})`;
  return `robots-proxy listening: proxy ${urlOf(running.proxyAddress)}, admin ${admin}, CA ${ca}`;
}

/**
 * `robots-proxy serve`: loads the config and runs until stopped. SIGHUP reloads the file;
 * SIGTERM/SIGINT drain and stop (see `lifecycle/process-handlers.ts`).
 * @throws {ConfigError} naming the file, key and line of a bad config.
 */
export async function serve(options: ServeOptions): Promise<void> {
  const config = loadConfig(options.configPath);
  const running = await startProxy(config, { configPath: options.configPath });
  process.stderr.write(`${describeListening(running, config)}\n`);
  await runUntilStopped({
    logger: running.logger,
    reload: () => void running.reloadFromFile(),
    stop: (trigger) => running.shutdown({ trigger }),
    forceStop: (trigger) => running.forceShutdown(trigger),
    abandonInFlight: (error) => running.abandonInFlight(error),
    // Run by an npm script (`npm start`): npm dies of SIGHUP without passing it on; stop rather than linger detached.
    ...(process.env['npm_lifecycle_event'] ? { watchParent: process.ppid } : {}),
  });
}


/**
 * `robots-proxy ca`: prints the interception CA's path and PEM on stdout (creating it on first
 * use), and on stderr whether it was generated just now or already there, with its key's path
 * and its `notAfter`; a second stderr line warns when it expires within 30 days or has expired
 * (the words of the proxy's `tls-ca-expiring` log line).
 */
export async function printCa(options: ServeOptions): Promise<void> {
  const config = loadConfig(options.configPath);
  const ca = await loadCa(config);
  process.stdout.write(`# ${ca.certPath}\n${ca.certPem}`);
  const notAfter = new Date(ca.notAfterMs).toISOString();
  process.stderr.write(`robots-proxy ca: ${ca.certPath} (${describeCaSource(ca)}; key ${ca.keyPath}; SHA-256 ${ca.sha256Fingerprint}; expires ${notAfter}); clients must trust it\n`);
  const warning = caExpiryWarning(ca, Date.now());
  if (warning !== undefined) process.stderr.write(`robots-proxy ca: warning: ${warning.message}\n`);
}

export { CertificateError };
