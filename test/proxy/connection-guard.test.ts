/**
 * Client connections on the proxy listener (issue 7, "Connections"): a global
 * cap (503), a per-client cap (429), each answered at once with Retry-After
 * and Connection: close, logged and counted; one idle timeout for every phase
 * with no request in progress (before the first request, between requests,
 * a stalled request head gets 408); CONNECT tunnels count against the caps
 * and are left to their own timeouts; the admin listener stays reachable.
 * Real sockets on loopback; other client addresses are 127.0.0.2, 127.0.0.3.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { captureLogs, siteHandler, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { waitFor } from '../helpers/proxy-client.js';
import { startProxyProcess, type ProxyProcess } from '../helpers/processes.js';
import { createTestPki, openConnect, startClientTls, startTlsOrigin, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';
import { METRIC_NAME } from '../../src/audit/metrics.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/** A connected raw socket from `localAddress`; everything it reads is collected. */
interface RawClient {
  socket: net.Socket;
  received(): string;
  /** `performance.now()` when the last bytes arrived. */
  lastDataAtMs(): number;
  /** Resolves when the socket has closed (whoever closed it). */
  closed: Promise<void>;
}

function connectFrom(port: number, localAddress = '127.0.0.1'): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    const chunks: Buffer[] = [];
    let lastDataAtMs = 0;
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      lastDataAtMs = performance.now();
    });
    socket.on('error', () => undefined);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.once('connect', () => resolve({ socket, received: () => Buffer.concat(chunks).toString('latin1'), lastDataAtMs: () => lastDataAtMs, closed }));
    socket.once('error', reject);
  });
}

/** GET through the proxy from `localAddress` on a new connection. */
function getFrom(proxyPort: number, url: string, localAddress: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxyPort, path: url, localAddress, agent: false, headers: { 'user-agent': UA } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The value of one sample of the proxy's metrics (0 when absent). */
async function metric(proxy: Proxy, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await proxy.metrics.render();
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const match = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = (match[2] ?? '').split(',').filter(Boolean);
    if (wanted.every((w) => have.includes(w))) return Number(match[3]);
  }
  return 0;
}

