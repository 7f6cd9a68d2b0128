/**
 * bench/floor-roles.mjs, the Node floor of `npm run bench:proxy`: each bare forwarder is a real
 * forward proxy, so that its cost is a forwarder's. Through each one (its own process, as the
 * bench runs it), an absolute-form GET reaches the origin with its path and query, Host set to
 * the target, the hop-by-hop fields and those named in Connection dropped (RFC 9110 §7.6.1) both
 * ways, and the origin's body and status come back; an origin that drops the connection without
 * answering is answered 502.
 * `node-floor-server` answers the bench's 96-byte page itself. (`rp-forwarder` needs the tsc
 * build and is robots-proxy's own forwarder, tested in test/proxy.)
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../../bench/floor-roles.mjs', import.meta.url));
const FORWARDERS = ['bare-request', 'bare-http', 'bare-dispatch', 'bare-dispatch-raw'];

/** Starts a floor role under plain node; resolves with the child and its port. */
function startRole(variant: string): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = fork(script, [variant], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('exit', (code) => reject(new Error(`${variant} exited with ${code}`)));
    child.once('message', (m) => resolve({ child, port: (m as { port: number }).port }));
  });
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Sends an absolute-form GET for `url` through the proxy on `proxyPort`. */
function viaProxy(proxyPort: number, url: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxyPort, method: 'GET', path: url, headers: { host: new URL(url).host, ...headers }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.once('error', reject);
    req.end();
  });
}

describe('bench/floor-roles.mjs', () => {
  let origin: http.Server;
  let originHost = '';
  let dropping: http.Server;
  let droppingHost = '';
  const seen: Array<{ url: string | undefined; headers: IncomingHttpHeaders }> = [];
  const children: ChildProcess[] = [];

  before(async () => {
    origin = http.createServer((req, res) => {
      seen.push({ url: req.url, headers: req.headers });
      res.writeHead(203, { 'content-type': 'text/plain', 'x-origin': 'yes', 'x-private-hop': '1', connection: 'keep-alive, x-private-hop', 'keep-alive': 'timeout=5' });
      res.end(`page ${req.url}`);
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    originHost = `127.0.0.1:${(origin.address() as AddressInfo).port}`;
    // An origin that closes the connection without answering (not a closed port: on a shared
    // machine another process may bind a port the test has just let go of).
    dropping = http.createServer((req) => req.socket.destroy());
    await new Promise<void>((resolve) => dropping.listen(0, '127.0.0.1', resolve));
    droppingHost = `127.0.0.1:${(dropping.address() as AddressInfo).port}`;
  });

  after(async () => {
    for (const child of children) child.kill('SIGTERM');
    origin.closeAllConnections();
    dropping.closeAllConnections();
    await Promise.all([origin, dropping].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  });

  for (const variant of FORWARDERS) {
    it(`${variant} relays the origin's answer, dropping hop-by-hop fields both ways, and answers 502 when the origin drops the connection`, async () => {
      const { child, port } = await startRole(variant);
      children.push(child);
      const before = seen.length;
      const answer = await viaProxy(port, `http://${originHost}/page/1?q=1`, { 'user-agent': 'FloorBot/1.0', connection: 'keep-alive, x-client-hop', 'x-client-hop': '1', 'x-end': 'kept' });
      assert.equal(answer.status, 203);
      assert.equal(answer.body, 'page /page/1?q=1');
      assert.equal(answer.headers['x-origin'], 'yes');
      assert.equal(answer.headers['x-private-hop'], undefined, 'a field the origin named in Connection is not relayed');
      assert.equal(seen.length, before + 1);
      const upstream = seen[seen.length - 1]!;
      assert.equal(upstream.url, '/page/1?q=1');
      assert.equal(upstream.headers['host'], originHost);
      assert.equal(upstream.headers['user-agent'], 'FloorBot/1.0');
      assert.equal(upstream.headers['x-end'], 'kept');
      assert.equal(upstream.headers['x-client-hop'], undefined, 'a field the client named in Connection is not forwarded');

      const dropped = await viaProxy(port, `http://${droppingHost}/page`);
      assert.equal(dropped.status, 502);
    });
  }

  it('node-floor-server answers the 96-byte page itself', async () => {
    const { child, port } = await startRole('node-floor-server');
    children.push(child);
    const before = seen.length;
    const answer = await viaProxy(port, `http://${originHost}/page/1?q=1`);
    assert.equal(answer.status, 200);
    assert.equal(answer.body.length, 96);
    assert.equal(seen.length, before, 'nothing reaches the origin');
  });
});
