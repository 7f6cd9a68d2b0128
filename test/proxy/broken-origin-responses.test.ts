/**
 * Origins that break their response (a raw TCP server on loopback writing malformed or cut HTTP):
 * when nothing of the response has reached the client yet, the client gets the proxy's 502
 * `upstream-error` (decision header, request id, access line), not a closed connection without a
 * byte; once body bytes were relayed, the only answer left is to cut the connection.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { captureLogs, startTestProxy, type LogCapture } from '../helpers/harness.js';
import { rawExchange, waitFor } from '../helpers/proxy-client.js';

/** What the origin writes after the request head, by path. robots.txt is a 404 (allow all). */
const ANSWERS: Record<string, string> = {
  '/bad-first-chunk': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n',
  '/head-then-reset': 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n',
  '/cut-body': 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nfirst bytes',
};

describe('an origin that breaks its response', () => {
  let origin: net.Server;
  let base: string;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;

  before(async () => {
    origin = net.createServer((socket) => {
      socket.on('error', () => socket.destroy());
      let head = '';
      socket.on('data', (d: Buffer) => {
        head += d.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        const path = head.split(' ')[1] ?? '';
        if (path === '/robots.txt') return void socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        // Written, then the connection is cut before the promised body is complete.
        socket.write(ANSWERS[path] ?? 'HTTP/1.1 500 Nope\r\nContent-Length: 0\r\n\r\n', () => setTimeout(() => socket.destroy(), 20));
      });
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
    logs = captureLogs();
    proxy = await startTestProxy({}, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
    await new Promise<void>((resolve) => origin.close(() => resolve()));
  });

  function get(path: string): Promise<string> {
    return rawExchange(proxy.proxyAddress.port, `GET ${base}${path} HTTP/1.1\r\nHost: ${new URL(base).host}\r\nUser-Agent: ExampleBot/1.0\r\nConnection: close\r\n\r\n`, 5000);
  }

  for (const path of ['/bad-first-chunk', '/head-then-reset']) {
    it(`${path}: nothing relayed yet, so the client gets 502 upstream-error and the access line says 502`, async () => {
      const text = await get(path);
      assert.match(text, /^HTTP\/1\.1 502 /, text.slice(0, 300) || '(no answer at all)');
      assert.match(text, /\r\nx-robots-proxy-decision: allow; reason=upstream-error\r\n/i);
      const requestId = /\r\nx-robots-proxy-request-id: ([^\r]*)/i.exec(text)?.[1];
      await waitFor(() => logs.lines.some((l) => l['msg'] === 'request' && l['requestId'] === requestId), 'the access line');
      const line = logs.lines.find((l) => l['msg'] === 'request' && l['requestId'] === requestId)!;
      assert.equal(line['status'], 502);
      assert.equal(line['upstreamStatus'], 200);
    });
  }

  it('/cut-body: body bytes were relayed, so the head and those bytes arrive and the connection is cut', async () => {
    const text = await get('/cut-body');
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.ok(text.endsWith('first bytes'), text);
  });

  it('the proxy still serves after them', async () => {
    const text = await get('/robots.txt');
    assert.match(text, /^HTTP\/1\.1 404 /);
  });
});
