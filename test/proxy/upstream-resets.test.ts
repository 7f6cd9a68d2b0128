/**
 * A TCP reset from the origin through the real proxy (src/upstream-resets.ts): a robots.txt whose
 * body is cut by a reset is unreachable (RFC 9309 §2.3.1.4: 503 + Retry-After, complete disallow),
 * never parsed as if it were the whole file; and an upstream connect that fails (no socket at all)
 * is still the plain unreachable robots.txt or 502, with the proxy serving on. Real parts: a proxy
 * in process, raw TCP origins on loopback (the reset is `resetAndDestroy`, an RST on the wire).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { captureLogs, startTestProxy, type LogCapture } from '../helpers/harness.js';
import { proxyRequest, waitFor } from '../helpers/proxy-client.js';

const UA = 'ExampleBot/1.0';

/** The start of the robots.txt: alone, it allows everything; its `Disallow: /private` never arrives. */
const ROBOTS_START = 'User-agent: *\nAllow: /\n';

/** robots.txt answers, by the origin's host name (127.0.0.2 ...), each cut by a reset after being written. */
const ROBOTS_HEADS: Record<string, string> = {
  'close-delimited': `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${ROBOTS_START}`,
  chunked: `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${ROBOTS_START.length.toString(16)}\r\n${ROBOTS_START}\r\n`,
};

/** A raw origin: `robots` written for /robots.txt then the connection reset; pages answered 200 "page". */
async function startResettingOrigin(robots: string): Promise<{ port: number; pageHits: string[]; close(): Promise<void> }> {
  const pageHits: string[] = [];
  const server = net.createServer((socket) => {
    socket.on('error', () => socket.destroy());
    let head = '';
    socket.on('data', (d: Buffer) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      const path = head.split(' ')[1] ?? '';
      head = '';
      if (path === '/robots.txt') return void socket.write(robots, () => setTimeout(() => socket.resetAndDestroy(), 20));
      pageHits.push(path);
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npage');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, pageHits, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('a robots.txt cut by a reset', () => {
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;
  before(async () => {
    logs = captureLogs();
    proxy = await startTestProxy({}, { logger: logs.logger });
  });
  after(async () => {
    await proxy?.close();
  });

  for (const [framing, robots] of Object.entries(ROBOTS_HEADS)) {
    it(`${framing}: robots-unreachable (503 + Retry-After, ECONNRESET named), not a short file that allows everything`, async () => {
      const origin = await startResettingOrigin(robots);
      try {
        const url = `http://127.0.0.1:${origin.port}/private/page`;
        const r = await proxyRequest(proxy.proxyAddress.port, url, { headers: { 'user-agent': UA } });
        const body = r.body.toString();
        assert.equal(r.status, 503, body);
        assert.equal(r.decision, 'deny; reason=robots-unreachable');
        assert.ok(r.headers['retry-after'] !== undefined, 'Retry-After');
        assert.match(body, /ECONNRESET/);
        assert.deepEqual(origin.pageHits, [], 'nothing was forwarded on the strength of the cut file');
        await waitFor(() => logs.lines.some((l) => l['msg'] === 'request' && l['url'] === url), 'the access line');
      } finally {
        await origin.close();
      }
    });
  }
});

describe('an upstream connect that fails before any socket exists', () => {
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  before(async () => {
    proxy = await startTestProxy({});
  });
  after(async () => {
    await proxy?.close();
  });

  it('robots.txt fetch refused (ECONNREFUSED): robots-unreachable, and the proxy serves on', { timeout: 15_000 }, async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const r = await proxyRequest(proxy.proxyAddress.port, `http://127.0.0.1:${port}/page`, { headers: { 'user-agent': UA } });
    assert.equal(r.status, 503, r.body.toString());
    assert.equal(r.decision, 'deny; reason=robots-unreachable');
    assert.match(r.body.toString(), /ECONNREFUSED/);
    const again = await proxyRequest(proxy.proxyAddress.port, `http://127.0.0.1:${port}/other`, { headers: { 'user-agent': UA } });
    assert.equal(again.status, 503);
  });

  it('page connect refused after robots.txt was fetched: 502 upstream-error, and the proxy serves on', { timeout: 15_000 }, async () => {
    // robots.txt is answered (404: allow all) on the first connection; then the origin stops listening.
    const server = net.createServer((socket) => {
      socket.on('error', () => socket.destroy());
      socket.once('data', () => {
        socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        server.close();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const r = await proxyRequest(proxy.proxyAddress.port, `http://127.0.0.1:${port}/page`, { headers: { 'user-agent': UA } });
    assert.equal(r.status, 502, r.body.toString());
    assert.equal(r.decision, 'allow; reason=upstream-error');
    assert.match(r.body.toString(), /ECONNREFUSED/);
    const again = await proxyRequest(proxy.proxyAddress.port, `http://127.0.0.1:${port}/page`, { headers: { 'user-agent': UA } });
    assert.equal(again.status, 502);
  });
});
