/**
 * Reloading the configuration file of a running proxy (issue #7 item 6), in
 * process: what changes, what a bad file does, what needs a restart, and
 * `POST /reload`, which only the admin listener answers.
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { startProxy, type RunningProxy } from '../../src/main.js';
import { captureLogs, startOrigin, siteHandler, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { createLogger } from '../../src/audit/logger.js';
import { restartRequiredMessage } from '../../src/lifecycle/reload.js';
import { CapturedLines } from '../audit/factories.js';
import { proxyRequest } from '../helpers/proxy-client.js';

/** Writes `<dir>/config.yaml`: listeners on port 0, tunnel mode, then `extra` (YAML) from line 6. */
function writeConfig(dir: string, extra: string, upstream = '{ allowPrivateNetworks: true }'): string {
  const path = join(dir, 'config.yaml');
  writeFileSync(
    path,
    [
      'listen: { host: 127.0.0.1, port: 0 }',
      'admin: { host: 127.0.0.1, port: 0 }',
      `upstream: ${upstream}`,
      'https: { mode: tunnel }',
      `stateDir: ${join(dir, 'state')}`,
      extra,
    ].join('\n'),
  );
  return path;
}

function events(logs: LogCapture, event: string): Array<Record<string, unknown>> {
  return logs.lines.filter((l) => l['event'] === event);
}

