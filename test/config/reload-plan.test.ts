// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { planReload, RESTART_REQUIRED_KEYS, validateConfig } from '../../src/config/index.js';

describe('planReload', () => {
  it('finds nothing to do when the file did not change', () => {
    const config = validateConfig({ pacing: { minDelay: '1s' } });
    const plan = planReload(config, validateConfig({ pacing: { minDelay: '1s' } }));
    assert.deepEqual(plan.applied, []);
    assert.deepEqual(plan.restartRequired, []);
    assert.deepEqual(plan.config, config);
  });

  it('names live changes by their YAML keys and applies them', () => {
    const running = validateConfig({});
    const next = validateConfig({
      pacing: { minDelay: '2s', maxConcurrency: 2, maxCrawlDelay: '1h', maxSlotHold: '10s' },
      robots: { ttl: '1h', userAgent: 'other/1.0' },
      upstream: { timeout: '5s' },
      log: { level: 'warn' },
      https: { leafTtl: '1h', idleTimeout: '5m' },
      shutdown: { drainTimeout: '5s' },
      hosts: { 'example.com': { minDelay: '3s' } },
    });
    const plan = planReload(running, next);
    assert.deepEqual([...plan.applied].sort(), [
      'hosts["example.com"]',
      'https.idleTimeout',
      'https.leafTtl',
      'log.level',
      'pacing.maxConcurrency',
      'pacing.maxCrawlDelay',
      'pacing.maxSlotHold',
      'pacing.minDelay',
      'robots.ttl',
      'robots.userAgent',
      'shutdown.drainTimeout',
      'upstream.timeout',
    ]);
    assert.deepEqual(plan.restartRequired, []);
    assert.deepEqual(plan.config, next);
  });

  it('keeps the running value of every key that needs a restart, and names each', () => {
    const running = validateConfig({ listen: { port: 8080 }, admin: { port: 9090 }, stateDir: './state' });
    const next = validateConfig({
      listen: { port: 8081 },
      admin: { enabled: false },
      https: { mode: 'tunnel', caCert: 'ca.pem', caKey: 'ca-key.pem' },
      stateDir: '/var/lib/other',
      upstream: { allowPrivateNetworks: true, caFile: 'extra.pem', timeout: '5s' },
      robots: { maxOrigins: 5, cacheBytes: '2MiB' },
      clients: { maxConnections: 100, idleTimeout: '30s', requestBodyTimeout: '5s' },
      pacing: { maxQueue: 10 },
    });
    const plan = planReload(running, next);
    assert.deepEqual([...plan.restartRequired].sort(), [
      'admin.enabled',
      'clients.idleTimeout',
      'clients.maxConnections',
      'https.caCert',
      'https.caKey',
      'https.mode',
      'listen.port',
      'robots.cacheBytes',
      'robots.maxOrigins',
      'stateDir',
      'upstream.allowPrivateNetworks',
      'upstream.caFile',
    ]);
    assert.deepEqual([...plan.applied].sort(), ['clients.requestBodyTimeout', 'pacing.maxQueue', 'upstream.timeout']);
    assert.deepEqual(plan.config.listen, running.listen);
    assert.deepEqual(plan.config.admin, running.admin);
    assert.deepEqual(plan.config.https, { ...running.https, leafTtlMs: next.https.leafTtlMs });
    assert.equal('caCert' in plan.config.https, false, 'an optional key the running config lacks stays absent');
    assert.equal(plan.config.stateDir, './state');
    assert.equal(plan.config.upstream.allowPrivateNetworks, false);
    assert.equal('caFile' in plan.config.upstream, false);
    assert.equal(plan.config.upstream.timeoutMs, 5_000, 'the live key beside them is applied');
    assert.equal(plan.config.robots.maxOrigins, running.robots.maxOrigins);
    assert.equal(plan.config.pacing.maxQueue, 10);
  });

  it('reports a removed hosts entry and a restart-only key going back to its default', () => {
    const running = validateConfig({ hosts: { 'example.com': { minDelay: '1s' }, 'example.org': {} }, upstream: { caFile: 'x.pem' } });
    const plan = planReload(running, validateConfig({ hosts: { 'example.org': {} } }));
    assert.deepEqual(plan.applied, ['hosts["example.com"]']);
    assert.deepEqual(plan.restartRequired, ['upstream.caFile']);
    assert.deepEqual(plan.config.hosts, { 'example.org': {} });
    assert.equal(plan.config.upstream.caFile, 'x.pem');
  });

  it('lists only keys the schema knows', () => {
    const top = Object.keys(validateConfig({}));
    for (const key of RESTART_REQUIRED_KEYS) assert.ok(top.includes(key.split('.')[0] ?? ''), key);
  });

  it('does not share objects with either input', () => {
    const running = validateConfig({});
    const next = validateConfig({ hosts: { 'example.com': { minDelay: '1s' } } });
    const plan = planReload(running, next);
    assert.notEqual(plan.config.hosts, next.hosts);
    assert.notEqual(plan.config.listen, running.listen);
  });
});
