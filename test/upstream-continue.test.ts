/**
 * src/upstream-continue.ts against a raw TCP origin on loopback and a real undici Pool: an
 * unsolicited `100 Continue` is read past whether it arrives whole, cut in pieces (each piece its
 * own TCP write, a pause between), or twice; on a kept-alive connection each request's response
 * starts afresh; a body that starts like a 100 is never touched; a 100 head over the bound fails
 * the exchange as before. Without the wrapper undici fails at the 100 ("bad response").
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { Pool, buildConnector } from 'undici';
import { MAX_INTERIM_HEAD_BYTES, skipsUnsolicitedContinue } from '../src/upstream-continue.js';
import { RobotsFetcher } from '../src/cache/robots-fetcher.js';

const FINAL = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok';
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';
const BODY_LIKE_CONTINUE = `HTTP/1.1 100 Continue\r\n\r\nrest`;

/** What the origin writes per path: the pieces, each its own write, 30 ms apart. */
const PIECES: Record<string, string[]> = {
  '/whole': [CONTINUE + FINAL],
  '/pieces': ['HTTP/1.1 1', '00 Contin', 'ue\r\nX-A: 1\r', '\n\r\nHTTP/1.1 2', '00 OK\r\nContent-Length: 2\r\n\r\nok'],
  '/twice': [CONTINUE, 'HTTP/1.0 100\r\n\r\n' + FINAL],
  '/plain': [FINAL],
  '/body-like': [`HTTP/1.1 200 OK\r\nContent-Length: ${BODY_LIKE_CONTINUE.length}\r\n\r\n`, BODY_LIKE_CONTINUE],
  '/robots.txt': [CONTINUE, 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 29\r\n\r\nUser-agent: *\nDisallow: /no/\n'],
  '/huge-continue': [`HTTP/1.1 100 Continue\r\nX-Big: ${'v'.repeat(MAX_INTERIM_HEAD_BYTES)}\r\n\r\n${FINAL}`],
};

describe('an unsolicited 100 Continue from upstream is read past', () => {
  let server: net.Server;
  let origin: string;
  const pools: Pool[] = [];

  before(async () => {
    server = net.createServer((socket) => {
      socket.on('error', () => socket.destroy());
      let pending = '';
      socket.on('data', async (d: Buffer) => {
        pending += d.toString('latin1');
        for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
          const path = pending.slice(0, end).split(' ')[1] ?? '';
          pending = pending.slice(end + 4);
          for (const piece of PIECES[path] ?? ['HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n']) {
            socket.write(piece, 'latin1');
            await new Promise((resolve) => setTimeout(resolve, 30));
          }
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    await Promise.all(pools.map((p) => p.destroy()));
    await new Promise((resolve) => server.close(resolve));
  });

  function pool(withWrapper = true): Pool {
    const connector = buildConnector({});
    const made = new Pool(origin, { connections: 1, pipelining: 1, headersTimeout: 5000, bodyTimeout: 5000, connect: withWrapper ? skipsUnsolicitedContinue(connector) : connector });
    pools.push(made);
    return made;
  }

  async function get(p: Pool, path: string): Promise<{ status: number; body: string }> {
    const { statusCode, body } = await p.request({ path, method: 'GET' });
    return { status: statusCode, body: await body.text() };
  }

  it('whole, in pieces, twice, and again on the same kept-alive connection', async () => {
    const p = pool();
    for (const path of ['/whole', '/pieces', '/twice', '/plain', '/whole', '/pieces']) {
      assert.deepEqual(await get(p, path), { status: 200, body: 'ok' }, path);
    }
    assert.equal((await p.stats).connected, 1, 'one connection kept alive throughout');
  });

  it('never touches a body that starts like a 100 head', async () => {
    const p = pool();
    assert.deepEqual(await get(p, '/body-like'), { status: 200, body: BODY_LIKE_CONTINUE });
    assert.deepEqual(await get(p, '/whole'), { status: 200, body: 'ok' });
  });

  it('hands a 100 head over the bound to undici, which fails the exchange', async () => {
    await assert.rejects(get(pool(), '/huge-continue'));
  });

  it("the robots.txt fetch reads past it too: the file's rules, not an unreachable origin", async () => {
    const fetcher = new RobotsFetcher({ userAgent: 'robots-proxy-test/1.0', timeoutMs: 5_000 });
    try {
      const snapshot = await fetcher.fetch(origin);
      assert.equal(snapshot.info.state, 'ok', JSON.stringify(snapshot.info));
      assert.equal(snapshot.info.status, 200);
      assert.ok(snapshot.robots !== null && snapshot.robots.groups.length === 1);
    } finally {
      await fetcher.close();
    }
  });

  it('without the wrapper, undici fails at the 100 (what the proxy answered 502)', async () => {
    await assert.rejects(get(pool(false), '/whole'), /bad response/);
  });
});
