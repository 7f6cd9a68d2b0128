/**
 * The proxy listener's connection caps, derived from the process's open-file
 * limit (RLIMIT_NOFILE). Node has no API for that limit; on Linux it is read
 * from `/proc/self/limits`. Node raises its soft limit to the hard limit at
 * start, so the value read there is the one in force. Extension, not in RFC 9309.
 */
import { readFileSync } from 'node:fs';
import type { ClientsConfig } from '../config/index.js';

/** `auto` never allows more connections than this: each costs memory (socket, parser, buffers), even idle. */
export const AUTO_MAX_CONNECTIONS = 10_000;
/** `auto` when the open-file limit cannot be read (not Linux). */
export const AUTO_MAX_CONNECTIONS_UNKNOWN_LIMIT = 1024;
/** `auto` per-client cap: a quarter of the global cap, at most this. */
export const AUTO_MAX_CONNECTIONS_PER_CLIENT = 256;
/**
 * Descriptors a client connection may need: its own socket and one upstream socket (a forwarded
 * request, a robots.txt fetch, a tunnel's upstream). Idle upstream keep-alive sockets can exceed
 * this for a few seconds; the reserve absorbs that.
 */
export const DESCRIPTORS_PER_CONNECTION = 2;
/**
 * Refused connections being answered (status written, waiting briefly for the client to read it)
 * at once; more are closed without an answer. Their descriptors are kept out of the cap too.
 */
export const MAX_ANSWERED_REFUSALS = 32;

/** The caps in force, and why they differ from the configured ones. */
export interface ConnectionLimits {
  /** Connections to the proxy listener open at once. */
  maxConnections: number;
  /** Connections open at once from one client address (never above `maxConnections`). */
  maxConnectionsPerClient: number;
  /** The open-file soft limit used, or undefined when unknown. */
  openFileLimit: number | undefined;
  /** One sentence per configured value that was lowered (logged as warnings at start). */
  warnings: string[];
}

/**
 * Reads the soft "Max open files" limit of this process from `/proc/self/limits` text.
 * Pure; never throws.
 * @returns the limit, or undefined when the text has no such line or it says `unlimited`.
 */
export function parseOpenFileLimit(limitsText: string): number | undefined {
  const match = /^Max open files\s+(\S+)/m.exec(limitsText);
  if (!match) return undefined;
  const soft = Number(match[1]);
  return Number.isSafeInteger(soft) && soft > 0 ? soft : undefined;
}

/**
 * The open-file soft limit of this process (Linux: `/proc/self/limits`).
 * @returns the limit, or undefined where it cannot be read. Never throws.
 */
export function readOpenFileLimit(path = '/proc/self/limits'): number | undefined {
  try {
    return parseOpenFileLimit(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Resolves `auto` and lowers caps the open-file limit cannot serve.
 * - ceiling = (openFileLimit - reservedDescriptors - {@link MAX_ANSWERED_REFUSALS}) /
 *   {@link DESCRIPTORS_PER_CONNECTION}, at least 1;
 * - `maxConnections: auto` = min(ceiling, {@link AUTO_MAX_CONNECTIONS}), or
 *   {@link AUTO_MAX_CONNECTIONS_UNKNOWN_LIMIT} when the limit is unknown; a number above the
 *   ceiling is lowered to it (with a warning);
 * - `maxConnectionsPerClient: auto` = max(1, min(maxConnections / 4, {@link AUTO_MAX_CONNECTIONS_PER_CLIENT}));
 *   a number above `maxConnections` is lowered to it (with a warning).
 * Pure; never throws.
 * @param openFileLimit the soft RLIMIT_NOFILE, or undefined when unknown.
 */
export function resolveConnectionLimits(
  clients: Pick<ClientsConfig, 'maxConnections' | 'maxConnectionsPerClient' | 'reservedDescriptors'>,
  openFileLimit: number | undefined,
): ConnectionLimits {
  const warnings: string[] = [];
  const available = openFileLimit === undefined ? undefined : openFileLimit - clients.reservedDescriptors - MAX_ANSWERED_REFUSALS;
  const ceiling = available === undefined ? undefined : Math.max(1, Math.floor(available / DESCRIPTORS_PER_CONNECTION));
  if (available !== undefined && available < DESCRIPTORS_PER_CONNECTION) {
    warnings.push(
      `the open-file limit (${openFileLimit}) leaves no room beyond clients.reservedDescriptors (${clients.reservedDescriptors}): the proxy accepts 1 connection; raise ulimit -n`,
    );
  }
  let maxConnections: number;
  if (clients.maxConnections === 'auto') {
    maxConnections = ceiling === undefined ? AUTO_MAX_CONNECTIONS_UNKNOWN_LIMIT : Math.min(ceiling, AUTO_MAX_CONNECTIONS);
  } else if (ceiling !== undefined && clients.maxConnections > ceiling) {
    maxConnections = ceiling;
    warnings.push(
      `clients.maxConnections ${clients.maxConnections} lowered to ${ceiling}: the open-file limit is ${openFileLimit}, ` +
        `${clients.reservedDescriptors + MAX_ANSWERED_REFUSALS} are reserved and each connection may need ${DESCRIPTORS_PER_CONNECTION} (raise ulimit -n to allow more)`,
    );
  } else {
    maxConnections = clients.maxConnections;
  }
  let maxConnectionsPerClient: number;
  if (clients.maxConnectionsPerClient === 'auto') {
    maxConnectionsPerClient = Math.max(1, Math.min(Math.floor(maxConnections / 4), AUTO_MAX_CONNECTIONS_PER_CLIENT));
  } else if (clients.maxConnectionsPerClient > maxConnections) {
    maxConnectionsPerClient = maxConnections;
    warnings.push(`clients.maxConnectionsPerClient ${clients.maxConnectionsPerClient} lowered to maxConnections (${maxConnections})`);
  } else {
    maxConnectionsPerClient = clients.maxConnectionsPerClient;
  }
  return { maxConnections, maxConnectionsPerClient, openFileLimit, warnings };
}
