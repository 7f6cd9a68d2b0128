/**
 * One origin, however its host is spelt (issue: a bot alternating spellings must not get a second
 * robots snapshot and a second pacing queue). The URL parser already writes upper case,
 * percent-encoded host bytes, IPv4 shorthand (`127.1`, `0x7f.1`) and an explicit default port as
 * one origin, and the proxy drops a trailing dot; an IPv4-mapped IPv6 host (`[::ffff:127.0.0.1]`,
 * `[::ffff:7f00:1]`) reaches the same IPv4 server, so it is keyed by its IPv4 address
 * (target-origin.ts, hostKeyOf), while the access line's `url` keeps the spelling the client sent.
 * Real parts: a loopback origin with a Crawl-delay, a proxy in process, plain HTTP absolute-form
 * requests, CONNECT tunnels carrying plain HTTP, and intercepted TLS tunnels to an https origin; an
 * operator policy rule for the IPv4 host holds for the mapped spelling too.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { captureLogs, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest } from '../helpers/proxy-client.js';
import tls from 'node:tls';
import { createTestPki, openConnect, readToEnd, startTlsOrigin, waitFor, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';
import { assertStartSpacing, seenStarts, type RequestStart } from '../helpers/spacing.js';

const UA = 'SpellBot/1.0';
const DELAY_MS = 150;
const ROBOTS = `User-agent: *\nCrawl-delay: ${DELAY_MS / 1000}\nDisallow: /private/\n`;

/** The spellings of 127.0.0.1 alternated: IPv4, IPv4-mapped IPv6 as the client may write it, and as the URL parser writes it. */
const SPELLINGS = ['127.0.0.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[0:0:0:0:0:FFFF:7F00:1]', '127.1', '[::ffff:127.0.0.1]'];

