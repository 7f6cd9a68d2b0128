/**
 * ConnectionTracker on a real HTTP server and raw sockets: what a drain does
 * to idle, fresh, busy and detached connections (issue #7 item 6).
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import { ConnectionTracker } from '../../src/proxy/connection-drain.js';
import { openRawClient, waitFor } from '../helpers/proxy-client.js';

const connect = openRawClient;

const GET = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: t\r\n\r\n`;

describe('ConnectionTracker', () => {
  let server: http.Server;
  let tracker: ConnectionTracker;
  let port: number;
  /** Pending responses, by path, that the test ends by hand. */
  let held: Map<string, http.ServerResponse>;

  async function start(): Promise<void> {
    held = new Map();
    server = http.createServer({ keepAliveTimeout: 30_000 });
    tracker = new ConnectionTracker(server);
    server.on('request', (req, res) => {
      if (req.url?.startsWith('/hold')) return void held.set(req.url, res);
      if (req.url?.startsWith('/stream')) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first part;');
        return void held.set(req.url, res);
      }
      res.writeHead(200, { 'content-length': '2' });
      res.end('ok');
    });
    server.on('connect', (_req, socket: net.Socket) => {
      tracker.detach(socket);
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  }

  afterEach(async () => {
    tracker.closeAll();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('closes idle keep-alive and fresh connections at once, and counts requests in progress', async () => {
    await start();
    const idle = await connect(port);
    idle.socket.write(GET('/quick'));
    await waitFor(() => idle.received().includes('ok'), 'the first answer');
    assert.match(idle.received(), /Connection: keep-alive/);
    const fresh = await connect(port);
    const busy = await connect(port);
    busy.socket.write(GET('/hold-1'));
    await waitFor(() => held.has('/hold-1'), 'the held request');
    await waitFor(() => tracker.httpConnections === 3, 'three tracked connections');
    assert.equal(tracker.activeRequests, 1);

    tracker.beginDrain();
    await Promise.all([idle.closed, fresh.closed]);
    assert.equal(busy.isClosed(), false, 'a busy connection is not cut');
    assert.equal(tracker.activeRequests, 1);

    held.get('/hold-1')!.end('held body');
    await busy.closed;
    assert.match(busy.received(), /^HTTP\/1\.1 200 OK/);
    assert.match(busy.received(), /Connection: close/i, 'the response still to be written says so');
    assert.match(busy.received(), /held body$/);
    assert.equal(tracker.activeRequests, 0);
  });

  it('counts pipelined requests on one connection, and forgets each as it closes', async () => {
    await start();
    const client = await connect(port);
    client.socket.write(GET('/hold-a') + GET('/hold-b') + GET('/hold-c'));
    await waitFor(() => held.size === 3, 'three pipelined requests');
    assert.equal(tracker.activeRequests, 3);
    // A later response ends first: it waits for the one before it, still counted.
    held.get('/hold-b')!.end('b');
    held.get('/hold-a')!.end('a');
    await waitFor(() => tracker.activeRequests === 1, 'two responses done');
    assert.match(client.received(), /a\r?\n?[\s\S]*b$/);

    tracker.beginDrain();
    assert.equal(client.isClosed(), false, 'the third response is still to come');
    held.get('/hold-c')!.end('c');
    await client.closed;
    assert.match(client.received().slice(client.received().lastIndexOf('HTTP/1.1 ')), /Connection: close[\s\S]*c$/i);
    assert.equal(tracker.activeRequests, 0);
  });

  it('ends a connection whose response went out with keep-alive once the response is complete', async () => {
    await start();
    const client = await connect(port);
    client.socket.write(GET('/stream-1'));
    await waitFor(() => client.received().includes('first part;'), 'the head and first chunk');
    assert.match(client.received(), /Connection: keep-alive/);
    tracker.beginDrain();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(client.isClosed(), false, 'the streaming response is not cut');
    held.get('/stream-1')!.end('last part');
    await client.closed;
    assert.match(client.received(), /first part;/);
    assert.match(client.received(), /last part/);
    assert.match(client.received(), /\r\n0\r\n\r\n$/, 'the chunked body was terminated before the close');
  });

  it('closes a connection opened during the drain, leaves detached sockets to closeAll', async () => {
    await start();
    const tunnel = await connect(port);
    tunnel.socket.write('CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n');
    await waitFor(() => tunnel.received().includes('200 Connection Established'), 'the CONNECT answer');
    await waitFor(() => tracker.detachedSockets === 1, 'the detached socket');
    assert.equal(tracker.httpConnections, 0);

    tracker.beginDrain();
    const late = await connect(port);
    await late.closed;
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(tunnel.isClosed(), false, 'an opaque tunnel is not the drain\'s to judge');

    tracker.closeAll();
    await tunnel.closed;
    assert.equal(tracker.detachedSockets, 0);
  });
});
