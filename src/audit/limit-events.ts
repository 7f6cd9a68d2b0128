/**
 * Limit hits that are not requests: connections refused over a cap, idle
 * connections closed, start slots held past `pacing.maxSlotHold`. Each is
 * counted (metrics) and logged; request-level limits (a stalled request body,
 * a response the client does not read) are access lines with reason
 * `client-timeout` instead. Extension, not in RFC 9309.
 */
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { LogThrottle } from './log-throttle.js';

/**
 * Which connection cap refused a connection: the proxy listener's `clients.maxConnections` or
 * `clients.maxConnectionsPerClient`, or the admin listener's `admin.maxConnections`.
 */
export type ConnectionLimitName = 'max-connections' | 'max-connections-per-client' | 'admin-max-connections';

/** Every {@link ConnectionLimitName}, pre-registered at 0 in metrics. */
export const CONNECTION_LIMIT_NAMES: readonly ConnectionLimitName[] = ['max-connections', 'max-connections-per-client', 'admin-max-connections'];

/**
 * What an exchange was waiting for when its slot hold ran out:
 * `client-body` (the request body is still arriving), `client-read` (the client is not reading
 * the response: writes are backpressured) or `upstream` (the origin is slow, or still sending).
 */
export type SlotHoldWaitingOn = 'client-body' | 'client-read' | 'upstream';

/** Every {@link SlotHoldWaitingOn}, pre-registered at 0 in metrics. */
export const SLOT_HOLD_WAITING_ON: readonly SlotHoldWaitingOn[] = ['client-body', 'client-read', 'upstream'];

/** One limit hit. `client` is the peer address (IPv4-mapped IPv6 unwrapped). */
export type LimitEvent =
  | {
      kind: 'connection-refused';
      limit: ConnectionLimitName;
      client: string;
      /** The cap that was hit. */
      cap: number;
      /** Connections open (admitted) when this one arrived. */
      open: number;
      /** Connections open from this client when this one arrived (0 for the admin listener, which does not count per client). */
      openFromClient: number;
      /** True when a status was written before the close; false: closed without an answer. */
      answered: boolean;
      /** The request id sent in the answer, when it was answered. */
      requestId?: string;
    }
  | {
      kind: 'client-idle-timeout';
      client: string;
      /** True when part of a request head had arrived (answered 408). */
      partialRequest: boolean;
      /** The request id sent in the 408, when one was sent. */
      requestId?: string;
    }
  | {
      kind: 'slot-hold-exceeded';
      origin: string;
      client: { address: string; port: number };
      /** How long the slot had been held, ms. */
      heldMs: number;
      waitingOn: SlotHoldWaitingOn;
    };

/** Where limit hits are counted. */
export interface LimitMetrics {
  observeLimit(event: LimitEvent): void;
}

/** Options of {@link LimitReporter}. */
export interface LimitReporterOptions {
  logger: Pick<Logger, 'warn' | 'info' | 'debug'>;
  metrics?: LimitMetrics;
  clock: Clock;
  /** At most one `connection-refused` line per limit per this many ms; the next line says how many were not logged. @default 10000 */
  refusalLogIntervalMs?: number;
}

/**
 * Counts every limit hit and logs it: `slot-hold-exceeded` at warn;
 * `client-idle-timeout` at info when a partial request head was cut, else at
 * debug (an ordinary keep-alive end); `connection-refused` at warn, at most
 * one line per limit per interval (a flood of refusals must not flood the log),
 * with `suppressed` counting the refusals since the previous line. Never throws.
 */
export class LimitReporter {
  readonly #options: LimitReporterOptions;
  readonly #refusalLog: LogThrottle;

  constructor(options: LimitReporterOptions) {
    this.#options = options;
    this.#refusalLog = new LogThrottle({ nowMs: () => options.clock.nowMs(), intervalMs: options.refusalLogIntervalMs ?? 10_000 });
  }

  /** Counts and logs one limit hit. */
  report(event: LimitEvent): void {
    this.#options.metrics?.observeLimit(event);
    const { logger } = this.#options;
    switch (event.kind) {
      case 'connection-refused': {
        const suppressed = this.#refusalLog.admit(event.limit);
        if (suppressed === undefined) return;
        logger.warn({ event: 'connection-refused', ...withoutKind(event), suppressed }, `connection refused: ${event.limit} (${event.cap}) reached`);
        return;
      }
      case 'client-idle-timeout':
        if (event.partialRequest) logger.info({ event: 'client-idle-timeout', ...withoutKind(event) }, 'client sent part of a request and went idle: 408 and close');
        else logger.debug({ event: 'client-idle-timeout', ...withoutKind(event) }, 'idle client connection closed');
        return;
      case 'slot-hold-exceeded':
        logger.warn(
          { event: 'slot-hold-exceeded', ...withoutKind(event) },
          `a request held its origin's start slot for ${Math.round(event.heldMs)} ms (waiting on ${event.waitingOn}): slot released, the transfer goes on`,
        );
        return;
    }
  }
}

function withoutKind<T extends { kind: string }>(event: T): Omit<T, 'kind'> {
  const { kind: _kind, ...rest } = event;
  return rest;
}