describe('an IPv4-mapped IPv6 host is the origin of its IPv4 address: one robots snapshot, one pacing queue', () => {
  let origin: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;

  const accessLines = (): Array<Record<string, unknown>> => logs.lines.filter((l) => l['msg'] === 'request');
  /** The starts the proxy logged for the pages under `prefix`: path and `upstreamStartedAt`. */
  const sentUnder = (prefix: string): RequestStart[] =>
    accessLines()
      .filter((l) => new URL(String(l['url'])).pathname.startsWith(prefix))
      .map((l) => ({ path: new URL(String(l['url'])).pathname, atMs: Date.parse(String(l['upstreamStartedAt'])) }));

  /** The starts of the pages under `prefix` as the origin saw them, on the epoch scale of the access line (its hits are `performance.now()`). */
  const seenUnder = (prefix: string): RequestStart[] => seenStarts(origin.hits, prefix).map((s) => ({ path: s.path, atMs: performance.timeOrigin + s.atMs }));

  before(async () => {
    origin = await startOrigin((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url === '/robots.txt' ? ROBOTS : `page ${req.url}`);
    });
    logs = captureLogs();
    proxy = await startTestProxy({ https: { mode: 'intercept' } }, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('plain HTTP: alternated spellings fetch robots.txt once (from the IPv4 origin), share its Crawl-delay queue, and keep their spelling in the access line', async () => {
    const urls = SPELLINGS.map((host, i) => `http://${host}:${origin.port}/plain/${i}`);
    const answers = await Promise.all(urls.map((url) => proxyRequest(proxy.proxyAddress.port, url, { headers: { 'user-agent': UA } })));
    assert.deepEqual(answers.map((a) => a.status), urls.map(() => 200));
    assert.equal(origin.robotsHits(), 1, 'one robots.txt fetch for every spelling');
    assertStartSpacing(sentUnder('/plain/'), seenUnder('/plain/'), DELAY_MS);

    const denied = await proxyRequest(proxy.proxyAddress.port, `http://[::ffff:127.0.0.1]:${origin.port}/private/x`, { headers: { 'user-agent': UA } });
    assert.equal(denied.status, 403);
    assert.equal(origin.robotsHits(), 1);
    const line = accessLines().find((l) => String(l['url']).endsWith('/private/x'))!;
    assert.equal(line['url'], `http://[::ffff:7f00:1]:${origin.port}/private/x`, 'the access line keeps the URL as the client spelt it');
    const decision = line['decision'] as { origin: string; snapshot: { url: string } };
    assert.equal(decision.origin, `http://127.0.0.1:${origin.port}`);
    assert.equal(decision.snapshot.url, `http://127.0.0.1:${origin.port}/robots.txt`);
    // The admin view keys the mapped spelling as the proxy does: the IPv4 origin's one snapshot.
    const view = await fetch(`${proxy.adminUrl}/robots?origin=${encodeURIComponent(`http://[::ffff:7f00:1]:${origin.port}`)}`);
    assert.equal(view.status, 200, 'the mapped spelling finds the snapshot held under the IPv4 origin');
    assert.equal(((await view.json()) as { origin: string }).origin, `http://127.0.0.1:${origin.port}`);
  });

  it('CONNECT: tunnels to alternated spellings of the origin share its robots snapshot and its Crawl-delay queue', async () => {
    const robotsBefore = origin.robotsHits();
    const answers = await Promise.all(
      SPELLINGS.map(async (host, i) => {
        const tunnel = await openConnect(proxy.proxyAddress.port, `${host}:${origin.port}`);
        assert.equal(tunnel.status, 200, `CONNECT ${host}`);
        tunnel.socket.write(`GET /tunnel/${i} HTTP/1.1\r\nHost: ${host}:${origin.port}\r\nUser-Agent: ${UA}\r\nConnection: close\r\n\r\n`);
        return readToEnd(tunnel.socket, tunnel.head);
      }),
    );
    for (const text of answers) assert.match(text, /^HTTP\/1\.1 200 /);
    await waitFor(() => sentUnder('/tunnel/').length === SPELLINGS.length, 'an access line per tunnelled request');
    assert.equal(origin.robotsHits(), robotsBefore, 'the snapshot fetched for the plain requests serves every tunnel');
    assertStartSpacing(sentUnder('/tunnel/'), seenUnder('/tunnel/'), DELAY_MS);
  });

  it('CONNECT: inside a tunnel to one spelling, a Host (or absolute-form URL) in another spelling of the origin is served, not 421', async () => {
    const pairs: Array<[string, string]> = [
      ['[::ffff:127.0.0.1]', 'Host: 127.0.0.1'],
      ['127.0.0.1', 'Host: [::ffff:7f00:1]'],
      ['[::ffff:7f00:1]', 'absolute: 127.0.0.1'],
      ['127.0.0.1', 'absolute: [::ffff:127.0.0.1]'],
    ];
    const answers = await Promise.all(
      pairs.map(async ([connectHost, spelt], i) => {
        const tunnel = await openConnect(proxy.proxyAddress.port, `${connectHost}:${origin.port}`);
        assert.equal(tunnel.status, 200, `CONNECT ${connectHost}`);
        const [form, host] = spelt.split(': ') as [string, string];
        const requestTarget = form === 'Host' ? `/cross/${i}` : `http://${host}:${origin.port}/cross/${i}`;
        tunnel.socket.write(`GET ${requestTarget} HTTP/1.1\r\nHost: ${host}:${origin.port}\r\nUser-Agent: ${UA}\r\nConnection: close\r\n\r\n`);
        return readToEnd(tunnel.socket, tunnel.head);
      }),
    );
    answers.forEach((text, i) => assert.match(text, /^HTTP\/1\.1 200 /, `${pairs[i]!.join(' / ')}: ${text.slice(0, 200)}`));
    // Another address is still another origin.
    const other = await openConnect(proxy.proxyAddress.port, `[::ffff:127.0.0.1]:${origin.port}`);
    other.socket.write(`GET /cross/other HTTP/1.1\r\nHost: 127.0.0.2:${origin.port}\r\nUser-Agent: ${UA}\r\nConnection: close\r\n\r\n`);
    assert.match(await readToEnd(other.socket, other.head), /^HTTP\/1\.1 421 /);
  });
});

describe('an IPv4-mapped IPv6 CONNECT target, intercepted over TLS, is the https origin of its IPv4 address', () => {
  let origin: TlsOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;
  /** The pages the origin served, with when it saw each (epoch ms). */
  const seen: RequestStart[] = [];

  before(async () => {
    const pki = await createTestPki();
    origin = await startTlsOrigin((req, res) => {
      if (req.url !== '/robots.txt') seen.push({ path: req.url ?? '', atMs: performance.timeOrigin + performance.now() });
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url === '/robots.txt' ? ROBOTS : `page ${req.url}`);
    }, { cert: pki.certPem, key: pki.keyPem });
    logs = captureLogs();
    proxy = await startTestProxy({ https: { mode: 'intercept' }, upstream: { caFile: writeTempFile('spellings-upstream-ca.pem', pki.caPem) } }, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('tunnels to alternated spellings fetch robots.txt once and share its Crawl-delay queue', async () => {
    const port = new URL(origin.origin).port;
    const answers = await Promise.all(
      SPELLINGS.map(async (host, i) => {
        const tunnel = await openConnect(proxy.proxyAddress.port, `${host}:${port}`);
        assert.equal(tunnel.status, 200, `CONNECT ${host}`);
        // The chain must be the proxy's CA; the leaf's name is not what this test is about.
        const socket = tls.connect({ socket: tunnel.socket, ca: proxy.ca!.certPem, checkServerIdentity: () => undefined, ALPNProtocols: ['http/1.1'] });
        await new Promise<void>((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
        const text = readToEnd(socket);
        socket.write(`GET /tls/${i} HTTP/1.1\r\nHost: ${host}:${port}\r\nUser-Agent: ${UA}\r\nConnection: close\r\n\r\n`);
        return text;
      }),
    );
    for (const text of answers) assert.match(text, /^HTTP\/1\.1 200 /);
    assert.deepEqual(origin.hits.filter((h) => h === '/robots.txt'), ['/robots.txt'], 'one robots.txt fetch for every spelling');
    await waitFor(() => logs.lines.filter((l) => l['msg'] === 'request' && String(l['url']).includes('/tls/')).length === SPELLINGS.length, 'an access line per request');
    const sent = logs.lines
      .filter((l) => l['msg'] === 'request' && String(l['url']).includes('/tls/'))
      .map((l) => ({ path: new URL(String(l['url'])).pathname, atMs: Date.parse(String(l['upstreamStartedAt'])) }));
    assertStartSpacing(sent, seen, DELAY_MS);
  });
});

describe('an operator policy rule for an IPv4 host holds for its IPv4-mapped spelling, and one written mapped for the IPv4 host', () => {
  let origin: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    origin = await startOrigin((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url === '/robots.txt' ? 'User-agent: *\nAllow: /\n' : `page ${req.url}`);
    });
    proxy = await startTestProxy({
      policy: {
        rules: [
          { name: 'no-admin', origin: '127.0.0.1', path: '/admin', action: 'deny' },
          // Written in the mapped spelling: requests are keyed by the IPv4 address, so these matched nothing before.
          { name: 'no-private', origin: '::ffff:127.0.0.1', path: '/private', action: 'deny' },
          { name: 'no-secret', origin: `http://[::ffff:7f00:1]:${origin.port}`, path: '/secret', action: 'deny' },
        ],
      },
    });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  for (const host of ['127.0.0.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]']) {
    it(`denies http://${host}:P/admin by the rule, and nothing reaches the origin`, async () => {
      const answer = await proxyRequest(proxy.proxyAddress.port, `http://${host}:${origin.port}/admin/x`, { headers: { 'user-agent': UA } });
      assert.equal(answer.decision, 'deny; reason=operator-policy; rule=no-admin');
      assert.ok(!origin.hits.some((h) => h.url.startsWith('/admin')));
    });
    it(`denies http://${host}:P/private and /secret by the rules written with the mapped spelling`, async () => {
      for (const [path, rule] of [['/private/x', 'no-private'], ['/secret/x', 'no-secret']] as const) {
        const answer = await proxyRequest(proxy.proxyAddress.port, `http://${host}:${origin.port}${path}`, { headers: { 'user-agent': UA } });
        assert.equal(answer.decision, `deny; reason=operator-policy; rule=${rule}`, `${host} ${path}`);
      }
      assert.ok(!origin.hits.some((h) => h.url.startsWith('/private') || h.url.startsWith('/secret')));
    });
  }
});
