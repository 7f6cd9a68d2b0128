/**
 * A new client connection per request (`Connection: close`, issue 11): the
 * client's close is hop-by-hop, so the upstream connection stays alive; the
 * listener's one record per connection (ConnectionTracker with the
 * ConnectionGuard as its policy) leaves nothing behind; idle connections
 * share one timer; a drain, a CONNECT and closeAll keep the guard's counts
 * right. Real sockets on loopback.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import { siteHandler, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { openRawClient, rawExchange, waitFor } from '../helpers/proxy-client.js';
import { ConnectionTracker, type ConnectionPolicy } from '../../src/proxy/connection-drain.js';
import { ConnectionGuard } from '../../src/proxy/connection-guard.js';
import { systemClock, type Clock } from '../../src/clock.js';
import { FakeClock } from '../pacing/fake-clock.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';

const connect = openRawClient;

describe('Connection: close through the proxy', () => {
  let origin: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  /** The client port of the upstream connection each page request came on. */
  const pageSockets: number[] = [];

  before(async () => {
    const site = siteHandler({ robots: 'User-agent: *\nAllow: /\n' });
    origin = await startOrigin((req, res) => {
      if (req.url !== '/robots.txt') pageSockets.push(req.socket.remotePort ?? 0);
      site(req, res);
    });
    proxy = await startTestProxy({});
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('keeps the upstream connection alive across client connections that each close', async () => {
    const requests = 6;
    for (let i = 0; i < requests; i++) {
      const head = `GET ${origin.url}/page/${i} HTTP/1.1\r\nhost: 127.0.0.1:${origin.port}\r\nuser-agent: ${UA}\r\nconnection: close\r\n\r\n`;
      const answer = await rawExchange(proxy.proxyAddress.port, head);
      assert.match(answer, /^HTTP\/1\.1 200 /, answer);
      assert.match(answer, /\r\nconnection: close\r\n/i, 'the client asked for a close: the proxy answers so, and closes');
    }
    assert.equal(pageSockets.length, requests);
    assert.equal(new Set(pageSockets).size, 1, `one upstream connection for every request, got client ports ${pageSockets.join(', ')}`);
    const pageHits = origin.hits.filter((h) => h.url.startsWith('/page/'));
    assert.ok(pageHits.every((h) => h.headers['connection'] !== 'close'), 'Connection is hop-by-hop: the client\'s close is not forwarded');
    await waitFor(() => proxy.connections.stats().open === 0, 'every client connection forgotten');
    assert.deepEqual(proxy.connections.stats(), { open: 0, clients: 0 });
  });
});

