/**
 * The admin API's bearer token: beyond loopback the proxy refuses to start without one (a real
 * `robots-proxy serve` child process); with one, every route but /healthz and /ca.pem needs it;
 * a token file is created (mode 0600) when missing.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';
import { startTestProxy } from '../helpers/harness.js';
import { hasBearerToken, resolveAdminToken } from '../../src/access/admin-token.js';
import { validateConfig } from '../../src/config/index.js';
import { ConfigError } from '../../src/errors.js';

const TOKEN = 'admin-token-for-the-tests-0123456789';

describe('admin bearer token', () => {
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    proxy = await startTestProxy({ admin: { host: '127.0.0.1', port: 0, token: TOKEN } });
  });

  after(async () => {
    await proxy?.close();
  });

  it('is required by every route but /healthz and /ca.pem', async () => {
    const bare = await fetch(`${proxy.adminUrl}/metrics`);
    assert.equal(bare.status, 401);
    assert.match(bare.headers.get('www-authenticate') ?? '', /^Bearer /);
    assert.equal(((await bare.json()) as { error: string }).error, 'unauthorized');
    assert.equal((await fetch(`${proxy.adminUrl}/metrics`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } })).status, 401);
    assert.equal((await fetch(`${proxy.adminUrl}/reload`, { method: 'POST' })).status, 401);
    assert.equal((await fetch(`${proxy.adminUrl}/explain?url=http%3A%2F%2Fexample.com%2F`)).status, 401);
    assert.equal((await fetch(`${proxy.adminUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status, 200);
    assert.equal((await fetch(`${proxy.adminUrl}/healthz`)).status, 200);
    assert.equal((await fetch(`${proxy.adminUrl}/ca.pem`)).status, 200);
  });
});

describe('admin bound beyond loopback', () => {
  it('is refused without a token, by the schema and by `robots-proxy serve`', async () => {
    assert.throws(() => validateConfig({ admin: { host: '0.0.0.0' } }), (err: unknown) => err instanceof ConfigError && err.key === 'admin.host');
    assert.doesNotThrow(() => validateConfig({ admin: { host: '0.0.0.0', token: TOKEN } }));
    assert.doesNotThrow(() => validateConfig({ admin: { host: '0.0.0.0', enabled: false } }));
    assert.throws(() => validateConfig({ admin: { token: 'short' } }), (err: unknown) => err instanceof ConfigError && !err.message.includes('short'));

    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-admin-'));
    const config = join(dir, 'config.yaml');
    writeFileSync(config, `listen: { host: 127.0.0.1, port: 0 }\nadmin:\n  host: 0.0.0.0\n  port: 0\nstateDir: ${dir}\n`);
    const run = await runCli(['serve', '--config', config]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /config\.yaml:3:3: admin\.host: 0\.0\.0\.0 is beyond loopback: set admin\.token or admin\.tokenFile/);
  });

  it('creates a missing token file (0600) and reads an existing one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-admin-'));
    const file = join(dir, 'sub', 'admin-token');
    const created = resolveAdminToken({ tokenFile: file });
    assert.equal(created.createdFile, file);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(readFileSync(file, 'utf8').trim(), created.token);
    assert.ok((created.token ?? '').length >= 32);
    assert.deepEqual(resolveAdminToken({ tokenFile: file }), { token: created.token });
    writeFileSync(file, 'tiny\n');
    assert.throws(() => resolveAdminToken({ tokenFile: file }), (err: unknown) => err instanceof ConfigError && err.key === 'admin.tokenFile');
  });

  it('refuses a token file under a directory that cannot be made (/proc) at once, naming the key (serve hung at start, a core spinning, before)', { skip: !existsSync('/proc/self'), timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-admin-'));
    const config = join(dir, 'config.yaml');
    writeFileSync(config, `listen: { host: 127.0.0.1, port: 0 }\nadmin: { port: 0, tokenFile: /proc/robots-proxy-nope/token }\nstateDir: ${dir}\n`);
    const run = await runCli(['serve', '--config', config]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /admin\.tokenFile: "\/proc\/robots-proxy-nope\/token" does not exist and cannot be created \(ENOENT\)/);
  });

  it('compares the bearer token exactly', () => {
    assert.equal(hasBearerToken(`Bearer ${TOKEN}`, TOKEN), true);
    assert.equal(hasBearerToken(`bearer ${TOKEN}`, TOKEN), true);
    assert.equal(hasBearerToken(`Bearer ${TOKEN}x`, TOKEN), false);
    assert.equal(hasBearerToken(`Basic ${TOKEN}`, TOKEN), false);
    assert.equal(hasBearerToken(undefined, TOKEN), false);
  });
});
