// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../../src/errors.js';
import { defaultConfig, loadConfig, parseConfig, validateConfig, type Config } from '../../src/config/index.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const fixture = (name: string) => relative(process.cwd(), join(root, 'test/fixtures/config', name));

/** Runs `fn`, which must throw a ConfigError, and returns it. */
function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    assert.equal(error.code, 'ERR_CONFIG');
    return error;
  }
  assert.fail('expected a ConfigError, nothing was thrown');
}

describe('loadConfig: one fixture per failure mode', () => {
  // [file, dotted key (undefined: the whole file), line, column]
  const cases: [string, string | undefined, number, number][] = [
    ['unknown-key.yaml', 'pacing.maxWiat', 12, 3],
    ['unknown-section.yaml', 'pacng', 4, 1],
    ['bad-indent.yaml', 'maxQueue', 5, 1],
    ['tab-indent.yaml', 'port', 3, 1],
    ['duplicate-key.yaml', 'robots.ttl', 4, 3],
    ['unclosed-quote.yaml', 'robots.userAgent', 4, 1],
    ['bad-duration.yaml', 'upstream.connectTimeout', 4, 3],
    ['duration-without-unit.yaml', 'pacing.maxWait', 3, 3],
    ['negative-duration.yaml', 'pacing.minDelay', 2, 3],
    ['bad-size.yaml', 'robots.maxBytes', 3, 3],
    ['bad-type.yaml', 'admin.enabled', 4, 3],
    ['port-out-of-range.yaml', 'listen.port', 3, 3],
    ['zero-concurrency.yaml', 'pacing.maxConcurrency', 3, 3],
    ['bad-enum.yaml', 'pacing.model', 2, 3],
    ['ttl-too-long.yaml', 'robots.ttl', 4, 3],
    ['idle-timeout-too-short.yaml', 'https.idleTimeout', 3, 3],
    ['ca-cert-without-key.yaml', 'https.caCert', 3, 3],
    ['bad-host-key.yaml', 'hosts["https://example.org/some/path"]', 4, 3],
    ['bad-host-override.yaml', 'hosts["example.com"].maxConcurency', 4, 5],
    ['host-glob-misplaced.yaml', 'hosts["cdn.*.example.com"]', 5, 3],
    ['port-collision.yaml', 'admin.port', 4, 3],
    ['bad-redis-url.yaml', 'state.redis.url', 4, 5],
    ['not-a-mapping.yaml', undefined, 1, 1],
    ['bad-client-range.yaml', 'access.clients[1].range', 5, 9],
    ['binding-without-identity.yaml', 'access.clients[1].binding', 5, 29],
    ['admin-beyond-loopback.yaml', 'admin.host', 4, 3],
    ['identity-set-without-value.yaml', 'identities.lab-scrapers.userAgentValue', 3, 3],
    ['bad-identity-token.yaml', 'identities.lab-scrapers.tokens[0]', 5, 9],
  ];
  for (const [file, key, line, column] of cases) {
    it(`${file}: ${key ?? '(whole file)'} at ${line}:${column}`, () => {
      const path = fixture(file);
      const error = configErrorOf(() => loadConfig(path));
      assert.equal(error.key, key);
      assert.equal(error.line, line);
      assert.equal(error.column, column);
      assert.ok(error.message.startsWith(`${path}:${line}:${column}: `), error.message);
      // "pacing.maxWait: ..." for a bad value, 'unknown key "maxWiat" in pacing' for an unknown one.
      const lastSegment = key?.match(/(?:^|\.)([\w-]+)$/)?.[1];
      if (key !== undefined) assert.ok(error.message.includes(key) || error.message.includes(`"${lastSegment}"`), error.message);
    });
  }

  it('suggests the nearest known key for a typo', () => {
    assert.match(configErrorOf(() => loadConfig(fixture('unknown-key.yaml'))).message, /"maxWait"/);
    assert.match(configErrorOf(() => loadConfig(fixture('unknown-section.yaml'))).message, /"pacing"/);
    assert.match(configErrorOf(() => loadConfig(fixture('bad-host-override.yaml'))).message, /"maxConcurrency"/);
  });

  it('names an unreadable file and keeps the cause', () => {
    const error = configErrorOf(() => loadConfig(fixture('no-such-file.yaml')));
    assert.equal(error.line, undefined);
    assert.equal((error.cause as NodeJS.ErrnoException).code, 'ENOENT');
    assert.ok(error.message.startsWith(fixture('no-such-file.yaml')));
    assert.match(error.message, /cannot read the configuration file \(ENOENT: no such file\)$/);
  });

  it('refuses an endless device (/dev/zero, whose size reads 0) at 1 MiB, not by reading it for ever', { timeout: 120_000 }, () => {
    const error = configErrorOf(() => loadConfig('/dev/zero'));
    assert.equal(error.message, '/dev/zero: configuration file is larger than 1 MiB');
  });

  it('refuses a file larger than 1 MiB before parsing it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-config-'));
    try {
      const path = join(dir, 'huge.yaml');
      writeFileSync(path, `# ${'x'.repeat(1_048_576)}\n`);
      const error = configErrorOf(() => loadConfig(path));
      assert.equal(error.key, undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('parseConfig', () => {
  it('reports every problem, the first in document order on the error', () => {
    const text = ['pacing:', '  maxWait: 30', '  maxQueue: -1', 'listen:', '  port: 99999', 'typo: 1', ''].join('\n');
    const error = configErrorOf(() => parseConfig(text, 'many.yaml'));
    assert.equal(error.key, 'pacing.maxWait');
    assert.equal(error.line, 2);
    const lines = error.message.split('\n');
    assert.deepEqual(
      lines.map((l) => l.split(': ')[0]),
      ['many.yaml:2:3', 'many.yaml:3:3', 'many.yaml:5:3', 'many.yaml:6:1'],
    );
  });

  it('gives the defaults for an empty document, only comments, {} and null', () => {
    for (const text of ['', '# nothing\n', '{}\n', '~\n']) {
      assert.deepEqual(parseConfig(text, 'x.yaml'), defaultConfig(), JSON.stringify(text));
    }
    assert.deepEqual(loadConfig(fixture('empty.yaml')), defaultConfig());
  });

  it('treats a section with every child commented out as empty', () => {
    const config = parseConfig('listen:\n  # port: 1\nrobots:\n', 'x.yaml');
    assert.deepEqual(config.listen, defaultConfig().listen);
    assert.deepEqual(config.robots, defaultConfig().robots);
  });

  it('refuses an empty value where a scalar is expected', () => {
    const error = configErrorOf(() => parseConfig('listen:\n  port:\n', 'x.yaml'));
    assert.equal(error.key, 'listen.port');
    assert.equal(error.line, 2);
  });

  it('says what a list of the wrong length holds, with the schema\'s own words ("got a list" and zod\'s default were all it said)', () => {
    const rules = Array.from({ length: 1001 }, (_, i) => `    - {name: r${i}, action: deny, path: /x${i}}`).join('\n');
    const cases: [string, string][] = [
      ['access:\n  clients: []\n', 'x.yaml:2:3: access.clients: must list at least one range (the default is loopback only: 127.0.0.0/8 and ::1/128); got an empty list'],
      ['policy:\n  rules:\n    - {name: a, action: deny, path: []}\n', 'x.yaml:3:31: policy.rules[0].path: must list at least one value; got an empty list'],
      [`policy:\n  rules:\n${rules}\n`, 'x.yaml:2:3: policy.rules: must list at most 1000 entries; got 1001 entries'],
      [`state:\n  redis:\n    keyPrefix: ${'k'.repeat(101)}\n`, 'x.yaml:3:5: state.redis.keyPrefix: must be at most 100 characters; got 101'],
      // A scalar or a mapping where a list goes said "expected array".
      ['access:\n  clients: 10.0.0.0/8\n', 'x.yaml:2:3: access.clients: expected a list (e.g. [a, b], or one "- item" per line), got "10.0.0.0/8"'],
      ['policy:\n  rules: {name: a}\n', 'x.yaml:2:3: policy.rules: expected a list (e.g. [a, b], or one "- item" per line), got a mapping'],
    ];
    for (const [text, message] of cases) assert.equal(configErrorOf(() => parseConfig(text, 'x.yaml')).message, message);
  });

  it('refuses a client range listed twice with another identity or binding (the second never applied, silently)', () => {
    const cases: [string, string][] = [
      [
        'access:\n  clients:\n    - {range: 10.0.0.0/8, identity: a}\n    - {range: 10.1.2.3/8, identity: b}\n',
        'x.yaml:4:7: access.clients[1]: is the range 10.0.0.0/8 again, already listed at access.clients[0] with identity "a": only that entry would ever apply (one entry per range)',
      ],
      [
        'access:\n  clients:\n    - {range: 127.0.0.1, identity: a, binding: true}\n    - 10.0.0.0/8\n    - {range: "::ffff:127.0.0.1/128", identity: a}\n',
        'x.yaml:5:7: access.clients[2]: is the range 127.0.0.1/32 again, already listed at access.clients[0] with identity "a" (binding): only that entry would ever apply (one entry per range)',
      ],
      ['access:\n  clients: [192.0.2.0/24, {range: 192.0.2.0/24, identity: b}]\n', 'x.yaml:2:27: access.clients[1]: is the range 192.0.2.0/24 again, already listed at access.clients[0] with no identity: only that entry would ever apply (one entry per range)'],
    ];
    for (const [text, message] of cases) assert.equal(configErrorOf(() => parseConfig(text, 'x.yaml')).message, message);
    // The same entry twice says nothing new; other ranges nested in one another are the longest-prefix rule's business.
    const config = parseConfig('access:\n  clients: [10.0.0.0/8, 10.0.0.0/8, {range: 10.1.0.0/16, identity: a}, {range: "::ffff:10.1.0.0/112", identity: a}]\n', 'x.yaml');
    assert.deepEqual(config.access.clients.map((c) => c.range), ['10.0.0.0/8', '10.0.0.0/8', '10.1.0.0/16', '10.1.0.0/16']);
  });

  it('points at the key inside a flow mapping', () => {
    const error = configErrorOf(() => parseConfig('pacing: {maxQueue: 5, maxWait: 3}\n', 'x.yaml'));
    assert.equal(error.key, 'pacing.maxWait');
    assert.deepEqual([error.line, error.column], [1, 23]);
  });

  it('follows aliases but refuses an alias bomb', () => {
    const shared = 'x-timeout: &t 5s\n';
    assert.equal(configErrorOf(() => parseConfig(shared, 'x.yaml')).key, 'x-timeout');
    const ok = parseConfig('robots:\n  timeout: &t 5s\nupstream:\n  timeout: *t\n', 'x.yaml');
    assert.equal(ok.upstream.timeoutMs, 5_000);
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]', 'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]', 'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]', 'd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]', ''].join('\n');
    const error = configErrorOf(() => parseConfig(bomb, 'bomb.yaml'));
    assert.equal(error.line, undefined);
  });

  it('refuses unknown tags', () => {
    const error = configErrorOf(() => parseConfig('stateDir: !secret x\n', 'x.yaml'));
    assert.equal(error.key, 'stateDir');
    assert.equal(error.line, 1);
  });
});

