/**
 * `upstream.timeout` bounds the wait for the final response head even when the origin sends
 * interim (1xx) heads (src/proxy/final-head-deadline.ts). undici restarts its headers timeout at
 * every 1xx, so an origin sending `103 Early Hints` or `102 Processing` more often than the
 * timeout, never a final response, held the client (and the origin's connection and pacing
 * slot) for ever (found in session 30's fuzzing hunt; scripts/fuzz-proxy.ts now sends it). An Upgrade request (http-proxy's ws
 * path, which reads no timeout) waited for ever on an origin that sent nothing at all, or only
 * 1xx heads. Real `robots-proxy serve` child,
 * raw TCP origin on loopback, raw client socket.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { startProxyProcess, type ProxyProcess } from '../helpers/processes.js';

/**
 * The origin: robots.txt answered at once (empty: allow all); other paths get `interim` every 200 ms, and nothing else.
 * `open()` counts the page connections still open.
 */
async function startInterimOrigin(interim: string): Promise<{ port: number; open: () => number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  /** The sockets of page requests (those that get the interim heads). */
  const pages = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => sockets.delete(socket));
    socket.once('data', (d: Buffer) => {
      if (d.toString('latin1').startsWith('GET /robots.txt ')) return void socket.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      pages.add(socket);
      const timer = setInterval(() => interim !== '' && socket.write(interim), 200);
      socket.once('close', () => (clearInterval(timer), pages.delete(socket)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    open: () => pages.size,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Sends one proxy request; resolves with the first final status line and when it came (ms after sending), or none after `waitMs`. */
function firstFinalStatus(proxyPort: number, target: string, waitMs: number, fields = ''): Promise<{ statusLine: string | undefined; afterMs: number; interim: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(proxyPort, '127.0.0.1', () => socket.write(`GET ${target} HTTP/1.1\r\nHost: ${new URL(target).host}\r\nUser-Agent: ExampleBot/1.0\r\n${fields}\r\n`));
    let text = '';
    const done = (statusLine: string | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ statusLine, afterMs: Date.now() - started, interim: text.match(/HTTP\/1\.1 1\d\d/g)?.length ?? 0 });
    };
    const timer = setTimeout(() => done(undefined), waitMs);
    socket.on('error', () => done(undefined));
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      const final = /HTTP\/1\.1 [2-5]\d\d[^\r]*/.exec(text);
      if (final) done(final[0]);
    });
  });
}

describe('an origin that sends only interim responses, or nothing to an Upgrade', () => {
  let proxy: ProxyProcess;
  const origins: Array<Awaited<ReturnType<typeof startInterimOrigin>>> = [];

  before(async () => {
    proxy = await startProxyProcess('listen: { port: 0 }\nadmin: { port: 0 }\nledger: { enabled: false }\nupstream: { allowPrivateNetworks: true, timeout: 1s }\nstateDir: $STATE\n');
  });
  after(async () => {
    await proxy?.close();
    for (const o of origins) await o.close();
  });

  const HINTS = 'HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n';
  for (const [name, interim] of [
    ['103 Early Hints', HINTS],
    ['102 Processing', 'HTTP/1.1 102 Processing\r\n\r\n'],
  ] as const) {
    it(`${name} every 200 ms, never a final response: 504 after upstream.timeout (1 s), the origin's connection closed`, async () => {
      const origin = await startInterimOrigin(interim);
      origins.push(origin);
      const answer = await firstFinalStatus(proxy.proxyPort, `http://127.0.0.1:${origin.port}/slow`, 6000);
      assert.equal(answer.statusLine, 'HTTP/1.1 504 Gateway Timeout', `no final answer in 6 s (${answer.interim} interim heads relayed)`);
      assert.ok(answer.afterMs >= 900 && answer.afterMs < 3000, `answered after ${answer.afterMs} ms`);
      const deadline = Date.now() + 3000;
      while (origin.open() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(origin.open(), 0, 'the proxy gave up the upstream exchange');
    });
  }

  const UPGRADE = 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n';
  for (const [name, interim] of [
    ['nothing at all', ''],
    ['only 103 Early Hints', HINTS],
  ] as const) {
    it(`an Upgrade request the origin answers with ${name}: 504 after upstream.timeout (1 s), the origin's connection closed`, async () => {
      const origin = await startInterimOrigin(interim);
      origins.push(origin);
      const answer = await firstFinalStatus(proxy.proxyPort, `http://127.0.0.1:${origin.port}/socket`, 6000, UPGRADE);
      assert.equal(answer.statusLine, 'HTTP/1.1 504 Gateway Timeout', 'no final answer in 6 s');
      assert.ok(answer.afterMs >= 900 && answer.afterMs < 3000, `answered after ${answer.afterMs} ms`);
      const deadline = Date.now() + 3000;
      while (origin.open() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(origin.open(), 0, 'the proxy gave up the upstream exchange');
    });
  }
});
