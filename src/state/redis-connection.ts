/**
 * The fleet's Redis connections (ioredis): one for commands, one subscribed to
 * the fleet's channels. Every command has a timeout and nothing is queued
 * while the connection is down, so no request ever hangs on a dead Redis
 * (issue 10, "When Redis is unreachable"). Tracks whether Redis answers, logs
 * and counts each change, and probes a stalled server until it answers again.
 * Extension, not in RFC 9309.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { StateUnavailableError } from '../errors.js';

/** The subset of a pino logger used here. */
export interface StateLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** Options of {@link RedisConnection}. */
export interface RedisConnectionOptions {
  /** `redis://...` or `rediss://...`. */
  url: string;
  /** Prefix of every key and channel. */
  keyPrefix: string;
  /** Longest wait for one command or for connecting, ms. */
  commandTimeoutMs: number;
  logger: StateLogger;
  /**
   * What this instance does while Redis does not answer, as a clause for the `fleet-state` lines
   * (see `fallbackClause`); default: "falling back (state.redis.onUnavailable)".
   */
  fallback?: string;
}

/** Counters of a {@link RedisConnection} since it was made. */
export interface RedisConnectionStats {
  /** True while Redis answers. */
  isAvailable: boolean;
  /** Times Redis stopped answering (each starts a fallback episode). */
  unavailableEpisodes: number;
  /** Commands (each one round trip; a script counts once) sent by this instance. */
  roundTrips: number;
  /** Commands that failed or timed out. */
  failures: number;
}

/** Longest pause between two reconnect attempts, ms. */
const MAX_RECONNECT_DELAY_MS = 1_000;

/** Time between two probes of a connected server that stopped answering, ms. */
const PROBE_INTERVAL_MS = 500;

/**
 * The probe: a script that writes (a key of its own, expiring at once), so a server that answers
 * PING but refuses the fleet's scripts' writes (a read-only replica after a failover: READONLY; a
 * failed snapshot: MISCONF) is not taken as back, which made the state flap every probe.
 */
const PROBE_SCRIPT = "redis.call('SET', KEYS[1], ARGV[1], 'PX', 1000) return 1";

/**
 * The command and subscriber connections of one instance. Starts unavailable
 * and becomes available once connected; a start with Redis down is not an
 * error (the fallback applies until it answers).
 */
export class RedisConnection {
  readonly client: Redis;
  readonly #subscriber: Redis;
  readonly #options: RedisConnectionOptions;
  readonly #handlers = new Map<string, Set<(message: string) => void>>();
  readonly #availabilityListeners = new Set<(isAvailable: boolean) => void>();
  /** This instance's name in the fleet's messages (random per process). */
  readonly instanceId = randomBytes(6).toString('hex');
  #isAvailable = false;
  #probe: NodeJS.Timeout | undefined;
  #isClosed = false;
  /** The latest connection error (e.g. "connect ECONNREFUSED 127.0.0.1:6390"), for the start warning. */
  #lastError: string | undefined;
  #hasBeenAvailable = false;
  readonly #stats = { unavailableEpisodes: 0, roundTrips: 0, failures: 0 };

