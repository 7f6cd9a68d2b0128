/**
 * Pacing slots and pauses on Redis, fleet-wide (issue 10): one script call
 * reserves a slot (the hot path's one round trip); releases of undelayed
 * requests are batched into one call per event-loop turn off the request's
 * path; a release that someone may wait for is announced on a channel, so
 * waiting instances ask again at once instead of polling. Leases free the
 * slots of a crashed instance; held slots are renewed, so a long request keeps
 * its slot. A release Redis did not take (down, stalled) is sent again once it
 * answers, so a lease it still holds does not keep the origin busy for the
 * fleet until it ends. Extension, not in RFC 9309.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RedisConnection, StateLogger } from './redis-connection.js';
import { PAUSE_SCRIPT, RELEASE_ARGS, RELEASE_SCRIPT, RENEW_SCRIPT, RESERVE_SCRIPT } from './slot-scripts.js';
import type { SlotLease, SlotRequest, SlotReservation, SlotReturn, SlotStore } from './types.js';

/** Options of {@link RedisSlotStore}. */
export interface RedisSlotStoreOptions {
  /** Lease of a slot, ms: a holder that dies frees it after this. */
  slotLeaseMs: number;
  logger: StateLogger;
}

/** How long an origin's slot record outlives its latest start at least, ms (it holds the start for the next delay). */
const MIN_RETAIN_MS = 60_000;

interface HeldLease extends SlotLease {
  readonly maxConcurrency: number;
  /** When the lease was granted or last renewed, ms (this process's monotonic clock). */
  renewedAtMs: number;
}

interface PendingRelease {
  lease: HeldLease;
  facts: SlotReturn;
  /** When the release was not sent (Redis did not answer), ms (this process's monotonic clock). */
  unsentAtMs?: number;
}

/** Releases kept to send again once Redis answers; beyond, the oldest are dropped (their leases end on their own). */
const MAX_UNSENT_RELEASES = 10_000;

type ScriptReply = [number, string, string];

interface SlotCommands {
  rpReserve(hash: string, busy: string, pause: string, ...args: string[]): Promise<ScriptReply>;
  rpRelease(...keysAndArgs: string[]): Promise<number>;
  rpRenew(...keysAndArgs: string[]): Promise<number>;
  rpPause(pause: string, pauseMs: string): Promise<string>;
}

/** The Redis {@link SlotStore}. */
export class RedisSlotStore implements SlotStore {
  readonly #connection: RedisConnection;
  readonly #options: RedisSlotStoreOptions;
  readonly #freeChannel: string;
  readonly #listeners = new Map<string, Set<() => void>>();
  readonly #held = new Map<string, HeldLease>();
  #pending: PendingRelease[] = [];
  /** Releases Redis did not take, oldest first: sent again when it answers. */
  #unsent: PendingRelease[] = [];
  #isFlushScheduled = false;
  readonly #renewTimer: NodeJS.Timeout;
  #tokenSeq = 0;
  readonly #tokenPrefix = randomBytes(6).toString('hex');

  constructor(connection: RedisConnection, options: RedisSlotStoreOptions) {
    this.#connection = connection;
    this.#options = options;
    this.#freeChannel = connection.key('free');
    const client = connection.client as Redis & Partial<SlotCommands>;
    if (!client.rpPause) {
      client.defineCommand('rpReserve', { numberOfKeys: 3, lua: RESERVE_SCRIPT });
      client.defineCommand('rpRelease', { lua: RELEASE_SCRIPT });
      client.defineCommand('rpRenew', { lua: RENEW_SCRIPT });
      client.defineCommand('rpPause', { numberOfKeys: 1, lua: PAUSE_SCRIPT });
    }
    // Leases are renewed when a third of them has passed: a slow request keeps its slot, a dead holder loses it.
    this.#renewTimer = setInterval(() => this.#renew(), Math.max(50, Math.floor(options.slotLeaseMs / 3)));
    this.#renewTimer.unref();
    connection.onAvailability((isAvailable) => {
      if (isAvailable) this.#resendUnsent();
    });
  }

