import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { reachesListener, targetsOwnListener } from '../../src/proxy/loop-guard.js';
import { OWN_LISTENER_CODE } from '../../src/proxy/target-guard.js';
import { startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest, rawExchange } from '../helpers/proxy-client.js';
import { fakeResolver } from '../helpers/resolver.js';

const UA = 'LoopBot/1.0';

describe('reachesListener', () => {
  it('matches the address and port a connection uses against a listener as bound', () => {
    const admin = { host: '127.0.0.1', port: 9091 };
    assert.equal(reachesListener('127.0.0.1', 9091, admin), true);
    assert.equal(reachesListener('::ffff:127.0.0.1', 9091, admin), true, 'IPv4-mapped');
    assert.equal(reachesListener('0.0.0.0', 9091, admin), true, '0.0.0.0 connects to this machine');
    assert.equal(reachesListener('::', 9091, admin), true);
    assert.equal(reachesListener('127.0.0.2', 9091, admin), false, 'another loopback address is another socket');
    assert.equal(reachesListener('127.0.0.1', 9092, admin), false, 'another port');
    assert.equal(reachesListener('10.0.0.1', 9091, { host: '::', port: 9091 }), false, 'not an address of this machine');
    assert.equal(reachesListener('::1', 9091, { host: '::', port: 9091 }), true);
    assert.equal(reachesListener('127.0.0.9', 9091, { host: '0.0.0.0', port: 9091 }), true);
    assert.equal(reachesListener('::1', 9091, { host: '::1', port: 9091 }), true);
    assert.equal(reachesListener('0:0:0:0:0:0:0:1', 9091, { host: '::1', port: 9091 }), true, 'any spelling of an address');
  });

  it('the quick check by host name knows localhost and IP literals only', () => {
    const own = [{ host: '127.0.0.1', port: 9091 }];
    for (const host of ['localhost', 'LOCALHOST.', 'app.localhost', '[::ffff:7f00:1]', '127.0.0.1']) assert.equal(targetsOwnListener(host, 9091, own), true, host);
    for (const host of ['vm', 'example.com', '127.0.0.2']) assert.equal(targetsOwnListener(host, 9091, own), false, host);
  });
});

/** `vm.test` is an alias of loopback (what `vm` in /etc/hosts would be); `rebind.test` answers 127.0.0.2 once, then 127.0.0.1. */
function testResolver() {
  let rebinds = 0;
  return fakeResolver((hostname) => (hostname === 'vm.test' ? ['127.0.0.1'] : hostname === 'rebind.test' ? [rebinds++ === 0 ? '127.0.0.2' : '127.0.0.1'] : undefined));
}

