import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { resolveHostOverride, resolveOriginLimits, validateConfig } from '../../src/config/index.js';

const config = validateConfig({
  pacing: { minDelay: '100ms', maxConcurrency: 6 },
  hosts: {
    'https://example.com': { minDelay: '2s', maxConcurrency: 1 },
    'example.com': { minDelay: '1s' },
    'http://example.org:8080': { maxConcurrency: 2 },
    '::1': { minDelay: '50ms' },
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

  it('does not match subdomains, unknown hosts or non-URLs', () => {
    assert.equal(resolveHostOverride(config, 'https://www.example.com'), undefined);
    assert.equal(resolveHostOverride(config, 'https://example.net'), undefined);
    assert.equal(resolveHostOverride(config, 'not a url'), undefined);
    assert.equal(resolveHostOverride(config, 'constructor'), undefined);
  });

  it('never matches properties of Object.prototype', () => {
    assert.equal(resolveHostOverride(config, 'http://__proto__'), undefined);
    assert.equal(resolveHostOverride(config, 'http://constructor'), undefined);
  });
});

describe('resolveOriginLimits', () => {
  it('gives the pacing values when no entry matches', () => {
    assert.deepEqual(resolveOriginLimits(config, 'https://example.net'), { minDelayMs: 100, maxConcurrency: 6 });
    assert.deepEqual(resolveOriginLimits(config, 'https://example.com'), { minDelayMs: 2_000, maxConcurrency: 1 });
  });
});