describe('valid sample', () => {
  it('loads every key, in milliseconds and bytes, with hosts keys normalised', () => {
    const expected: Config = {
      listen: { host: '0.0.0.0', port: 3128 },
      admin: { host: '::1', port: 0, enabled: false, maxConnections: 8 },
      clients: {
        maxConnections: 500,
        maxConnectionsPerClient: 20,
        reservedDescriptors: 64,
        idleTimeoutMs: 4_000,
        requestBodyTimeoutMs: 15_000,
        responseWriteTimeoutMs: 20_000,
      },
      robots: {
        userAgent: 'ExampleProxy/2.0 (+https://example.net/bot)',
        ttlMs: 43_200_000,
        minTtlMs: 300_000,
        errorRetryMs: 30_000,
        errorRetryMaxMs: 3_600_000,
        maxBytes: 1_048_576,
        maxRedirects: 7,
        timeoutMs: 1_500,
        maxOrigins: 500,
        cacheBytes: 67_108_864,
      },
      pacing: {
        model: 'end-to-start',
        enabled: true,
        maxConcurrency: 8,
        minDelayMs: 250,
        maxWaitMs: 90_000,
        maxQueue: 50,
        maxQueuePerIdentity: 20,
        windowMs: 10_000,
        backoffMs: 2_000,
        maxBackoffMs: 60_000,
        maxRetryAfterMs: 3_600_000,
        maxCrawlDelayMs: 7_200_000,
        maxSlotHoldMs: 45_000,
      },
      upstream: { timeoutMs: 45_000, connectTimeoutMs: 5_000, allowPrivateNetworks: true, caFile: 'test/fixtures/tls/upstream-ca.pem' },
      hosts: {
        'https://example.com': { minDelayMs: 2_000, maxConcurrency: 1 },
        'http://example.com:8080': { minDelayMs: 500 },
        'example.org': { maxConcurrency: 2 },
        '[::1]': {},
        '*.example.net': { minDelayMs: 1_000 },
      },
      policy: {
        rules: [
          { name: 'no-admin', action: 'deny', origins: ['*.example.org', 'https://example.com'], paths: ['/admin'] },
          { name: 'consent', action: 'allow', identities: ['partner'], tokens: ['examplebot'], methods: ['GET', 'HEAD'], rate: { requests: 30, periodMs: 60_000 } },
          { name: 'slow-pdf', action: 'pace', paths: ['/*.pdf$'], minDelayMs: 2_000, maxConcurrency: 2 },
        ],
      },
      enforcement: 'report',
      https: { mode: 'tunnel', caCert: 'state/ca.pem', caKey: 'state/ca-key.pem', leafTtlMs: 3_600_000, idleTimeoutMs: 90_000 },
      stateDir: '/var/lib/robots-proxy',
      log: { level: 'debug' },
      shutdown: { drainTimeoutMs: 120_000 },
      ledger: {
        enabled: true,
        path: '/var/lib/robots-proxy/audit.sqlite',
        flushIntervalMs: 500,
        rollupRetentionMs: 30 * 86_400_000,
        refusalRetentionMs: 2 * 86_400_000,
        maxRefusals: 10_000,
        maxKeysPerMinute: 1_000,
        robotsBodiesPerOrigin: 3,
        robotsBodyBytes: 65_536,
        pruneIntervalMs: 300_000,
      },
      metrics: { tokenLabels: 10, identityLabels: 5, busiestOrigins: 3 },
      access: {
        clients: [{ range: '127.0.0.1/32' }, { range: '10.0.0.0/8' }, { range: '10.1.0.0/16', identity: 'lab-scrapers', binding: true }, { range: '2001:db8::/32' }],
        credentialsFile: '/etc/robots-proxy/users',
        realm: 'Example crawl proxy',
        maxAuthFailures: 5,
        authFailureWindowMs: 600_000,
        maxCredentialChecks: 4,
      },
      identities: {
        'lab-scrapers': { tokens: ['ExampleBot', 'ExampleImages'], userAgent: 'append' },
        alice: { tokens: ['AliceBot'], userAgent: 'set', userAgentValue: 'AliceBot/1.0 (+https://example.com/alicebot)', onMismatch: 'flag' },
        monitoring: { tokens: [], userAgent: 'keep' },
      },
      identity: { onMismatch: 'deny' },
      state: {
        backend: 'redis',
        fleetSize: 3,
        redis: { url: 'redis://redis.internal:6380/2', keyPrefix: 'fleet-a:', onUnavailable: 'deny', commandTimeoutMs: 250, slotLeaseMs: 10_000, robotsLockLeaseMs: 20_000 },
      },
    };
    assert.deepEqual(loadConfig(fixture('valid.yaml')), expected);
  });
});