/** Status line and headers of a raw HTTP answer. */
function headOf(text: string): { status: number; headers: Record<string, string>; body: string } {
  const [head = '', body = ''] = text.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const at = line.indexOf(':');
    headers[line.slice(0, at).toLowerCase()] = line.slice(at + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

describe('connection caps', () => {
  let origin: TestOrigin;
  let proxy: Proxy;
  let logs: LogCapture;
  const held: RawClient[] = [];

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private/\n' }));
    logs = captureLogs();
    proxy = await startTestProxy(
      { https: { mode: 'tunnel' }, clients: { maxConnections: 5, maxConnectionsPerClient: 3, idleTimeout: '30s' } },
      { logger: logs.logger },
    );
  });
  after(async () => {
    for (const c of held) c.socket.destroy();
    await proxy?.close();
    await origin?.close();
  });

  const hold = async (localAddress: string): Promise<RawClient> => {
    const client = await connectFrom(proxy.proxyAddress.port, localAddress);
    held.push(client);
    return client;
  };

  it('answers a client over its per-client cap 429 with Retry-After and Connection: close, and serves other clients', async () => {
    const mine = [await hold('127.0.0.1'), await hold('127.0.0.1'), await hold('127.0.0.1')];
    await waitFor(() => proxy.connections.stats().open === 3, 'three connections admitted');
    const refused = await connectFrom(proxy.proxyAddress.port, '127.0.0.1');
    await refused.closed;
    const answer = headOf(refused.received());
    assert.equal(answer.status, 429);
    assert.equal(answer.headers['retry-after'], '30', 'Retry-After: the idle timeout, in seconds');
    assert.equal(answer.headers['connection'], 'close');
    assert.match(answer.body, /maxConnectionsPerClient = 3/);
    // A request id the client can quote, in the header and the body, and on the log line.
    const requestId = String(answer.headers['x-robots-proxy-request-id']);
    assert.match(requestId, /^[0-9a-f]{12}-[0-9a-z]+$/);
    assert.ok(answer.body.includes(`request id: ${requestId}\n`), answer.body);
    assert.equal(await metric(proxy, METRIC_NAME.clientConnectionsRefused, { limit: 'max-connections-per-client' }), 1);
    const line = logs.lines.find((l) => l['event'] === 'connection-refused');
    assert.equal(line?.['requestId'], requestId);
    assert.equal(line?.['limit'], 'max-connections-per-client');
    assert.equal(line?.['client'], '127.0.0.1');
    assert.equal(line?.['level'], 40);

    // Another client address is not affected.
    const other = await getFrom(proxy.proxyAddress.port, `${origin.url}/page`, '127.0.0.2');
    assert.equal(other.status, 200);

    // A closed connection frees its place.
    mine[0]!.socket.destroy();
    await waitFor(() => proxy.connections.stats().open === 2, 'the closed connection forgotten');
    const again = await getFrom(proxy.proxyAddress.port, `${origin.url}/again`, '127.0.0.1');
    assert.equal(again.status, 200);
    held.splice(0).forEach((c) => c.socket.destroy());
    await waitFor(() => proxy.connections.stats().open === 0, 'all closed');
  });

  it('answers 503 over the global cap, whatever the client, and keeps the admin listener reachable', async () => {
    for (const address of ['127.0.0.1', '127.0.0.1', '127.0.0.2', '127.0.0.2', '127.0.0.3']) await hold(address);
    await waitFor(() => proxy.connections.stats().open === 5, 'five connections admitted');
    const refusedBefore = await metric(proxy, METRIC_NAME.clientConnectionsRefused, { limit: 'max-connections' });
    const refused = await connectFrom(proxy.proxyAddress.port, '127.0.0.4');
    await refused.closed;
    const answer = headOf(refused.received());
    assert.equal(answer.status, 503);
    assert.equal(answer.headers['retry-after'], '30');
    assert.equal(answer.headers['connection'], 'close');
    assert.match(answer.body, /maxConnections = 5/);
    assert.equal(await metric(proxy, METRIC_NAME.clientConnectionsRefused, { limit: 'max-connections' }), refusedBefore + 1);
    assert.equal(await metric(proxy, METRIC_NAME.clientConnectionsOpen), 5);
    const health = await fetch(`${proxy.adminUrl}/healthz`);
    assert.equal(health.status, 200);
    held.splice(0).forEach((c) => c.socket.destroy());
    await waitFor(() => proxy.connections.stats().open === 0, 'all closed');
  });

  it('counts every refusal but logs at most one line per limit per interval', async () => {
    for (const address of ['127.0.0.5', '127.0.0.5', '127.0.0.5']) await hold(address);
    await waitFor(() => proxy.connections.stats().open === 3, 'three connections admitted');
    const countBefore = await metric(proxy, METRIC_NAME.clientConnectionsRefused, { limit: 'max-connections-per-client' });
    const linesBefore = logs.lines.filter((l) => l['event'] === 'connection-refused' && l['limit'] === 'max-connections-per-client').length;
    for (let i = 0; i < 20; i += 1) {
      const refused = await connectFrom(proxy.proxyAddress.port, '127.0.0.5');
      await refused.closed;
      assert.equal(headOf(refused.received()).status, 429);
    }
    assert.equal(await metric(proxy, METRIC_NAME.clientConnectionsRefused, { limit: 'max-connections-per-client' }), countBefore + 20);
    const linesAfter = logs.lines.filter((l) => l['event'] === 'connection-refused' && l['limit'] === 'max-connections-per-client').length;
    assert.equal(linesAfter, linesBefore, 'the first line of this interval was written by the first test; these are counted, not logged');
    held.splice(0).forEach((c) => c.socket.destroy());
    await waitFor(() => proxy.connections.stats().open === 0, 'all closed');
  });

  it('a refused request never reaches the pipeline: no access line, nothing upstream', async () => {
    for (const address of ['127.0.0.6', '127.0.0.6', '127.0.0.6']) await hold(address);
    await waitFor(() => proxy.connections.stats().open === 3, 'three connections admitted');
    const accessBefore = logs.lines.filter((l) => l['msg'] === 'request').length;
    const hitsBefore = origin.hits.length;
    const client = await connectFrom(proxy.proxyAddress.port, '127.0.0.6');
    client.socket.write(`GET ${origin.url}/refused-page HTTP/1.1\r\nhost: 127.0.0.1:${origin.port}\r\nuser-agent: ${UA}\r\n\r\n`);
    await client.closed;
    assert.equal(headOf(client.received()).status, 429);
    assert.equal(origin.hits.length, hitsBefore);
    assert.equal(logs.lines.filter((l) => l['msg'] === 'request').length, accessBefore);
    held.splice(0).forEach((c) => c.socket.destroy());
    await waitFor(() => proxy.connections.stats().open === 0, 'all closed');
  });
});

