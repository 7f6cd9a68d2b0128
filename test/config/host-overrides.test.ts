// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parse as parseYaml } from 'yaml';
import { hostOverrideRules, hostOverridesAsYaml, validateConfig, type Config } from '../../src/config/index.js';
import { compilePolicy } from '../../src/policy/operator-policy.js';

/**
 * What the old `hosts` lookup answered, now through the policy rules the entries compile to
 * (first match wins): the matched rule's pacing, unset fields from `pacing`; undefined when no
 * rule matches. Origins arrive normalised (`URL.origin`), as the pipeline passes them.
 */
function resolveHostOverride(config: Config, origin: string): { minDelayMs: number; maxConcurrency: number } | undefined {
  let normalised: string;
  try {
    normalised = new URL(origin).origin;
  } catch {
    return undefined;
  }
  const rule = compilePolicy(hostOverrideRules(config.hosts)).match({ identity: null, productTokens: [], origin: normalised, pathAndQuery: '/', method: 'GET' });
  if (rule === undefined) return undefined;
  return { minDelayMs: rule.pacing.minDelayMs ?? config.pacing.minDelayMs, maxConcurrency: rule.pacing.maxConcurrency ?? config.pacing.maxConcurrency };
}

const config = validateConfig({
  pacing: { minDelay: '100ms', maxConcurrency: 6 },
  hosts: {
    'https://example.com': { minDelay: '2s', maxConcurrency: 1 },
    'example.com': { minDelay: '1s' },
    'http://example.org:8080': { maxConcurrency: 2 },
    '::1': { minDelay: '50ms' },
    '*.example.com': { minDelay: '3s' },
    '*.deep.example.com': { maxConcurrency: 3 },
  },
});

describe('resolveHostOverride', () => {
  it('prefers the full origin over the hostname', () => {
    assert.deepEqual(resolveHostOverride(config, 'https://example.com'), { minDelayMs: 2_000, maxConcurrency: 1 });
  });

  it('falls back to the hostname for other schemes and ports, filling gaps from pacing', () => {
    assert.deepEqual(resolveHostOverride(config, 'http://example.com'), { minDelayMs: 1_000, maxConcurrency: 6 });
    assert.deepEqual(resolveHostOverride(config, 'https://example.com:8443'), { minDelayMs: 1_000, maxConcurrency: 6 });
  });

  it('matches an origin only on its own scheme and port', () => {
    assert.deepEqual(resolveHostOverride(config, 'http://example.org:8080'), { minDelayMs: 100, maxConcurrency: 2 });
    assert.equal(resolveHostOverride(config, 'http://example.org'), undefined);
    assert.equal(resolveHostOverride(config, 'https://example.org:8080'), undefined);
  });

  it('normalises the origin it is given', () => {
    assert.deepEqual(resolveHostOverride(config, 'HTTPS://EXAMPLE.com:443'), { minDelayMs: 2_000, maxConcurrency: 1 });
    assert.deepEqual(resolveHostOverride(config, 'http://[::1]:9000'), { minDelayMs: 50, maxConcurrency: 6 });
  });

  it('matches a host glob on any subdomain, at any depth, never on its apex', () => {
    assert.deepEqual(resolveHostOverride(config, 'https://www.example.com'), { minDelayMs: 3_000, maxConcurrency: 6 });
    assert.deepEqual(resolveHostOverride(config, 'http://a.b.example.com:8080'), { minDelayMs: 3_000, maxConcurrency: 6 });
    assert.deepEqual(resolveHostOverride(config, 'https://WWW.Example.COM'), { minDelayMs: 3_000, maxConcurrency: 6 });
    // The apex has its own (exact host) entry; a glob alone never covers it.
    assert.deepEqual(resolveHostOverride(config, 'https://example.com'), { minDelayMs: 2_000, maxConcurrency: 1 });
    assert.equal(resolveHostOverride(validateConfig({ hosts: { '*.example.com': { minDelay: '1s' } } }), 'https://example.com'), undefined);
  });

  it('precedence: exact origin, then exact host, then the most specific glob', () => {
    assert.deepEqual(resolveHostOverride(config, 'https://x.deep.example.com'), { minDelayMs: 100, maxConcurrency: 3 }, 'the longer glob wins; its unset fields come from pacing, not the shorter glob');
    assert.deepEqual(resolveHostOverride(config, 'https://deep.example.com'), { minDelayMs: 3_000, maxConcurrency: 6 }, '*.deep.example.com does not cover deep.example.com');
    const layered = validateConfig({ hosts: { '*.example.org': { minDelay: '1s' }, 'www.example.org': { minDelay: '2s' }, 'https://www.example.org': { minDelay: '3s' } } });
    assert.equal(resolveHostOverride(layered, 'https://www.example.org')?.minDelayMs, 3_000);
    assert.equal(resolveHostOverride(layered, 'http://www.example.org')?.minDelayMs, 2_000);
    assert.equal(resolveHostOverride(layered, 'http://cdn.example.org')?.minDelayMs, 1_000);
  });

  it('never matches a glob against an IP address', () => {
    // The schema refuses such globs (see normaliseHostKey); a Config built in code may still hold them.
    const ipConfig = { ...validateConfig({}), hosts: { '*.1': { minDelayMs: 1_000 }, '*.0.1': { minDelayMs: 1_000 }, '*.0.0.1': { minDelayMs: 1_000 } } };
    assert.equal(resolveHostOverride(ipConfig, 'http://127.0.0.1'), undefined);
    assert.equal(resolveHostOverride(ipConfig, 'http://[::1]'), undefined);
  });

  it('does not match unknown hosts or non-URLs', () => {
    assert.equal(resolveHostOverride(config, 'https://example.org'), undefined);
    assert.equal(resolveHostOverride(config, 'not a url'), undefined);
    assert.equal(resolveHostOverride(config, 'constructor'), undefined);
  });

  it('never matches properties of Object.prototype', () => {
    assert.equal(resolveHostOverride(config, 'http://__proto__'), undefined);
    assert.equal(resolveHostOverride(config, 'http://constructor'), undefined);
  });
});

describe('hostOverrideRules', () => {
  it('names each rule after its key and orders them origin, hostname, longest glob', () => {
    assert.deepEqual(
      hostOverrideRules(config.hosts).map((r) => r.name),
      ['hosts:https://example.com', 'hosts:http://example.org:8080', 'hosts:example.com', 'hosts:[::1]', 'hosts:*.deep.example.com', 'hosts:*.example.com'],
    );
  });

  it('writes the replacement policy rules as YAML that validates to the same rules', () => {
    const yaml = hostOverridesAsYaml(config.hosts);
    assert.match(yaml, /^policy:\n  rules:\n    - \{ name: "hosts:https:\/\/example.com", origin: "https:\/\/example.com", action: pace, minDelay: 2s, maxConcurrency: 1 \}/);
    const rewritten = validateConfig({ pacing: { minDelay: '100ms', maxConcurrency: 6 }, ...(parseYaml(yaml) as object) });
    assert.deepEqual(rewritten.policy.rules, hostOverrideRules(config.hosts));
  });
});
