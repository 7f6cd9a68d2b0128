/**
 * acceptWithStableSocketOptions: the accepted socket is the one Node's own accept makes (options,
 * TCP_NODELAY, the server's count, the `connection` event, the diagnostics channel), and the cases
 * it hands to Node (maxConnections' drop, TCP keep-alive) behave as without it.
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import diagnosticsChannel from 'node:diagnostics_channel';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { acceptWithStableSocketOptions, STABLE_ACCEPT_APPLIES } from '../../src/proxy/socket-accept.js';
import { waitFor } from '../helpers/proxy-client.js';

type Handle = { onconnection: (...args: unknown[]) => void };
const handleOf = (server: net.Server): Handle => (server as unknown as { _handle: Handle })._handle;

/** The facts of an accepted socket that Node's accept decides. */
function factsOf(socket: net.Socket): Record<string, unknown> {
  const symbol = (name: string): unknown => {
    const key = Object.getOwnPropertySymbols(socket).find((s) => s.description === name);
    return key === undefined ? undefined : (socket as unknown as Record<symbol, unknown>)[key];
  };
  const internals = socket as unknown as {
    _readableState: { emitClose: boolean; autoDestroy: boolean; highWaterMark: number; objectMode: boolean };
    _writableState: { emitClose: boolean; autoDestroy: boolean; decodeStrings: boolean; highWaterMark: number; objectMode: boolean };
    server: unknown;
    _server: unknown;
  };
  return {
    allowHalfOpen: socket.allowHalfOpen,
    readableEmitClose: internals._readableState.emitClose,
    readableAutoDestroy: internals._readableState.autoDestroy,
    readableHighWaterMark: internals._readableState.highWaterMark,
    readableObjectMode: internals._readableState.objectMode,
    writableEmitClose: internals._writableState.emitClose,
    writableAutoDestroy: internals._writableState.autoDestroy,
    decodeStrings: internals._writableState.decodeStrings,
    writableHighWaterMark: internals._writableState.highWaterMark,
    noDelay: symbol('kSetNoDelay'),
    keepAlive: symbol('kSetKeepAlive'),
    keepAliveInitialDelay: symbol('kSetKeepAliveInitialDelay'),
    isPaused: socket.isPaused(),
    hasServer: internals.server !== undefined && internals.server === internals._server,
  };
}

describe('acceptWithStableSocketOptions', { skip: STABLE_ACCEPT_APPLIES ? false : 'Node 20 only' }, () => {
  const servers: net.Server[] = [];
  const clients: net.Socket[] = [];

  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
  });

  /** An HTTP server (options as given) answering 200; resolves with it, its port and its accepted sockets. */
  async function start(options: http.ServerOptions, stable: boolean, before?: (s: http.Server) => void): Promise<{ server: http.Server; port: number; accepted: net.Socket[] }> {
    const server = http.createServer(options, (_req, res) => res.end('ok'));
    servers.push(server);
    const accepted: net.Socket[] = [];
    server.on('connection', (s: net.Socket) => accepted.push(s));
    before?.(server);
    if (stable) acceptWithStableSocketOptions(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { server, port: (server.address() as AddressInfo).port, accepted };
  }

  function get(port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
    });
  }

  it('replaces the handle accept at listen and accepts a socket Node would make, counted by the server', async () => {
    const node = await start({}, false);
    const ours = await start({}, true);
    assert.equal(handleOf(node.server).onconnection.name, 'onconnection');
    assert.equal(handleOf(ours.server).onconnection.name, 'onconnectionStable');
    const published: unknown[] = [];
    const onSocket = (message: unknown): void => void published.push((message as { socket: unknown }).socket);
    diagnosticsChannel.subscribe('net.server.socket', onSocket);
    try {
      const [a, b] = [net.connect(node.port, '127.0.0.1'), net.connect(ours.port, '127.0.0.1')];
      clients.push(a, b);
      await waitFor(() => node.accepted.length === 1 && ours.accepted.length === 1, 'both accepted');
      assert.deepEqual(factsOf(ours.accepted[0]!), factsOf(node.accepted[0]!));
      assert.equal(factsOf(ours.accepted[0]!).noDelay, true);
      assert.ok(published.includes(ours.accepted[0]), 'net.server.socket published');
      const count = (s: net.Server): Promise<number> => new Promise((r, j) => s.getConnections((e, n) => (e ? j(e) : r(n))));
      assert.equal(await count(ours.server), 1);
      b.destroy();
      for (let i = 0; (await count(ours.server)) !== 0; i++) {
        assert.ok(i < 500, 'the count went back to 0');
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.equal(await get(ours.port), 200);
    } finally {
      diagnosticsChannel.unsubscribe('net.server.socket', onSocket);
    }
  });

  it('options the server sets (highWaterMark, noDelay off, pauseOnConnect) reach the socket as with Node', async () => {
    const options: http.ServerOptions = { highWaterMark: 4096, noDelay: false };
    const node = await start(options, false);
    const ours = await start(options, true);
    clients.push(net.connect(node.port, '127.0.0.1'), net.connect(ours.port, '127.0.0.1'));
    await waitFor(() => node.accepted.length === 1 && ours.accepted.length === 1, 'both accepted');
    assert.deepEqual(factsOf(ours.accepted[0]!), factsOf(node.accepted[0]!));
    assert.equal(factsOf(ours.accepted[0]!).readableHighWaterMark, 4096);
  });

  it('hands TCP keep-alive servers and the maxConnections drop to Node', async () => {
    const node = await start({ keepAlive: true, keepAliveInitialDelay: 3000 }, false);
    const ours = await start({ keepAlive: true, keepAliveInitialDelay: 3000 }, true);
    clients.push(net.connect(node.port, '127.0.0.1'), net.connect(ours.port, '127.0.0.1'));
    await waitFor(() => node.accepted.length === 1 && ours.accepted.length === 1, 'both accepted');
    assert.deepEqual(factsOf(ours.accepted[0]!), factsOf(node.accepted[0]!));
    assert.equal(factsOf(ours.accepted[0]!).keepAlive, true);

    const capped = await start({}, true, (s) => (s.maxConnections = 1));
    const drops: unknown[] = [];
    capped.server.on('drop', (data) => drops.push(data));
    clients.push(net.connect(capped.port, '127.0.0.1'));
    await waitFor(() => capped.accepted.length === 1, 'the first accepted');
    const second = net.connect(capped.port, '127.0.0.1');
    clients.push(second);
    second.on('error', () => {});
    await waitFor(() => drops.length === 1, 'the drop');
    assert.equal(capped.accepted.length, 1);
  });

  it('is installed again when the server listens again, and on a server already listening', async () => {
    const { server } = await start({}, true);
    await new Promise<void>((r) => server.close(() => r()));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    assert.equal(handleOf(server).onconnection.name, 'onconnectionStable');
    const late = await start({}, false);
    acceptWithStableSocketOptions(late.server);
    assert.equal(handleOf(late.server).onconnection.name, 'onconnectionStable');
    assert.equal(await get(late.port), 200);
  });
});
