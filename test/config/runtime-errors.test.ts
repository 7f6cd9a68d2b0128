/**
 * Configuration errors that show only when the configuration is used (issue
 * #7, item 8): an unreadable `upstream.caFile` or `https.caCert`, an address
 * that cannot be bound, a port in use, a `stateDir` that cannot be created. Each stops the
 * start with the key, its value, what to do, and (placed against the file)
 * its line. One fixture per failure mode under test/fixtures/config/.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { ConfigError } from '../../src/errors.js';
import { listenConfigError, loadConfig, placeConfigError, readCaFile } from '../../src/config/index.js';
import { startProxy } from '../../src/main.js';
import { createTestPki } from '../cache/support.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const fixture = (name: string) => relative(process.cwd(), join(root, 'test/fixtures/config', name));
const silent = pino({ level: 'silent' });

/** Starts the proxy from `file`; it must fail. Returns the error placed against the file, as `serve` shows it. */
async function startFailure(file: string): Promise<ConfigError> {
  const config = loadConfig(file);
  let failure: unknown;
  try {
    const running = await startProxy(config, { logger: silent });
    await running.close();
  } catch (err) {
    failure = err;
  }
  assert.ok(failure instanceof ConfigError, `expected a ConfigError, got ${String(failure)}`);
  const placed = placeConfigError(failure, file);
  assert.ok(placed instanceof ConfigError);
  return placed;
}

describe('configuration errors found at start', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  // [fixture, key, line, column, what the message must say]
  const cases: Array<[string, string, number, number, RegExp[]]> = [
    ['unreadable-ca-file.yaml', 'upstream.caFile', 6, 3, [/robots-proxy-fixture-ca\.pem/, /ENOENT/, /PEM file of CA certificates/]],
    ['ca-file-not-pem.yaml', 'upstream.caFile', 6, 3, [/holds no PEM certificate/]],
    ['unbindable-host.yaml', 'listen.host', 3, 3, [/192\.0\.2\.1 is not an address of this machine/, /EADDRNOTAVAIL/, /127\.0\.0\.1/]],
    ['unresolvable-admin-host.yaml', 'admin.host', 5, 3, [/robots-proxy-fixture\.invalid does not resolve/]],
    ['unreadable-ca-cert.yaml', 'https.caCert', 5, 3, [/cannot read CA certificate \/nonexistent\/robots-proxy-fixture-ca\.pem/, /ENOENT/, /remove both to use a generated CA/]],
  ];
  if (existsSync('/proc/self')) cases.push(['state-dir-uncreatable.yaml', 'stateDir', 5, 1, [/\/proc\/robots-proxy-fixture\/state/, /ENOENT/, /writable directory/]]);
  for (const [file, key, line, column, says] of cases) {
    it(`${file}: ${key} at ${line}:${column}`, { timeout: 20_000 }, async () => {
      const error = await startFailure(fixture(file));
      assert.equal(error.key, key);
      assert.deepEqual([error.line, error.column], [line, column]);
      assert.ok(error.message.startsWith(`${fixture(file)}:${line}:${column}: ${key}: `), error.message);
      for (const pattern of says) assert.match(error.message, pattern);
    });
  }

  it('a port in use names the key, the port and what to do, for the proxy and the admin listener', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-port-'));
      dirs.push(dir);
      const proxyFile = join(dir, 'proxy.yaml');
      writeFileSync(proxyFile, `https: { mode: tunnel }\nadmin: { enabled: false }\nlisten:\n  host: 127.0.0.1\n  port: ${port}\n`);
      const proxyError = await startFailure(proxyFile);
      assert.equal(proxyError.key, 'listen.port');
      assert.deepEqual([proxyError.line, proxyError.column], [5, 3]);
      assert.match(proxyError.message, new RegExp(`listen\\.port: ${port} is already in use on 127\\.0\\.0\\.1`));
      assert.match(proxyError.message, /set listen\.port to a free port/);

      const adminFile = join(dir, 'admin.yaml');
      writeFileSync(adminFile, `https: { mode: tunnel }\nlisten: { host: 127.0.0.1, port: 0 }\nadmin: { host: 127.0.0.1, port: ${port} }\n`);
      const adminError = await startFailure(adminFile);
      assert.equal(adminError.key, 'admin.port');
      assert.deepEqual([adminError.line, adminError.column], [3, 27]);
    } finally {
      holder.close();
    }
  });

  it('a key not written in the file is named with its default', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const error = listenConfigError('admin', '127.0.0.1', port, Object.assign(new Error('in use'), { code: 'EADDRINUSE' }));
      const placed = placeConfigError(error, fixture('empty.yaml')) as ConfigError;
      assert.equal(placed.line, undefined);
      assert.match(placed.message, /admin\.port is not set in the file: the default applies/);
      assert.ok(placed.message.startsWith(`${fixture('empty.yaml')}: admin.port: `), placed.message);
    } finally {
      holder.close();
    }
  });
});

describe('listenConfigError', () => {
  const errorWith = (code: string) => Object.assign(new Error(code), { code });
  it('maps each listen failure to the key to change and what to do', () => {
    const table: Array<[string, number, string, RegExp]> = [
      ['EADDRINUSE', 8080, 'listen.port', /8080 is already in use/],
      ['EACCES', 80, 'listen.port', /80 is a privileged port .*CAP_NET_BIND_SERVICE/],
      ['EACCES', 8080, 'listen.port', /binding 127\.0\.0\.1:8080 was refused/],
      ['EADDRNOTAVAIL', 8080, 'listen.host', /not an address of this machine/],
      ['ENOTFOUND', 8080, 'listen.host', /does not resolve/],
      ['EAFNOSUPPORT', 8080, 'listen.host', /address family/],
      ['EMFILE', 8080, 'listen.host', /cannot listen on 127\.0\.0\.1:8080 \(EMFILE\)/],
    ];
    for (const [code, port, key, says] of table) {
      const error = listenConfigError('listen', '127.0.0.1', port, errorWith(code));
      assert.equal(error.code, 'ERR_CONFIG');
      assert.equal(error.key, key, code);
      assert.match(error.message, says);
      assert.equal((error.cause as NodeJS.ErrnoException).code, code);
    }
  });
});

describe('readCaFile', () => {
  it('accepts a PEM file of certificates and refuses one that does not parse', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-cafile-'));
    try {
      const good = join(dir, 'good.pem');
      const pki = await createTestPki();
      writeFileSync(good, `# an extra CA\n${pki.caPem}`);
      assert.equal(readCaFile(good), `# an extra CA\n${pki.caPem}`);
      const broken = join(dir, 'broken.pem');
      writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
      assert.throws(() => readCaFile(broken), (err: ConfigError) => err.key === 'upstream.caFile' && /certificate 1 .* does not parse/.test(err.message));
      assert.throws(() => readCaFile(dir), (err: ConfigError) => err.key === 'upstream.caFile' && /EISDIR/.test(err.message));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
