/**
 * Upgrade requests (WebSocket handshake) through the proxy: decided like any
 * request, then relayed by http-proxy; refused with the proxy's own answer.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { captureLogs, startTestProxy, type LogCapture } from '../helpers/harness.js';
import { waitFor } from '../helpers/proxy-client.js';
import { framePayloadText, maskedTextFrame } from '../helpers/websocket.js';

/** Sends a raw upgrade request to the proxy; with `echo`, sends it after the 101 and hangs up on its echo. Resolves with all it read. */
function rawUpgrade(proxyPort: number, target: string, host: string, echo?: string, extraHeaders = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(proxyPort, '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      text += d;
      if (echo !== undefined && text.includes('\r\n\r\n') && text.startsWith('HTTP/1.1 101') && !text.includes(echo)) socket.write(maskedTextFrame(echo));
      if (echo !== undefined && text.includes(`echo:${echo}`)) socket.destroy();
    });
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
    socket.write(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nUser-Agent: ExampleBot/1.0\r\n${extraHeaders}\r\n`);
  });
}

describe('Upgrade through the proxy', () => {
  let origin: http.Server;
  let originUrl: string;
  let host: string;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  const upgrades: string[] = [];
  /** The Via each upgrade reached the origin with. */
  const upgradeVias: Array<string | undefined> = [];
  let upstreamEnded = 0;

  before(async () => {
    origin = http.createServer((req, res) => {
      if (req.url === '/robots.txt') return void res.end('User-agent: *\nDisallow: /private/\n');
      res.end('page');
    });
    origin.on('upgrade', (req, socket) => {
      upgrades.push(req.url ?? '');
      upgradeVias.push(req.headers['via']);
      const via = req.url === '/ws-via' ? 'Via: 1.1 origin-front\r\n' : '';
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n${via}\r\n`);
      socket.on('data', (d: Buffer) => socket.write(`echo:${framePayloadText(d)}`));
      // Like a real WebSocket server: the stream is over when the peer ends it.
      socket.on('end', () => {
        upstreamEnded++;
        socket.end();
      });
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    host = `127.0.0.1:${(origin.address() as AddressInfo).port}`;
    originUrl = `http://${host}`;
    proxy = await startTestProxy();
  });

  after(async () => {
    await proxy.close();
    origin.closeAllConnections();
    await new Promise<void>((resolve) => origin.close(() => resolve()));
  });

  it('relays an allowed upgrade and the bytes after it', async () => {
    const text = await rawUpgrade(proxy.proxyAddress.port, `${originUrl}/ws`, host, 'hello');
    assert.match(text, /^HTTP\/1\.1 101 /);
    assert.ok(text.includes('echo:hello'), text);
    assert.deepEqual(upgrades, ['/ws']);
    // The client hung up: the proxy ends the upstream side too (no half-open leak).
    await waitFor(() => upstreamEnded > 0, 'the upstream side of the upgrade to end');
    assert.equal(upstreamEnded, 1);
  });

  it('refuses a disallowed upgrade with 403 and never reaches the origin', async () => {
    const text = await rawUpgrade(proxy.proxyAddress.port, `${originUrl}/private/ws`, host);
    assert.match(text, /^HTTP\/1\.1 403 /);
    assert.match(text, /x-robots-proxy-decision: deny; reason=rule-disallow/);
    assert.deepEqual(upgrades, ['/ws']);
  });

  it('relays the target with its empty query, as sent (RFC 9110 §7.7; before: `/ws?` reached the origin as `/ws`)', async () => {
    const text = await rawUpgrade(proxy.proxyAddress.port, `${originUrl}/ws-query?`, host, 'zz9');
    assert.match(text, /^HTTP\/1\.1 101 /);
    assert.equal(upgrades.at(-1), '/ws-query?');
  });

  it('adds its Via to the upgrade it relays and to the answer (RFC 9110 §7.6.3), after the hops already there', async () => {
    const text = await rawUpgrade(proxy.proxyAddress.port, `${originUrl}/ws-via`, host, 'ping-via', 'Via: 1.0 corp-gateway\r\n');
    assert.match(text, /^HTTP\/1\.1 101 /);
    const sent = upgradeVias[upgrades.indexOf('/ws-via')];
    assert.match(sent ?? '', /^1\.0 corp-gateway, 1\.1 robots-proxy-[a-z0-9]+$/);
    const pseudonym = (sent ?? '').split(' ').pop();
    const head = text.slice(0, text.indexOf('\r\n\r\n'));
    assert.match(head, new RegExp(`\\r\\nvia: 1\\.1 origin-front, 1\\.1 ${pseudonym}(\\r\\n|$)`, 'i'));
  });
});

