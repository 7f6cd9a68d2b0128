/**
 * What a configuration reload (SIGHUP, `POST /reload`) may change in a
 * running proxy. Pure: compares two validated configurations. Extension, not
 * in RFC 9309.
 */
import { isDeepStrictEqual } from 'node:util';
import { formatKeyPath } from './load.js';
import type { Config } from './types.js';

/**
 * Keys (YAML names, as dotted paths) whose value is fixed for the life of the
 * process: the listening sockets and their connection caps, the CONNECT
 * handling and its CA, where state lives, what the upstream connections were
 * built with (the private-network guard sits in their DNS lookup, the extra CAs
 * in their TLS context), the robots cache's bounds (its store), the ledger and
 * the metrics' label bounds. A change to
 * any of them is reported and ignored until a restart. (`admin` includes the admin token.)
 * Everything else applies live, `access`, `identities` and `identity` included: the client
 * ranges (a range's `binding` too), the identities' bindings and the failure budget apply to the
 * next request (requests in open tunnels too), and the credentials file named by
 * `access.credentialsFile` is re-read on every reload (before anything is applied: a bad or
 * world-writable file fails the reload; one others may read is warned about).
 * Among them `policy.rules` (one key: the list is compiled anew, and requests still queued take
 * the pacing of the rule that matches them under it), `enforcement` and `pacing.enabled`.
 */
export const RESTART_REQUIRED_KEYS: readonly string[] = [
  'listen',
  'admin',
  'clients.maxConnections',
  'clients.maxConnectionsPerClient',
  'clients.reservedDescriptors',
  'clients.idleTimeout',
  'https.mode',
  'https.caCert',
  'https.caKey',
  'stateDir',
  'upstream.allowPrivateNetworks',
  'upstream.caFile',
  'robots.maxOrigins',
  'robots.cacheBytes',
  // The ledger's file and its writer, and the metrics' label bounds, are built once; a reload
  // never closes the ledger, so nothing aggregated is lost on SIGHUP.
  'ledger',
  'metrics',
  // The fleet's stores and their Redis connections are built once.
  'state',
];

/** The outcome of comparing the running configuration with a new one. */
export interface ReloadPlan {
  /** The configuration to run with: the new one, with every restart-only key at its running value. */
  readonly config: Config;
  /** YAML keys whose new value is applied live, e.g. `pacing.minDelay`, `hosts["example.com"]`. */
  readonly applied: readonly string[];
  /** YAML keys that changed but take effect only after a restart; their running value is kept. */
  readonly restartRequired: readonly string[];
}

/**
 * Compares `running` with `next`, key by key (a `hosts` entry counts as one key).
 * Keys are named as in the YAML file: `robots.ttl`, not `robots.ttlMs`. Pure; never throws.
 * @returns the configuration to apply, what changes live and what needs a restart.
 */
export function planReload(running: Config, next: Config): ReloadPlan {
  const applied: string[] = [];
  const restartRequired: string[] = [];
  for (const path of changedPaths(running, next, [])) {
    const key = yamlKeyOf(path);
    (requiresRestart(key) ? restartRequired : applied).push(key);
  }
  const config = structuredClone(next) as Config;
  for (const key of RESTART_REQUIRED_KEYS) copyAt(config, running, key.split('.'));
  return { config, applied, restartRequired };
}

function requiresRestart(key: string): boolean {
  return RESTART_REQUIRED_KEYS.some((k) => key === k || key.startsWith(`${k}.`));
}

/** Config field names are the YAML names plus a unit suffix on durations (`ttlMs` is `ttl`). */
function yamlKeyOf(path: readonly string[]): string {
  return formatKeyPath(path.map((segment, i) => (path[0] === 'hosts' && i === 1 ? segment : segment.replace(/Ms$/, ''))));
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Paths (Config field names) of the leaves that differ; a `hosts` entry is one leaf. */
function changedPaths(a: unknown, b: unknown, path: string[]): string[][] {
  const isHostEntry = path.length === 2 && path[0] === 'hosts';
  if (!isHostEntry && isMapping(a) && isMapping(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].flatMap((key) => changedPaths(a[key], b[key], [...path, key]));
  }
  return isDeepStrictEqual(a, b) ? [] : [path];
}

/** Sets `target` at `path` to `source`'s value there (deleting the key when `source` has none). */
function copyAt(target: object, source: object, path: readonly string[]): void {
  let into = target as Record<string, unknown>;
  let from: unknown = source;
  for (const segment of path.slice(0, -1)) {
    into = into[segment] as Record<string, unknown>;
    from = isMapping(from) ? from[segment] : undefined;
  }
  const last = path[path.length - 1] as string;
  const value = isMapping(from) ? from[last] : undefined;
  if (value === undefined) delete into[last];
  else into[last] = structuredClone(value);
}
