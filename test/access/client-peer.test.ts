/**
 * A connection's client (address and port) is read once per connection and kept on its socket
 * (src/access/client-peer.ts, issue 11). Every request on a keep-alive connection must still be
 * told its own connection's peer: a second connection from another address (127.0.0.2), or from
 * another port, gets its own, in the access line (address, port), in admission's client ranges
 * and in the pacer's fairness key; a socket that cannot tell yet is asked again.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { clientPeerOf } from '../../src/access/client-peer.js';
import { identityOf } from '../../src/proxy/pipeline.js';
import { captureLogs, startOrigin, startTestProxy, siteHandler, type LogCapture, type TestOrigin } from '../helpers/harness.js';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/** A socket-like object whose getters count their reads, as `net.Socket`'s call `_getpeername` each time. */
class CountingSocket {
  reads = 0;
  constructor(
    public address: string | undefined,
    public port: number | undefined,
  ) {}
  get remoteAddress(): string | undefined {
    this.reads++;
    return this.address;
  }
  get remotePort(): number | undefined {
    this.reads++;
    return this.port;
  }
}

describe('clientPeerOf', () => {
  it('reads a socket once and keeps its peer; each socket has its own', () => {
    const a = new CountingSocket('127.0.0.1', 5000);
    const b = new CountingSocket('127.0.0.2', 5000);
    assert.deepEqual(clientPeerOf(a), { address: '127.0.0.1', port: 5000 });
    assert.equal(a.reads, 2);
    assert.deepEqual(clientPeerOf(b), { address: '127.0.0.2', port: 5000 });
    assert.deepEqual(clientPeerOf(a), { address: '127.0.0.1', port: 5000 });
    assert.equal(a.reads, 2, 'the second request on a connection reads nothing from the socket');
    assert.equal(clientPeerOf(a), clientPeerOf(a), 'one peer record per connection');
  });

  it('does not keep an unknown peer: a socket that cannot tell yet is asked again', () => {
    const socket = new CountingSocket(undefined, undefined);
    assert.deepEqual(clientPeerOf(socket), { address: '', port: 0 });
    socket.address = '::1';
    socket.port = 6000;
    assert.deepEqual(clientPeerOf(socket), { address: '::1', port: 6000 });
  });

  it('answers the unknown peer for no socket', () => {
    assert.deepEqual(clientPeerOf(undefined), { address: '', port: 0 });
    assert.deepEqual(clientPeerOf(null), { address: '', port: 0 });
  });
});

/** GET through the proxy on `agent` (one keep-alive connection from its local address); resolves with the status and the connection's local port. */
function get(port: number, url: string, agent: http.Agent): Promise<{ status: number; reason: string; localPort: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: url, agent, headers: { 'user-agent': 'ExampleBot/1.0' } }, (res) => {
      const localPort = res.socket.localPort ?? 0;
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reason: String(res.headers['x-robots-proxy-decision'] ?? ''), localPort }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the client of each keep-alive connection, through the proxy', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  let logs: LogCapture;
  const agents: http.Agent[] = [];
  const agentFrom = (localAddress: string): http.Agent => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1, localAddress });
    agents.push(agent);
    return agent;
  };

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    logs = captureLogs();
    proxy = await startTestProxy({ access: { clients: ['127.0.0.1/32', { range: '127.0.0.3/32', identity: 'lab' }] }, log: { level: 'info' } }, { logger: logs.logger });
  });

  after(async () => {
    for (const agent of agents) agent.destroy();
    await proxy?.close();
    await origin?.close();
  });

  it('logs, admits and names each connection by its own peer, request after request, interleaved', async () => {
    const port = proxy.proxyAddress.port;
    const one = agentFrom('127.0.0.1');
    const two = agentFrom('127.0.0.2');
    const three = agentFrom('127.0.0.3');
    const oneAgain = agentFrom('127.0.0.1');
    const sent: Array<{ n: number; from: string; status: number; reason: string; localPort: number }> = [];
    const order: Array<[string, http.Agent]> = [
      ['127.0.0.1', one],
      ['127.0.0.2', two],
      ['127.0.0.1', one],
      ['127.0.0.3', three],
      ['127.0.0.2', two],
      ['127.0.0.1', oneAgain],
      ['127.0.0.3', three],
      ['127.0.0.1', one],
    ];
    for (const [n, [from, agent]] of order.entries()) sent.push({ n, from, ...(await get(port, `${origin.url}/page/${n}`, agent)) });

    // Admission's client ranges: 127.0.0.2 is outside them on every request of its connection, the others inside.
    assert.deepEqual(
      sent.map((s) => [s.from, s.status]),
      order.map(([from]) => [from, from === '127.0.0.2' ? 403 : 200]),
    );
    assert.ok(sent.filter((s) => s.from === '127.0.0.2').every((s) => s.reason === 'deny; reason=client-not-allowed'));
    // The two connections from 127.0.0.1 have their own ports; each keep-alive connection one port.
    const firstPorts = sent.filter((s) => s.from === '127.0.0.1').map((s) => s.localPort);
    assert.equal(new Set(firstPorts).size, 2, `two connections from 127.0.0.1: ${firstPorts.join(', ')}`);

    const lines = logs.lines.filter((l) => l['msg'] === 'request');
    assert.equal(lines.length, order.length);
    for (const s of sent) {
      const line = lines.find((l) => l['url'] === `${origin.url}/page/${s.n}`);
      assert.ok(line, `the line of /page/${s.n}`);
      assert.equal(line['clientAddress'], s.from, `/page/${s.n}'s address`);
      assert.equal(line['clientPort'], s.localPort, `/page/${s.n}'s port`);
      // The range's identity names the client from 127.0.0.3; none for 127.0.0.1.
      assert.equal(line['identity'] ?? null, s.from === '127.0.0.3' ? 'lab' : null, `/page/${s.n}'s identity`);
    }
  });

  it("keys the pacer's fairness by each request's own connection's address", async () => {
    const keys: string[] = [];
    const server = http.createServer((req, res) => {
      keys.push(identityOf(req));
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const serverPort = (server.address() as { port: number }).port;
      const one = agentFrom('127.0.0.1');
      const two = agentFrom('127.0.0.2');
      for (const agent of [one, two, one, two, one]) await get(serverPort, '/', agent);
    } finally {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    }
    assert.deepEqual(keys, ['127.0.0.1/32', '127.0.0.2/32', '127.0.0.1/32', '127.0.0.2/32', '127.0.0.1/32']);
  });
});
