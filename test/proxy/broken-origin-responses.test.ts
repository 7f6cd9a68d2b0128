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

/**
 * Responses without a Content-Length whose connection the origin resets (TCP RST) after writing
 * them: a close-delimited body, or a chunked one without its last chunk. A reset is not the end of
 * a close-delimited body (RFC 9112 §6.3: only the close is), so neither is complete.
 */
const RESET_ANSWERS: Record<string, string> = {
  '/close-delimited-reset': 'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nfirst bytes',
  '/close-delimited-reset-before-body': 'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n',
  '/chunked-close-reset': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nb\r\nfirst bytes\r\n',
  '/chunked-reset': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nb\r\nfirst bytes\r\n',
  '/close-delimited-end': 'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nwhole body',
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
        if (path === '/close-delimited-end') return void socket.end(RESET_ANSWERS[path] as string);
        const reset = RESET_ANSWERS[path];
        if (reset !== undefined) return void socket.write(reset, () => setTimeout(() => socket.resetAndDestroy(), 20));
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

  /** The access line of the response `text` carries (by its request id). */
  async function accessLineOf(text: string): Promise<Record<string, unknown>> {
    const requestId = /\r\nx-robots-proxy-request-id: ([^\r]*)/i.exec(text)?.[1];
    assert.ok(requestId, text);
    await waitFor(() => logs.lines.some((l) => l['msg'] === 'request' && l['requestId'] === requestId), 'the access line');
    return logs.lines.find((l) => l['msg'] === 'request' && l['requestId'] === requestId)!;
  }

  for (const path of ['/close-delimited-reset', '/chunked-close-reset', '/chunked-reset']) {
    it(`${path}: body bytes were relayed, then the origin reset: the client's chunked response has no last chunk and is cut; the access line says ECONNRESET`, async () => {
      const text = await get(path);
      assert.match(text, /^HTTP\/1\.1 200 /, text);
      assert.match(text, /\r\ntransfer-encoding: chunked\r\n/i, text);
      assert.ok(text.includes('first bytes'), text);
      assert.ok(!/\r\n0\r\n\r\n$/.test(text), `a last chunk was relayed as if the body were complete: ${JSON.stringify(text.slice(-40))}`);
      const line = await accessLineOf(text);
      assert.equal(line['error'], 'ECONNRESET');
      assert.equal(line['upstreamStatus'], 200);
    });
  }

  it('/close-delimited-reset-before-body: the origin reset before any body byte: 502 upstream-error, not an empty 200', async () => {
    const text = await get('/close-delimited-reset-before-body');
    assert.match(text, /^HTTP\/1\.1 502 /, text.slice(0, 300) || '(no answer at all)');
    assert.match(text, /\r\nx-robots-proxy-decision: allow; reason=upstream-error\r\n/i);
    const line = await accessLineOf(text);
    assert.equal(line['status'], 502);
    assert.equal(line['error'], 'ECONNRESET');
  });

  it('/close-delimited-end: a close-delimited body ended by a plain close (FIN) is complete: relayed with its last chunk', async () => {
    const text = await get('/close-delimited-end');
    assert.match(text, /^HTTP\/1\.1 200 /, text);
    assert.ok(/\r\n0\r\n\r\n$/.test(text) && text.includes('whole body'), text);
    const line = await accessLineOf(text);
    assert.equal(line['error'], null);
  });

  it('the proxy still serves after them', async () => {
    const text = await get('/robots.txt');
    assert.match(text, /^HTTP\/1\.1 404 /);
  });
});
