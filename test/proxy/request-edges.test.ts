/**
 * Requests at the edges of HTTP/1.1 that the listener used to answer outside the proxy's own
 * answers (no decision header, no request id, no access line), or not at all, or decided for a
 * host the client never named. Each must get the proxy's defined answer, with its access line.
 * Real parts: a proxy in process, an origin on loopback, raw sockets.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { captureLogs, siteHandler, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { rawExchange, waitFor } from '../helpers/proxy-client.js';

const UA = 'User-Agent: ExampleBot/1.0\r\n';

/** The status, the decision header and the request id of the first answer in `text`. */
function answerOf(text: string): { status: number; decision: string | undefined; requestId: string | undefined } {
  const head = text.split('\r\n\r\n')[0] ?? '';
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  return {
    status,
    decision: /\r\nx-robots-proxy-decision: ([^\r]*)/i.exec(head)?.[1],
    requestId: /\r\nx-robots-proxy-request-id: ([^\r]*)/i.exec(head)?.[1],
  };
}

describe('requests at the edges of HTTP/1.1 get the proxy\'s defined answer and an access line', () => {
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let origin: TestOrigin;
  let logs: LogCapture;
  let host: string;

  before(async () => {
    logs = captureLogs();
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private\n' }));
    host = new URL(origin.url).host;
    proxy = await startTestProxy({}, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  /** Sends `raw`, checks the answer's status, decision and request id, and that its access line says the same. */
  async function expectAnswer(raw: string, status: number, decision: RegExp): Promise<string> {
    const text = await rawExchange(proxy.proxyAddress.port, raw, 5000);
    const answer = answerOf(text);
    assert.equal(answer.status, status, text.slice(0, 400) || '(no answer at all)');
    assert.match(answer.decision ?? '', decision);
    assert.ok(answer.requestId, 'a request id');
    await waitFor(() => logs.lines.some((l) => l['msg'] === 'request' && l['requestId'] === answer.requestId), 'the access line');
    const line = logs.lines.find((l) => l['msg'] === 'request' && l['requestId'] === answer.requestId)!;
    assert.equal(line['status'], status, 'the access line has the status the client got');
    return text;
  }

  it('an Upgrade other than websocket (h2c, as curl --http2 sends it) is answered 400, not dropped without a byte', async () => {
    const pages = (): number => origin.hits.filter((h) => h.url !== '/robots.txt').length;
    const before = pages();
    const text = await expectAnswer(
      `GET ${origin.url}/page HTTP/1.1\r\nHost: ${host}\r\n${UA}Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n`,
      400,
      /^deny; reason=bad-request/,
    );
    assert.match(text, /h2c/);
    assert.equal(pages(), before, 'nothing but robots.txt reached the origin');
  });

  it('a websocket Upgrade with a method other than GET is answered 400, not dropped', async () => {
    await expectAnswer(`POST ${origin.url}/ws HTTP/1.1\r\nHost: ${host}\r\n${UA}Connection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 0\r\n\r\n`, 400, /^deny; reason=bad-request/);
  });

  it('an HTTP/1.1 request without Host gets the proxy\'s 400 (RFC 9112 §3.2), with an explanation', async () => {
    const text = await expectAnswer(`GET ${origin.url}/page HTTP/1.1\r\n${UA}\r\n`, 400, /^deny; reason=bad-request/);
    assert.match(text, /Host/);
  });

  it('inside a plain-HTTP CONNECT tunnel too, an HTTP/1.1 request without Host gets the proxy\'s 400', async () => {
    const text = await rawExchange(proxy.proxyAddress.port, `CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\nGET /page HTTP/1.1\r\n${UA}\r\n`, 5000);
    const inner = text.slice(text.indexOf('\r\n\r\n') + 4);
    assert.match(text, /^HTTP\/1\.1 200 /);
    const answer = answerOf(inner);
    assert.equal(answer.status, 400, inner.slice(0, 300));
    assert.match(answer.decision ?? '', /^deny; reason=bad-request/);
    await waitFor(() => logs.lines.some((l) => l['msg'] === 'request' && l['requestId'] === answer.requestId && l['via'] === 'http-tunnelled'), 'the access line');
  });

  it('an HTTP/1.0 request without Host is served', async () => {
    const text = await rawExchange(proxy.proxyAddress.port, `GET ${origin.url}/page HTTP/1.0\r\n${UA}\r\n`, 5000);
    assert.equal(answerOf(text).status, 200, text.slice(0, 300));
  });

  it("Via's received-protocol is the client's HTTP version (RFC 9110 §7.6.3): 1.0 for an HTTP/1.0 client, 1.1 for HTTP/1.1, in a tunnel too", async () => {
    const viaOf = (path: string): string | undefined => origin.hits.findLast((h) => h.url === path)?.headers['via'] as string | undefined;
    await rawExchange(proxy.proxyAddress.port, `GET ${origin.url}/via/10 HTTP/1.0\r\n${UA}Via: 1.1 first-hop\r\n\r\n`, 5000);
    assert.match(viaOf('/via/10') ?? '', /^1\.1 first-hop, 1\.0 robots-proxy-[a-z0-9]+$/);
    await rawExchange(proxy.proxyAddress.port, `GET ${origin.url}/via/11 HTTP/1.1\r\nHost: ${host}\r\n${UA}Connection: close\r\n\r\n`, 5000);
    assert.match(viaOf('/via/11') ?? '', /^1\.1 robots-proxy-[a-z0-9]+$/);
    const tunnelled = await rawExchange(proxy.proxyAddress.port, `CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\nGET /via/tunnel HTTP/1.0\r\nHost: ${host}\r\n${UA}\r\n`, 5000);
    assert.match(tunnelled, /\r\n\r\nHTTP\/1\.1 200 /, tunnelled.slice(0, 300));
    assert.match(viaOf('/via/tunnel') ?? '', /^1\.0 robots-proxy-[a-z0-9]+$/);
  });

  it('an Expect other than 100-continue is decided like any request (a disallowed path is 403), not Node\'s bare 417', async () => {
    await expectAnswer(`GET ${origin.url}/private/x HTTP/1.1\r\nHost: ${host}\r\n${UA}Expect: 999-wat\r\n\r\n`, 403, /^deny; reason=rule-disallow/);
    await expectAnswer(`GET ${origin.url}/page HTTP/1.1\r\nHost: ${host}\r\n${UA}Expect: 999-wat\r\nConnection: close\r\n\r\n`, 200, /^allow; /);
  });

  it('Expect: 100-continue to a disallowed path gets the 403 at once, without a 100 Continue that would start the upload', async () => {
    const text = await rawExchange(
      proxy.proxyAddress.port,
      `POST ${origin.url}/private/upload HTTP/1.1\r\nHost: ${host}\r\n${UA}Content-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
      5000,
    );
    assert.match(text, /^HTTP\/1\.1 403 /, text.slice(0, 200));
    assert.doesNotMatch(text, /100 Continue/);
    // Even on a keep-alive connection: the body the client held back is never read as its next request.
    const kept = await rawExchange(proxy.proxyAddress.port, `POST ${origin.url}/private/upload HTTP/1.1\r\nHost: ${host}\r\n${UA}Content-Length: 5\r\nExpect: 100-continue\r\n\r\n`, 5000);
    assert.match(kept, /^HTTP\/1\.1 403 /);
    assert.match(kept, /\r\nconnection: close\r\n/i);
  });

  it('Expect: 100-continue to an allowed path gets 100 Continue, then the origin\'s answer to the body', async () => {
    const socket = net.connect(proxy.proxyAddress.port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('data', (d: string) => {
      const before = text;
      text += d;
      // The body is sent only once the proxy said to go on.
      if (!before.includes('100 Continue') && text.includes('100 Continue')) socket.write('hello');
    });
    socket.write(`POST ${origin.url}/upload HTTP/1.1\r\nHost: ${host}\r\n${UA}Content-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`);
    await closed;
    assert.match(text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /, text.slice(0, 200));
    assert.match(text, /page \/upload/);
  });

  for (const authority of ['*.example.com:443', `${'a'.repeat(64)}.example.com:443`, '*:443']) {
    it(`CONNECT ${authority.slice(0, 30)}: no certificate can be signed for it, so 400 before the 200, not a reset after it`, async () => {
      await expectAnswer(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${UA}\r\n`, 400, /^deny; reason=bad-request/);
    });
  }

  for (const target of ['http://127.0.0.1:0/page', 'http:///page', 'http:////127.0.0.1/page']) {
    it(`${target} is answered 400 bad-request, and nothing is fetched`, async () => {
      const hits = origin.hits.length;
      await expectAnswer(`GET ${target} HTTP/1.1\r\nHost: x\r\n${UA}\r\n`, 400, /^deny; reason=bad-request/);
      assert.equal(origin.hits.length, hits);
    });
  }
});
