import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request, Agent, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { AdminServer, type AdminServerOptions } from '../../src/admin/admin-server.js';
import { createLogger } from '../../src/audit/logger.js';
import { METRIC_NAME, ProxyMetrics } from '../../src/audit/metrics.js';
import { InvalidTargetError } from '../../src/errors.js';
import type { Decision } from '../../src/policy/decision.js';
import { describeRobotsSnapshot } from '../../src/admin/robots-view.js';
import { parseRobotsTxt } from '../../src/robots/index.js';
import type { ReloadReport } from '../../src/lifecycle/reload.js';
import { CapturedLines, makeDecision, makeEntry } from '../audit/factories.js';

const CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One real HTTP request to 127.0.0.1:port; a fresh connection unless an agent is given. */
function send(port: number, path: string, init: { method?: string; body?: string; agent?: Agent } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: init.method ?? 'GET', agent: init.agent ?? false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

function json(reply: Reply): Record<string, unknown> {
  assert.match(String(reply.headers['content-type']), /^application\/json/);
  return JSON.parse(reply.body) as Record<string, unknown>;
}

/** Starts an AdminServer on 127.0.0.1:0 with the given collaborators. */
async function start(options: Partial<AdminServerOptions> = {}): Promise<{ server: AdminServer; port: number; log: CapturedLines }> {
  const log = new CapturedLines();
  const server = new AdminServer({
    metrics: new ProxyMetrics({}, { collectDefaultMetrics: false }),
    logger: createLogger({ level: 'warn', destination: log }),
    ...options,
  });
  const address = await server.listen('127.0.0.1', 0);
  assert.equal(address.address, '127.0.0.1');
  return { server, port: address.port, log };
}

describe('AdminServer with every collaborator', () => {
  const metrics = new ProxyMetrics({ pacing: () => ({ queued: 4, inFlight: 1 }) }, { collectDefaultMetrics: false });
  const explained: Array<{ url: string; userAgent: string }> = [];
  const decision: Decision = makeDecision({ origin: 'https://example.test', path: '/private/x' });
  let server: AdminServer;
  let port: number;

  before(async () => {
    ({ server, port } = await start({
      metrics,
      explain: async (url, userAgent) => {
        explained.push({ url, userAgent });
        if (url.includes('invalid-target')) throw new InvalidTargetError('bad host');
        if (url.includes('explode')) throw new Error('boom');
        return decision;
      },
      caCertPem: () => CA_PEM,
      health: () => ({ ok: true, details: { robotsCacheOrigins: 2 } }),
    }));
  });
  after(() => server.close());

  it('GET /healthz answers 200 {status: ok} with the details', async () => {
    const reply = await send(port, '/healthz');
    assert.equal(reply.status, 200);
    assert.deepEqual(json(reply), { status: 'ok', details: { robotsCacheOrigins: 2 } });
    assert.equal(reply.headers['cache-control'], 'no-store');
  });

  it('HEAD /healthz answers 200 without a body', async () => {
    const reply = await send(port, '/healthz', { method: 'HEAD' });
    assert.equal(reply.status, 200);
    assert.equal(reply.body, '');
  });

  it('GET /metrics answers Prometheus text with the observed counters', async () => {
    metrics.observe(makeEntry());
    const reply = await send(port, '/metrics');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-type'], metrics.contentType);
    assert.match(reply.body, new RegExp(`^${METRIC_NAME.requests}\\{verdict="deny",reason="rule-disallow"\\} 1$`, 'm'));
    assert.match(reply.body, new RegExp(`^${METRIC_NAME.pacingQueued} 4$`, 'm'));
  });

  it('GET /explain answers the Decision for the url and ua asked', async () => {
    const url = 'https://example.test/private/x?y=1';
    const ua = 'Mozilla/5.0 (compatible; GPTBot/1.2)';
    const reply = await send(port, `/explain?url=${encodeURIComponent(url)}&ua=${encodeURIComponent(ua)}`);
    assert.equal(reply.status, 200);
    assert.deepEqual(json(reply), JSON.parse(JSON.stringify(decision)));
    assert.deepEqual(explained.at(-1), { url, userAgent: ua });
  });

  it('GET /explain without ua asks for an absent User-Agent', async () => {
    const reply = await send(port, `/explain?url=${encodeURIComponent('http://example.test/')}`);
    assert.equal(reply.status, 200);
    assert.deepEqual(explained.at(-1), { url: 'http://example.test/', userAgent: '' });
  });

  it('GET /explain answers 400 unknown-parameter for a parameter it does not read (agent= for ua=), without calling explain', async () => {
    const calls = explained.length;
    const reply = await send(port, `/explain?url=${encodeURIComponent('http://example.test/')}&agent=ExampleBot`);
    assert.equal(reply.status, 400);
    const body = JSON.parse(reply.body) as { error: string; message: string };
    assert.equal(body.error, 'unknown-parameter');
    assert.match(body.message, /"agent".*ua=/);
    assert.equal(explained.length, calls);
  });

  it('GET /explain answers 400 for a missing or bad url, without calling explain', async () => {
    const calls = explained.length;
    for (const [query, code] of [
      ['', 'missing-url'],
      ['?ua=GPTBot', 'missing-url'],
      ['?url=', 'missing-url'],
      ['?url=not%20a%20url', 'bad-url'],
      ['?url=%2Frelative%2Fpath', 'bad-url'],
      ['?url=ftp%3A%2F%2Fexample.test%2F', 'bad-url'],
    ] as const) {
      const reply = await send(port, `/explain${query}`);
      assert.equal(reply.status, 400, query);
      assert.equal(json(reply).error, code, query);
    }
    assert.equal(explained.length, calls);
  });

  it('GET /explain maps an invalid target to 400 and any other failure to 500', async () => {
    const invalid = await send(port, `/explain?url=${encodeURIComponent('http://invalid-target.test/')}`);
    assert.equal(invalid.status, 400);
    assert.equal(json(invalid).error, 'bad-url');
    const failed = await send(port, `/explain?url=${encodeURIComponent('http://explode.test/')}`);
    assert.equal(failed.status, 500);
    assert.equal(json(failed).error, 'explain-failed');
  });

  it('GET /ca.pem answers the CA certificate as application/x-pem-file', async () => {
    const reply = await send(port, '/ca.pem');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-type'], 'application/x-pem-file');
    assert.equal(reply.body, CA_PEM);
  });

  it('answers 404 for unknown routes', async () => {
    for (const path of ['/', '/nope', '/healthz/extra', '/metrics.txt']) {
      const reply = await send(port, path);
      assert.equal(reply.status, 404, path);
      assert.equal(json(reply).error, 'not-found', path);
    }
  });

  it('answers 405 with Allow for other methods, ignoring bodies and closing the connection', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
      const reply = await send(port, '/healthz', { method });
      assert.equal(reply.status, 405, method);
      assert.equal(reply.headers.allow, 'GET, HEAD');
      assert.equal(json(reply).error, 'method-not-allowed');
    }
    const withBody = await send(port, '/metrics', { method: 'POST', body: 'x'.repeat(100_000) });
    assert.equal(withBody.status, 405);
    assert.equal(withBody.headers.connection, 'close');
  });

  it('answers 414 for a request target past 8 KiB', async () => {
    const reply = await send(port, `/explain?url=${'a'.repeat(9000)}`);
    assert.equal(reply.status, 414);
    assert.equal(json(reply).error, 'uri-too-long');
    const justUnder = await send(port, `/nope?${'a'.repeat(8000)}`);
    assert.equal(justUnder.status, 404);
  });
});