describe('client idle timeout', () => {
  const IDLE_MS = 300;
  let origin: TestOrigin;
  let proxy: Proxy;
  let logs: LogCapture;

  before(async () => {
    origin = await startOrigin((req, res) => {
      if (req.url === '/slow') {
        setTimeout(() => res.end('slow page\n'), 3 * IDLE_MS);
        return;
      }
      siteHandler({ robots: 'User-agent: *\nAllow: /\n' })(req, res);
    });
    logs = captureLogs();
    proxy = await startTestProxy({ https: { mode: 'tunnel' }, clients: { idleTimeout: `${IDLE_MS}ms` } }, { logger: logs.logger });
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('closes a connection that never sends a request, without an answer', async () => {
    const before = await metric(proxy, METRIC_NAME.clientTimeouts, { kind: 'idle' });
    const openedAt = performance.now();
    const client = await connectFrom(proxy.proxyAddress.port);
    await client.closed;
    assert.ok(performance.now() - openedAt >= IDLE_MS - 5, 'not before the idle timeout');
    assert.equal(client.received(), '');
    assert.equal(await metric(proxy, METRIC_NAME.clientTimeouts, { kind: 'idle' }), before + 1);
    await waitFor(() => proxy.connections.stats().open === 0, 'forgotten');
  });

  it('answers 408 to a request head that stalls, then closes', async () => {
    const client = await connectFrom(proxy.proxyAddress.port);
    client.socket.write(`GET ${origin.url}/page HTTP/1.1\r\nhost: 127.0.0.1:${origin.port}\r\nuser-a`);
    await client.closed;
    const answer = headOf(client.received());
    assert.equal(answer.status, 408);
    assert.equal(answer.headers['connection'], 'close');
    const requestId = String(answer.headers['x-robots-proxy-request-id']);
    assert.ok(answer.body.includes(`request id: ${requestId}\n`), answer.body);
    const line = logs.lines.find((l) => l['event'] === 'client-idle-timeout' && l['partialRequest'] === true);
    assert.ok(line, 'logged');
    assert.equal(line['requestId'], requestId);
    assert.equal(line['level'], 30);
    assert.ok(!origin.hits.some((h) => h.url === '/page'), 'nothing upstream');
  });

  it('keeps a connection while a request is in progress, longer than the idle timeout, then times it out after the response', async () => {
    const client = await connectFrom(proxy.proxyAddress.port);
    const sentAt = performance.now();
    client.socket.write(`GET ${origin.url}/slow HTTP/1.1\r\nhost: 127.0.0.1:${origin.port}\r\nuser-agent: ${UA}\r\n\r\n`);
    await waitFor(() => client.received().includes('slow page'), 'the slow response');
    const answeredAt = client.lastDataAtMs();
    assert.ok(answeredAt - sentAt >= 3 * IDLE_MS - 5, 'the response took longer than the idle timeout');
    assert.match(client.received(), /^HTTP\/1\.1 200 /);
    await client.closed;
    // Counted from the end of the response (armed a little before the client read it), not from the accept.
    assert.ok(performance.now() - answeredAt >= IDLE_MS / 2, 'idle counted from the end of the response');
  });

  it('serves the next request on a keep-alive connection that comes within the idle timeout', async () => {
    const client = await connectFrom(proxy.proxyAddress.port);
    const request = (path: string): string => `GET ${origin.url}${path} HTTP/1.1\r\nhost: 127.0.0.1:${origin.port}\r\nuser-agent: ${UA}\r\n\r\n`;
    client.socket.write(request('/one'));
    await waitFor(() => client.received().includes('page /one'), 'the first response');
    await new Promise((r) => setTimeout(r, IDLE_MS / 3));
    client.socket.write(request('/two'));
    await waitFor(() => client.received().includes('page /two'), 'the second response, on the same connection');
    assert.equal(client.received().match(/HTTP\/1\.1 200 /g)?.length, 2);
    assert.match(client.received(), /keep-alive: timeout=0/i, 'the advertised timeout is the idle timeout, in whole seconds');
    await client.closed;
  });
});

describe('CONNECT tunnels and the connection caps', () => {
  const IDLE_MS = 300;
  let origin: TlsOrigin;
  let proxy: Proxy;

  before(async () => {
    const pki = await createTestPki();
    origin = await startTlsOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }), { cert: pki.certPem, key: pki.keyPem });
    proxy = await startTestProxy({
      upstream: { caFile: writeTempFile('upstream-ca.pem', pki.caPem) },
      clients: { maxConnections: 10, maxConnectionsPerClient: 2, idleTimeout: `${IDLE_MS}ms` },
    });
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('an intercepted tunnel counts against the per-client cap and outlives the client idle timeout', async () => {
    const tunnel = await openConnect(proxy.proxyAddress.port, `localhost:${origin.port}`);
    assert.equal(tunnel.status, 200);
    const secure = await startClientTls(tunnel.socket, { ca: proxy.ca!.certPem, servername: 'localhost' });
    const idle = await connectFrom(proxy.proxyAddress.port);
    await waitFor(() => proxy.connections.stats().open === 2, 'tunnel and idle connection counted');
    // The third connection from this address is refused: the tunnel is a connection.
    const refused = await connectFrom(proxy.proxyAddress.port);
    await refused.closed;
    assert.equal(headOf(refused.received()).status, 429);
    await idle.closed; // closed by the idle timeout
    // The tunnel is not idle-timed by the listener (its own timeouts apply): a request after 2x the idle timeout works.
    await new Promise((r) => setTimeout(r, 2 * IDLE_MS));
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      secure.setEncoding('utf8');
      secure.on('data', (d: string) => {
        text += d;
        if (text.includes('page /inside')) resolve(text);
      });
      secure.write(`GET /inside HTTP/1.1\r\nhost: localhost:${origin.port}\r\nuser-agent: ${UA}\r\n\r\n`);
    });
    assert.match(answer, /^HTTP\/1\.1 200 /);
    secure.destroy();
    await waitFor(() => proxy.connections.stats().open === 0, 'the tunnel released its place');
  });
});

