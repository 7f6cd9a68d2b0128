/**
 * No request can take the proxy down (issue 7, item 0). The proxy runs as
 * `robots-proxy serve` in a child process, so a crash is an exit, not a test
 * runner's caught exception. fast-check drives random request lines, headers,
 * bodies and Upgrade requests through the listener and through CONNECT
 * tunnels (TLS with the certificate check off, plain HTTP, or junk bytes);
 * after every case the proxy must still be running and still answer a normal
 * request, and every answer it gave must be a well-formed HTTP response that
 * is not a 500 (bad input is answered 400/421/..., not by the error
 * boundary). `ROBOTS_PROXY_PROPERTY_RUNS=N` runs N cases per property.
 *
 * Generated hosts stay on loopback, `.invalid` (RFC 6761: never resolves) or
 * unparsable junk: the test never reaches beyond this machine.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import fc from 'fast-check';
import { siteHandler, startOrigin, type TestOrigin } from '../helpers/harness.js';
import { createTestPki, startTlsOrigin, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';
import { startProxyProcess, type ProxyProcess } from '../helpers/processes.js';

const RUNS = Number(process.env['ROBOTS_PROXY_PROPERTY_RUNS'] ?? 60);
/** Longest wait for a first byte of the answer, ms (the child's timeouts are shorter); then the client half-closes. */
const ANSWER_WAIT_MS = 4000;
/** Once the answer has started, it is complete when nothing more came for this long, ms. */
const QUIET_MS = 300;
/** Longest wait for the proxy to close after the client half-closed, ms. */
const CLOSE_WAIT_MS = 4000;

/** What the proxy sent back for one generated exchange. */
interface Exchange {
  /** Status of the CONNECT, when the case opened a tunnel. */
  connectStatus?: number;
  /** Everything read after the CONNECT answer (or from the start, without one). */
  text: string;
  /** True when the proxy neither answered nor closed in time (a stall, not a crash). */
  timedOut: boolean;
}

/** A generated case: optionally a CONNECT tunnel, then raw request bytes. */
interface Case {
  tunnel?: { authority: string; as: 'tls' | 'plain' };
  payload: string;
}

/**
 * Reads the proxy's answer on `socket`: until it closes, or until it went
 * quiet for {@link QUIET_MS} after answering. A client that half-closes at
 * once would have Node's server abort the request in flight, so the client
 * half-closes only when no answer came in {@link ANSWER_WAIT_MS} (a request
 * still waiting for its declared body, say); then the proxy must close.
 */
function readAnswer(socket: net.Socket, initial = ''): Promise<{ text: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    let text = initial;
    let timer: NodeJS.Timeout;
    const finish = (timedOut: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, timedOut });
    };
    const arm = (ms: number, onFire: () => void): void => {
      clearTimeout(timer);
      timer = setTimeout(onFire, ms);
    };
    arm(ANSWER_WAIT_MS, () => {
      socket.end();
      arm(CLOSE_WAIT_MS, () => finish(true));
    });
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      arm(QUIET_MS, () => finish(false));
    });
    socket.on('error', () => undefined);
    socket.once('close', () => finish(false));
    socket.resume();
  });
}

/**
 * Sends `CONNECT authority` on a fresh socket; resolves with the status, the
 * socket, the answer's head and any bytes after it.
 */
