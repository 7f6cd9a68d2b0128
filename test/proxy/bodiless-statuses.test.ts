/**
 * 304 and 204 answers that carry a Content-Length, through the real proxy: neither has a body
 * whatever its fields say (RFC 9112 §6.3 item 1), and a 304 may carry the length of the
 * representation it stands for (RFC 9110 §8.6). They are relayed as the origin's answer with no
 * body, not a 502 for a body that "did not match its length"; the next response on the same
 * client connection follows right after the head. Real parts: a proxy in process, a raw TCP
 * origin on loopback.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { captureLogs, startTestProxy, type LogCapture } from '../helpers/harness.js';
import { rawExchange, waitFor } from '../helpers/proxy-client.js';
import { startRawOrigin, type RawAnswer, type RawOrigin } from '../helpers/raw-origin.js';

/** The origin's answers by path (keep-alive; robots.txt is a 404: allow all). */
const ANSWERS: Record<string, RawAnswer> = {
  '/not-modified': { bytes: 'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nContent-Length: 1234\r\n\r\n' },
  '/no-content': { bytes: 'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n' },
  '/ok': { bytes: 'HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npage' },
};

describe('a 304 or 204 carrying Content-Length', () => {
  let origin: RawOrigin;
  let host: string;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;

  before(async () => {
    origin = await startRawOrigin(ANSWERS);
    host = origin.host;
    logs = captureLogs();
    proxy = await startTestProxy({}, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  for (const [path, status] of [
    ['/not-modified', 304],
    ['/no-content', 204],
  ] as const) {
    it(`${path}: relayed as ${status} with no body, and the next response on the connection follows the head`, async () => {
      const request = (p: string, last: boolean): string =>
        `GET http://${host}${p} HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: ExampleBot/1.0\r\n${last ? 'Connection: close\r\n' : ''}\r\n`;
      const text = await rawExchange(proxy.proxyAddress.port, request(path, false) + request('/ok', true), 5000);
      assert.match(text, new RegExp(`^HTTP/1\\.1 ${status} `), text.slice(0, 300) || '(no answer at all)');
      const second = text.indexOf('\r\n\r\n') + 4;
      assert.match(text.slice(second), /^HTTP\/1\.1 200 OK\r\n/, `the 200 does not follow the ${status}'s head: ${JSON.stringify(text)}`);
      assert.ok(text.endsWith('\r\n\r\npage'), text);
      if (status === 304) assert.match(text.slice(0, second), /\r\netag: "v1"\r\n/i);
      const requestId = /\r\nx-robots-proxy-request-id: ([^\r]*)/i.exec(text)?.[1];
      await waitFor(() => logs.lines.some((l) => l['msg'] === 'request' && l['requestId'] === requestId), 'the access line');
      const line = logs.lines.find((l) => l['msg'] === 'request' && l['requestId'] === requestId)!;
      assert.equal(line['status'], status);
      assert.equal(line['error'], null);
    });
  }
});
