/**
 * Safety and HTTP semantics of the plain-HTTP proxy (issue #3): private
 * targets refused before anything is sent (not even robots.txt), requests not
 * in absolute form get 400, loops back into the proxy are refused, hop-by-hop
 * fields are dropped and `Via` added (RFC 9110 §7.6), bodies stream intact,
 * HEAD works, and a refusal is JSON when the client asks for it.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { networkInterfaces } from 'node:os';
import { Readable } from 'node:stream';
import { targetsOwnListener } from '../../src/proxy/loop-guard.js';
import { startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest, rawExchange, type ProxyAnswer } from '../helpers/proxy-client.js';
import { fakeResolver } from '../helpers/resolver.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const VIA_OF_PROXY = /^1\.1 robots-proxy-[a-z0-9]+$/;

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * robots.txt disallowing /private/; /echo answers with the request body and its
 * sha256 and length; /hop-by-hop answers with hop-by-hop fields of its own;
 * every other path answers `page <path>` (headers only for HEAD).
 */
function startSite(): Promise<TestOrigin> {
  return startOrigin((req, res) => {
    if (req.url === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private/\n');
      return;
    }
    if (req.url === '/echo') {
      const chunks: Buffer[] = [];
      req.on('data', (d: Buffer) => chunks.push(d));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'x-received-sha256': sha256(body), 'x-received-length': String(body.length) });
        res.end(body);
      });
      return;
    }
    if (req.url === '/hop-by-hop') {
      res.writeHead(200, {
        connection: 'X-Bar',
        'x-bar': '1',
        'keep-alive': 'timeout=77',
        'proxy-authenticate': 'Basic realm="origin"',
        'x-end-to-end': 'kept',
        'content-type': 'text/plain',
      });
      res.end('ok');
      return;
    }
    const body = `page ${req.url}`;
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(body)) });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
}

