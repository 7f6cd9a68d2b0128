// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../src/errors.js';
import { validateConfig } from '../../src/config/index.js';
import { knownKeysAt, normaliseHostKey } from '../../src/config/schema.js';

function keyOfError(input: unknown): string | undefined {
  try {
    validateConfig(input);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.code, 'ERR_CONFIG');
    return error.key;
  }
  assert.fail(`accepted ${JSON.stringify(input)}`);
}

describe('configSchema: values refused, with the key named', () => {
  const cases: [unknown, string][] = [
    [{ listen: { port: -1 } }, 'listen.port'],
    [{ listen: { port: 8080.5 } }, 'listen.port'],
    [{ listen: { host: 'http://127.0.0.1' } }, 'listen.host'],
    [{ listen: { host: '127.0.0.1:8080' } }, 'listen.host'],
    [{ admin: { enabled: 'true' } }, 'admin.enabled'],
    [{ robots: { userAgent: 'bot\r\nX-Injected: 1' } }, 'robots.userAgent'],
    [{ robots: { userAgent: '   ' } }, 'robots.userAgent'],
    [{ robots: { ttl: '0' } }, 'robots.ttl'],
    [{ robots: { ttl: '25h' } }, 'robots.ttl'],
    [{ robots: { ttl: '30s', minTtl: '1m' } }, 'robots.minTtl'],
    [{ robots: { errorRetry: '1h', errorRetryMax: '30m' } }, 'robots.errorRetryMax'],
    [{ robots: { maxBytes: 0 } }, 'robots.maxBytes'],
    [{ robots: { maxBytes: '1GiB' } }, 'robots.maxBytes'],
    [{ robots: { maxRedirects: 21 } }, 'robots.maxRedirects'],
    [{ robots: { maxOrigins: 0 } }, 'robots.maxOrigins'],
    [{ robots: { cacheBytes: '512KiB' } }, 'robots.cacheBytes'],
    [{ robots: { cacheBytes: 'lots' } }, 'robots.cacheBytes'],
    [{ robots: { timeout: '30d' } }, 'robots.timeout'], // beyond Node's timer range
    [{ pacing: { maxConcurrency: 0 } }, 'pacing.maxConcurrency'],
    [{ pacing: { maxQueue: -1 } }, 'pacing.maxQueue'],
    [{ pacing: { maxQueuePerIdentity: 1.5 } }, 'pacing.maxQueuePerIdentity'],
    [{ pacing: { window: 0 } }, 'pacing.window'],
    [{ pacing: { backoff: '10s', maxBackoff: '5s' } }, 'pacing.maxBackoff'],
    [{ pacing: { maxRetryAfter: '0' } }, 'pacing.maxRetryAfter'],
    [{ pacing: { maxCrawlDelay: '500ms' } }, 'pacing.maxCrawlDelay'],
    [{ pacing: { maxCrawlDelay: '721h' } }, 'pacing.maxCrawlDelay'],
    [{ upstream: { caFile: '' } }, 'upstream.caFile'],
    [{ https: { caKey: 'key.pem' } }, 'https.caKey'],
    [{ https: { mode: 'bump' } }, 'https.mode'],
    [{ https: { leafTtl: '30s' } }, 'https.leafTtl'],
    [{ https: { leafTtl: '30d' } }, 'https.leafTtl'],
    [{ hosts: { 'example.com': { maxConcurrency: 0 } } }, 'hosts["example.com"].maxConcurrency'],
    [{ hosts: { 'example.com': 5 } }, 'hosts["example.com"]'],
    [{ hosts: { 'ftp://example.com': {} } }, 'hosts["ftp://example.com"]'],
    [{ hosts: { 'example.com': {}, 'EXAMPLE.com': {} } }, 'hosts["EXAMPLE.com"]'],
    [{ hosts: { ['__proto__']: { minDelay: '1s' } } }, 'hosts.__proto__'],
    [{ hosts: { 'a.*.example.com': {} } }, 'hosts["a.*.example.com"]'],
    [{ hosts: { '*.example.com': {}, '*.EXAMPLE.com': {} } }, 'hosts["*.EXAMPLE.com"]'],
    [{ log: { level: 'verbose' } }, 'log.level'],
    [{ shutdown: { drainTimeout: '2h' } }, 'shutdown.drainTimeout'],
    [{ shutdown: { drainTimeout: '-1s' } }, 'shutdown.drainTimeout'],
    [{ shutdown: { grace: '1s' } }, 'shutdown.grace'],
    [{ stateDir: 5 }, 'stateDir'],
    [{ listen: { host: '0.0.0.0', port: 7000 }, admin: { port: 7000 } }, 'admin.port'],
    [{ admin: { maxConnections: 0 } }, 'admin.maxConnections'],
    [{ admin: { maxConnections: 1025 } }, 'admin.maxConnections'],
    [{ clients: { maxConnections: 0 } }, 'clients.maxConnections'],
    [{ clients: { maxConnections: 'unlimited' } }, 'clients.maxConnections'],
    [{ clients: { maxConnections: 1.5 } }, 'clients.maxConnections'],
    [{ clients: { maxConnectionsPerClient: -1 } }, 'clients.maxConnectionsPerClient'],
    [{ clients: { maxConnections: 10, maxConnectionsPerClient: 11 } }, 'clients.maxConnectionsPerClient'],
    [{ clients: { reservedDescriptors: 15 } }, 'clients.reservedDescriptors'],
    // The reserve must hold the admin connections: that is what keeps /healthz reachable.
    [{ admin: { maxConnections: 100 }, clients: { reservedDescriptors: 64 } }, 'clients.reservedDescriptors'],
    [{ clients: { idleTimeout: '0' } }, 'clients.idleTimeout'],
    [{ clients: { idleTimeout: '2h' } }, 'clients.idleTimeout'],
    [{ clients: { requestBodyTimeout: '0' } }, 'clients.requestBodyTimeout'],
    [{ clients: { responseWriteTimeout: 5 } }, 'clients.responseWriteTimeout'],
    [{ pacing: { maxSlotHold: '0' } }, 'pacing.maxSlotHold'],
    [{ pacing: { maxSlotHold: '30d' } }, 'pacing.maxSlotHold'],
  ];
  for (const [input, key] of cases) {
    it(`${JSON.stringify(input)} -> ${key}`, () => {
      assert.equal(keyOfError(input), key);
    });
  }
});

