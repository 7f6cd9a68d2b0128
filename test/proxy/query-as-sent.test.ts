/**
 * The query of a request target is decided and forwarded as the client wrote it: a `'` not as the
 * URL parser respells it (`%27`, src/proxy/query-as-sent.ts), an empty query with its `?`
 * (`pathAndQueryOf`, src/proxy/target-origin.ts). The pure functions, then a real proxy and origin
 * on loopback, absolute-form and inside a CONNECT tunnel (plain HTTP in it). Found by the
 * end-to-end differential (scripts/e2e-differential.ts): `Disallow: /*?*'` is a real rule
 * (www.nationalesicherheitsstrategie.de's robots.txt, in the shared corpus), `Disallow: /*?` a
 * common one.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { withQueryAsSent } from '../../src/proxy/query-as-sent.js';
import { parseProxyTarget } from '../../src/proxy/proxy-target.js';
import { resolveTunnelRequest } from '../../src/proxy/tunnel-target.js';
import { pathAndQueryOf } from '../../src/proxy/target-origin.js';
import { startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { rawExchange, rawHeader } from '../helpers/proxy-client.js';

describe('withQueryAsSent', () => {
  const parts = (raw: string, base = ''): { search: string; href: string } => {
    const url = withQueryAsSent(new URL(base + raw), raw);
    return { search: url.search, href: url.href };
  };

  it("keeps each written `'` of the query where the parser wrote %27, in search and href", () => {
    assert.deepEqual(parts("http://a.example/x?q='a'&b=1"), { search: "?q='a'&b=1", href: "http://a.example/x?q='a'&b=1" });
    assert.deepEqual(parts("http://a.example:8080/x'y?q='#frag'"), { search: "?q='", href: "http://a.example:8080/x'y?q='#frag'" });
  });

  it('leaves a %27 the client wrote, and what a URI may not hold raw, escaped as the parser escapes them', () => {
    assert.deepEqual(parts(`http://a.example/x?a=%27&b='&c="<>"&d=\u00e9&e=\u20ac'`), { search: `?a=%27&b='&c=%22%3C%3E%22&d=%C3%A9&e=%E2%82%AC'`, href: `http://a.example/x?a=%27&b='&c=%22%3C%3E%22&d=%C3%A9&e=%E2%82%AC'` });
    assert.equal(parts("/p?x=' y", 'https://b.example').search, "?x='%20y");
  });

  it("returns the URL itself when the query holds no `'` (a `'` in the path is the parser's own: kept), or when the parse dropped characters (a tab: the two do not line up)", () => {
    for (const raw of ["http://a.example/x'y", 'http://a.example/x?q=%27', "http://a.example/x#q='", "http://a.example/x?q='\t1"]) {
      const url = new URL(raw);
      assert.equal(withQueryAsSent(url, raw), url, raw);
    }
  });

  it("both readers of a target use it: absolute-form (parseProxyTarget) and a tunnel's origin-form (resolveTunnelRequest)", () => {
    const plain = parseProxyTarget("http://a.example/x?q='1'");
    assert.ok(typeof plain !== 'string');
    assert.equal(plain.search, "?q='1'");
    const inTunnel = resolveTunnelRequest({ authority: 'a.example:443', hostname: 'a.example', port: 443 }, 'https', "/x?q='1'", 'a.example');
    assert.ok('search' in inTunnel);
    assert.equal(inTunnel.search, "?q='1'");
  });
});

describe('pathAndQueryOf', () => {
  it("keeps an empty query's `?` (URL.search is '' for it), from either reader of a target", () => {
    for (const [raw, expected] of [['http://a.example/x?', '/x?'], ['HTTP://A.example/x?', '/x?'], ['http://a.example/?', '/?'], ['http://a.example?', '/?'], ['http://a.example/x', '/x'], ['http://a.example/x?y', '/x?y']] as const) {
      const target = parseProxyTarget(raw);
      assert.ok(typeof target !== 'string', raw);
      assert.equal(pathAndQueryOf(target), expected, raw);
    }
    const inTunnel = resolveTunnelRequest({ authority: 'a.example:443', hostname: 'a.example', port: 443 }, 'https', '/x?', 'a.example');
    assert.ok('search' in inTunnel);
    assert.equal(pathAndQueryOf(inTunnel), '/x?');
  });
});

describe("a query's ' and an empty query through the proxy", () => {
  let site: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let port: number;

  before(async () => {
    site = await startOrigin((req, res) => {
      res.end(req.url === '/robots.txt' ? "User-agent: *\nDisallow: /*?*'\nAllow: /open?*'\nDisallow: /find?\n" : 'page');
    });
    proxy = await startTestProxy({ pacing: { enabled: false } });
    port = proxy.proxyAddress.port;
  });

  after(async () => {
    await proxy?.close();
    await site?.close();
  });

  const head = (target: string): string => `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${site.port}\r\nUser-Agent: ExampleBot/1.0\r\nConnection: close\r\n\r\n`;
  const answerOf = (out: string): string => `${out.slice(9, 12)} ${rawHeader(out, 'x-robots-proxy-decision')}`;

  /** `target` (origin-form) inside a CONNECT tunnel to the origin, plain HTTP in it (intercepted). */
  const inTunnel = (target: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(`CONNECT 127.0.0.1:${site.port} HTTP/1.1\r\nHost: 127.0.0.1:${site.port}\r\n\r\n`));
      let out = '';
      let connected = false;
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => {
        out += d;
        if (!connected && out.includes('\r\n\r\n')) {
          connected = true;
          assert.match(out, /^HTTP\/1\.1 200/);
          out = '';
          socket.write(head(target));
        }
      });
      socket.on('error', reject);
      socket.on('close', () => resolve(out));
    });

  it("refuses a query that holds ' as the rule names it (before: decided and forwarded as %27, allowed)", async () => {
    assert.equal(answerOf(await rawExchange(port, head(`http://127.0.0.1:${site.port}/search?q='1'`))), '403 deny; reason=rule-disallow');
    assert.equal(answerOf(await inTunnel("/search?q='1'")), '403 deny; reason=rule-disallow');
    assert.deepEqual(site.hits.map((h) => h.url).filter((url) => url !== '/robots.txt'), []);
  });

  it('refuses an empty query as `Disallow: /find?` names it (before: decided and forwarded as /find, allowed)', async () => {
    assert.equal(answerOf(await rawExchange(port, head(`http://127.0.0.1:${site.port}/find?`))), '403 deny; reason=rule-disallow');
    assert.equal(answerOf(await inTunnel('/find?')), '403 deny; reason=rule-disallow');
    assert.equal(answerOf(await rawExchange(port, head(`http://127.0.0.1:${site.port}/open?`))), '200 allow; reason=no-matching-rule');
    assert.equal(answerOf(await inTunnel('/open?')), '200 allow; reason=no-matching-rule');
    const pages = site.hits.map((h) => h.url).filter((url) => url !== '/robots.txt');
    assert.deepEqual(pages.slice(-2), ['/open?', '/open?']);
  });

  it("forwards the query as written: ' as ' (before: %27), %27 stays %27 (another spelling to RFC 9309 §2.2.2), what a URI may not hold raw is escaped", async () => {
    assert.equal(answerOf(await rawExchange(port, head(`http://127.0.0.1:${site.port}/search?q=%27`))), '200 allow; reason=no-matching-rule');
    assert.equal(answerOf(await inTunnel('/search?q="x"')), '200 allow; reason=no-matching-rule');
    assert.equal(answerOf(await rawExchange(port, head(`http://127.0.0.1:${site.port}/open?q='1'`))), '200 allow; reason=rule-allow');
    assert.equal(answerOf(await inTunnel("/open?q='2'")), '200 allow; reason=rule-allow');
    assert.deepEqual(site.hits.map((h) => h.url).filter((url) => url.includes('?q=')), ['/search?q=%27', '/search?q=%22x%22', "/open?q='1'", "/open?q='2'"]);
  });
});
