/**
 * The error boundaries (issue 7, item 0): a handler that throws or rejects is
 * answered 500 (or closed, once a head went out), logged with its stack and
 * audited, and the server keeps serving. Real servers on loopback, real
 * sockets; the handlers fail on purpose.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { systemClock } from '../../src/clock.js';
import type { AccessEntry } from '../../src/audit/access-entry.js';
import { guardConnection, guardSocketRequest, RequestBoundary, INTERNAL_ERROR_CODE, type BoundaryDeps } from '../../src/proxy/error-boundary.js';
import { captureLogs, type LogCapture } from '../helpers/harness.js';
import { readToEnd } from '../helpers/https-support.js';

function rawExchange(port: number, text: string): Promise<string> {
  const socket = net.connect(port, '127.0.0.1');
  socket.write(text);
  return readToEnd(socket);
}

describe('error boundaries', () => {
  let server: http.Server;
  let port: number;
  let logs: LogCapture;
  const entries: AccessEntry[] = [];
  let deps: BoundaryDeps;
  let failAudit = false;

  before(async () => {
    logs = captureLogs();
    deps = {
      clock: systemClock,
      logger: logs.logger,
      onFinished: (entry) => {
        if (failAudit) throw new Error('audit sink failed');
        entries.push(entry);
      },
    };
    server = http.createServer();
    // One boundary per listener, as the proxy's listeners keep it.
    const boundary = new RequestBoundary(deps, { where: 'test-request', via: 'http' }, (req, res) => {
      if (req.url === '/sync') throw new TypeError('boom (sync)');
      if (req.url === '/async') return Promise.reject(new RangeError('boom (async)'));
      if (req.url === '/after-head') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('partial');
        throw new Error('boom after the head');
      }
      if (req.url === '/not-an-error') throw 'a string, not an Error';
      res.end('ok');
      return undefined;
    });
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => boundary.run(req, res));
    server.on('upgrade', (req: http.IncomingMessage, socket: Duplex) => {
      socket.on('error', () => socket.destroy());
      guardSocketRequest(deps, { where: 'test-upgrade', via: 'http' }, req, socket, async () => {
        if (req.url === '/after-bytes') {
          socket.write('HTTP/1.1 101 Switching Protocols\r\n\r\n');
          await new Promise((resolve) => setImmediate(resolve));
        }
        throw new Error('boom in upgrade');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const get = async (path: string): Promise<Response> => fetch(`http://127.0.0.1:${port}${path}`);

  for (const [path, message] of [
    ['/sync', 'boom (sync)'],
    ['/async', 'boom (async)'],
    ['/not-an-error', 'a string, not an Error'],
  ] as const) {
    it(`${path}: answered 500 internal-error, logged with its stack, audited; the server still serves`, async () => {
      const before = entries.length;
      const r = await get(path);
      assert.equal(r.status, 500);
      assert.equal(r.headers.get('x-robots-proxy-decision'), 'deny; reason=internal-error');
      assert.match(await r.text(), /The proxy failed while handling this request/);
      const line = logs.lines.filter((l) => l['event'] === 'internal-error').at(-1)!;
      assert.equal(line['where'], 'test-request');
      assert.equal(line['error'], message);
      assert.equal(line['level'], 50);
      assert.match(String(line['stack']), new RegExp(message.replace(/[()]/g, '\\$&')));
      assert.equal(entries.length, before + 1);
      assert.equal(entries.at(-1)!.response.status, 500);
      assert.equal(entries.at(-1)!.decision.reason, 'internal-error');
      assert.equal(entries.at(-1)!.error, INTERNAL_ERROR_CODE);
      assert.equal(entries.at(-1)!.request.url, path);
      assert.equal(await (await get('/ok')).text(), 'ok');
    });
  }

  it('after the head went out: the connection is closed (the client sees a truncated response), audited with the status sent', async () => {
    const text = await rawExchange(port, 'GET /after-head HTTP/1.1\r\nhost: x\r\n\r\n');
    // Whatever was still buffered is dropped with the socket; what matters is that no complete response went out.
    assert.ok(text === '' || text.startsWith('HTTP/1.1 200 OK'), text);
    assert.ok(!text.includes('\r\n0\r\n\r\n'), 'no final chunk: the client can tell the body is incomplete');
    assert.ok(!text.includes('HTTP/1.1 500'), 'no second response after the first head');
    assert.equal(entries.at(-1)!.response.status, 200);
    assert.equal(entries.at(-1)!.error, INTERNAL_ERROR_CODE);
    assert.equal(await (await get('/ok')).text(), 'ok');
  });

  it('a raw-socket handler (Upgrade, CONNECT) that rejects: 500 on the socket, audited', async () => {
    const text = await rawExchange(port, 'GET /ws HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n');
    assert.match(text, /^HTTP\/1\.1 500 /);
    assert.match(text, /x-robots-proxy-decision: deny; reason=internal-error/);
    assert.equal(logs.lines.filter((l) => l['event'] === 'internal-error').at(-1)!['where'], 'test-upgrade');
    assert.equal(entries.at(-1)!.response.status, 500);
  });

  it('a raw-socket handler that fails after writing: the socket is closed, nothing is appended', async () => {
    const text = await rawExchange(port, 'GET /after-bytes HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n');
    assert.equal(text, 'HTTP/1.1 101 Switching Protocols\r\n\r\n');
    assert.equal(entries.at(-1)!.response.status, 0);
  });

  it('a failing audit sink inside the boundary does not escape it: the connection is closed, the server still serves', async () => {
    failAudit = true;
    try {
      const text = await rawExchange(port, 'GET /sync HTTP/1.1\r\nhost: x\r\n\r\n');
      assert.match(text, /^HTTP\/1\.1 500 /, 'the answer went out before the audit failed');
      assert.equal(logs.lines.filter((l) => l['event'] === 'internal-error').at(-1)!['where'], 'test-request/boundary');
    } finally {
      failAudit = false;
    }
    assert.equal(await (await get('/ok')).text(), 'ok');
  });

  it('guardConnection: a failing connection-level step closes that socket and logs', async () => {
    const [a, b] = await socketPair();
    const closed = new Promise<void>((resolve) => b.once('close', () => resolve()));
    guardConnection(logs.logger, 'test-connection', a, () => Promise.reject(new Error('boom in setup')));
    await closed;
    assert.equal(logs.lines.filter((l) => l['event'] === 'internal-error').at(-1)!['where'], 'test-connection');
  });
});

/** Two connected TCP sockets on loopback. */
async function socketPair(): Promise<[net.Socket, net.Socket]> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  const client = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
  const serverSide = await accepted;
  server.close();
  client.on('error', () => undefined);
  serverSide.on('error', () => undefined);
  return [serverSide, client];
}
