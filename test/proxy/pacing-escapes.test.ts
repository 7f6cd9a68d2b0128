/**
 * Ways a scraper tried to get more requests in flight at an origin than `maxConcurrency`
 * allows (escape hunt, session 30): an `Upgrade: websocket` field on a page request (the origin
 * ignores it and serves the page, RFC 9110 §7.8), and a client that leaves as soon as each request
 * has gone upstream. The origin counts the requests it is working on; the proxy allows one.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { createHash } from 'node:crypto';
import { startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { openRawClient, sleep, waitFor } from '../helpers/proxy-client.js';
import { framePayloadText, maskedTextFrame } from '../helpers/websocket.js';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

const PAGE_MS = 400;
const WS_HEADERS = { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' };

/** One request through the proxy on its own connection; `abortAfterMs`: the client leaves then. Resolves with the status, or the error code. */
function send(proxy: Proxy, url: string, headers: http.OutgoingHttpHeaders, abortAfterMs?: number): Promise<string> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port: proxy.proxyAddress.port, path: url, headers: { 'user-agent': 'ExampleBot/1.0', ...headers }, agent: false }, (res) => {
      res.resume().on('end', () => resolve(String(res.statusCode)));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    req.end();
    if (abortAfterMs !== undefined) setTimeout(() => req.destroy(Object.assign(new Error('left'), { code: 'LEFT' })), abortAfterMs);
  });
}

describe('maxConcurrency: 1 against an origin whose pages take 400 ms', () => {
  let origin: TestOrigin;
  let proxy: Proxy;
  let inFlight = 0;
  let maxInFlight = 0;
  const switched: net.Socket[] = [];

  before(async () => {
    origin = await startOrigin((req, res) => {
      if (req.url === '/robots.txt') return void res.end('User-agent: *\nAllow: /\n');
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      setTimeout(() => {
        inFlight--;
        res.end(`page ${req.url}\n`);
      }, PAGE_MS);
    });
    proxy = await startTestProxy({ pacing: { maxConcurrency: 1, maxWait: '20s' } });
  });

  after(async () => {
    for (const s of switched) s.destroy();
    await proxy?.close();
    await origin?.close();
  });

  it('an Upgrade: websocket field on page requests holds the slot until the origin answered: one in flight', async () => {
    // A site without WebSocket: Node's server, with no 'upgrade' listener, serves the request as a
    // plain GET (RFC 9110 §7.8: a server may ignore Upgrade), 400 ms per page.
    origin.server.removeAllListeners('upgrade');
    inFlight = maxInFlight = 0;
    const answers = await Promise.all([0, 1, 2].map((i) => send(proxy, `${origin.url}/page-${i}`, WS_HEADERS)));
    assert.deepEqual(answers, ['200', '200', '200']);
    assert.equal(maxInFlight, 1, 'requests in the origin\'s hands at once');
  });

  it('a 101 frees the slot at the switch: the WebSocket stream after it is not paced', async () => {
    origin.server.removeAllListeners('upgrade');
    origin.server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket) => {
      const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      switched.push(socket);
    });
    const opened: http.ClientRequest[] = [];
    const upgrades = [0, 1].map(
      (i) =>
        new Promise<number>((resolve, reject) => {
          const req = http.request({ host: '127.0.0.1', port: proxy.proxyAddress.port, path: `${origin.url}/ws-${i}`, headers: { 'user-agent': 'ExampleBot/1.0', ...WS_HEADERS }, agent: false });
          req.on('upgrade', (res, socket: net.Socket) => {
            socket.on('error', () => undefined);
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          req.end();
          opened.push(req);
        }),
    );
    assert.deepEqual(await Promise.all(upgrades), [101, 101], 'the second upgrade is not held behind the first one\'s open stream');
    for (const r of opened) r.destroy();
  });

  it('an upgrade whose client leaves while it is queued is never sent; a queued one keeps the bytes it sent while queued', async () => {
    origin.server.removeAllListeners('upgrade');
    const upgradesSeen: string[] = [];
    origin.server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
      upgradesSeen.push(req.url ?? '');
      const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      switched.push(socket);
      const echo = (d: Buffer): void => void socket.write(`echo:${framePayloadText(d)}`);
      if (head.length > 0) echo(head);
      socket.on('data', echo);
    });
    const upgradeHead = (path: string): string =>
      `GET ${origin.url}${path} HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nUser-Agent: ExampleBot/1.0\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;
    const before = origin.hits.length;
    // A page holds the one slot for 400 ms; two upgrades queue behind it.
    const page = send(proxy, `${origin.url}/holder`, {});
    await waitFor(() => origin.hits.length > before, 'the page at the origin');
    const left = await openRawClient(proxy.proxyAddress.port);
    left.socket.write(upgradeHead('/ws-left'));
    const kept = await openRawClient(proxy.proxyAddress.port);
    kept.socket.write(upgradeHead('/ws-kept'));
    await sleep(50);
    kept.socket.write(maskedTextFrame('early')); // while queued, before any 101
    await sleep(50);
    left.socket.end(); // its FIN while queued: the server side stays half-open
    assert.equal(await page, '200');
    await waitFor(() => kept.received().includes('echo:early'), 'the queued upgrade\'s first frame echoed');
    await sleep(200);
    assert.deepEqual(origin.hits.slice(before).map((h) => h.url), ['/holder'], 'only the page was an HTTP request');
    assert.equal(upgradesSeen.filter((u) => u === '/ws-left').length, 0, 'the upgrade whose client left was never sent');
    assert.deepEqual(upgradesSeen.filter((u) => u === '/ws-kept'), ['/ws-kept']);
    kept.socket.destroy();
  });

  it('a client that leaves right after each request is sent: the origin still works on one request at a time', async () => {
    inFlight = maxInFlight = 0;
    const before = origin.hits.length;
    // Each client leaves 100 ms after sending, well before the origin's 400 ms answer. Sent 150 ms
    // apart: the second and third arrive while the first is still in the origin's hands.
    const answers = await Promise.all([0, 1, 2].map((i) => sleep(i * 150).then(() => send(proxy, `${origin.url}/left-${i}`, {}, 100))));
    assert.deepEqual(answers, ['LEFT', 'LEFT', 'LEFT']);
    await sleep(PAGE_MS * 2);
    await waitFor(() => inFlight === 0, 'the origin to finish');
    assert.equal(maxInFlight, 1, 'requests in the origin\'s hands at once');
    // The ones that left while queued behind the first were never sent (DESIGN.md: a client that disconnects while queued leaves the queue).
    assert.deepEqual(origin.hits.slice(before).map((h) => h.url), ['/left-0']);
  });

  it('a client that leaves after the origin answered: the next request is served at once', async () => {
    const started = performance.now();
    assert.equal(await send(proxy, `${origin.url}/left-late`, {}, PAGE_MS + 200), '200');
    assert.equal(await send(proxy, `${origin.url}/next`, {}), '200');
    assert.ok(performance.now() - started < PAGE_MS * 4, 'no slot left held');
  });
});
