/**
 * A request smuggled in the body of a GET (escape hunt, session 30): an origin that reads no
 * body on a GET (a "CL.0" origin: many static servers) takes the bytes after the head as the next
 * request, so a body holding `GET /private HTTP/1.1` reached it undecided. Content on GET, HEAD,
 * DELETE and TRACE is now refused 400 (RFC 9110 §9.3), on plain HTTP and inside a tunnel.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTestProxy } from '../helpers/harness.js';
import { rawExchange } from '../helpers/proxy-client.js';
import { contentWithoutMeaningOf } from '../../src/proxy/request-content.js';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/** An origin that parses request heads itself and never reads a body: it records every request line. */
async function startClZeroOrigin(): Promise<{ port: number; lines: string[]; close(): Promise<void> }> {
  const lines: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    let buffered = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      buffered += d;
      for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
        const line = buffered.slice(0, end).split('\r\n')[0] ?? '';
        buffered = buffered.slice(end + 4);
        lines.push(line);
        const body = line.startsWith('GET /robots.txt') ? 'User-agent: *\nDisallow: /private\n' : 'page\n';
        socket.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    lines,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

const SMUGGLED = 'GET /private/x HTTP/1.1\r\nHost: x\r\n\r\n';

describe('content on a method that defines none', () => {
  let origin: Awaited<ReturnType<typeof startClZeroOrigin>>;
  let proxy: Proxy;

  before(async () => {
    origin = await startClZeroOrigin();
    proxy = await startTestProxy();
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('tells which requests carry such content', () => {
    assert.equal(contentWithoutMeaningOf('GET', '5', undefined), 'GET');
    assert.equal(contentWithoutMeaningOf('HEAD', undefined, 'chunked'), 'HEAD');
    assert.equal(contentWithoutMeaningOf('DELETE', '1', undefined), 'DELETE');
    assert.equal(contentWithoutMeaningOf('TRACE', '1', undefined), 'TRACE');
    assert.equal(contentWithoutMeaningOf('GET', '0', undefined), undefined);
    assert.equal(contentWithoutMeaningOf('GET', '00', undefined), undefined);
    assert.equal(contentWithoutMeaningOf('GET', undefined, undefined), undefined);
    assert.equal(contentWithoutMeaningOf('POST', '5', undefined), undefined);
    assert.equal(contentWithoutMeaningOf('OPTIONS', '5', undefined), undefined);
  });

  it('a GET whose body holds a request: 400, the origin sees neither', async () => {
    const host = `127.0.0.1:${origin.port}`;
    for (const framing of [`Content-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}`, `Transfer-Encoding: chunked\r\n\r\n${SMUGGLED.length.toString(16)}\r\n${SMUGGLED}\r\n0\r\n\r\n`]) {
      const answer = await rawExchange(proxy.proxyAddress.port, `GET http://${host}/open HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: ExampleBot/1.0\r\n${framing}`);
      assert.match(answer, /^HTTP\/1\.1 400 /, framing);
      assert.match(answer, /\r\nx-robots-proxy-decision: deny; reason=bad-request\r\n/i);
      assert.match(answer, /\r\nconnection: close\r\n/i);
    }
    assert.deepEqual(origin.lines.filter((l) => !l.startsWith('GET /robots.txt')), []);
  });

  it('the same inside a CONNECT tunnel carrying plain HTTP', async () => {
    const host = `127.0.0.1:${origin.port}`;
    const answer = await rawExchange(
      proxy.proxyAddress.port,
      `CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\nGET /open HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: ExampleBot/1.0\r\nContent-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}`,
      3000,
    );
    assert.match(answer, /^HTTP\/1\.1 200 Connection Established\r\n[^]*?\r\n\r\nHTTP\/1\.1 400 /);
    assert.deepEqual(origin.lines.filter((l) => !l.startsWith('GET /robots.txt')), []);
  });

  it('a GET without content and a POST with content are forwarded', async () => {
    const host = `127.0.0.1:${origin.port}`;
    const get = await rawExchange(proxy.proxyAddress.port, `GET http://${host}/open HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    assert.match(get, /^HTTP\/1\.1 200 /);
    const post = await rawExchange(proxy.proxyAddress.port, `POST http://${host}/form HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 3\r\nConnection: close\r\n\r\na=1`);
    assert.match(post, /^HTTP\/1\.1 200 /);
    assert.deepEqual(origin.lines.filter((l) => !l.startsWith('GET /robots.txt')), ['GET /open HTTP/1.1', 'POST /form HTTP/1.1']);
  });
});