describe('RunningProxy.reloadFromFile', () => {
  let proxy: RunningProxy | undefined;
  let origin: TestOrigin | undefined;

  afterEach(async () => {
    await proxy?.close();
    await origin?.close();
    proxy = undefined;
    origin = undefined;
  });

  async function start(extra: string): Promise<{ dir: string; path: string; logs: LogCapture; running: RunningProxy }> {
    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-reload-'));
    const path = writeConfig(dir, extra);
    const logs = captureLogs();
    proxy = await startProxy(loadConfig(path), { configPath: path, logger: logs.logger });
    return { dir, path, logs, running: proxy };
  }

  it('applies a valid file: pacing, hosts, robots, upstream, log level, drain timeout', async () => {
    const { dir, logs, running } = await start('pacing: { minDelay: 0 }\nlog: { level: info }\n');
    writeConfig(
      dir,
      'pacing: { minDelay: 250ms, maxQueue: 7 }\nhosts: { "example.com": { minDelay: 2s } }\nrobots: { ttl: 1h }\nshutdown: { drainTimeout: 3s }\nlog: { level: warn }\n',
      '{ allowPrivateNetworks: true, timeout: 5s }',
    );
    const report = running.reloadFromFile();
    assert.equal(report.ok, true);
    assert.deepEqual([...(report.ok ? report.applied : [])].sort(), [
      'hosts["example.com"]',
      'log.level',
      'pacing.maxQueue',
      'pacing.minDelay',
      'robots.ttl',
      'shutdown.drainTimeout',
      'upstream.timeout',
    ]);
    const config = running.currentConfig();
    assert.equal(config.pacing.minDelayMs, 250);
    assert.deepEqual(config.hosts, { 'example.com': { minDelayMs: 2000 } });
    assert.equal(config.shutdown.drainTimeoutMs, 3000);
    assert.equal(config.upstream.timeoutMs, 5000);
    assert.equal(running.logger.level, 'warn');
    const [line] = events(logs, 'config-reloaded');
    assert.ok(line, 'the reload is logged');
    assert.equal(events(logs, 'config-restart-required').length, 0);
  });

  it('a reloaded upstream.timeout holds for the next request, on a pooled connection too', async () => {
    origin = await startOrigin((req, res) => {
      const delayMs = req.url === '/slow' ? 1000 : 0;
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(req.url === '/robots.txt' ? '' : `page ${req.url}\n`);
      }, delayMs);
    });
    const { dir, running } = await start('');
    const port = running.proxyAddress.port;
    assert.equal((await proxyRequest(port, `${origin.url}/fast`)).status, 200);
    writeConfig(dir, '', '{ allowPrivateNetworks: true, timeout: 200ms }');
    assert.equal(running.reloadFromFile().ok, true);
    const slow = await proxyRequest(port, `${origin.url}/slow`);
    assert.equal(slow.status, 504);
    assert.equal(slow.decision, 'allow; reason=upstream-error');
    writeConfig(dir, '', '{ allowPrivateNetworks: true, timeout: 5s }');
    assert.equal(running.reloadFromFile().ok, true);
    assert.equal((await proxyRequest(port, `${origin.url}/slow`)).status, 200);
  });

  it('keeps the running configuration when the file is invalid, and logs the file, key and line', async () => {
    const { dir, path, logs, running } = await start('pacing: { minDelay: 100ms }\n');
    const before = running.currentConfig();
    writeConfig(dir, 'pacing:\n  minDelay: 5s\n  maxWiat: 3s\n');
    const report = running.reloadFromFile();
    assert.equal(report.ok, false);
    assert.equal(!report.ok && report.error, 'config-invalid');
    assert.equal(!report.ok && report.key, 'pacing.maxWiat');
    assert.equal(!report.ok && report.line, 8);
    assert.match(!report.ok ? report.message : '', /did you mean "maxWait"/);
    assert.equal(running.currentConfig(), before, 'not even the valid key of the bad file is applied');
    const [failed] = events(logs, 'config-reload-failed');
    assert.deepEqual(
      { file: failed?.['file'], key: failed?.['key'], line: failed?.['line'], level: failed?.['level'] },
      { file: path, key: 'pacing.maxWiat', line: 8, level: 50 },
    );
    assert.match(String(failed?.['error']), new RegExp(`${path.replace(/[.\\/]/g, '\\$&')}:8:`));

    writeConfig(dir, 'pacing: { minDelay: [oops\n');
    const syntax = running.reloadFromFile();
    assert.equal(syntax.ok, false);
    assert.match(!syntax.ok ? syntax.message : '', /YAML syntax error/);
    assert.equal(typeof (!syntax.ok && syntax.line), 'number');
    assert.equal(running.currentConfig(), before);

    rmSync(path);
    const missing = running.reloadFromFile();
    assert.equal(!missing.ok && missing.error, 'config-invalid');
    assert.match(!missing.ok ? missing.message : '', /cannot read the configuration file \(ENOENT: no such file\)/);
    assert.equal(running.currentConfig(), before);
  });

  it('names the keys that need a restart in a warning and keeps their running values', async () => {
    const { dir, logs, running } = await start('');
    const before = running.currentConfig();
    writeFileSync(
      join(dir, 'config.yaml'),
      `listen: { host: 127.0.0.1, port: 1 }\nadmin: { enabled: false }\nupstream: { allowPrivateNetworks: true }\nhttps: { mode: deny }\nstateDir: ${join(dir, 'other')}\npacing: { maxConcurrency: 9 }\n`,
    );
    const report = running.reloadFromFile();
    assert.equal(report.ok, true);
    assert.deepEqual([...(report.ok ? report.restartRequired : [])].sort(), ['admin.enabled', 'admin.port', 'https.mode', 'listen.port', 'stateDir']);
    assert.deepEqual(report.ok ? report.applied : [], ['pacing.maxConcurrency']);
    const config = running.currentConfig();
    assert.deepEqual(config.listen, before.listen);
    assert.deepEqual(config.admin, before.admin);
    assert.equal(config.https.mode, 'tunnel');
    assert.equal(config.stateDir, before.stateDir);
    assert.equal(config.pacing.maxConcurrency, 9);
    const [warning] = events(logs, 'config-restart-required');
    assert.deepEqual([...(warning?.['keys'] as string[])].sort(), ['admin.enabled', 'admin.port', 'https.mode', 'listen.port', 'stateDir']);
    assert.match(String(warning?.['msg']), /listen\.port/);
    assert.match(String(warning?.['msg']), / changed and take effect only after a restart: their running values are kept$/);
    assert.equal(warning?.['level'], 40);
  });

  it('refuses a reload whose changed https.caCert or caKey cannot be read (a restart would fail), and keeps everything running', async () => {
    const { dir, path, logs, running } = await start('pacing: { maxConcurrency: 3 }\n');
    const before = running.currentConfig();
    const missing = join(dir, 'no-such-ca.pem');
    const text = readFileSync(path, 'utf8').replace('https: { mode: tunnel }', `https: { mode: tunnel, caCert: ${missing}, caKey: ${missing} }`);
    writeFileSync(path, text.replace('maxConcurrency: 3', 'maxConcurrency: 9'));
    const report = running.reloadFromFile();
    assert.equal(report.ok, false);
    assert.equal(!report.ok && report.key, 'https.caCert', !report.ok ? report.message : '');
    assert.match(!report.ok ? report.message : '', /https\.caCert: cannot read .*no-such-ca\.pem.*ENOENT/);
    assert.equal(running.currentConfig(), before, 'nothing of the file applied, not even pacing');
    assert.equal(events(logs, 'config-reload-failed').at(-1)?.['file'], path);
    assert.equal(events(logs, 'config-restart-required').length, 0);

    writeFileSync(path, readFileSync(path, 'utf8').replace('{ allowPrivateNetworks: true }', `{ allowPrivateNetworks: true, caFile: ${missing} }`));
    const upstreamCa = running.reloadFromFile();
    assert.equal(!upstreamCa.ok && upstreamCa.key, 'upstream.caFile', !upstreamCa.ok ? upstreamCa.message : '');
    assert.equal(running.currentConfig(), before);
  });

  it('POST /reload on the admin listener reloads; the proxy listener does not reach it', async () => {
    origin = await startOrigin(siteHandler({ robots: '' }));
    const { dir, logs, running } = await start('');
    const adminUrl = `http://127.0.0.1:${running.adminAddress!.port}`;
    writeConfig(dir, 'pacing: { minDelay: 50ms }\n');

    const viaProxyOriginForm = await proxyRequest(running.proxyAddress.port, '/reload', { method: 'POST' });
    assert.equal(viaProxyOriginForm.status, 400);
    const viaProxyAbsolute = await proxyRequest(running.proxyAddress.port, `${adminUrl}/reload`, { method: 'POST' });
    assert.equal(viaProxyAbsolute.status, 400);
    assert.equal(viaProxyAbsolute.decision, 'deny; reason=bad-request');
    assert.equal(events(logs, 'config-reloaded').length, 0, 'the proxy listener reloaded nothing');
    assert.equal(running.currentConfig().pacing.minDelayMs, 0);

    const crossOrigin = await fetch(`${adminUrl}/reload`, { method: 'POST', headers: { origin: 'https://evil.example' } });
    assert.equal(crossOrigin.status, 403);
    assert.equal(((await crossOrigin.json()) as { error: string }).error, 'cross-origin');

    const reply = await fetch(`${adminUrl}/reload`, { method: 'POST' });
    assert.equal(reply.status, 200);
    assert.deepEqual(await reply.json(), { status: 'reloaded', file: join(dir, 'config.yaml'), applied: ['pacing.minDelay'], restartRequired: [] });
    assert.equal(running.currentConfig().pacing.minDelayMs, 50);

    writeConfig(dir, 'pacing: { minDelay: soon }\n');
    const bad = await fetch(`${adminUrl}/reload`, { method: 'POST' });
    assert.equal(bad.status, 422);
    const body = (await bad.json()) as Record<string, unknown>;
    assert.deepEqual({ error: body['error'], key: body['key'], line: body['line'] }, { error: 'config-invalid', key: 'pacing.minDelay', line: 6 });
    assert.equal(running.currentConfig().pacing.minDelayMs, 50);
  });

  it('a reloaded log.level starts and stops the access lines of the next requests (the process logger, encoded lines)', async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-reload-'));
    const path = writeConfig(dir, 'log: { level: info }\n');
    const out = new CapturedLines();
    proxy = await startProxy(loadConfig(path), { configPath: path, logger: createLogger({ level: 'info', destination: out }) });
    const port = proxy.proxyAddress.port;
    const accessLines = (): string[] => out.records().filter((l) => l['msg'] === 'request').map((l) => l['url'] as string);
    const levels = ['info', 'warn', 'info', 'error', 'debug', 'warn'];
    const expected: string[] = [];
    for (const [i, level] of levels.entries()) {
      writeConfig(dir, `log: { level: ${level} }\n`);
      if (i > 0) assert.equal(proxy.reloadFromFile().ok, true);
      const url: string = `${(origin as TestOrigin).url}/page/${i}`;
      assert.equal((await proxyRequest(port, url)).status, 200);
      if (level === 'info' || level === 'debug') expected.push(url);
    }
    proxy.logger.flush();
    assert.deepEqual(accessLines(), expected);
  });

  it('refuses to reload once a stop has begun', async () => {
    const { logs, running } = await start('');
    const stopped = running.shutdown({ trigger: 'test' });
    const report = running.reloadFromFile();
    assert.equal(!report.ok && report.error, 'shutting-down');
    assert.equal(events(logs, 'config-reload-refused').length, 1);
    await stopped;
  });
});

describe('restartRequiredMessage', () => {
  it('speaks of one key in the singular (a changed upstream.caFile alone said "take effect ... their running values")', () => {
    assert.equal(
      restartRequiredMessage(['upstream.caFile']),
      'configuration reloaded, but upstream.caFile changed and takes effect only after a restart: its running value is kept',
    );
    assert.equal(
      restartRequiredMessage(['listen.port', 'stateDir']),
      'configuration reloaded, but listen.port, stateDir changed and take effect only after a restart: their running values are kept',
    );
  });
});