describe('configSchema: derived defaults', () => {
  it('keeps the Cache-Control floor no higher than a short ttl', () => {
    assert.equal(validateConfig({ robots: { ttl: '30s' } }).robots.minTtlMs, 30_000);
    assert.equal(validateConfig({ robots: { ttl: '1h' } }).robots.minTtlMs, 60_000);
  });

  it('raises the retry and backoff ceilings to a long first step', () => {
    assert.equal(validateConfig({ robots: { errorRetry: '1h' } }).robots.errorRetryMaxMs, 3_600_000);
    assert.equal(validateConfig({ pacing: { backoff: '10m' } }).pacing.maxBackoffMs, 600_000);
  });

  it('allows the same port on different hosts, or when admin is off, or ephemeral', () => {
    assert.doesNotThrow(() => validateConfig({ listen: { port: 7000 }, admin: { port: 7000, host: '127.0.0.2' } }));
    assert.doesNotThrow(() => validateConfig({ listen: { port: 7000 }, admin: { port: 7000, enabled: false } }));
    assert.doesNotThrow(() => validateConfig({ listen: { port: 0 }, admin: { port: 0 } }));
  });

  it('accepts RFC-deviating test values that are documented as such', () => {
    const config = validateConfig({ robots: { maxBytes: 100, maxRedirects: 0 } });
    assert.equal(config.robots.maxBytes, 100);
    assert.equal(config.robots.maxRedirects, 0);
  });
});

