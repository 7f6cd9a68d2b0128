/**
 * Attacks on admission (issue 8, "Who may use it"), against a real proxy on loopback with real
 * sockets: what an attacker tries beyond the well-behaved client's path.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import net from 'node:net';
import { captureLogs, startOrigin, startTestProxy, siteHandler, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { openConnect, writeTempFile } from '../helpers/https-support.js';
import { redactUserInfo } from '../../src/audit/redact.js';

const UA = 'ExampleBot/1.0';
const ROBOTS = 'User-agent: *\nAllow: /\n';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** One absolute-form request through the proxy from `localAddress`, on a fresh connection. */
function get(proxyPort: number, url: string, headers: http.OutgoingHttpHeaders, localAddress: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxyPort, path: url, headers: { 'user-agent': UA, ...headers }, agent: false, localAddress }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('admission under attack', () => {
  let proxy: Proxy;
  let origin: TestOrigin;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: ROBOTS }));
    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-users-'));
    const credentialsFile = join(dir, 'users');
    // Cost 12: bcryptjs computes in slices of at most 100 ms, and a check at cost 12 takes several,
    // so the proxy reads the other guesses between them (at cost 10 a check ends within one slice).
    writeFileSync(credentialsFile, `alice:${bcrypt.hashSync('alice-password', 12)}\n`);
    proxy = await startTestProxy({ access: { clients: ['127.0.0.0/8'], credentialsFile, maxAuthFailures: 3, authFailureWindow: '1m' } });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('counts credential checks in flight against the failure budget: concurrent guesses from one address get at most maxAuthFailures checks', async () => {
    const port = proxy.proxyAddress.port;
    // 30 guesses at once, before any of them has failed: 30 connections opened first, then every
    // request written in one go, so the proxy reads them all before the first check ends.
    const host = new URL(origin.url).host;
    const sockets = await Promise.all(
      Array.from({ length: 30 }, () => new Promise<net.Socket>((resolve, reject) => {
        const socket = net.connect({ host: '127.0.0.1', port, localAddress: '127.0.0.9' }, () => resolve(socket));
        socket.once('error', reject);
      })),
    );
    const answers = sockets.map((socket) => new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
      socket.once('close', () => resolve(text));
    }));
    sockets.forEach((socket, i) =>
      socket.write(`GET ${origin.url}/g${i} HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${basic('mallory', `guess-${i}`)}\r\nConnection: close\r\n\r\n`),
    );
    const guesses = (await Promise.all(answers)).map((text) => ({ status: Number(text.slice(9, 12)) }));
    const statuses = guesses.map((g) => g.status);
    const checked = statuses.filter((s) => s === 407).length;
    assert.ok(checked <= 3, `at most 3 guesses checked, got ${checked} (${statuses.join(' ')})`);
    assert.equal(statuses.filter((s) => s === 429).length, 30 - checked, statuses.join(' '));
    // Another address keeps its own budget.
    const other = await get(port, `${origin.url}/ok`, { 'proxy-authorization': basic('alice', 'alice-password') }, '127.0.0.10');
    assert.equal(other.status, 200);
  });
});