function connectTunnel(port: number, authority: string): Promise<{ status: number; socket: net.Socket; head: string; rest: string }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    let head = '';
    const onData = (d: Buffer): void => {
      head += d.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      socket.pause();
      resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0), socket, head: head.slice(0, end + 4), rest: head.slice(end + 4) });
    };
    socket.on('data', onData);
    socket.once('close', () => resolve({ status: 0, socket, head, rest: '' }));
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nUser-Agent: ExampleBot/1.0\r\n\r\n`);
  });
}

/** Runs one case against the proxy on `port`. Never rejects. */
async function runCase(port: number, c: Case): Promise<Exchange> {
  let socket: net.Socket;
  let connectStatus: number | undefined;
  if (c.tunnel) {
    const opened = await connectTunnel(port, c.tunnel.authority);
    connectStatus = opened.status;
    // A refused CONNECT: its whole answer is what gets checked.
    if (opened.status !== 200) return { connectStatus, ...(await readAnswer(opened.socket, opened.head + opened.rest)) };
    socket = opened.socket;
    if (c.tunnel.as === 'tls') {
      const hostname = c.tunnel.authority.replace(/:\d+$/, '');
      const tlsSocket = tls.connect({ socket, rejectUnauthorized: false, ...(net.isIP(hostname) || !/^[a-z0-9.-]+$/i.test(hostname) ? {} : { servername: hostname }) });
      const secured = await new Promise<boolean>((resolve) => {
        tlsSocket.once('secureConnect', () => resolve(true));
        tlsSocket.once('error', () => resolve(false));
        tlsSocket.once('close', () => resolve(false));
      });
      if (!secured) return { connectStatus, text: '', timedOut: false };
      socket = tlsSocket;
    } else {
      socket.resume();
    }
  } else {
    socket = net.connect(port, '127.0.0.1');
  }
  socket.on('error', () => undefined);
  const answer = readAnswer(socket);
  socket.write(Buffer.from(c.payload, 'latin1'));
  return { ...(connectStatus !== undefined ? { connectStatus } : {}), ...(await answer) };
}

describe('hostile requests cannot take the proxy down', () => {
  let origin: TestOrigin;
  let tlsOrigin: TlsOrigin;
  let proxy: ProxyProcess;
  let defaultProxy: ProxyProcess;
  let closedPort: number;
  let probes = 0;
  const probeAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });

  before(async () => {
    const pki = await createTestPki();
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private/\n' }));
    origin.server.on('upgrade', (_req, socket) => {
      socket.on('error', () => undefined);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      socket.on('data', (d: Buffer) => socket.write(`echo:${d.length}`));
      socket.on('end', () => socket.end());
    });
    tlsOrigin = await startTlsOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private/\n' }), { cert: pki.certPem, key: pki.keyPem });
    const placeholder = net.createServer();
    await new Promise<void>((resolve) => placeholder.listen(0, '127.0.0.1', resolve));
    closedPort = (placeholder.address() as AddressInfo).port;
    await new Promise<void>((resolve) => placeholder.close(() => resolve()));
    const caFile = writeTempFile('upstream-ca.pem', pki.caPem);
    // Short timeouts bound every stall; private networks allowed, since the origins are on loopback.
    proxy = await startProxyProcess(
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        'admin: { host: 127.0.0.1, port: 0 }',
        'stateDir: $STATE',
        'robots: { timeout: 2s }',
        'pacing: { maxWait: 2s }',
        `upstream: { allowPrivateNetworks: true, timeout: 3s, connectTimeout: 1s, caFile: ${JSON.stringify(caFile)} }`,
      ].join('\n'),
    );
    // The defaults, but for the ports and the state directory.
    defaultProxy = await startProxyProcess('listen: { port: 0 }\nadmin: { port: 0 }\nstateDir: $STATE\n');
  });

  after(async () => {
    probeAgent.destroy();
    await proxy?.close();
    await defaultProxy?.close();
    await origin?.close();
    await tlsOrigin?.close();
  });

  /** A normal request through the listener: the proxy still answers. */
  async function assertStillServing(p: ProxyProcess): Promise<void> {
    probes += 1;
    const path = `/page/probe-${probes}`;
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: p.proxyPort, path: `${origin.url}${path}`, agent: probeAgent, headers: { 'user-agent': 'ExampleBot/1.0' } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.setTimeout(10_000, () => req.destroy(new Error('probe timed out')));
      req.on('error', reject);
      req.end();
    });
    assert.equal(answer.status, 200, `probe ${path}: ${answer.body}`);
    assert.equal(answer.body, `page ${path}\n`);
  }

  /** Every answer is a well-formed HTTP response, and none is the error boundary's 500. */
  function assertWellFormed(c: Case, x: Exchange): void {
    const shown = JSON.stringify(c).slice(0, 600);
    if (x.text.length === 0) return;
    const status = /^HTTP\/1\.[01] (\d{3}) /.exec(x.text)?.[1];
    assert.ok(status, `not an HTTP response for ${shown}: ${JSON.stringify(x.text.slice(0, 200))}`);
    assert.notEqual(status, '500', `internal error for ${shown}: ${x.text.slice(0, 400)}`);
  }

  function assertNoInternalErrors(p: ProxyProcess): void {
    const internal = p.logs.filter((l) => l['event'] === 'internal-error');
    assert.deepEqual(internal, [], 'no request reached the error boundary');
  }

  // ---- generators -------------------------------------------------------
  // Weighted towards requests that parse, so that most cases reach the pipeline, the
  // Upgrade relay and the binding inside tunnels; junk keeps a share of its own.

  /** Hosts of the test origins, spelt several ways (trailing dot, case, IPv6, mapped IPv4). */
  const goodHosts = (): fc.Arbitrary<string> =>
    fc.constantFrom(
      `127.0.0.1:${origin.port}`,
      `localhost:${origin.port}`,
      `LOCALHOST.:${origin.port}`,
      `127.0.0.1:${tlsOrigin.port}`,
      `localhost:${tlsOrigin.port}`,
      `localhost.:${tlsOrigin.port}`,
    );
  /** Hosts that must be refused or fail cleanly: closed port, the proxy itself, its admin, names that never resolve, bad syntax. */
  const badHosts = (): fc.Arbitrary<string> =>
    fc.constantFrom(
      `[::1]:${origin.port}`,
      `[::ffff:127.0.0.1]:${origin.port}`,
      `127.0.0.1:${closedPort}`,
      `127.0.0.1:${proxy.proxyPort}`,
      `127.0.0.1:${proxy.adminPort}`,
      'crash.invalid',
      'crash.invalid:443',
      'crash.invalid.:8080',
      '[::1',
      '[',
      ':80',
      '.',
      '127.0.0.1:99999',
      'a b',
      '',
    );
  const hosts = (): fc.Arbitrary<string> => fc.oneof({ arbitrary: goodHosts(), weight: 3 }, { arbitrary: badHosts(), weight: 2 });
  const printable = (maxLength: number): fc.Arbitrary<string> => fc.string({ maxLength });
  const junk = (maxLength: number): fc.Arbitrary<string> => fc.oneof(printable(maxLength), fc.string({ unit: 'binary-ascii', maxLength }));
  const path = (): fc.Arbitrary<string> =>
    fc.oneof(
      { arbitrary: fc.constantFrom('/', '/page', '/private/x', '//private/x', '/robots.txt', '/ws', '/%2e%2e/private/x', '/a?b=c#f', '/%', '/%zz', '/a b'), weight: 3 },
      { arbitrary: fc.webPath(), weight: 2 },
      { arbitrary: printable(30).map((s) => `/${s}`), weight: 1 },
      { arbitrary: junk(30).map((s) => `/${s}`), weight: 1 },
    );
  const target = (): fc.Arbitrary<string> =>
    fc.oneof(
      { arbitrary: fc.tuple(fc.constantFrom('http://', 'https://'), hosts(), path()).map(([s, h, p]) => `${s}${h}${p}`), weight: 6 },
      { arbitrary: path(), weight: 3 },
      { arbitrary: fc.tuple(fc.constantFrom('HTTP://', 'ws://', 'ftp://', '', 'http:/', 'http://user:pw@'), hosts(), path()).map(([s, h, p]) => `${s}${h}${p}`), weight: 1 },
      { arbitrary: hosts(), weight: 1 },
      { arbitrary: fc.constantFrom('*', 'http://[::1/x', 'http://', 'https://[', 'http://[::1]:99999/', 'http://%00/', 'http://a..b/', 'http://xn--/'), weight: 1 },
      { arbitrary: junk(60), weight: 1 },
    );
  const headerName = (): fc.Arbitrary<string> =>
    fc.oneof(
      { arbitrary: fc.constantFrom('Host', 'Connection', 'Upgrade', 'Content-Length', 'Transfer-Encoding', 'Via', 'User-Agent', 'Accept', 'Expect', 'Proxy-Connection', 'Sec-WebSocket-Key', 'TE', 'X-Any'), weight: 8 },
      { arbitrary: junk(12), weight: 1 },
    );
  const headerValue = (): fc.Arbitrary<string> =>
    fc.oneof(
      { arbitrary: hosts(), weight: 2 },
      {
        arbitrary: fc.constantFrom('Upgrade', 'websocket', 'close', 'keep-alive', 'chunked', 'gzip, chunked', '0', '5', '-1', '99999999999999999999', 'application/json', 'text/html', 'ExampleBot/1.0', 'Mozilla/5.0 (compatible; ExampleBot/2.1)', '100-continue', '1.1 robots-proxy-abcdef', ''),
        weight: 4,
      },
      { arbitrary: printable(40), weight: 2 },
      { arbitrary: junk(40), weight: 1 },
    );
  /** Header lines: mostly known names with printable values; CR, LF and NUL in a few. */
  const headerLines = (): fc.Arbitrary<string[]> => fc.array(fc.tuple(headerName(), headerValue()).map(([n, v]) => `${n}: ${v}`), { maxLength: 5 });
  const compose = (line: string, host: string | undefined, upgrade: boolean, headers: string[], body: string | undefined, withLength: boolean, eol: string): string => {
    const lines = [line];
    if (host !== undefined) lines.push(`Host: ${host}`);
    if (upgrade) lines.push('Connection: Upgrade', 'Upgrade: websocket');
    lines.push(...headers);
    if (body !== undefined && withLength) lines.push(`Content-Length: ${Buffer.byteLength(body, 'latin1')}`);
    return lines.join(eol) + eol + eol + (body ?? '');
  };
  /** A request that parses: a known method, a target of any meaning, HTTP/1.1, framing that matches its body. */
  const parsingRequest = (): fc.Arbitrary<string> =>
    fc
      .tuple(
        fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'),
        target(),
        fc.option(hosts(), { nil: undefined, freq: 4 }),
        fc.boolean(),
        fc.array(
          fc.tuple(
            fc.constantFrom('Accept', 'User-Agent', 'Via', 'Expect', 'Proxy-Connection', 'Sec-WebSocket-Key', 'X-Any', 'Connection'),
            fc.oneof(fc.constantFrom('application/json', 'text/html', 'ExampleBot/1.0', 'Mozilla/5.0 (compatible; ExampleBot/2.1)', '1.1 robots-proxy-abcdef', 'keep-alive', 'close'), printable(30)),
          ).map(([n, v]) => `${n}: ${v}`),
          { maxLength: 4 },
        ),
        fc.option(printable(30), { nil: undefined, freq: 3 }),
      )
      .map(([method, t, host, upgrade, headers, body]) => compose(`${method} ${t} HTTP/1.1`, host, upgrade, headers, body, true, '\r\n'));
  /** Anything: odd methods and versions, junk lines, header injection, bodies without framing, bare LF. */
  const hostileRequest = (): fc.Arbitrary<string> =>
    fc
      .record({
        line: fc.oneof(
          {
            arbitrary: fc
              .tuple(
                fc.constantFrom('GET', 'HEAD', 'POST', 'CONNECT', 'TRACE', 'get', 'BREW', 'G ET', ''),
                target(),
                fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', 'HTTP/0.9', ''),
              )
              .map(([m, t, v]) => `${m} ${t} ${v}`),
            weight: 3,
          },
          { arbitrary: junk(80), weight: 1 },
        ),
        host: fc.option(hosts(), { nil: undefined, freq: 3 }),
        upgrade: fc.boolean(),
        headers: headerLines(),
        body: fc.option(junk(30), { nil: undefined, freq: 2 }),
        withLength: fc.boolean(),
        eol: fc.constantFrom('\r\n', '\r\n', '\n'),
      })
      .map(({ line, host, upgrade, headers, body, withLength, eol }) => compose(line, host, upgrade, headers, body, withLength, eol));
  const request = (): fc.Arbitrary<string> => fc.oneof({ arbitrary: parsingRequest(), weight: 3 }, { arbitrary: hostileRequest(), weight: 2 });

  // ---- properties -------------------------------------------------------

  it('the issue\'s crash: CONNECT crash.invalid:443, TLS, then an Upgrade to "http://[::1/x" gets 400 (default config)', async () => {
    const issueCase: Case = {
      tunnel: { authority: 'crash.invalid:443', as: 'tls' },
      payload: 'GET http://[::1/x HTTP/1.1\r\nHost: crash.invalid\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
    };
    const x = await runCase(defaultProxy.proxyPort, issueCase);
    assert.equal(x.connectStatus, 200);
    assert.match(x.text, /^HTTP\/1\.1 400 /);
    assert.match(x.text, /x-robots-proxy-decision: deny; reason=bad-request/i);
    // The proxy is alive: its admin listener and its listener both answer.
    assert.equal((await fetch(`http://127.0.0.1:${defaultProxy.adminPort}/healthz`)).status, 200);
    const again = await runCase(defaultProxy.proxyPort, issueCase);
    assert.match(again.text, /^HTTP\/1\.1 400 /);
    assertNoInternalErrors(defaultProxy);
  });

  it(`random requests on the listener (${RUNS} cases): well-formed answers, still serving after each`, async () => {
    let stalls = 0;
    await fc.assert(
      fc.asyncProperty(request(), async (payload) => {
        const c: Case = { payload };
        const x = await runCase(proxy.proxyPort, c);
        if (x.timedOut) stalls += 1;
        assertWellFormed(c, x);
        await assertStillServing(proxy);
      }),
      { numRuns: RUNS },
    );
    assertNoInternalErrors(proxy);
    assert.ok(stalls < RUNS / 4, `${stalls} of ${RUNS} exchanges neither completed nor closed in time`);
  });

  it(`random requests and Upgrades inside CONNECT tunnels (${RUNS} cases): well-formed answers, still serving after each`, async () => {
    const tunnelCase = fc.record({
      tunnel: fc.record({
        authority: fc.oneof({ arbitrary: goodHosts(), weight: 6 }, { arbitrary: badHosts(), weight: 2 }, { arbitrary: junk(30), weight: 1 }),
        as: fc.constantFrom('tls', 'tls', 'plain') as fc.Arbitrary<'tls' | 'plain'>,
      }),
      payload: fc.oneof(request(), fc.tuple(request(), request()).map(([a, b]) => a + b)),
    });
    let opened = 0;
    await fc.assert(
      fc.asyncProperty(tunnelCase, async (c) => {
        const x = await runCase(proxy.proxyPort, c);
        if (x.connectStatus === 200) opened += 1;
        assertWellFormed(c, x);
        await assertStillServing(proxy);
      }),
      {
        numRuns: RUNS,
        examples: [[{ tunnel: { authority: 'crash.invalid:443', as: 'tls' }, payload: 'GET http://[::1/x HTTP/1.1\r\nHost: crash.invalid\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n' }]],
      },
    );
    assertNoInternalErrors(proxy);
    assert.ok(opened > 0, 'some generated tunnels were opened (the property exercised the inside of tunnels)');
  });

  after(() => {
    // Last: the child is still the one that started, it never exited.
    for (const p of [proxy, defaultProxy]) if (p) assert.equal(p.logs.some((l) => l['event'] === 'listening'), true);
  });
});
