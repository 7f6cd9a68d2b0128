/**
 * Request transfer codings (RFC 9112 §6.1, §7): Node's parser accepts `Transfer-Encoding: gzip,
 * chunked` and decodes only the chunked coding, so relaying the body would send the still-gzip
 * bytes upstream under the proxy's own framing. Such a request is answered 501
 * `transfer-coding-not-implemented` with `Connection: close`, before robots.txt or pacing, on
 * plain HTTP and inside an intercepted CONNECT tunnel; `chunked` alone, in any case, is relayed.
 * An Upgrade (a request like any other until its 101) and a CONNECT (which has no content, RFC
 * 9110 §9.3.6: the bytes after its head would go into the tunnel) are answered the same 501.
 * Real parts: a proxy in process, loopback origins (one over TLS), raw TCP and TLS clients
 * (curl and undici will not send such a field).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type net from 'node:net';
import { captureLogs, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { rawExchange, rawHeader, waitFor } from '../helpers/proxy-client.js';
import { createTestPki, openConnect, readToEnd, startClientTls, startTlsOrigin, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';
import { unimplementedCodingsOf } from '../../src/proxy/transfer-coding.js';

const UA = 'ExampleBot/1.0';
/** A chunked body of 3 bytes (whatever coding the field claims for them). */
const CHUNKED_BODY = '3\r\nabc\r\n0\r\n\r\n';

describe('unimplementedCodingsOf', () => {
  it('names every coding but a final chunked; chunked alone, in any case, is none', () => {
    const table: Array<[string | undefined, string | undefined]> = [
      [undefined, undefined],
      ['chunked', undefined],
      ['Chunked', undefined],
      ['CHUNKED', undefined],
      [', chunked', undefined],
      ['gzip, chunked', 'gzip'],
      ['gzip,chunked', 'gzip'],
      ['GZip ,  Chunked', 'GZip'],
      ['identity, chunked', 'identity'],
      ['gzip, deflate, chunked', 'gzip, deflate'],
      ['x;a=b, chunked', 'x;a=b'],
      ['gzip', 'gzip'],
    ];
    for (const [field, refused] of table) assert.equal(unimplementedCodingsOf(field), refused, String(field));
  });
});

