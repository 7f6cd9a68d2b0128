/**
 * Requests inside CONNECT tunnels (issue 7, items 0 and 5), end to end:
 * - plain HTTP through a CONNECT tunnel (undici's default `ProxyAgent`,
 *   `EnvHttpProxyAgent`, `curl -p`) is enforced like an absolute-form request
 *   to `http://host:port`: robots.txt of that origin, pacing, 403, access
 *   line, metrics;
 * - the tunnel's origin binds every request inside it, Upgrades included:
 *   another spelling of the same origin is served, another origin is 421.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type net from 'node:net';
import { spawnSync } from 'node:child_process';
import { EnvHttpProxyAgent, ProxyAgent, request, type Dispatcher } from 'undici';
import { captureLogs, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { createTestPki, openConnect, readToEnd, runCurl, startClientTls, startTlsOrigin, waitFor, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';
import { framePayloadText, maskedTextFrame } from '../helpers/websocket.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const PACED_UA = 'PacedBot/1.0';
const ROBOTS = 'User-agent: PacedBot\nCrawl-delay: 0.05\nDisallow: /private/\n\nUser-agent: *\nDisallow: /private/\n';

describe('requests inside CONNECT tunnels', () => {
  let origin: TestOrigin;
  let tlsOrigin: TlsOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;
  const upgrades: string[] = [];

  const accessLines = (): Array<Record<string, unknown>> => logs.lines.filter((l) => l['msg'] === 'request');
  const accessLineFor = async (url: string): Promise<Record<string, unknown>> => {
    await waitFor(() => accessLines().some((l) => l['url'] === url), `an access line for ${url}`);
    return accessLines().filter((l) => l['url'] === url).at(-1)!;
  };
  const requestsTotal = async (reason: string): Promise<number> => {
    const text = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    return Number(new RegExp(`^robots_proxy_requests_total\\{verdict="deny",reason="${reason}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  };

  before(async () => {
    const pki = await createTestPki();
    origin = await startOrigin((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url === '/robots.txt' ? ROBOTS : `page ${req.url}`);
    });
    origin.server.on('upgrade', (req, socket) => {
      upgrades.push(req.url ?? '');
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      socket.on('data', (d: Buffer) => socket.write(`echo:${framePayloadText(d)}`));
      socket.on('end', () => socket.end());
    });
    tlsOrigin = await startTlsOrigin((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url === '/robots.txt' ? ROBOTS : `tls page ${req.url}`);
    }, { cert: pki.certPem, key: pki.keyPem });
    logs = captureLogs();
    proxy = await startTestProxy({ upstream: { caFile: writeTempFile('upstream-ca.pem', pki.caPem) } }, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
    await tlsOrigin?.close();
  });

  /** Fetches `url` with `dispatcher`; status, decision header and body. */
  async function fetchWith(dispatcher: Dispatcher, url: string, userAgent = UA): Promise<{ status: number; decision: string; body: string }> {
    const r = await request(url, { dispatcher, headers: { 'user-agent': userAgent } });
    return { status: r.statusCode, decision: String(r.headers['x-robots-proxy-decision'] ?? ''), body: await r.body.text() };
  }

  const agents: Array<{ name: string; make: () => Dispatcher }> = [
    // undici's defaults: http:// URLs go through a CONNECT tunnel too.
    { name: 'undici ProxyAgent (default proxyTunnel)', make: () => new ProxyAgent({ uri: proxy.proxyUrl, requestTls: { ca: proxy.ca!.certPem } }) },
    { name: 'undici EnvHttpProxyAgent', make: () => new EnvHttpProxyAgent({ httpProxy: proxy.proxyUrl, httpsProxy: proxy.proxyUrl, noProxy: '', requestTls: { ca: proxy.ca!.certPem } }) },
  ];

  for (const { name, make } of agents) {
    it(`${name}: http and https URLs, allowed and disallowed, enforced with an access line`, async () => {
      const dispatcher = make();
      const slug = name.split(' ')[1]!;
      try {
        const allowed = await fetchWith(dispatcher, `${origin.url}/page/${slug}`);
        assert.equal(allowed.status, 200, allowed.body);
        assert.equal(allowed.decision, 'allow; reason=no-matching-rule');
        assert.equal(allowed.body, `page /page/${slug}`);
        const hit = origin.hits.find((h) => h.url === `/page/${slug}`);
        assert.ok(hit, 'the origin saw the page');
        assert.equal(hit.headers['user-agent'], UA);
        assert.match(String(hit.headers['via']), /robots-proxy-/);

        const deniedBefore = await requestsTotal('rule-disallow');
        const deniedUrl = `${origin.url}/private/${slug}`;
        const denied = await fetchWith(dispatcher, deniedUrl);
        assert.equal(denied.status, 403);
        assert.equal(denied.decision, 'deny; reason=rule-disallow');
        assert.match(denied.body, /disallow: \/private\/ +\(line 6\)/);
        assert.match(denied.body, new RegExp(`${origin.url.replace(/\./g, '\\.')}/robots\\.txt`));
        assert.ok(!origin.hits.some((h) => h.url.startsWith('/private/')), 'nothing under /private/ reached the origin');
        const line = await accessLineFor(deniedUrl);
        assert.equal(line['via'], 'http-tunnelled');
        assert.equal(line['status'], 403);
        assert.equal(line['method'], 'GET');
        assert.equal(line['userAgent'], UA);
        assert.equal((line['decision'] as Record<string, unknown>)['reason'], 'rule-disallow');
        assert.equal((line['decision'] as Record<string, unknown>)['origin'], origin.url);
        assert.equal(await requestsTotal('rule-disallow'), deniedBefore + 1, 'counted in the metrics');

        const tlsAllowed = await fetchWith(dispatcher, `https://localhost:${tlsOrigin.port}/page/${slug}`);
        assert.equal(tlsAllowed.status, 200, tlsAllowed.body);
        assert.equal(tlsAllowed.body, `tls page /page/${slug}`);
        const tlsDenied = await fetchWith(dispatcher, `https://localhost:${tlsOrigin.port}/private/${slug}`);
        assert.equal(tlsDenied.status, 403);
        assert.equal(tlsDenied.decision, 'deny; reason=rule-disallow');
        assert.equal((await accessLineFor(`https://localhost:${tlsOrigin.port}/private/${slug}`))['via'], 'https-intercepted');
        assert.ok(!tlsOrigin.hits.some((h) => h.startsWith('/private/')));
      } finally {
        await dispatcher.close();
      }
    });
  }

  it('curl -p (proxytunnel) with an http:// URL: allowed and disallowed', async (t) => {
    if (spawnSync('which', ['curl']).status !== 0) return t.skip('curl is not installed');
    const common = ['-p', '--proxy', proxy.proxyUrl, '-A', UA];
    const allowed = await runCurl([...common, `${origin.url}/page/curl-p`]);
    assert.equal(allowed.exitCode, 0, allowed.stderr);
    assert.equal(allowed.status, 200);
    assert.equal(allowed.body, 'page /page/curl-p');
    const denied = await runCurl([...common, `${origin.url}/private/curl-p`]);
    assert.equal(denied.status, 403);
    assert.equal(denied.headers['x-robots-proxy-decision'], 'deny; reason=rule-disallow');
    assert.equal((await accessLineFor(`${origin.url}/private/curl-p`))['via'], 'http-tunnelled');
    assert.ok(!origin.hits.some((h) => h.url.startsWith('/private/')));
  });

  it('plain HTTP in a tunnel is paced with the crawl-delay of its group, and reads the http origin\'s robots.txt', async () => {
    const dispatcher = new ProxyAgent({ uri: proxy.proxyUrl });
    try {
      const r = await fetchWith(dispatcher, `${origin.url}/page/paced`, PACED_UA);
      assert.equal(r.status, 200);
      const decision = (await accessLineFor(`${origin.url}/page/paced`))['decision'] as Record<string, unknown>;
      assert.equal(decision['group'], 'PacedBot');
      assert.equal(decision['crawlDelaySeconds'], 0.05);
      assert.equal((decision['pacing'] as Record<string, unknown>)['delayMs'], 50);
      assert.equal(origin.robotsHits(), 1, 'robots.txt of the http origin, fetched once for every tunnel and request');
    } finally {
      await dispatcher.close();
    }
  });

  /** Opens a tunnel to `authority`; TLS (trusting the proxy CA) unless `plain`; sends `text` and reads until the proxy closes. */
  async function exchangeInTunnel(authority: string, text: string, options: { plain?: boolean; servername?: string } = {}): Promise<string> {
    const tunnel = await openConnect(proxy.proxyAddress.port, authority);
    assert.equal(tunnel.status, 200);
    const socket: net.Socket = options.plain ? tunnel.socket : await startClientTls(tunnel.socket, { ca: proxy.ca!.certPem, servername: options.servername ?? 'localhost' });
    const answer = readToEnd(socket);
    socket.write(text);
    return answer;
  }

  it('a Host that spells the CONNECT origin another way (trailing dot, case) is that origin, TLS or plain', async () => {
    const viaTls = await exchangeInTunnel(`localhost:${tlsOrigin.port}`, `GET /page/dot HTTP/1.1\r\nHost: LocalHost.:${tlsOrigin.port}\r\nUser-Agent: ${UA}\r\nConnection: close\r\n\r\n`);
    assert.match(viaTls, /^HTTP\/1\.1 200 /);
    assert.ok(viaTls.includes('tls page /page/dot'), viaTls);
    const plain = await exchangeInTunnel(`localhost.:${origin.port}`, `GET /page/dot-plain HTTP/1.1\r\nHost: localhost:${origin.port}\r\nUser-Agent: ${UA}\r\nConnection: close\r\n\r\n`, { plain: true });
    assert.match(plain, /^HTTP\/1\.1 200 /);
    assert.ok(plain.includes('page /page/dot-plain'), plain);
  });

  it('an absolute-form target on the tunnel\'s own origin is served, TLS or plain (read without the URL parser when canonical, or by it)', async () => {
    for (const spelling of [`https://localhost:${tlsOrigin.port}/page/abs`, `HTTPS://LocalHost:${tlsOrigin.port}/page/abs-parsed`]) {
      const viaTls = await exchangeInTunnel(`localhost:${tlsOrigin.port}`, `GET ${spelling} HTTP/1.1\r\nHost: localhost:${tlsOrigin.port}\r\nUser-Agent: ${UA}\r\nConnection: close\r\n\r\n`);
      assert.match(viaTls, /^HTTP\/1\.1 200 /, spelling);
      assert.ok(viaTls.includes(`tls page ${new URL(spelling).pathname}`), viaTls);
    }
    const plain = await exchangeInTunnel(`localhost:${origin.port}`, `GET http://localhost:${origin.port}/page/abs-plain HTTP/1.1\r\nHost: localhost:${origin.port}\r\nUser-Agent: ${UA}\r\nConnection: close\r\n\r\n`, { plain: true });
    assert.match(plain, /^HTTP\/1\.1 200 /);
    assert.ok(plain.includes('page /page/abs-plain'), plain);
  });

  it('a request for another origin inside a tunnel is 421, plain HTTP included, and never forwarded', async () => {
    const other = `127.0.0.1:${tlsOrigin.port}`;
    const plain = await exchangeInTunnel(`localhost:${origin.port}`, `GET http://${other}/page/elsewhere HTTP/1.1\r\nHost: ${other}\r\nConnection: close\r\n\r\n`, { plain: true });
    assert.match(plain, /^HTTP\/1\.1 421 /);
    assert.match(plain, /x-robots-proxy-decision: deny; reason=misdirected/i);
    const hostOnly = await exchangeInTunnel(`localhost:${origin.port}`, `GET /page/elsewhere HTTP/1.1\r\nHost: ${other}\r\nConnection: close\r\n\r\n`, { plain: true });
    assert.match(hostOnly, /^HTTP\/1\.1 421 /);
    assert.ok(!tlsOrigin.hits.includes('/page/elsewhere'));
    assert.ok(!origin.hits.some((h) => h.url === '/page/elsewhere'));
  });

  for (const [label, target] of [
    ['an http:// absolute URL for another origin', () => `http://127.0.0.1:${origin.port}/ws-elsewhere`],
    ['an https:// absolute URL for another origin', () => `https://127.0.0.1:${origin.port}/ws-elsewhere`],
    ['the tunnel\'s own host with the http scheme', () => `http://localhost:${tlsOrigin.port}/ws-elsewhere`],
  ] as const) {
    it(`an Upgrade inside a TLS tunnel for ${label} is 421 and not relayed`, async () => {
      const url = target();
      const text = await exchangeInTunnel(
        `localhost:${tlsOrigin.port}`,
        `GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nUser-Agent: ${UA}\r\n\r\n`,
      );
      assert.match(text, /^HTTP\/1\.1 421 /);
      assert.match(text, /x-robots-proxy-decision: deny; reason=misdirected/i);
      assert.deepEqual(upgrades.filter((u) => u.includes('elsewhere')), []);
      assert.ok(!tlsOrigin.hits.includes('/ws-elsewhere'));
    });
  }

  it('an Upgrade for the tunnel\'s own origin inside a plain-HTTP tunnel is relayed, with an access line', async () => {
    const tunnel = await openConnect(proxy.proxyAddress.port, `127.0.0.1:${origin.port}`);
    const socket = tunnel.socket;
    let text = '';
    const done = new Promise<void>((resolve) => {
      socket.on('data', (d: Buffer) => {
        text += d.toString();
        if (text.startsWith('HTTP/1.1 101') && text.includes('\r\n\r\n') && !text.includes('ping')) socket.write(maskedTextFrame('ping'));
        if (text.includes('echo:ping')) socket.end();
      });
      socket.on('close', () => resolve());
    });
    socket.write(`GET /ws-own HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nUser-Agent: ${UA}\r\n\r\n`);
    await done;
    assert.match(text, /^HTTP\/1\.1 101 /);
    assert.ok(text.includes('echo:ping'));
    assert.deepEqual(upgrades.filter((u) => u === '/ws-own'), ['/ws-own']);
    const line = await accessLineFor(`${origin.url}/ws-own`);
    assert.equal(line['via'], 'http-tunnelled');
    assert.equal(line['status'], 101);
  });
});
