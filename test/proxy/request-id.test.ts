/**
 * Request ids (issue #7, item 8): every response the proxy sends, on every
 * path (pipeline, listener refusals, HTTP parser refusals, CONNECT refusals,
 * tunnels, upgrades), carries `X-Robots-Proxy-Request-Id`, and the access line
 * of that request carries the same id. Ids are unique, cheap (one random
 * prefix per process, then a counter) and never taken from the client.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createRequestIdGenerator } from '../../src/proxy/request-id.js';
import { captureLogs, siteHandler, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest, rawExchange, rawHeader, waitFor } from '../helpers/proxy-client.js';
import { openConnect, readToEnd, startClientTls } from '../helpers/https-support.js';

const HEADER = 'x-robots-proxy-request-id';
const ID = /^[0-9a-f]{12}-[0-9a-z]+$/;
const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';

describe('createRequestIdGenerator', () => {
  it('gives <prefix>-<base-36 counter>, distinct ids, one random prefix per generator', () => {
    const next = createRequestIdGenerator();
    const ids = Array.from({ length: 2000 }, () => next());
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) assert.match(id, ID);
    const prefix = ids[0]!.split('-')[0];
    assert.ok(ids.every((id) => id.startsWith(`${prefix}-`)));
    assert.equal(ids[0], `${prefix}-1`);
    assert.equal(ids[35], `${prefix}-10`, 'the counter is base 36');
    // Another process (a restart) draws another prefix.
    const prefixes = new Set(Array.from({ length: 50 }, () => createRequestIdGenerator()().split('-')[0]));
    assert.equal(prefixes.size, 50);
    assert.equal(createRequestIdGenerator('abc')(), 'abc-1');
  });
});

describe('createRequestIdGenerator counting up', () => {
  it('spells the counter as toString(36) does across every digit rollover (9 to a, z to 10, zz to 100, zzz to 1000)', () => {
    // The counter is counted up in place as base-36 digit codes (request-id.ts); the id must stay `prefix-counter.toString(36)`.
    const next = createRequestIdGenerator('0123456789ab');
    for (let counter = 1; counter <= 50_000; counter++) {
      const id = next();
      if (id !== `0123456789ab-${counter.toString(36)}`) assert.fail(`id ${counter}: ${id}`);
    }
    // Any prefix is kept as given, a non-latin1 one included; two generators count on their own.
    const a = createRequestIdGenerator('z');
    const b = createRequestIdGenerator('\u00e9\u4e2d-9');
    for (let counter = 1; counter <= 1300; counter++) {
      assert.equal(a(), `z-${counter.toString(36)}`);
      assert.equal(b(), `\u00e9\u4e2d-9-${counter.toString(36)}`);
    }
  });
});

describe('request id on every response path', () => {
  let origin: TestOrigin;
  let wsOrigin: http.Server;
  let wsHost: string;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let denyProxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;
  let denyLogs: LogCapture;

  /** The access line whose requestId is `id` (waits for the buffered log). */
  async function accessLine(capture: LogCapture, id: string): Promise<Record<string, unknown>> {
    await waitFor(() => capture.lines.some((l) => l['msg'] === 'request' && l['requestId'] === id), `access line ${id}`);
    return capture.lines.find((l) => l['requestId'] === id)!;
  }

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private/\n' }));
    wsOrigin = http.createServer((req, res) => {
      if (req.url === '/robots.txt') return void res.end('User-agent: *\nDisallow: /private/\n');
      res.end('page');
    });
    wsOrigin.on('upgrade', (_req, socket) => {
      socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    });
    await new Promise<void>((resolve) => wsOrigin.listen(0, '127.0.0.1', resolve));
    wsHost = `127.0.0.1:${(wsOrigin.address() as AddressInfo).port}`;
    logs = captureLogs();
    denyLogs = captureLogs();
    proxy = await startTestProxy({}, { logger: logs.logger });
    denyProxy = await startTestProxy({ https: { mode: 'deny' } }, { logger: denyLogs.logger });
  });

  after(async () => {
    await proxy?.close();
    await denyProxy?.close();
    await origin?.close();
    wsOrigin?.closeAllConnections();
    await new Promise<void>((resolve) => wsOrigin?.close(() => resolve()));
  });

  it('pipeline: a 403 names its id in the header, the body and the access line; the client id is logged apart', async () => {
    const r = await proxyRequest(proxy.proxyAddress.port, `${origin.url}/private/x`, { headers: { 'user-agent': BOT_UA, 'x-request-id': 'client-chosen-1' } });
    assert.equal(r.status, 403);
    const id = String(r.headers[HEADER]);
    assert.match(id, ID);
    assert.notEqual(id, 'client-chosen-1');
    assert.ok(r.body.toString().includes(`request id:    ${id}`), r.body.toString());
    assert.match(r.body.toString(), /time: +\d{4}-\d\d-\d\dT/);
    assert.ok(r.headers['date'], 'the time of the answer');
    const line = await accessLine(logs, id);
    assert.equal(line['status'], 403);
    assert.equal(line['clientRequestId'], 'client-chosen-1');
  });

  it('pipeline: a relayed response carries its id too, and each request gets its own', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await proxyRequest(proxy.proxyAddress.port, `${origin.url}/page/${i}`, { headers: { 'user-agent': BOT_UA }, agent });
        assert.equal(r.status, 200);
        ids.push(String(r.headers[HEADER]));
      }
      assert.equal(new Set(ids).size, 3, 'one id per request, not per connection');
      for (const id of ids) assert.equal((await accessLine(logs, id))['status'], 200);
      assert.equal((await accessLine(logs, ids[0]!))['clientRequestId'], null);
    } finally {
      agent.destroy();
    }
  });

  it('listener refusals: 400 for an origin-form request and for a loop', async () => {
    const direct = await proxyRequest(proxy.proxyAddress.port, '/not-absolute');
    assert.equal(direct.status, 400);
    const loop = await proxyRequest(proxy.proxyAddress.port, `http://127.0.0.1:${proxy.proxyAddress.port}/x`);
    assert.equal(loop.status, 400);
    for (const r of [direct, loop]) {
      const id = String(r.headers[HEADER]);
      assert.match(id, ID);
      assert.ok(r.body.toString().includes(id));
      assert.equal((await accessLine(logs, id))['status'], 400);
    }
  });

  it('HTTP parser refusals: 400 and 431 through the shared renderer, audited', async () => {
    const garbage = await rawExchange(proxy.proxyAddress.port, 'NOT A REQUEST\r\n\r\n');
    assert.match(garbage, /^HTTP\/1\.1 400 /);
    const tooLarge = await rawExchange(proxy.proxyAddress.port, `GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nX-Big: ${'x'.repeat(20_000)}\r\n\r\n`);
    assert.match(tooLarge, /^HTTP\/1\.1 431 /);
    for (const text of [garbage, tooLarge]) {
      const id = rawHeader(text, HEADER);
      assert.match(id ?? '', ID, text);
      assert.equal(rawHeader(text, 'x-robots-proxy-decision'), 'deny; reason=bad-request');
      assert.ok(rawHeader(text, 'date'), 'raw answers carry a Date');
      assert.ok(text.includes(`request id:    ${id}`), text);
      const line = await accessLine(logs, id!);
      assert.match(String(line['error']), /^HPE_/);
    }
  });

  it('CONNECT refusals: a bad target (400) and https.mode deny (403)', async () => {
    const connect = (port: number, authority: string) => rawExchange(port, `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nUser-Agent: ${BOT_UA}\r\n\r\n`, 5000);
    const bad = await connect(proxy.proxyAddress.port, 'no-port-here');
    assert.match(bad, /^HTTP\/1\.1 400 /);
    const denied = await connect(denyProxy.proxyAddress.port, `127.0.0.1:${origin.port}`);
    assert.match(denied, /^HTTP\/1\.1 403 /);
    for (const [text, capture] of [
      [bad, logs],
      [denied, denyLogs],
    ] as const) {
      const id = rawHeader(text, HEADER);
      assert.match(id ?? '', ID, text);
      assert.ok(text.includes(`request id:    ${id}`), text);
      assert.equal((await accessLine(capture, id!))['method'], 'CONNECT');
    }
  });

  it('intercepted tunnels: the 200, a 421 inside the tunnel, and plain text sent into it', async () => {
    const authority = `localhost:${origin.port}`;
    const open = await openConnect(proxy.proxyAddress.port, authority, { 'user-agent': BOT_UA });
    assert.equal(open.status, 200);
    assert.match(String(open.headers[HEADER]), ID);
    const tlsSocket = await startClientTls(open.socket, { ca: proxy.ca!.certPem, servername: 'localhost' });
    tlsSocket.write(`GET /page HTTP/1.1\r\nhost: other.example\r\nuser-agent: ${BOT_UA}\r\nconnection: close\r\n\r\n`);
    const misdirected = await readToEnd(tlsSocket as unknown as net.Socket);
    assert.match(misdirected, /^HTTP\/1\.1 421 /);
    const innerId = rawHeader(misdirected, HEADER);
    assert.match(innerId ?? '', ID);
    assert.notEqual(innerId, open.headers[HEADER], 'the request inside the tunnel has its own id');
    assert.equal((await accessLine(logs, innerId!))['status'], 421);

    const plain = await openConnect(proxy.proxyAddress.port, authority, { 'user-agent': BOT_UA });
    plain.socket.write(`GET /page HTTP/1.1\r\nhost: ${authority}\r\nconnection: close\r\n\r\n`);
    const notTls = await readToEnd(plain.socket, plain.head);
    // Whatever the proxy answers plain HTTP in a tunnel with, the answer and its log line share an id.
    assert.match(notTls, /^HTTP\/1\.1 \d{3} /);
    const notTlsId = rawHeader(notTls, HEADER);
    assert.match(notTlsId ?? '', ID);
    await waitFor(() => logs.lines.some((l) => l['requestId'] === notTlsId), 'a log line names the id');
  });

  it('upgrades: a refused one (403) and a relayed one (101) carry their id', async () => {
    const upgrade = (path: string) =>
      rawExchange(proxy.proxyAddress.port, `GET http://${wsHost}${path} HTTP/1.1\r\nHost: ${wsHost}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nUser-Agent: ${BOT_UA}\r\n\r\n`, 5000);
    const refused = await upgrade('/private/ws');
    assert.match(refused, /^HTTP\/1\.1 403 /);
    const relayed = await upgrade('/ws');
    assert.match(relayed, /^HTTP\/1\.1 101 /);
    assert.equal(rawHeader(relayed, 'x-robots-proxy-decision'), 'allow; reason=no-matching-rule');
    for (const [text, status] of [
      [refused, 403],
      [relayed, 101],
    ] as const) {
      const id = rawHeader(text, HEADER);
      assert.match(id ?? '', ID, text);
      assert.equal((await accessLine(logs, id!))['status'], status);
    }
  });
});