describe('ConnectionTracker with the ConnectionGuard as its policy', () => {
  const IDLE_MS = 200;
  let server: http.Server;
  let tracker: ConnectionTracker;
  let guard: ConnectionGuard;
  let port: number;
  let timersArmed: number;
  /** Responses the test ends by hand. */
  let held: http.ServerResponse[];

  /** The system clock, counting the timers armed through it. */
  const countingClock: Clock = {
    nowMs: () => systemClock.nowMs(),
    setTimer: (fn, delayMs) => {
      timersArmed += 1;
      return systemClock.setTimer(fn, delayMs);
    },
    clearTimer: (handle) => systemClock.clearTimer(handle),
  };

  /**
   * A manual clock for the idle list, counting the timers armed through it: the guard's idle phases
   * begin at the instants the test chooses, however spread out in real time the sockets arrive.
   */
  class CountingFakeClock extends FakeClock {
    override setTimer(fn: () => void, delayMs: number): unknown {
      timersArmed += 1;
      return super.setTimer(fn, delayMs);
    }
  }

  /** Starts the server and its guard; `clock` is the idle list's (the counting system clock unless given). */
  async function start(clock: Clock = countingClock): Promise<void> {
    timersArmed = 0;
    held = [];
    server = http.createServer((req, res) => {
      if (req.url === '/hold') return void held.push(res);
      res.writeHead(200, { 'content-length': '2' });
      res.end('ok');
    });
    guard = new ConnectionGuard({ maxConnections: 100, maxConnectionsPerClient: 100, idleTimeoutMs: IDLE_MS, clock });
    tracker = new ConnectionTracker(server, guard);
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

  // Judged on a manual clock: on the system clock the count depends on how spread out the arrivals
  // are (the list arms one timer per distinct due time still ahead when it wakes), so a loaded
  // machine that spreads 30 arrivals over many milliseconds saw 11 timers (session 27's CI). The
  // property is the list's: one timer per distinct due time, not one per connection.
  it('times out idle connections with one timer for all of them, not one each', async () => {
    const clock = new CountingFakeClock();
    await start(clock);
    const count = 30;
    const clients = await Promise.all(Array.from({ length: count }, () => connect(port)));
    await waitFor(() => guard.stats().open === count, 'all admitted');
    assert.equal(timersArmed, 1, `${timersArmed} timers for ${count} connections idle since the same instant`);
    assert.equal(clock.pendingTimers, 1);
    await clock.advance(IDLE_MS - 1);
    assert.equal(guard.stats().open, count, 'not before the idle timeout');
    assert.ok(clients.every((c) => !c.isClosed()));
    await clock.advance(1);
    await Promise.all(clients.map((c) => c.closed));
    assert.equal(timersArmed, 1, 'the one timer closed them all');
    assert.equal(clock.pendingTimers, 0, 'nothing left armed');
    await waitFor(() => guard.stats().open === 0, 'all forgotten');
    assert.equal(tracker.httpConnections, 0);
  });

  it('arms one timer per distinct idle deadline, in order, however many connections share each', async () => {
    const clock = new CountingFakeClock();
    await start(clock);
    const groups: Array<Awaited<ReturnType<typeof connect>>[]> = [];
    for (let g = 0; g < 3; g++) {
      if (g > 0) await clock.advance(IDLE_MS / 4);
      groups.push(await Promise.all(Array.from({ length: 10 }, () => connect(port))));
      await waitFor(() => guard.stats().open === 10 * (g + 1), `group ${g} admitted`);
    }
    assert.equal(timersArmed, 1, 'one timer while every deadline is ahead');
    for (let g = 0; g < 3; g++) {
      await clock.advance(g === 0 ? IDLE_MS / 2 : IDLE_MS / 4);
      await Promise.all(groups[g]!.map((c) => c.closed));
      assert.ok(groups.slice(g + 1).every((later) => later.every((c) => !c.isClosed())), `group ${g} closed, the later ones open`);
      // Each wake re-arms for the next deadline still ahead: 1, 2, 3 and no more.
      assert.equal(timersArmed, Math.min(g + 2, 3), `${timersArmed} timers once ${g + 1} of 3 distinct deadlines passed`);
    }
    assert.equal(clock.pendingTimers, 0);
    await waitFor(() => guard.stats().open === 0, 'all forgotten');
  });

  it('leaves nothing behind after requests that each close their connection', async () => {
    // A manual clock: on the system clock a machine that takes longer than the idle timeout for
    // the 25 exchanges lets the timer wake on an empty list, and the next connection arms another
    // (the count then measured the machine, not the list).
    await start(new CountingFakeClock());
    for (let i = 0; i < 25; i++) {
      const answer = await rawExchange(port, 'GET /quick HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n');
      assert.match(answer, /^HTTP\/1\.1 200 OK[\s\S]*ok$/);
    }
    await waitFor(() => guard.stats().open === 0, 'every connection forgotten');
    assert.deepEqual(guard.stats(), { open: 0, clients: 0 });
    assert.equal(tracker.httpConnections, 0);
    assert.equal(tracker.activeRequests, 0);
    assert.equal(timersArmed, 1, `${timersArmed} timers for 25 connections: one armed for the first idle phase, kept for the rest`);
  });

  it('never times out a request in progress; the idle phase after it is bounded again', async () => {
    await start();
    const client = await connect(port);
    client.socket.write('GET /hold HTTP/1.1\r\nHost: t\r\n\r\n');
    await waitFor(() => held.length === 1, 'the held request');
    await new Promise((r) => setTimeout(r, 2 * IDLE_MS));
    assert.equal(client.isClosed(), false, 'busy for twice the idle timeout, still open');
    assert.equal(tracker.activeRequests, 1);
    const answeredAt = performance.now();
    held[0]!.end('late');
    await client.closed;
    assert.ok(performance.now() - answeredAt >= IDLE_MS - 5, 'closed an idle timeout after the response, not at once');
    assert.match(client.received(), /late$/);
  });

  it('a drain closes idle connections, and the guard stops counting them', async () => {
    await start();
    const clients = await Promise.all([connect(port), connect(port), connect(port)]);
    await waitFor(() => guard.stats().open === 3, 'three admitted');
    tracker.beginDrain();
    await Promise.all(clients.map((c) => c.closed));
    await waitFor(() => guard.stats().open === 0, 'forgotten');
    assert.equal(guard.stats().clients, 0);
  });

  it('a CONNECT socket stays counted and is not idle-closed; closeAll forgets it at once', async () => {
    await start();
    const tunnel = await connect(port);
    tunnel.socket.write('CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n');
    await waitFor(() => tracker.detachedSockets === 1, 'detached');
    await new Promise((r) => setTimeout(r, 2 * IDLE_MS));
    assert.equal(tunnel.isClosed(), false, 'the tunnel is its handler\'s to bound, not the idle timeout\'s');
    assert.deepEqual(guard.stats(), { open: 1, clients: 1 });
    tracker.closeAll();
    assert.deepEqual(guard.stats(), { open: 0, clients: 0 }, 'forgotten at once');
    assert.equal(tracker.detachedSockets, 0);
    await tunnel.closed;
  });

  it('a response that closes its connection starts no idle phase; a keep-alive one does', async () => {
    timersArmed = 0;
    held = [];
    server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-length': '2' });
      res.end('ok');
    });
    guard = new ConnectionGuard({ maxConnections: 100, maxConnectionsPerClient: 100, idleTimeoutMs: IDLE_MS, clock: countingClock });
    /** The guard, counting the idle phases the tracker tells it of. */
    let idlePhases = 0;
    let lastIdleAt = 0;
    const counting: ConnectionPolicy = {
      install: (s, connectionOf) => guard.install(s, connectionOf),
      admit: (socket) => guard.admit(socket),
      idle: (connection) => {
        idlePhases += 1;
        lastIdleAt = performance.now();
        guard.idle(connection);
      },
      busy: (connection) => guard.busy(connection),
      detached: (connection) => guard.detached(connection),
      closed: (connection) => guard.closed(connection),
      advertisedKeepAliveMs: guard.advertisedKeepAliveMs,
    };
    tracker = new ConnectionTracker(server, counting);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;

    const answer = await rawExchange(port, 'GET /quick HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 200 OK/);
    await waitFor(() => guard.stats().open === 0, 'the closed connection forgotten');
    assert.equal(idlePhases, 1, 'only the phase before its request');

    const client = await connect(port);
    client.socket.write('GET /quick HTTP/1.1\r\nHost: t\r\n\r\n');
    await waitFor(() => idlePhases === 3, 'accepted, then idle again after its response');
    await client.closed;
    assert.ok(performance.now() - lastIdleAt >= IDLE_MS - 5, 'the keep-alive connection is closed by the idle timeout');
  });

  it('a guard bounds one server', async () => {
    await start();
    assert.throws(() => new ConnectionTracker(http.createServer(), guard), /already bounds a server/);
  });
});