/** Sends one plain-HTTP request on an open tunnel and reads its response head and body (Content-Length framed). */
function requestInTunnel(socket: net.Socket, host: string, path: string, headers = ''): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
      if (text.length < end + 4 + length) return;
      socket.off('data', onData);
      resolve({ status: Number(text.slice(9, 12)), text });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: ${UA}\r\n${headers}\r\n`);
  });
}

describe('a reload that turns on proxy authentication', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  let configPath: string;
  let config: Record<string, unknown>;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: ROBOTS }));
    config = {
      listen: { host: '127.0.0.1', port: 0 },
      admin: { host: '127.0.0.1', port: 0 },
      stateDir: mkdtempSync(join(tmpdir(), 'robots-proxy-state-')),
      access: { clients: ['127.0.0.0/8'] },
      upstream: { allowPrivateNetworks: true },
      log: { level: 'silent' },
    };
    configPath = writeTempFile('config.yaml', JSON.stringify(config));
    proxy = await startTestProxy(config, { configPath });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('also applies to a tunnel opened anonymously before it: its next request gets 407', async () => {
    const host = new URL(origin.url).host;
    const tunnel = await openConnect(proxy.proxyAddress.port, host);
    assert.equal(tunnel.status, 200);
    assert.equal((await requestInTunnel(tunnel.socket, host, '/before')).status, 200);
    const credentialsFile = writeTempFile('users', `alice:${bcrypt.hashSync('alice-password', 4)}\n`);
    writeFileSync(configPath, JSON.stringify({ ...config, access: { clients: ['127.0.0.0/8'], credentialsFile } }));
    const reloaded = await fetch(`${proxy.adminUrl}/reload`, { method: 'POST' });
    assert.equal(reloaded.status, 200, await reloaded.text());
    const hits = origin.hits.length;
    const after = await requestInTunnel(tunnel.socket, host, '/after');
    assert.equal(after.status, 407, after.text.slice(0, 300));
    assert.equal(origin.hits.length, hits, 'nothing reaches the origin');
    tunnel.socket.destroy();
  });
});

/** Writes `text` on a new connection to the proxy and reads until the proxy closes it (or 5 s pass). */
function rawExchange(proxyPort: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port: proxyPort });
    let answer = '';
    const timer = setTimeout(() => socket.destroy(), 5_000);
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    socket.once('error', reject);
    socket.end(text);
  });
}

describe('user information in a request target', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  let logs: LogCapture;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: ROBOTS }));
    const credentialsFile = writeTempFile('users', `alice:${bcrypt.hashSync('alice-password', 4)}\n`);
    logs = captureLogs();
    proxy = await startTestProxy({ access: { clients: ['127.0.0.0/8'], credentialsFile }, log: { level: 'info' } }, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('never reaches the access line: the password of http://user:password@host/ is redacted, as for CONNECT user:password@host:port', async () => {
    const host = new URL(origin.url).host;
    const port = proxy.proxyAddress.port;
    const alice = `Proxy-Authorization: ${basic('alice', 'alice-password')}\r\n`;
    const answers = [
      await rawExchange(port, `GET http://bob:topsecret-1@${host}/a HTTP/1.1\r\nHost: ${host}\r\n${alice}Connection: close\r\n\r\n`),
      await rawExchange(port, `GET http://bob:topsecret-2@${host}/a HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
      await rawExchange(port, `CONNECT bob:topsecret-3@${host} HTTP/1.1\r\nHost: ${host}\r\n${alice}\r\n`),
      await rawExchange(port, `CONNECT bob:topsecret-4@${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`),
    ];
    for (const answer of answers) assert.match(answer.slice(9, 12), /^40[07]$/, answer.slice(0, 200));
    for (const answer of answers) assert.doesNotMatch(answer, /topsecret/);
    for (const line of logs.lines) assert.doesNotMatch(JSON.stringify(line), /topsecret/);
    const redacted = logs.lines.filter((l) => typeof l['url'] === 'string' && l['url'].includes('[Redacted]@'));
    assert.equal(redacted.length, 4, 'each refusal is an access line, its target with the user information redacted');
    assert.equal(origin.hits.length, 0);
  });
});

it('redactUserInfo: only the user information of a target, never an "@" in its path or query', () => {
  assert.equal(redactUserInfo('http://bob:pw@host.example/a'), 'http://[Redacted]@host.example/a');
  assert.equal(redactUserInfo('bob:pw@host.example:443'), '[Redacted]@host.example:443');
  assert.equal(redactUserInfo('http://host.example/a@b?c=d@e'), 'http://host.example/a@b?c=d@e');
  assert.equal(redactUserInfo('/users/@me'), '/users/@me');
});