describe('normaliseHostKey', () => {
  const accepted: [string, string][] = [
    ['example.com', 'example.com'],
    ['EXAMPLE.com', 'example.com'],
    ['bücher.example', 'xn--bcher-kva.example'],
    ['https://Example.COM', 'https://example.com'],
    ['https://example.com:443', 'https://example.com'],
    ['https://example.com/', 'https://example.com'],
    ['http://example.com:8080', 'http://example.com:8080'],
    ['http://127.0.0.1:80', 'http://127.0.0.1'],
    ['127.0.0.1', '127.0.0.1'],
    ['::1', '[::1]'],
    ['[::1]', '[::1]'],
    ['0:0::1', '[::1]'],
    ['http://[::1]:8080', 'http://[::1]:8080'],
    ['*.example.com', '*.example.com'],
    ['*.Example.COM', '*.example.com'],
    ['*.bücher.example', '*.xn--bcher-kva.example'],
    ['*.com', '*.com'],
    // IPv4-mapped IPv6: the IPv4 address, as the proxy keys a request's host (a rule spelt so matched nothing).
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['[::ffff:7f00:1]', '127.0.0.1'],
    ['http://[::ffff:10.0.0.1]:8080', 'http://10.0.0.1:8080'],
    ['https://[::FFFF:a00:1]:443', 'https://10.0.0.1'],
    ['::ffff:0:a00:1', '[::ffff:0:a00:1]'],
  ];
  for (const [key, value] of accepted) {
    it(`${key} -> ${value}`, () => assert.deepEqual(normaliseHostKey(key), { ok: true, value }));
  }
  const refused = ['', 'example.com:8080', 'example.com/path', 'user@example.com', 'https://example.com/path', 'https://u:p@example.com', 'https://example.com?q', 'ftp://example.com', 'exa mple.com', 'https://'];
  for (const key of refused) {
    it(`refuses ${JSON.stringify(key)}`, () => assert.equal(normaliseHostKey(key).ok, false));
  }
  // A "*" anywhere but as the whole first label would be accepted and never match: refused, saying where it may go.
  const refusedGlobs: [string, RegExp][] = [
    ['*', /first label/],
    ['*.', /first label/],
    ['a.*.example.com', /first label/],
    ['*example.com', /first label/],
    ['*.*.example.com', /first label/],
    ['**.example.com', /first label/],
    ['https://*.example.com', /no scheme/],
    ['*.example.com:8080', /not a host glob/],
    ['*.192.0.2.1', /not an IP address/],
    ['*.0.1', /not an IP address/],
  ];
  for (const [key, reason] of refusedGlobs) {
    it(`refuses the glob ${JSON.stringify(key)}`, () => {
      const result = normaliseHostKey(key);
      assert.equal(result.ok, false);
      assert.match((result as { reason: string }).reason, reason);
    });
  }
});

describe('config/default.yaml documents every key', () => {
  const text = readFileSync(new URL('../../config/default.yaml', import.meta.url), 'utf8');
  const lines = text.split('\n');

  it('has a comment right above every key it sets', () => {
    const undocumented = lines
      .map((line, index) => ({ line, index }))
      .filter(({ line }) => /^\s*[A-Za-z]\w*:/.test(line))
      .filter(({ index }) => !/^\s*#/.test(lines[index - 1] ?? ''))
      .map(({ line, index }) => `${index + 1}: ${line.trim()}`);
    assert.deepEqual(undocumented, []);
  });

  it('mentions every key of the schema', () => {
    const sections = knownKeysAt([]);
    const keys = [...sections];
    for (const section of sections) keys.push(...knownKeysAt(section === 'hosts' ? ['hosts', 'example.com'] : [section]));
    keys.push(...knownKeysAt(['policy', 'rules', 0]));
    assert.ok(keys.length > 40, 'the key list is not empty');
    const missing = keys.filter((key) => !new RegExp(`^\\s*#?\\s*${key}\\b`, 'm').test(text));
    assert.deepEqual(missing, []);
  });
});
