/**
 * Per-origin overrides from the `hosts` section of the configuration.
 * Extension, not in RFC 9309. Pure; never reads the clock.
 */
import type { Config } from './types.js';

/** The pacing limits in force for one origin. */
export interface OriginLimits {
  /** Minimum delay between requests to the origin, ms; a smaller Crawl-delay is raised to it. */
  readonly minDelayMs: number;
  /** Requests in flight to the origin when no delay is in force. */
  readonly maxConcurrency: number;
}

/**
 * Finds the `hosts` entry for `origin`, most precise first: the entry for the
 * full origin (`https://example.com:8443`), then the entry for its bare
 * hostname (`example.com`, every scheme and port), then the most specific host
 * glob (`*.a.example.com` before `*.example.com`; a glob never matches its own
 * apex). Fields the entry does not set come from `pacing`
 * (`pacing.minDelayMs`, `pacing.maxConcurrency`): an entry replaces the global
 * values, it may lower them as well as raise them. Extension, not in RFC 9309.
 * @param origin `scheme://host[:port]` (RFC 9309 §2.3 origin); it is
 *   normalised with `URL` first, so upper case or an explicit default port
 *   still match.
 * @returns the limits, or `undefined` when no entry matches (or `origin` is
 *   not a URL). Never throws.
 */
export function resolveHostOverride(config: Config, origin: string): OriginLimits | undefined {
  const { hosts, pacing } = config;
  let entry = Object.hasOwn(hosts, origin) ? hosts[origin] : undefined;
  // Read per request: without any entry (the default) the origin is not parsed again.
  if (entry === undefined && hasEntries(hosts)) {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return undefined;
    }
    const key = [url.origin, url.hostname, ...globsFor(url.hostname)].find((k) => Object.hasOwn(hosts, k));
    entry = key === undefined ? undefined : hosts[key];
  }
  if (entry === undefined) return undefined;
  return {
    minDelayMs: entry.minDelayMs ?? pacing.minDelayMs,
    maxConcurrency: entry.maxConcurrency ?? pacing.maxConcurrency,
  };
}

/** True when `hosts` has at least one entry (no array allocated, unlike `Object.keys`). */
function hasEntries(hosts: object): boolean {
  for (const key in hosts) if (Object.hasOwn(hosts, key)) return true;
  return false;
}

/**
 * The host globs that cover `hostname`, most specific first:
 * `a.b.example.com` -> `*.b.example.com`, `*.example.com`, `*.com`. None for
 * an IP address (`[::1]`, `192.0.2.1`): globs name domains.
 */
function globsFor(hostname: string): string[] {
  if (hostname.startsWith('[') || /^[\d.]+$/.test(hostname)) return [];
  const labels = hostname.split('.');
  const globs: string[] = [];
  for (let i = 1; i < labels.length; i++) globs.push(`*.${labels.slice(i).join('.')}`);
  return globs;
}

/**
 * The limits for `origin`: its `hosts` entry (see {@link resolveHostOverride})
 * or else the global `pacing.minDelayMs` and `pacing.maxConcurrency`. Never throws.
 */
export function resolveOriginLimits(config: Config, origin: string): OriginLimits {
  return (
    resolveHostOverride(config, origin) ?? {
      minDelayMs: config.pacing.minDelayMs,
      maxConcurrency: config.pacing.maxConcurrency,
    }
  );
}