describe('private targets with upstream.allowPrivateNetworks: false', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  before(async () => {
    const dns: Record<string, string[]> = { 'metadata.test': ['64:ff9b::a9fe:a9fe'], 'mapped.test': ['::ffff:127.0.0.1'], 'cgnat.test': ['100.64.0.1'], 'mixed.test': ['93.184.215.14', '10.0.0.1'] };
    proxy = await startTestProxy({ https: { mode: 'tunnel' }, upstream: { allowPrivateNetworks: false } }, { resolve: fakeResolver((hostname) => dns[hostname]) });
    origin = await startSite();
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  // Numeric IPv4 forms (the WHATWG URL parser turns each into 127.0.0.1) and IPv6 addresses that embed
  // a loopback IPv4 address: IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64, 6to4, Teredo (client stored inverted).
  const hosts = ['127.0.0.1', 'localhost', '[::1]', '2130706433', '0x7f.1', '127.1', '0177.0.0.1', '[::ffff:7f00:1]', '[::127.0.0.1]', '[::ffff:0:127.0.0.1]', '[64:ff9b::127.0.0.1]', '[2002:7f00:1::1]', '[2001:0:4136:e378:8000:63bf:80ff:fffe]'];
  it('the URL parser normalises numeric IPv4 forms to the dotted address the guard judges', () => {
    for (const host of ['2130706433', '0x7f.1', '127.1', '0177.0.0.1', '0x7f000001']) assert.equal(new URL(`http://${host}:8/`).hostname, '127.0.0.1', host);
  });
  for (const host of hosts) {
    it(`refuses ${host} with 403 target-private-network; the origin sees nothing, not even robots.txt`, async () => {
      const r = await proxyRequest(proxy.proxyAddress.port, `http://${host}:${origin.port}/page`, { headers: { 'user-agent': UA, accept: 'application/json' } });
      assert.equal(r.status, 403);
      assert.equal(r.decision, 'deny; reason=target-private-network');
      assert.equal(JSON.parse(r.body.toString()).decision.reason, 'target-private-network');
      assert.deepEqual(origin.hits, []);
    });
  }

  it('judges every DNS answer of a name: any non-public answer refuses it', async () => {
    for (const name of ['metadata.test', 'mapped.test', 'cgnat.test', 'mixed.test']) {
      const r = await proxyRequest(proxy.proxyAddress.port, `http://${name}:${origin.port}/page`, { headers: { 'user-agent': UA } });
      assert.equal(r.status, 403, name);
      assert.equal(r.decision, 'deny; reason=target-private-network', name);
    }
  });

  it('refuses a tunnel-mode CONNECT to a numeric or embedded loopback address', async () => {
    for (const host of ['2130706433', '127.1', '[64:ff9b::7f00:1]', '[::127.0.0.1]']) {
      const answer = await rawExchange(proxy.proxyAddress.port, `CONNECT ${host}:${origin.port} HTTP/1.1\r\nHost: ${host}:${origin.port}\r\nUser-Agent: ${UA}\r\n\r\n`);
      assert.match(answer, /^HTTP\/1\.1 403 /, host);
      assert.match(answer, /x-robots-proxy-decision: deny; reason=target-private-network/i, host);
    }
    assert.deepEqual(origin.hits, []);
  });
});

describe('the plain-HTTP proxy: requests, headers and bodies', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  const get = (url: string, options: Parameters<typeof proxyRequest>[2] = {}): Promise<ProxyAnswer> =>
    proxyRequest(proxy.proxyAddress.port, url, { ...options, headers: { 'user-agent': UA, ...options.headers } });

  before(async () => {
    proxy = await startTestProxy({ https: { mode: 'tunnel' } });
    origin = await startSite();
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('answers a request not in absolute form with 400 and an explanation', async () => {
    const answer = await rawExchange(proxy.proxyAddress.port, `GET / HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nUser-Agent: ${UA}\r\n\r\n`);
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(answer, /\r\nx-robots-proxy-decision: deny; reason=bad-request\r\n/i);
    const body = answer.slice(answer.indexOf('\r\n\r\n') + 4);
    assert.ok(body.trim().length > 0, 'the 400 explains itself');
    assert.deepEqual(origin.hits, []);
  });

  it('refuses a request to the proxy itself (loop), however the address is written', async () => {
    // 0.0.0.0 and IPv4-mapped IPv6 connect to the proxy too; a trailing dot names the same host.
    for (const host of ['127.0.0.1', 'localhost', 'LOCALHOST.', '0.0.0.0', '[::ffff:127.0.0.1]']) {
      const r = await get(`http://${host}:${proxy.proxyAddress.port}/page`);
      assert.equal(r.status, 400, host);
      assert.equal(r.decision, 'deny; reason=bad-request', host);
    }
    assert.equal(await proxy.robotsCache.peek(`http://0.0.0.0:${proxy.proxyAddress.port}`), undefined, 'no robots.txt fetched from the proxy itself');
  });

  it('refuses a request whose Via shows it already passed through this proxy', async () => {
    const first = await get(`${origin.url}/page`);
    const via = String(first.headers['via']);
    assert.match(via, VIA_OF_PROXY);
    const looped = await get(`${origin.url}/again`, { headers: { via: `1.1 other-proxy, ${via}` } });
    assert.equal(looped.status, 400);
    assert.equal(looped.decision, 'deny; reason=bad-request');
    assert.deepEqual(origin.hits.map((h) => h.url).filter((u) => u === '/again'), []);
  });

  it('drops hop-by-hop fields both ways, keeps end-to-end ones, adds Via', async () => {
    const r = await get(`${origin.url}/hop-by-hop`, {
      headers: {
        connection: 'X-Foo',
        'x-foo': '1',
        'keep-alive': 'timeout=5',
        'proxy-authorization': 'Basic dXNlcjpwYXNz',
        'proxy-connection': 'keep-alive',
        te: 'trailers',
        'x-end-to-end': 'kept',
        cookie: 'a=1',
      },
    });
    assert.equal(r.status, 200);
    const seen: IncomingHttpHeaders = origin.hits.find((h) => h.url === '/hop-by-hop')!.headers;
    for (const name of ['x-foo', 'keep-alive', 'proxy-authorization', 'proxy-connection', 'te']) assert.equal(seen[name], undefined, `${name} reached the origin`);
    assert.doesNotMatch(String(seen['connection'] ?? ''), /x-foo/i);
    assert.equal(seen['x-end-to-end'], 'kept');
    assert.equal(seen['cookie'], 'a=1');
    assert.equal(seen['user-agent'], UA);
    assert.equal(seen['host'], `127.0.0.1:${origin.port}`);
    assert.match(String(seen['via']), VIA_OF_PROXY);

    assert.equal(r.headers['x-bar'], undefined);
    assert.equal(r.headers['proxy-authenticate'], undefined);
    assert.notEqual(r.headers['keep-alive'], 'timeout=77');
    assert.equal(r.headers['x-end-to-end'], 'kept');
    assert.match(String(r.headers['via']), VIA_OF_PROXY);
    assert.equal(r.decision, 'allow; reason=no-matching-rule');
  });

  it('streams a 1 MB request body through intact, with Content-Length and chunked', async () => {
    const data = randomBytes(1024 * 1024);
    const sized = await get(`${origin.url}/echo`, { method: 'POST', body: data, headers: { 'content-type': 'application/octet-stream', 'content-length': String(data.length) } });
    assert.equal(sized.status, 200);
    assert.equal(sized.headers['x-received-length'], String(data.length));
    assert.equal(sized.headers['x-received-sha256'], sha256(data));
    assert.ok(sized.body.equals(data), 'echoed body differs');

    const chunks = Array.from({ length: 16 }, (_, i) => data.subarray(i * 65536, (i + 1) * 65536));
    const chunked = await get(`${origin.url}/echo`, { method: 'PUT', body: Readable.from(chunks) });
    assert.equal(chunked.status, 200);
    assert.equal(chunked.headers['x-received-sha256'], sha256(data));
    assert.ok(chunked.body.equals(data), 'echoed body differs');
    const methods = origin.hits.filter((h) => h.url === '/echo').map((h) => h.method);
    assert.deepEqual(methods, ['POST', 'PUT']);
  });

  it('answers HEAD for allowed and disallowed paths without a body', async () => {
    const allowed = await get(`${origin.url}/page`, { method: 'HEAD' });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers['content-length'], String('page /page'.length));
    assert.equal(allowed.body.length, 0);
    const denied = await get(`${origin.url}/private/x`, { method: 'HEAD' });
    assert.equal(denied.status, 403);
    assert.equal(denied.decision, 'deny; reason=rule-disallow');
    assert.equal(denied.body.length, 0);
    assert.ok(origin.hits.some((h) => h.method === 'HEAD' && h.url === '/page'));
    assert.ok(!origin.hits.some((h) => h.url.startsWith('/private/')));
  });

  it('explains a 403 in JSON when the client accepts application/json, in text otherwise', async () => {
    const json = await get(`${origin.url}/private/x?y=1`, { headers: { accept: 'application/json' } });
    assert.equal(json.status, 403);
    assert.match(String(json.headers['content-type']), /^application\/json/);
    const body = JSON.parse(json.body.toString());
    assert.equal(body.status, 403);
    assert.equal(body.decision.verdict, 'deny');
    assert.equal(body.decision.reason, 'rule-disallow');
    assert.deepEqual(body.decision.rule, { kind: 'disallow', pattern: '/private/', line: 2 });
    assert.equal(body.decision.path, '/private/x?y=1');
    assert.equal(body.decision.group, '*');
    assert.equal(body.decision.snapshot.url, `${origin.url}/robots.txt`);
    assert.equal(body.decision.snapshot.status, 200);

    const text = await get(`${origin.url}/private/x`);
    assert.equal(text.status, 403);
    assert.match(String(text.headers['content-type']), /^text\/plain/);
    assert.ok(text.body.toString().includes(`${origin.url}/robots.txt`));
    assert.ok(!origin.hits.some((h) => h.url.startsWith('/private/')));
  });
});

describe('loop detection for a proxy bound to every address (0.0.0.0:8080)', () => {
  const own = [{ host: '0.0.0.0', port: 8080 }];

  it('refuses this machine\'s own addresses on the proxy port', () => {
    const local = Object.values(networkInterfaces()).flatMap((list) => list ?? []).map((a) => (a.family === 'IPv6' ? `[${a.address}]` : a.address));
    for (const host of ['127.0.0.1', '127.0.0.53', 'localhost', '[::1]', '0.0.0.0', '[::ffff:7f00:1]', ...local]) {
      assert.equal(targetsOwnListener(host, 8080, own), true, host);
    }
  });

  it('lets other hosts on the same port through', () => {
    for (const host of ['example.com', '93.184.215.14', '[2001:db8::1]']) assert.equal(targetsOwnListener(host, 8080, own), false, host);
    assert.equal(targetsOwnListener('127.0.0.1', 8081, own), false);
  });
});