describe('AdminServer GET /robots?origin=', () => {
  const info = { url: 'https://example.test/robots.txt', state: 'ok' as const, status: 200, error: undefined, fetchedAtMs: 1_700_000_000_000, expiresAtMs: 1_700_086_400_000, bytes: 60, truncated: false };
  const robots = parseRobotsTxt('User-agent: *\nCrawl-delay: inf\nDisallow: /private\nFoo: bar\n');
  const asked: string[] = [];
  let server: AdminServer;
  let port: number;

  before(async () => {
    ({ server, port } = await start({
      robots: async (origin) => {
        asked.push(origin);
        if (origin === 'https://boom.test') throw new Error('boom');
        return origin === 'https://example.test' ? describeRobotsSnapshot(origin, { info, robots, lastFailure: null }, info.expiresAtMs) : undefined;
      },
    }));
  });
  after(() => server.close());

  it('answers the snapshot view of the origin, normalised from any URL of it', async () => {
    const reply = await send(port, `/robots?origin=${encodeURIComponent('HTTPS://Example.TEST:443/some/path?q')}`);
    assert.equal(reply.status, 200);
    const body = json(reply);
    assert.equal(asked.at(-1), 'https://example.test');
    assert.equal(body['origin'], 'https://example.test');
    assert.deepEqual(body['crawlDelays'], { '*': 86_400 });
    assert.deepEqual((body['warnings'] as Array<{ code: string }>).map((w) => w.code), ['crawl-delay-clamped', 'unknown-directive']);
    assert.deepEqual(body['snapshot'], JSON.parse(JSON.stringify(info)));
  });

  it('answers 400 unknown-parameter for a parameter it does not read, as /explain does, naming it and origin=, without asking the cache', async () => {
    const calls = asked.length;
    for (const [query, name] of [
      [`?origin=${encodeURIComponent('https://example.test')}&ua=GPTBot`, 'ua'],
      [`?orgin=${encodeURIComponent('https://example.test')}`, 'orgin'],
    ] as const) {
      const reply = await send(port, `/robots${query}`);
      assert.equal(reply.status, 400, query);
      const body = json(reply);
      assert.equal(body.error, 'unknown-parameter', query);
      assert.equal(body.message, `unknown parameter "${name}": /robots takes origin= only`);
    }
    assert.equal(asked.length, calls, 'a refused request never reaches the cache');
  });

  it('keys an IPv4-mapped IPv6 origin as the proxy does: by its IPv4 address', async () => {
    const reply = await send(port, `/robots?origin=${encodeURIComponent('http://[::ffff:127.0.0.1]:8080/x')}`);
    assert.equal(asked.at(-1), 'http://127.0.0.1:8080');
    assert.equal(reply.status, 404);
    assert.match(json(reply).message as string, /no robots snapshot for http:\/\/127\.0\.0\.1:8080 yet/);
  });

  it('answers 404 not-cached for an origin never fetched, 400 without or with a bad origin', async () => {
    const missing = await send(port, `/robots?origin=${encodeURIComponent('http://other.test')}`);
    assert.equal(missing.status, 404);
    assert.equal(json(missing).error, 'not-cached');
    assert.match(String(json(missing).message), /\/explain\?url=http:\/\/other\.test\//);
    const calls = asked.length;
    for (const [query, code] of [['', 'missing-origin'], ['?origin=', 'missing-origin'], ['?origin=example.test', 'bad-origin'], ['?origin=ftp%3A%2F%2Fexample.test', 'bad-origin']] as const) {
      const reply = await send(port, `/robots${query}`);
      assert.equal(reply.status, 400, query);
      assert.equal(json(reply).error, code, query);
    }
    assert.equal(asked.length, calls, 'a bad request never reaches the cache');
  });

  it('answers 500 when the view fails, and 404 robots-unavailable without one', async () => {
    const failed = await send(port, `/robots?origin=${encodeURIComponent('https://boom.test')}`);
    assert.equal(failed.status, 500);
    const { server: bare, port: barePort } = await start();
    try {
      const reply = await send(barePort, `/robots?origin=${encodeURIComponent('https://example.test')}`);
      assert.equal(reply.status, 404);
      assert.equal(json(reply).error, 'robots-unavailable');
    } finally {
      await bare.close();
    }
  });
});

describe('AdminServer with missing or failing collaborators', () => {
  it('answers 404 for /ca.pem and /explain when there is no CA and no explain', async () => {
    const { server, port } = await start({ caCertPem: () => undefined });
    try {
      const ca = await send(port, '/ca.pem');
      assert.equal(ca.status, 404);
      assert.equal(json(ca).error, 'not-found');
      const explain = await send(port, `/explain?url=${encodeURIComponent('http://example.test/')}`);
      assert.equal(explain.status, 404);
      assert.equal(json(explain).error, 'explain-unavailable');
      const health = await send(port, '/healthz');
      assert.equal(health.status, 200, 'no health callback means healthy');
      assert.deepEqual(json(health), { status: 'ok' });
    } finally {
      await server.close();
    }
  });

  it('answers 503 when unhealthy or when the health check throws', async () => {
    let mode: 'down' | 'throw' = 'down';
    const { server, port, log } = await start({
      health: () => {
        if (mode === 'throw') throw new Error('health exploded');
        return { ok: false, details: { reason: 'robots cache closed' } };
      },
    });
    try {
      const down = await send(port, '/healthz');
      assert.equal(down.status, 503);
      assert.deepEqual(json(down), { status: 'unavailable', details: { reason: 'robots cache closed' } });
      mode = 'throw';
      const thrown = await send(port, '/healthz');
      assert.equal(thrown.status, 503);
      assert.equal(json(thrown).status, 'unavailable');
      assert.equal(log.records().at(-1)?.level, 'warn');
    } finally {
      await server.close();
    }
  });

  it('answers 504 when explain takes longer than explainTimeoutMs', async () => {
    const { server, port } = await start({ explain: () => new Promise<Decision>(() => undefined), explainTimeoutMs: 50 });
    try {
      const reply = await send(port, `/explain?url=${encodeURIComponent('http://example.test/')}`);
      assert.equal(reply.status, 504);
      assert.equal(json(reply).error, 'explain-timeout');
    } finally {
      await server.close();
    }
  });

  it('answers 500 when metrics cannot be rendered', async () => {
    const metrics = new ProxyMetrics(
      {
        robotsCache: () => {
          throw new Error('stats exploded');
        },
      },
      { collectDefaultMetrics: false },
    );
    const { server, port, log } = await start({ metrics });
    try {
      const reply = await send(port, '/metrics');
      assert.equal(reply.status, 500);
      assert.equal(json(reply).error, 'metrics-failed');
      assert.equal(log.records().at(-1)?.level, 'error');
    } finally {
      await server.close();
    }
  });
});

describe('AdminServer lifecycle', () => {
  /** Counts active handles of one kind (e.g. TCPServerWrap, TCPSocketWrap). */
  function countResources(kind: string): number {
    return process.getActiveResourcesInfo().filter((r) => r === kind).length;
  }

  async function waitFor(predicate: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!predicate()) {
      assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('close() ends idle keep-alive connections and releases the listening socket', async () => {
    // Every server of the suites above is closed; wait until their handles are gone.
    await waitFor(() => countResources('TCPServerWrap') === 0, 'earlier listeners to be released');
    const { server, port } = await start();
    const agent = new Agent({ keepAlive: true });
    try {
      let isSocketClosed = false;
      const status = await new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/healthz', agent }, (res) => {
          res.socket.once('close', () => {
            isSocketClosed = true;
          });
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(status, 200);
      assert.equal(countResources('TCPServerWrap'), 1);
      assert.equal(isSocketClosed, false, 'the keep-alive connection stays open until close()');
      await server.close();
      // Polled: the agent unrefs its idle socket, so only a timer keeps this test's loop awake.
      await waitFor(() => isSocketClosed, 'the server to end the idle keep-alive connection');
      await waitFor(() => countResources('TCPServerWrap') === 0, 'the listener to be released');
      await assert.rejects(send(port, '/healthz'), { code: 'ECONNREFUSED' });
    } finally {
      agent.destroy();
      await server.close();
    }
  });

  it('close() also ends a connection whose request is still being answered', { timeout: 20_000 }, async () => {
    let markArrived: () => void = () => undefined;
    const arrived = new Promise<void>((resolve) => {
      markArrived = resolve;
    });
    const { server, port } = await start({
      explain: () => {
        markArrived();
        return new Promise<Decision>(() => undefined); // never answers
      },
    });
    try {
      const pending = send(port, `/explain?url=${encodeURIComponent('http://example.test/')}`);
      await arrived;
      await server.close(); // would wait forever if busy connections were left open
      await assert.rejects(pending, { code: 'ECONNRESET' });
    } finally {
      await server.close();
    }
  });

  it('listen() rejects with EADDRINUSE on a taken port, and close() before listen resolves', async () => {
    const { server, port } = await start();
    const second = new AdminServer({ metrics: new ProxyMetrics({}, { collectDefaultMetrics: false }), logger: createLogger({ level: 'silent' }) });
    try {
      await assert.rejects(second.listen('127.0.0.1', port), { code: 'EADDRINUSE' });
      await second.close();
    } finally {
      await server.close();
    }
  });
});

describe('AdminServer connection cap (maxConnections)', () => {
  it('closes a connection over the cap at once and reports it; the next one after a close is served', async () => {
    const events: Array<Record<string, unknown>> = [];
    const { server, port } = await start({ maxConnections: 2, onLimit: (event) => events.push(event as unknown as Record<string, unknown>) });
    const open = (): Promise<Socket> =>
      new Promise((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => resolve(socket));
        socket.on('error', reject);
      });
    const held = [await open(), await open()];
    const over = await open();
    const closedWith = await new Promise<string>((resolve) => {
      let text = '';
      over.setEncoding('utf8');
      over.on('data', (d: string) => (text += d));
      over.on('error', () => undefined);
      over.on('close', () => resolve(text));
      over.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n');
    });
    assert.equal(closedWith, '', 'closed without an answer');
    assert.equal(events.length, 1);
    assert.equal(events[0]!['kind'], 'connection-refused');
    assert.equal(events[0]!['limit'], 'admin-max-connections');
    assert.equal(events[0]!['cap'], 2);
    held[0]!.destroy();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal((await send(port, '/healthz')).status, 200);
    held[1]!.destroy();
    await server.close();
  });
});

describe('AdminServer POST /reload', () => {
  it('answers the reload report: 200 when applied, 422 for an invalid file, 503 while stopping', async () => {
    const reports: ReloadReport[] = [
      { ok: true, file: '/etc/rp.yaml', applied: ['pacing.minDelay'], restartRequired: ['listen.port'] },
      { ok: false, error: 'config-invalid', file: '/etc/rp.yaml', message: '/etc/rp.yaml:3:3: unknown key "maxWiat"', key: 'pacing.maxWiat', line: 3, column: 3 },
      { ok: false, error: 'shutting-down', file: '/etc/rp.yaml', message: 'the proxy is shutting down' },
    ];
    let calls = 0;
    const { server, port } = await start({ reload: () => reports[calls++] as ReloadReport });
    try {
      const applied = await send(port, '/reload', { method: 'POST' });
      assert.equal(applied.status, 200);
      assert.deepEqual(json(applied), { status: 'reloaded', file: '/etc/rp.yaml', applied: ['pacing.minDelay'], restartRequired: ['listen.port'] });
      const invalid = await send(port, '/reload', { method: 'POST' });
      assert.equal(invalid.status, 422);
      assert.deepEqual(json(invalid), {
        error: 'config-invalid',
        message: '/etc/rp.yaml:3:3: unknown key "maxWiat"',
        file: '/etc/rp.yaml',
        key: 'pacing.maxWiat',
        line: 3,
        column: 3,
      });
      const stopping = await send(port, '/reload', { method: 'POST' });
      assert.equal(stopping.status, 503);
      assert.equal(json(stopping).error, 'shutting-down');
      assert.equal(calls, 3);
    } finally {
      await server.close();
    }
  });

  it('is POST only, refuses a request from a web page, and other routes stay GET/HEAD only', async () => {
    let calls = 0;
    const { server, port } = await start({ reload: () => (calls++, { ok: true, file: 'f', applied: [], restartRequired: [] }) });
    try {
      for (const method of ['GET', 'HEAD', 'PUT']) {
        const reply = await send(port, '/reload', { method });
        assert.equal(reply.status, 405, method);
        assert.equal(reply.headers.allow, 'POST');
      }
      const fromPage = await new Promise<Reply>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/reload', method: 'POST', headers: { origin: 'http://attacker.example' }, agent: false }, (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(fromPage.status, 403);
      assert.equal(json(fromPage).error, 'cross-origin');
      assert.equal(calls, 0, 'nothing was reloaded');
      assert.equal((await send(port, '/healthz', { method: 'POST' })).status, 405);
    } finally {
      await server.close();
    }
  });

  it('answers 404 reload-unavailable when the proxy was not started from a file', async () => {
    const { server, port } = await start();
    try {
      const reply = await send(port, '/reload', { method: 'POST' });
      assert.equal(reply.status, 404);
      assert.equal(json(reply).error, 'reload-unavailable');
    } finally {
      await server.close();
    }
  });
});