describe('under ulimit -n 512 (the proxy as a child process, default caps)', () => {
  let origin: TestOrigin;
  let proxy: ProxyProcess;
  const sockets: net.Socket[] = [];

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    // Idle connections are held longer than the test takes; the caps are the defaults (auto).
    proxy = await startProxyProcess(
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        'admin: { host: 127.0.0.1, port: 0 }',
        'clients: { idleTimeout: 60s }',
        'upstream: { allowPrivateNetworks: true }',
        'https: { mode: tunnel }',
        'stateDir: $STATE',
        'log: { level: info }',
        '',
      ].join('\n'),
      { openFileLimit: 512 },
    );
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await proxy?.close();
    await origin?.close();
  });

  /** Opens `count` connections from `localAddress` and resolves with the answers of those the proxy refused. */
  async function open(count: number, localAddress: string): Promise<{ refused: number; statuses: Set<number> }> {
    const clients = await Promise.all(Array.from({ length: count }, () => connectFrom(proxy.proxyPort, localAddress)));
    sockets.push(...clients.map((c) => c.socket));
    // A refused connection is answered and closed at once; an admitted one stays open and silent.
    // The proxy accepts a burst at its own pace: wait until the count has not moved for 500 ms.
    const countRefused = (): number => clients.filter((c) => c.socket.destroyed || c.received() !== '').length;
    for (let last = -1; last !== countRefused(); ) {
      last = countRefused();
      await new Promise((r) => setTimeout(r, 500));
    }
    const refused = clients.filter((c) => c.socket.destroyed || c.received() !== '');
    return { refused: refused.length, statuses: new Set(refused.map((c) => headOf(c.received()).status)) };
  }

  it('caps one client, keeps serving others and /healthz, then caps everyone with 503 while /healthz still answers', async () => {
    const listening = proxy.logs.find((l) => l['event'] === 'listening')!;
    const caps = listening['connections'] as Record<string, number>;
    assert.equal(caps['openFileLimit'], 512, 'the open-file limit read from /proc/self/limits');
    assert.equal(caps['maxConnections'], 176);
    assert.equal(caps['maxConnectionsPerClient'], 44);

    // The client: 600 idle connections from one address.
    const hog = await open(600, '127.0.0.1');
    assert.equal(hog.refused, 600 - 44);
    assert.ok([...hog.statuses].every((s) => s === 429 || Number.isNaN(s)), `answers: ${[...hog.statuses].join(',')}`);
    assert.ok(hog.statuses.has(429));
    assert.equal((await fetch(`http://127.0.0.1:${proxy.adminPort}/healthz`)).status, 200);
    assert.equal((await getFrom(proxy.proxyPort, `${origin.url}/other-client`, '127.0.0.2')).status, 200);

    // Everyone else fills the rest: 132 more from three addresses, then a fourth gets 503.
    for (const address of ['127.0.0.10', '127.0.0.11', '127.0.0.12']) assert.equal((await open(44, address)).refused, 0);
    const late = await open(5, '127.0.0.20');
    assert.equal(late.refused, 5);
    assert.deepEqual([...late.statuses], [503]);
    assert.equal((await fetch(`http://127.0.0.1:${proxy.adminPort}/healthz`)).status, 200, 'the admin listener is reachable at saturation');
    const metrics = await (await fetch(`http://127.0.0.1:${proxy.adminPort}/metrics`)).text();
    assert.match(metrics, /robots_proxy_client_connections_open 176\n/);
    assert.match(metrics, /robots_proxy_client_connections_refused_total\{limit="max-connections"\} 5\n/);
    assert.match(metrics, new RegExp(`robots_proxy_client_connections_refused_total\\{limit="max-connections-per-client"\\} ${600 - 44}\\n`));

    // Places free up as connections close; the proxy serves again.
    for (const s of sockets.splice(0)) s.destroy();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await getFrom(proxy.proxyPort, `${origin.url}/after`, '127.0.0.20')).status, 200);
  });
});