  constructor(options: RedisConnectionOptions) {
    this.#options = options;
    const common = {
      connectTimeout: options.commandTimeoutMs,
      // Never queue a command while disconnected, never retry one: the caller falls back at once.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 5), MAX_RECONNECT_DELAY_MS),
      lazyConnect: true,
    };
    this.client = new Redis(options.url, { ...common, commandTimeout: options.commandTimeoutMs });
    // The subscriber's commands are SUBSCRIBE only; ioredis subscribes again after a reconnect.
    this.#subscriber = new Redis(options.url, { ...common, enableOfflineQueue: true, autoResubscribe: true });
    this.client.on('ready', () => this.#setAvailable(true, 'connected'));
    this.client.on('close', () => this.#setAvailable(false, 'connection closed'));
    // Errors also arrive as failed commands or 'close'; the event must have a listener.
    this.client.on('error', (error: Error) => {
      this.#lastError = error.message;
    });
    this.#subscriber.on('error', () => undefined);
    this.#subscriber.on('message', (channel: string, message: string) => {
      for (const handler of this.#handlers.get(channel) ?? []) handler(message);
    });
  }

  /** Connects both connections; resolves within the command timeout whether or not Redis answers (reconnects continue). Never rejects. */
  async start(): Promise<void> {
    const connect = (redis: Redis): Promise<void> => redis.connect().catch(() => undefined);
    await Promise.race([Promise.all([connect(this.client), connect(this.#subscriber)]), delay(this.#options.commandTimeoutMs * 2)]);
    if (!this.#isAvailable) {
      const redis = redactUrl(this.#options.url);
      this.#options.logger.warn(
        { event: 'fleet-state', redis, err: this.#lastError ?? null },
        `Redis (${redis}) does not answer at start${this.#lastError === undefined ? '' : ` (${this.#lastError})`}; until it does, ${this.#fallback}`,
      );
    }
  }

  get #fallback(): string {
    return this.#options.fallback ?? 'falling back (state.redis.onUnavailable)';
  }

  /** The full name of a key or channel: the prefix, then the parts joined with `:`. */
  key(...parts: string[]): string {
    return this.#options.keyPrefix + parts.join(':');
  }

  /** True while Redis answers commands. */
  get isAvailable(): boolean {
    return this.#isAvailable;
  }

  /** Calls `listener` on every change of {@link isAvailable}. */
  onAvailability(listener: (isAvailable: boolean) => void): void {
    this.#availabilityListeners.add(listener);
  }

  /** Subscribes `handler` to messages on `channel` (a full name from {@link key}). */
  async subscribe(channel: string, handler: (message: string) => void): Promise<void> {
    let handlers = this.#handlers.get(channel);
    if (!handlers) {
      handlers = new Set();
      this.#handlers.set(channel, handlers);
      await this.#subscriber.subscribe(channel).catch(() => undefined); // resubscribed on reconnect
    }
    handlers.add(handler);
  }

  /**
   * Runs one command (one round trip), counting it; a failure marks Redis unavailable until a
 * probe (a script that writes, every 500 ms) succeeds.
   * @throws {StateUnavailableError} when Redis is known to be down, the command timed out or failed.
   */
  async run<T>(what: string, command: (client: Redis) => Promise<T>): Promise<T> {
    if (!this.#isAvailable) throw new StateUnavailableError(`Redis is unavailable (${what} not sent)`);
    this.#stats.roundTrips++;
    try {
      return await command(this.client);
    } catch (error) {
      this.#stats.failures++;
      this.#markFailed(error);
      throw new StateUnavailableError(`Redis ${what} failed: ${(error as Error).message}`, { cause: error });
    }
  }

  stats(): RedisConnectionStats {
    return { isAvailable: this.#isAvailable, ...this.#stats };
  }

  /** Disconnects both connections and stops probing. Idempotent. */
  async close(): Promise<void> {
    if (this.#isClosed) return;
    this.#isClosed = true;
    clearInterval(this.#probe);
    this.#isAvailable = false;
    this.client.disconnect();
    this.#subscriber.disconnect();
  }

  /** A command failed on a connection that looks open (a stalled server): unavailable until a probe answers. */
  #markFailed(error: unknown): void {
    if (!this.#isAvailable) return;
    this.#setAvailable(false, (error as Error).message);
    if (this.client.status !== 'ready' || this.#probe) return;
    this.#probe = setInterval(() => {
      this.client
        .eval(PROBE_SCRIPT, 1, this.key('probe', this.instanceId), '1')
        .then(() => {
          if (this.client.status === 'ready') this.#setAvailable(true, 'answers again');
        })
        .catch(() => undefined);
    }, PROBE_INTERVAL_MS);
    this.#probe.unref();
  }

  #setAvailable(isAvailable: boolean, why: string): void {
    if (this.#isClosed || isAvailable === this.#isAvailable) return;
    this.#isAvailable = isAvailable;
    if (isAvailable) {
      clearInterval(this.#probe);
      this.#probe = undefined;
      this.#options.logger.info({ event: 'fleet-state', available: true, why }, `Redis answers: pacing and robots.txt fetches are fleet-wide${this.#hasBeenAvailable ? ' again' : ''}`);
      this.#hasBeenAvailable = true;
    } else {
      this.#stats.unavailableEpisodes++;
      this.#options.logger.warn({ event: 'fleet-state', available: false, why }, `Redis unavailable (${why}): ${this.#fallback}`);
    }
    for (const listener of this.#availabilityListeners) listener(isAvailable);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The URL without its password, for logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(invalid url)';
  }
}