  /** Subscribes to the release announcements. Never rejects. */
  async start(): Promise<void> {
    await this.#connection.subscribe(this.#freeChannel, (origin) => {
      for (const listener of this.#listeners.get(origin) ?? []) listener();
    });
  }

  get isAvailable(): boolean {
    return this.#connection.isAvailable;
  }

  /**
   * @throws {StateUnavailableError} when Redis does not answer in time. A reservation sent but not
   *   answered may still be made once a stalled Redis runs it: its release is kept and sent once
   *   Redis answers, so the lease does not hold the origin for the fleet until it ends.
   */
  async reserve(request: SlotRequest): Promise<SlotReservation> {
    const token = `${this.#tokenPrefix}.${(this.#tokenSeq++).toString(36)}`;
    const keys = this.#keysOf(request.origin);
    const leaseOf = (renewedAtMs: number): HeldLease => ({ origin: request.origin, token, isDelayed: request.delayMs > 0, maxConcurrency: request.maxConcurrency, renewedAtMs });
    let isSent = false;
    const reply = await this.#connection.run('reserve', (client) => {
      isSent = true;
      return (client as unknown as SlotCommands).rpReserve(
        keys[0],
        keys[1],
        keys[2],
        token,
        String(request.delayMs),
        String(request.maxConcurrency),
        String(this.#options.slotLeaseMs),
        request.isEndToStart ? '1' : '0',
        String(Math.max(MIN_RETAIN_MS, request.delayMs * 2)),
        String(request.maxStartInMs ?? Number.MAX_VALUE),
      );
    }).catch((error: unknown) => {
      if (isSent) this.#keepUnsent([{ lease: leaseOf(0), facts: { sentAgoMs: undefined, pauseMs: 0 } }]);
      throw error;
    });
    const ms = Math.max(0, Number(reply[2]));
    if (reply[0] !== 1) return { granted: false, why: reply[1] === 'paused' || reply[1] === 'later' ? reply[1] : 'busy', retryInMs: ms };
    const lease = leaseOf(performance.now());
    this.#held.set(token, lease);
    return { granted: true, lease, startInMs: ms };
  }

  release(lease: SlotLease, facts: SlotReturn): void {
    const held = this.#held.get(lease.token);
    if (!held) return;
    this.#held.delete(lease.token);
    this.#pending.push({ lease: held, facts });
    // A delayed origin's next request (or a pause) waits for this one: send it now. Others are batched.
    if (held.isDelayed || facts.pauseMs > 0) return this.#flush();
    if (this.#isFlushScheduled) return;
    this.#isFlushScheduled = true;
    setImmediate(() => this.#flush());
  }

  async pause(origin: string, pauseMs: number): Promise<void> {
    if (!(pauseMs > 0)) return;
    const key = this.#connection.key('pause', origin);
    await this.#connection
      .run('pause', (client) => (client as unknown as SlotCommands).rpPause(key, pauseMs.toFixed(3)))
      .catch((error: unknown) => {
        // This instance's pacer holds the pause; the other instances pace without it.
        this.#options.logger.warn({ event: 'fleet-state', origin, pauseMs, err: (error as Error).message }, 'robots.txt overload pause not sent to Redis; the other instances do not pause');
      });
  }

  onFree(origin: string, listener: () => void): () => void {
    let listeners = this.#listeners.get(origin);
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(origin, listeners);
    }
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.#listeners.get(origin) === listeners) this.#listeners.delete(origin);
    };
  }

  /** Sends the releases still pending and stops renewing. */
  async close(): Promise<void> {
    clearInterval(this.#renewTimer);
    this.#pending.push(...this.#unsent);
    this.#unsent = [];
    this.#flush();
    this.#held.clear();
  }

  #keysOf(origin: string): [string, string, string] {
    return [this.#connection.key('slot', origin), this.#connection.key('busy', origin), this.#connection.key('pause', origin)];
  }

  #flush(): void {
    this.#isFlushScheduled = false;
    const batch = this.#pending;
    if (batch.length === 0) return;
    this.#pending = [];
    const keys: string[] = [];
    const args: string[] = [this.#freeChannel];
    const nowMs = performance.now();
    for (const { lease, facts, unsentAtMs } of batch) {
      // A release sent late: its request started that much longer ago, its pause has that much less to run.
      const lateMs = unsentAtMs === undefined ? 0 : nowMs - unsentAtMs;
      const sentAgoMs = facts.sentAgoMs === undefined ? -1 : facts.sentAgoMs + lateMs;
      keys.push(...this.#keysOf(lease.origin));
      args.push(lease.token, String(sentAgoMs), String(Math.max(0, facts.pauseMs - lateMs)), String(lease.maxConcurrency), lease.origin);
    }
    if (args.length !== 1 + batch.length * RELEASE_ARGS) throw new Error('release arguments out of step with RELEASE_ARGS');
    this.#connection
      .run('release', (client) => (client as unknown as SlotCommands).rpRelease(String(keys.length), ...keys, ...args))
      .catch((error: unknown) => {
        // Sent again once Redis answers (a release is idempotent: a token already gone is left alone).
        this.#keepUnsent(batch);
        this.#options.logger.warn(
          { event: 'fleet-state', releases: batch.length, unsent: this.#unsent.length, err: (error as Error).message },
          'slot release not sent to Redis; sent again once Redis answers (the leases expire meanwhile)',
        );
      });
  }

  /** Keeps releases Redis did not take (or reservations it may have made unanswered) to send once it answers. */
  #keepUnsent(releases: PendingRelease[]): void {
    const nowMs = performance.now();
    for (const release of releases) {
      release.unsentAtMs ??= nowMs;
      this.#unsent.push(release);
    }
    if (this.#unsent.length > MAX_UNSENT_RELEASES) this.#unsent.splice(0, this.#unsent.length - MAX_UNSENT_RELEASES);
  }

  /** Sends the releases Redis did not take, in one batch. */
  #resendUnsent(): void {
    if (this.#unsent.length === 0) return;
    this.#pending.push(...this.#unsent);
    this.#unsent = [];
    this.#flush();
  }

  #renew(): void {
    const nowMs = performance.now();
    const due = [...this.#held.values()].filter((lease) => nowMs - lease.renewedAtMs >= this.#options.slotLeaseMs / 3);
    if (due.length === 0 || !this.#connection.isAvailable) return;
    for (const lease of due) lease.renewedAtMs = nowMs;
    const keys = due.map((lease) => this.#connection.key('busy', lease.origin));
    this.#connection
      .run('renew', (client) => (client as unknown as SlotCommands).rpRenew(String(keys.length), ...keys, String(this.#options.slotLeaseMs), ...due.map((l) => l.token)))
      .catch(() => undefined);
  }
}