describe("the guard replaces Node's keep-alive timer (issue 11)", () => {
  it('arms no Node timer per response, and every response still advertises the idle timeout', async () => {
    const { ConnectionGuard } = await import('../../src/proxy/connection-guard.js');
    const { ConnectionTracker } = await import('../../src/proxy/connection-drain.js');
    const server = http.createServer({ keepAliveTimeout: 5000 });
    new ConnectionTracker(server, new ConnectionGuard({ maxConnections: 10, maxConnectionsPerClient: 10, idleTimeoutMs: 7000 }));
    const serverSockets: net.Socket[] = [];
    server.on('connection', (socket: net.Socket) => serverSockets.push(socket));
    server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    try {
      assert.equal(server.keepAliveTimeout, 0, "Node's keep-alive timer is off");
      const client = await connectFrom((server.address() as net.AddressInfo).port);
      for (const path of ['/one', '/two']) {
        const before = client.received().length;
        client.socket.write(`GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`);
        await waitFor(() => client.received().slice(before).includes('\r\n\r\nok'), `the response to ${path}`);
        assert.match(client.received().slice(before), /\r\nkeep-alive: timeout=7\r\n/i, 'the idle timeout, in whole seconds');
        await new Promise((r) => setImmediate(r));
        assert.ok(!serverSockets[0]?.timeout, 'no socket timeout armed after the response');
      }
      client.socket.destroy();
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
