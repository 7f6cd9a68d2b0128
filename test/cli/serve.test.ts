/**
 * `robots-proxy serve --config FILE` as a real child process (issue #3): a
 * config with a typo stops the start naming the key and its line; a valid one
 * starts, logs where it listens, and answers /healthz on the admin port.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliNodeArgs } from '../helpers/cli.js';
import { startProxyProcess } from '../helpers/processes.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Runs `robots-proxy serve --config <yaml in a temp file>` until it exits (30 s at most). */
function serveUntilExit(yaml: string): Promise<{ code: number | null; stdout: string; stderr: string; configPath: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'robots-serve-'));
  const configPath = join(dir, 'config.yaml');
  writeFileSync(configPath, yaml);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...cliNodeArgs(), 'serve', '--config', configPath], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, stdout, stderr, configPath });
    });
  });
}

describe('robots-proxy serve', () => {
  it('refuses a config with a typo, naming the key and its line', async () => {
    const yaml = [
      'listen: { host: 127.0.0.1, port: 0 }',
      'admin: { enabled: false }',
      'robots:',
      '  ttl: 1h',
      'pacing: { maxWiat: 5s }',
      'log: { level: info }',
      '',
    ].join('\n');
    const r = await serveUntilExit(yaml);
    assert.notEqual(r.code, 0, 'exit status');
    assert.equal(r.code, 2, 'configuration errors exit with 2');
    assert.match(r.stderr, /maxWiat/);
    assert.ok(r.stderr.includes(`${r.configPath}:5:`), `names the file and line 5: ${r.stderr}`);
    assert.match(r.stderr, /maxWait/, 'suggests the right key');
    assert.doesNotMatch(r.stdout, /"event":"listening"/);
  });

  it('refuses a bad value, naming the key and its line', async () => {
    const r = await serveUntilExit('listen: { host: 127.0.0.1, port: 0 }\nadmin: { enabled: false }\nupstream:\n  timeout: soon\n');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /upstream\.timeout/);
    assert.ok(r.stderr.includes(`${r.configPath}:4:`), r.stderr);
  });

  it('names an array element by its index without quotes: policy.rules[0], policy.rules[1].origin[1], access.clients[0]', async () => {
    const r = await serveUntilExit(
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        'admin: { enabled: false }',
        'policy:',
        '  rules:',
        '    - { name: first, action: explode }',
        '    - { name: second, action: deny, origin: [https://ok.example, "ftp://no/path"] }',
        '    - { name: first, action: deny, macth: x }',
        'access:',
        '  clients:',
        '    - { range: not-a-range }',
        '',
      ].join('\n'),
    );
    assert.equal(r.code, 2);
    for (const key of ['policy.rules[0].action', 'policy.rules[1].origin[1]', 'in policy.rules[2]', 'access.clients[0].range']) {
      assert.ok(r.stderr.includes(key), `${key} in: ${r.stderr}`);
    }
    assert.doesNotMatch(r.stderr, /\["\d+"\]/, 'no quoted index');
    const syntax = await serveUntilExit('listen: { host: 127.0.0.1, port: 0 }\npolicy:\n  rules:\n    - name: a\n      action: deny\n    - name: b\n      action: [deny\n');
    assert.equal(syntax.code, 2);
    assert.match(syntax.stderr, /near key "policy\.rules\[1\]\.action"/, syntax.stderr);
    const twice = await serveUntilExit('listen: { host: 127.0.0.1, port: 0 }\npolicy:\n  rules:\n    - { name: a, action: deny }\n    - { name: a, action: allow }\n');
    assert.equal(twice.code, 2);
    assert.match(twice.stderr, /:5:\d+: policy\.rules\[1\]\.name: /, twice.stderr);
  });

  it('prints one human line on stderr once listening: proxy, admin and CA, matching the JSON log line', { timeout: 40_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'robots-serve-'));
    const configPath = join(dir, 'config.yaml');
    writeFileSync(configPath, `listen: { host: 127.0.0.1, port: 0 }\nadmin: { host: 127.0.0.1, port: 0 }\nstateDir: ${join(dir, 'state')}\n`);
    const child = spawn(process.execPath, [...cliNodeArgs(), 'serve', '--config', configPath], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no listening line: ${stderr}`)), 30_000);
        child.once('exit', (code) => reject(new Error(`exited with ${code}: ${stderr}`)));
        child.stderr.on('data', () => {
          if (stderr.includes('\n')) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      const line = /^robots-proxy listening: proxy http:\/\/127\.0\.0\.1:(\d+), admin http:\/\/127\.0\.0\.1:(\d+), CA (\S+) \(generated just now; clients must trust it\)\n$/.exec(stderr);
      assert.ok(line, stderr);
      assert.equal(line[3], join(dir, 'state', 'ca', 'ca.pem'));
      await new Promise((r) => setTimeout(r, 300)); // the JSON log is flushed every 100 ms
      const listening = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.event === 'listening');
      assert.deepEqual([listening.proxy, listening.admin], [`127.0.0.1:${line[1]}`, `127.0.0.1:${line[2]}`]);
      assert.equal((await fetch(`http://127.0.0.1:${line[2]}/healthz`)).status, 200);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('close', r));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a port in use stops the start naming the file, line, key and port (exit 2)', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const r = await serveUntilExit(`# taken\nadmin: { enabled: false }\nhttps: { mode: tunnel }\nlisten:\n  host: 127.0.0.1\n  port: ${port}\n`);
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stderr, `robots-proxy: ${r.configPath}:6:3: listen.port: ${port} is already in use on 127.0.0.1 (another robots-proxy, or another program); stop it, or set listen.port to a free port (0 picks one)\n`);
    } finally {
      holder.close();
    }
  });

  it('starts with a valid config and answers /healthz on the admin port', async () => {
    const proxy = await startProxyProcess(
      'listen: { host: 127.0.0.1, port: 0 }\nadmin: { host: 127.0.0.1, port: 0 }\nhttps: { mode: tunnel }\nstateDir: $STATE\nlog: { level: info }\n',
    );
    try {
      assert.ok(proxy.proxyPort > 0, 'the listening line names the proxy port');
      assert.ok(proxy.adminPort !== undefined && proxy.adminPort > 0, 'the listening line names the admin port');
      assert.notEqual(proxy.adminPort, proxy.proxyPort);
      const health = await fetch(`http://127.0.0.1:${proxy.adminPort}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { status: 'ok' });
      // The proxy port answers as a proxy: an origin-form request gets 400.
      const direct = await fetch(`http://127.0.0.1:${proxy.proxyPort}/`);
      assert.equal(direct.status, 400);
      assert.equal(direct.headers.get('x-robots-proxy-decision'), 'deny; reason=bad-request');
      await direct.body?.cancel();
    } finally {
      await proxy.close();
    }
  });
});