describe('the admin API and the proxy are not reachable through the proxy (upstream.allowPrivateNetworks: true)', () => {
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let redirector: TestOrigin;
  let adminPort: number;
  const get = (url: string) => proxyRequest(proxy.proxyAddress.port, url, { headers: { 'user-agent': UA, accept: 'application/json' } });

  before(async () => {
    proxy = await startTestProxy({ https: { mode: 'tunnel' } }, { resolve: testResolver() });
    adminPort = proxy.adminAddress!.port;
    // A site whose robots.txt redirects to the admin API.
    redirector = await startOrigin((req, res) => {
      const target = req.url === '/robots.txt' ? `http://localhost:${adminPort}/metrics` : req.url === '/vm/robots.txt' ? `http://vm.test:${adminPort}/metrics` : undefined;
      if (target) {
        res.writeHead(302, { location: target });
        return res.end();
      }
      res.end('page');
    });
  });
  after(async () => {
    await proxy?.close();
    await redirector?.close();
  });

  it('refuses the admin port through a host alias of loopback, and through every spelling of loopback, with 400', async () => {
    for (const host of ['vm.test', 'localhost', '127.0.0.1', '[::ffff:127.0.0.1]', '0.0.0.0', '[::]']) {
      const r = await get(`http://${host}:${adminPort}/metrics`);
      assert.equal(r.status, 400, host);
      assert.equal(r.decision, 'deny; reason=bad-request', host);
      assert.doesNotMatch(r.body.toString(), /robots_proxy_/, `${host}: no metrics leaked`);
    }
    const alias = JSON.parse((await get(`http://vm.test:${adminPort}/metrics`)).body.toString());
    assert.match(alias.decision.detail, /own listener/);
  });

  it('refuses the proxy port through a host alias', async () => {
    const r = await get(`http://vm.test:${proxy.proxyAddress.port}/x`);
    assert.equal(r.status, 400);
    assert.equal(r.decision, 'deny; reason=bad-request');
  });

  it('does not follow a robots.txt redirect to the admin API: the connection is refused at connect time', async () => {
    const r = await get(`${redirector.url}/page`);
    assert.equal(r.status, 403);
    assert.equal(r.decision, 'deny; reason=target-private-network');
    const snapshot = await proxy.robotsCache.peek(redirector.url);
    assert.equal(snapshot?.info.state, 'unreachable');
    assert.equal(snapshot?.info.error, OWN_LISTENER_CODE);
    assert.deepEqual(redirector.hits.map((h) => h.url), ['/robots.txt'], 'the page was not fetched');
  });

  it('refuses a name whose DNS answer changes to the admin address between the check and the connection', async () => {
    const r = await get(`http://rebind.test:${adminPort}/metrics`);
    assert.equal(r.status, 403);
    assert.equal(r.decision, 'deny; reason=target-private-network');
    assert.equal((await proxy.robotsCache.peek(`http://rebind.test:${adminPort}`))?.info.error, OWN_LISTENER_CODE);
  });

  it('refuses an Upgrade and a tunnel-mode CONNECT to the admin port through the alias', async () => {
    const upgrade = await rawExchange(
      proxy.proxyAddress.port,
      `GET http://vm.test:${adminPort}/ws HTTP/1.1\r\nHost: vm.test:${adminPort}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nUser-Agent: ${UA}\r\n\r\n`,
    );
    assert.match(upgrade, /^HTTP\/1\.1 400 /);
    const connect = await rawExchange(proxy.proxyAddress.port, `CONNECT vm.test:${adminPort} HTTP/1.1\r\nHost: vm.test:${adminPort}\r\nUser-Agent: ${UA}\r\n\r\n`);
    assert.match(connect, /^HTTP\/1\.1 400 /);
    assert.match(connect, /x-robots-proxy-decision: deny; reason=bad-request/i);
  });

  it('still forwards to other loopback origins', async () => {
    const site = await startOrigin((_req, res) => res.end('hello'));
    try {
      const r = await get(`http://vm.test:${site.port}/x`);
      assert.equal(r.status, 200);
      assert.equal(r.body.toString(), 'hello');
    } finally {
      await site.close();
    }
  });
});

describe('a proxy whose admin listener is bound to every address (0.0.0.0)', () => {
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  before(async () => {
    proxy = await startTestProxy({ admin: { host: '0.0.0.0', port: 0, token: 'loop-guard-test-admin-token' }, https: { mode: 'tunnel' } });
  });
  after(async () => proxy?.close());

  it('refuses the admin port on any loopback address', async () => {
    const adminPort = proxy.adminAddress!.port;
    // The admin API answers on 127.0.0.2 directly (it is bound to every address)...
    const direct = await new Promise<boolean>((resolve) => {
      const s = net.connect(adminPort, '127.0.0.2', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    assert.equal(direct, true);
    // ...so the proxy refuses it there too.
    for (const host of ['127.0.0.2', '127.1.2.3', 'localhost']) {
      const r = await proxyRequest(proxy.proxyAddress.port, `http://${host}:${adminPort}/metrics`, { headers: { 'user-agent': UA } });
      assert.equal(r.status, 400, host);
    }
  });
});
