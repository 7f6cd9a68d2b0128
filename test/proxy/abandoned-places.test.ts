/**
 * Clients that leave before the origin's head (review, session 30): the exchange runs on until
 * that head or `upstream.timeout` (forwarder.ts), so its upstream socket outlives the client's.
 * The connection caps budget a client socket and its upstream socket per place
 * (connection-limits.ts); a client that opened, sent and left again and again kept 40 upstream
 * requests open under `clients.maxConnections: 4`. The place is now held until the exchange
 * settles (connection-guard.ts `holdPlace`).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { startTestProxy } from '../helpers/harness.js';
import { rawExchange, sleep, waitFor } from '../helpers/proxy-client.js';

describe('clients that leave while the origin works hold their connection places', () => {
  let origin: http.Server;
  let port = 0;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  /** Requests the origin holds open now, and the most at once. */
  let open = 0;
  let mostOpen = 0;

  before(async () => {
    origin = http.createServer((req, res) => {
      if (req.url === '/robots.txt') return void res.end('User-agent: *\nAllow: /\n');
      if (req.url === '/fast') return void res.end('fast');
      open++;
      mostOpen = Math.max(mostOpen, open);
      res.on('close', () => open--);
    });
    await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
    port = (origin.address() as net.AddressInfo).port;
    proxy = await startTestProxy({ clients: { maxConnections: 4, maxConnectionsPerClient: 4 }, upstream: { timeout: '1500ms' }, pacing: { maxConcurrency: 64 } });
  });

  after(async () => {
    await proxy?.close();
    origin?.closeAllConnections();
    await new Promise<void>((r) => origin.close(() => r()));
  });

  for (const tunnelled of [false, true]) {
    it(`open, send, leave 20 times under maxConnections 4${tunnelled ? ' (inside CONNECT tunnels)' : ''}: at most 4 upstream requests open, the rest refused; places come back`, async () => {
      mostOpen = 0;
      const answers: string[] = [];
      for (let i = 0; i < 20; i++) {
        const socket = net.connect(proxy.proxyAddress.port, '127.0.0.1');
        socket.on('error', () => undefined);
        let got = '';
        socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
        if (tunnelled) socket.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
        const target = tunnelled ? `/slow/t${i}` : `http://127.0.0.1:${port}/slow/${i}`;
        socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUser-Agent: ExampleBot/1.0\r\n\r\n`);
        await sleep(40);
        // Inside a tunnel, an answer to the GET follows the CONNECT's 200.
        const answer = got.startsWith('HTTP/1.1 200 Connection Established') ? got.slice(got.indexOf('\r\n\r\n') + 4) : got;
        answers.push(answer.split('\r\n')[0] ?? '');
        socket.destroy();
        await sleep(10);
      }
      assert.ok(mostOpen <= 4, `upstream requests open at once: ${mostOpen} (clients.maxConnections 4)`);
      assert.equal(answers.filter((a) => a.startsWith('HTTP/1.1 503') || a.startsWith('HTTP/1.1 429')).length, 20 - mostOpen, answers.join(' | '));
      // Once the held exchanges end (upstream.timeout), their places are free again.
      await waitFor(() => open === 0, 'the held exchanges to end', 5000);
      await sleep(100);
      const fresh = await rawExchange(proxy.proxyAddress.port, `GET http://127.0.0.1:${port}/fast HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUser-Agent: ExampleBot/1.0\r\nConnection: close\r\n\r\n`);
      assert.match(fresh, /^HTTP\/1\.1 200 /);
    });
  }
});