describe('Upgrade to an origin that does not switch protocols: the access line says what the client got', () => {
  let origin: net.Server;
  let host: string;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;

  before(async () => {
    // robots.txt 404 (allow all); /refuse answers 403 to the upgrade; /reset resets the connection.
    origin = net.createServer((socket) => {
      socket.on('error', () => socket.destroy());
      socket.once('data', (d: Buffer) => {
        const path = d.toString('latin1').split(' ')[1];
        if (path === '/robots.txt') return void socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        if (path === '/refuse') return void socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno');
        socket.destroy();
      });
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    host = `127.0.0.1:${(origin.address() as AddressInfo).port}`;
    logs = captureLogs();
    proxy = await startTestProxy({}, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
    await new Promise<void>((resolve) => origin.close(() => resolve()));
  });

  async function accessLine(path: string): Promise<Record<string, unknown>> {
    const isLine = (l: Record<string, unknown>): boolean => l['msg'] === 'request' && l['url'] === `http://${host}${path}`;
    await waitFor(() => logs.lines.some(isLine), 'the access line');
    return logs.lines.find(isLine)!;
  }

  it('an origin that answers the upgrade with 403: the client gets the 403, and so does the access line', async () => {
    const text = await rawUpgrade(proxy.proxyAddress.port, `http://${host}/refuse`, host);
    assert.match(text, /^HTTP\/1\.1 403 /);
    assert.equal((await accessLine('/refuse'))['status'], 403);
  });

  it('an origin that resets the upgrade: the client gets 502 upstream-error, not a closed socket, and the access line says 502', async () => {
    const text = await rawUpgrade(proxy.proxyAddress.port, `http://${host}/reset`, host);
    assert.match(text, /^HTTP\/1\.1 502 /, text || '(no answer at all)');
    assert.match(text, /x-robots-proxy-decision: allow; reason=upstream-error/);
    const line = await accessLine('/reset');
    assert.equal(line['status'], 502);
    assert.ok(line['error'], 'the access line names the error');
  });
});

describe('Upgrade with proxy authentication configured', () => {
  const PASSWORD = 'ws-Pa55';
  const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  let origin: http.Server;
  let host: string;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  /** The request heads of the upgrades the origin got. */
  const seen: http.IncomingHttpHeaders[] = [];

  before(async () => {
    origin = http.createServer((req, res) => {
      if (req.url === '/robots.txt') return void res.end('User-agent: *\nAllow: /\n');
      res.end('page');
    });
    origin.on('upgrade', (req, socket) => {
      seen.push(req.headers);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      socket.on('data', (d: Buffer) => socket.write(`echo:${framePayloadText(d)}`));
      socket.on('end', () => socket.end());
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    host = `127.0.0.1:${(origin.address() as AddressInfo).port}`;
    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-users-'));
    const credentialsFile = join(dir, 'users');
    writeFileSync(credentialsFile, `alice:${bcrypt.hashSync(PASSWORD, 4)}\n`);
    proxy = await startTestProxy({ access: { clients: ['127.0.0.1/32'], credentialsFile } });
  });

  after(async () => {
    await proxy?.close();
    origin.closeAllConnections();
    await new Promise<void>((resolve) => origin.close(() => resolve()));
  });

  it('an upgrade with good Proxy-Authorization is relayed (101 and the stream), without Proxy-Authorization or other hop-by-hop fields upstream',{ timeout: 15_000 }, async () => {
    const text = await rawUpgrade(proxy.proxyAddress.port, `http://${host}/ws`, host, 'ping-42', `Proxy-Authorization: ${basic('alice', PASSWORD)}\r\nProxy-Connection: keep-alive\r\nKeep-Alive: timeout=5\r\n`);
    assert.match(text, /^HTTP\/1\.1 101 /, text.slice(0, 400) || '(no answer at all)');
    assert.ok(text.includes('echo:ping-42'), text);
    const headers = seen.at(-1)!;
    assert.equal(headers['proxy-authorization'], undefined, 'the credentials stay at the proxy');
    assert.equal(headers['proxy-connection'], undefined);
    assert.equal(headers['keep-alive'], undefined);
    assert.equal(headers['upgrade'], 'websocket', 'the upgrade itself is what is relayed');
  });

  it('an upgrade with wrong credentials gets 407 and never reaches the origin',{ timeout: 15_000 }, async () => {
    const before = seen.length;
    const text = await rawUpgrade(proxy.proxyAddress.port, `http://${host}/ws-wrong`, host, undefined, `Proxy-Authorization: ${basic('alice', 'nope')}\r\n`);
    assert.match(text, /^HTTP\/1\.1 407 /, text.slice(0, 300));
    assert.equal(seen.length, before);
  });
});

describe('Upgrade answered without switching, with a chunked body', () => {
  let origin: net.Server;
  let host: string;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    // robots.txt 404 (allow all); the upgrade gets a 400 whose body is chunked, on a kept-alive connection.
    origin = net.createServer((socket) => {
      socket.on('error', () => socket.destroy());
      socket.once('data', (d: Buffer) => {
        const path = d.toString('latin1').split(' ')[1];
        if (path === '/robots.txt') return void socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        socket.write('HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nno ws \r\n4\r\nhere\r\n0\r\n\r\n');
      });
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    host = `127.0.0.1:${(origin.address() as AddressInfo).port}`;
    proxy = await startTestProxy();
  });

  after(async () => {
    await proxy?.close();
    await new Promise<void>((resolve) => origin.close(() => resolve()));
  });

  it('the client gets the 400 with its body framed as sent (chunked, with its last chunk) and Connection: close',{ timeout: 15_000 }, async () => {
    const text = await rawUpgrade(proxy.proxyAddress.port, `http://${host}/ws`, host);
    assert.match(text, /^HTTP\/1\.1 400 /, text.slice(0, 300) || '(no answer at all)');
    const headEnd = text.indexOf('\r\n\r\n');
    const head = text.slice(0, headEnd);
    assert.match(head, /\r\nconnection: close(\r\n|$)/i, head);
    assert.doesNotMatch(head, /\r\nconnection: (?!close)/i, head);
    assert.equal(text.slice(headEnd + 4), '6\r\nno ws \r\n4\r\nhere\r\n0\r\n\r\n', 'the body keeps the framing its head announces');
    assert.match(head, /\r\ntransfer-encoding: chunked(\r\n|$)/i, head);
  });
});
