/**
 * The deprecated `hosts` section, kept working as operator policy rules: each
 * entry becomes a `pace` rule placed after `policy.rules`, most precise first,
 * so that the first match is the entry the old lookup chose. Also the host glob
 * matching shared with the policy rules. Extension, not in RFC 9309. Pure.
 */
import type { HostOverride, PolicyRuleConfig } from './types.js';
import { formatDuration } from './units.js';

/**
 * The host globs that cover `hostname`, most specific first:
 * `a.b.example.com` -> `*.b.example.com`, `*.example.com`, `*.com`. None for
 * an IP address (`[::1]`, `192.0.2.1`): globs name domains. A glob never
 * covers its own apex (`*.example.com` does not cover `example.com`). Pure.
 */
export function hostGlobsFor(hostname: string): string[] {
  if (hostname.startsWith('[') || /^[\d.]+$/.test(hostname)) return [];
  const labels = hostname.split('.');
  const globs: string[] = [];
  for (let i = 1; i < labels.length; i++) globs.push(`*.${labels.slice(i).join('.')}`);
  return globs;
}

/** 0 for an origin, 1 for a bare hostname, 2 + (labels dropped) for a glob: the old lookup's precedence. */
function precisionRank(key: string): number {
  if (key.includes('://')) return 0;
  if (!key.startsWith('*.')) return 1;
  return 1_000 - key.split('.').length;
}

/**
 * The `hosts` entries (keys already normalised by the schema) as `pace` policy
 * rules named `hosts:<key>`, ordered as the old lookup's precedence: full
 * origins, then bare hostnames, then globs, the one with the most labels
 * first. With first-match-wins they resolve exactly as `hosts` did: an unset
 * field falls back to `pacing`. Pure; never throws.
 */
export function hostOverrideRules(hosts: Readonly<Record<string, HostOverride>>): PolicyRuleConfig[] {
  return Object.keys(hosts)
    .sort((a, b) => precisionRank(a) - precisionRank(b))
    .map((key) => {
      const entry = hosts[key] as HostOverride;
      return {
        name: `hosts:${key}`,
        action: 'pace' as const,
        origins: [key],
        ...(entry.minDelayMs !== undefined ? { minDelayMs: entry.minDelayMs } : {}),
        ...(entry.maxConcurrency !== undefined ? { maxConcurrency: entry.maxConcurrency } : {}),
      };
    });
}

/**
 * The YAML that replaces a `hosts` section (for the deprecation warning): the
 * `policy.rules` entries {@link hostOverrideRules} compiles it to, to be
 * appended after any existing rules. Pure; never throws.
 */
export function hostOverridesAsYaml(hosts: Readonly<Record<string, HostOverride>>): string {
  const lines = hostOverrideRules(hosts).map((rule) => {
    const fields = [`name: ${JSON.stringify(rule.name)}`, `origin: ${JSON.stringify(rule.origins?.[0])}`, 'action: pace'];
    if (rule.minDelayMs !== undefined) fields.push(`minDelay: ${formatDuration(rule.minDelayMs)}`);
    if (rule.maxConcurrency !== undefined) fields.push(`maxConcurrency: ${rule.maxConcurrency}`);
    return `    - { ${fields.join(', ')} }`;
  });
  return ['policy:', '  rules:', ...lines].join('\n');
}