describe('validateConfig', () => {
  it('validates a plain object shaped like the file', () => {
    const config = validateConfig({ pacing: { maxWait: '5s' }, listen: { port: 0 } });
    assert.equal(config.pacing.maxWaitMs, 5_000);
    assert.equal(config.listen.port, 0);
  });

  it('names the key without a line', () => {
    const error = configErrorOf(() => validateConfig({ robots: { maxByts: 1 } }));
    assert.equal(error.key, 'robots.maxByts');
    assert.equal(error.line, undefined);
  });
});

describe('defaultConfig', () => {
  it('is what config/default.yaml says', () => {
    assert.deepEqual(loadConfig(join(root, 'config/default.yaml')), defaultConfig());
  });

  it('the shipped example configs load and differ from the defaults only where they say', () => {
    const local = loadConfig(join(root, 'config/local.yaml'));
    assert.deepEqual(local, { ...defaultConfig(), upstream: { ...defaultConfig().upstream, allowPrivateNetworks: true } });
    const docker = loadConfig(join(root, 'config/docker.yaml'));
    assert.equal(docker.listen.host, '0.0.0.0');
    assert.equal(docker.upstream.allowPrivateNetworks, false);
    assert.ok(docker.shutdown.drainTimeoutMs < 10_000, 'a drain ends before `docker stop` sends SIGKILL');
    const fleet = loadConfig(join(root, 'config/fleet.yaml'));
    assert.deepEqual(fleet.state, { ...defaultConfig().state, backend: 'redis', fleetSize: 3, redis: { ...defaultConfig().state.redis, url: 'redis://redis:6379' } });
    assert.deepEqual([fleet.https.caCert, fleet.https.caKey], ['/etc/robots-proxy/ca/ca.pem', '/etc/robots-proxy/ca/ca-key.pem']);
    assert.deepEqual({ ...fleet, state: docker.state, https: docker.https }, docker, 'otherwise config/docker.yaml');
  });

  it('returns a fresh object each time', () => {
    const a = defaultConfig();
    (a.listen as { port: number }).port = 1;
    assert.equal(defaultConfig().listen.port, 8080);
  });

  it('has the documented values', () => {
    const config = defaultConfig();
    assert.deepEqual(config.listen, { host: '127.0.0.1', port: 8080 });
    assert.deepEqual(config.admin, { host: '127.0.0.1', port: 9090, enabled: true, maxConnections: 32 });
    assert.deepEqual(config.clients, {
      maxConnections: 'auto',
      maxConnectionsPerClient: 'auto',
      reservedDescriptors: 128,
      idleTimeoutMs: 10_000,
      requestBodyTimeoutMs: 30_000,
      responseWriteTimeoutMs: 30_000,
    });
    assert.equal(config.pacing.maxSlotHoldMs, 30_000);
    assert.equal(config.robots.ttlMs, 24 * 3_600_000);
    assert.equal(config.robots.maxBytes, 500 * 1024);
    assert.equal(config.robots.maxRedirects, 5);
    assert.equal(config.pacing.model, 'start-to-start');
    assert.equal(config.upstream.allowPrivateNetworks, false);
    assert.equal(config.https.mode, 'intercept');
    assert.equal(config.https.idleTimeoutMs, 60_000);
    assert.equal(config.stateDir, './state');
    assert.deepEqual(config.hosts, {});
  });
});