describe('a request in a transfer coding other than chunked', () => {
  let origin: TestOrigin;
  let tlsOrigin: TlsOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;
  const bodies = new Map<string, string>();

  const accessLineOf = async (requestId: string | undefined): Promise<Record<string, unknown>> => {
    assert.ok(requestId, 'the answer carries a request id');
    await waitFor(() => logs.lines.some((l) => l['msg'] === 'request' && l['requestId'] === requestId), `the access line of ${requestId}`);
    return logs.lines.find((l) => l['msg'] === 'request' && l['requestId'] === requestId)!;
  };

  /** Checks a 501 answer: status, Connection: close, decision header, a body naming the coding, and its access line. */
  const assertRefused = async (text: string, via: string): Promise<void> => {
    assert.match(text, /^HTTP\/1\.1 501 /, text.slice(0, 300) || '(no answer at all)');
    assert.equal(rawHeader(text, 'connection'), 'close');
    assert.equal(rawHeader(text, 'x-robots-proxy-decision'), 'deny; reason=transfer-coding-not-implemented');
    const body = text.slice(text.indexOf('\r\n\r\n') + 4);
    assert.match(body, /transfer coding gzip is not implemented/, body);
    const line = await accessLineOf(rawHeader(text, 'x-robots-proxy-request-id'));
    assert.equal(line['status'], 501);
    assert.equal(line['via'], via);
    assert.equal((line['decision'] as Record<string, unknown>)['reason'], 'transfer-coding-not-implemented');
    assert.equal((line['decision'] as Record<string, unknown>)['verdict'], 'deny');
  };

  let upgrades = 0;

  before(async () => {
    const pki = await createTestPki();
    origin = await startOrigin((req, res) => {
      let body = '';
      req.setEncoding('latin1');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => {
        bodies.set(req.url ?? '', body);
        res.writeHead(req.url === '/robots.txt' ? 404 : 200, { 'content-type': 'text/plain' });
        res.end(`got ${body.length}`);
      });
    });
    origin.server.on('upgrade', (_req, socket: net.Socket) => {
      upgrades++;
      socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    });
    tlsOrigin = await startTlsOrigin((_req, res) => res.writeHead(404).end(), { cert: pki.certPem, key: pki.keyPem });
    logs = captureLogs();
    proxy = await startTestProxy({ upstream: { caFile: writeTempFile('upstream-ca.pem', pki.caPem) } }, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
    await tlsOrigin?.close();
  });

  it('plain HTTP, gzip, chunked: 501 with Connection: close and an access line; nothing reaches the origin, not even robots.txt', async () => {
    const host = `127.0.0.1:${origin.port}`;
    const text = await rawExchange(
      proxy.proxyAddress.port,
      `POST http://${host}/upload HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: ${UA}\r\nTransfer-Encoding: gzip, chunked\r\n\r\n${CHUNKED_BODY}`,
      5000,
    );
    await assertRefused(text, 'http');
    assert.deepEqual(
      origin.hits.map((h) => h.url),
      [],
      'the origin saw no request',
    );
  });

  it('plain HTTP, Chunked alone: relayed with its decoded body', async () => {
    const host = `127.0.0.1:${origin.port}`;
    const text = await rawExchange(
      proxy.proxyAddress.port,
      `POST http://${host}/chunked HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: ${UA}\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n${CHUNKED_BODY}`,
      5000,
    );
    assert.match(text, /^HTTP\/1\.1 200 /, text.slice(0, 300) || '(no answer at all)');
    assert.equal(bodies.get('/chunked'), 'abc');
    assert.match(text, /\r\ngot 3\r\n/, text);
  });

  for (const coding of ['gzip, chunked', 'gzip']) {
    it(`a websocket Upgrade in ${coding}: 501 with Connection: close and an access line; no upgrade reaches the origin`, async () => {
      const host = `127.0.0.1:${origin.port}`;
      const before = upgrades;
      const text = await rawExchange(
        proxy.proxyAddress.port,
        `GET http://${host}/ws HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: ${UA}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nTransfer-Encoding: ${coding}\r\n\r\n${CHUNKED_BODY}`,
        5000,
      );
      await assertRefused(text, 'http');
      assert.equal(upgrades, before, 'the origin saw no upgrade');
    });

    it(`a CONNECT in ${coding}: 501 with Connection: close and an access line; no tunnel is opened`, async () => {
      const authority = `localhost:${tlsOrigin.port}`;
      const text = await rawExchange(proxy.proxyAddress.port, `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nUser-Agent: ${UA}\r\nTransfer-Encoding: ${coding}\r\n\r\n${CHUNKED_BODY}`, 5000);
      await assertRefused(text, 'connect');
      assert.doesNotMatch(text, /HTTP\/1\.1 200 /);
    });
  }

  it('inside an intercepted CONNECT tunnel, a websocket Upgrade in gzip, chunked: 501; nothing reaches the origin', async () => {
    const authority = `localhost:${tlsOrigin.port}`;
    const open = await openConnect(proxy.proxyAddress.port, authority, { 'user-agent': UA });
    assert.equal(open.status, 200);
    const tlsSocket = await startClientTls(open.socket, { ca: proxy.ca!.certPem, servername: 'localhost' });
    tlsSocket.write(
      `GET /ws HTTP/1.1\r\nHost: ${authority}\r\nUser-Agent: ${UA}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nTransfer-Encoding: gzip, chunked\r\n\r\n${CHUNKED_BODY}`,
    );
    const text = await readToEnd(tlsSocket as unknown as net.Socket, undefined, 5000);
    await assertRefused(text, 'https-intercepted');
    assert.deepEqual(tlsOrigin.hits, [], 'the origin saw no request');
  });

  it('inside an intercepted CONNECT tunnel, gzip, chunked: 501 with Connection: close and an access line; nothing reaches the origin', async () => {
    const authority = `localhost:${tlsOrigin.port}`;
    const open = await openConnect(proxy.proxyAddress.port, authority, { 'user-agent': UA });
    assert.equal(open.status, 200);
    const tlsSocket = await startClientTls(open.socket, { ca: proxy.ca!.certPem, servername: 'localhost' });
    tlsSocket.write(`POST /upload HTTP/1.1\r\nHost: ${authority}\r\nUser-Agent: ${UA}\r\nTransfer-Encoding: gzip, chunked\r\n\r\n${CHUNKED_BODY}`);
    const text = await readToEnd(tlsSocket as unknown as net.Socket, undefined, 5000);
    await assertRefused(text, 'https-intercepted');
    assert.deepEqual(tlsOrigin.hits, [], 'the origin saw no request');
  });
});
