/**
 * Slow clients at a Crawl-delay origin (issue 7, "a slot hog"): a client that
 * trickles its request body, or stops reading a large response, must not hold
 * the origin's start slot past `pacing.maxSlotHold`; other clients' requests
 * keep their crawl-delay spacing (asserted as sent, from the access log, and
 * by completion while the hog is still stalled, never as a rate). A body that
 * stalls past `clients.requestBodyTimeout` gets 408; a response left unread
 * past `clients.responseWriteTimeout` is cut. Real origin, real raw sockets,
 * real TCP backpressure.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { captureLogs, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest, waitFor } from '../helpers/proxy-client.js';
import { METRIC_NAME } from '../../src/audit/metrics.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const DELAY_MS = 200;
/** Large enough to fill every socket buffer between the origin and a client that does not read. */
const BIG_BYTES = 32 * 1024 * 1024;

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/** What the origin saw of the exchanges that carry a body or a big response. */
interface OriginLog {
  uploads: Array<{ bytes: number; complete: boolean }>;
  bigResponses: Array<{ finished: boolean; aborted: boolean }>;
}

/** Crawl-delay 0.2 for everyone; /upload counts the body; /big streams 32 MiB; anything else is a small page. */
function startSite(log: OriginLog): Promise<TestOrigin> {
  const big = Buffer.alloc(64 * 1024, 0x61);
  return startOrigin((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`User-agent: *\nCrawl-delay: ${DELAY_MS / 1000}\nAllow: /\n`);
      return;
    }
    if (req.url === '/upload') {
      const upload = { bytes: 0, complete: false };
      log.uploads.push(upload);
      req.on('data', (d: Buffer) => (upload.bytes += d.length));
      req.on('end', () => {
        upload.complete = true;
        res.writeHead(200, { 'content-type': 'text/plain' }).end(`received ${upload.bytes}\n`);
      });
      req.on('error', () => undefined);
      return;
    }
    if (req.url === '/big') {
      const state = { finished: false, aborted: false };
      log.bigResponses.push(state);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(BIG_BYTES) });
      let sent = 0;
      const pump = (): void => {
        while (sent < BIG_BYTES) {
          sent += big.length;
          if (!res.write(big)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('finish', () => (state.finished = true));
      res.on('close', () => (state.aborted = !state.finished));
      pump();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`page ${req.url}\n`);
  });
}

/** A raw client socket that records what it reads (while it reads). */
function rawClient(port: number): Promise<{ socket: net.Socket; bytes: () => number; text: () => string; ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let bytes = 0;
    socket.on('data', (d: Buffer) => {
      bytes += d.length;
      if (chunks.length < 4) chunks.push(d); // the head and a little body are enough to read
    });
    socket.on('error', () => undefined);
    const ended = new Promise<void>((r) => socket.once('close', () => r()));
    socket.once('connect', () => resolve({ socket, bytes: () => bytes, text: () => Buffer.concat(chunks).toString('latin1'), ended }));
    socket.once('error', reject);
  });
}

/** Access lines (msg "request") for `path` at the origin. */
function accessLines(logs: LogCapture, origin: TestOrigin, path?: string): Array<Record<string, unknown>> {
  return logs.lines.filter((l) => l['msg'] === 'request' && (path === undefined ? String(l['url']).startsWith(origin.url) : l['url'] === `${origin.url}${path}`));
}

/** Upstream starts as sent by the proxy (access log, ms precision), sorted, ms since the epoch. */
function sentStarts(logs: LogCapture, origin: TestOrigin): number[] {
  return accessLines(logs, origin)
    .map((l) => l['upstreamStartedAt'])
    .filter((v): v is string => typeof v === 'string')
    .map((iso) => Date.parse(iso))
    .sort((a, b) => a - b);
}

/** Asserts no two upstream starts closer than the crawl-delay (1 ms of rounding). */
function assertSpacedByDelay(starts: number[]): void {
  const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
  assert.ok(gaps.every((g) => g >= DELAY_MS - 1), `gaps as sent: ${gaps.join(' ')}`);
}

async function metric(proxy: Proxy, line: RegExp): Promise<number> {
  const match = line.exec(await proxy.metrics.render());
  return match ? Number(match[1]) : 0;
}

/**
 * Five requests from other clients, sent together; resolves when all are answered. Rejects if
 * they are not all answered within 20 s (a liveness bound, not a rate: paced, they need about 2 s;
 * held up by the hog, they would wait as long as the test lets it stall).
 */
async function otherClients(proxy: Proxy, origin: TestOrigin, tag: string): Promise<number[]> {
  const answers = Promise.all(
    [1, 2, 3, 4, 5].map((i) => proxyRequest(proxy.proxyAddress.port, `${origin.url}/page/${tag}-${i}`, { headers: { 'user-agent': `OtherBot/${i}.0` } })),
  );
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('the other clients were held up by the slow client')), 20_000);
  });
  try {
    return (await Promise.race([answers, deadline])).map((a) => a.status);
  } finally {
    clearTimeout(timer);
  }
}

/** The site, a proxy with `config` in front of it (logs captured), and robots.txt already fetched. */
async function startScenario(log: OriginLog, config: Record<string, unknown>): Promise<{ origin: TestOrigin; proxy: Proxy; logs: LogCapture }> {
  const origin = await startSite(log);
  const logs = captureLogs();
  const proxy = await startTestProxy({ https: { mode: 'tunnel' }, ...config }, { logger: logs.logger });
  // robots.txt fetched once, outside the measured exchanges.
  assert.equal((await proxyRequest(proxy.proxyAddress.port, `${origin.url}/warm-up`, { headers: { 'user-agent': UA } })).status, 200);
  return { origin, proxy, logs };
}

describe('the slot hold bound (pacing.maxSlotHold) at a Crawl-delay origin', () => {
  const HOLD_MS = 1000;
  const log: OriginLog = { uploads: [], bigResponses: [] };
  let origin: TestOrigin;
  let proxy: Proxy;
  let logs: LogCapture;

  before(async () => {
    ({ origin, proxy, logs } = await startScenario(log, {
      pacing: { maxSlotHold: `${HOLD_MS}ms`, maxWait: '60s' },
      // The idle timeouts are long here: only the hold bound can free the slot.
      clients: { requestBodyTimeout: '30s', responseWriteTimeout: '30s' },
    }));
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('a client trickling its upload is cut loose from the slot at the bound; others keep the crawl-delay; the upload completes', async () => {
    const hog = await rawClient(proxy.proxyAddress.port);
    hog.socket.write(`POST ${origin.url}/upload HTTP/1.1\r\nhost: 127.0.0.1:${origin.port}\r\nuser-agent: ${UA}\r\ntransfer-encoding: chunked\r\n\r\n`);
    let trickled = 0;
    const trickle = setInterval(() => {
      hog.socket.write('1\r\nx\r\n');
      trickled += 1;
    }, 100);
    try {
      await waitFor(() => log.uploads.length === 1 && log.uploads[0]!.bytes > 0, 'the upload under way at the origin');
      const statuses = await otherClients(proxy, origin, 'upload');
      assert.deepEqual(statuses, [200, 200, 200, 200, 200]);
      assert.equal(log.uploads[0]!.complete, false, 'the other clients were served while the upload was still trickling');
    } finally {
      clearInterval(trickle);
    }
    hog.socket.write('0\r\n\r\n');
    await waitFor(() => hog.text().includes('received'), 'the upload answered');
    assert.match(hog.text(), /^HTTP\/1\.1 200 /);
    assert.match(hog.text(), new RegExp(`received ${trickled}\\n`), 'every trickled byte reached the origin');
    hog.socket.destroy();

    const held = logs.lines.filter((l) => l['event'] === 'slot-hold-exceeded');
    assert.equal(held.length, 1);
    assert.equal(held[0]!['waitingOn'], 'client-body');
    assert.equal(held[0]!['origin'], origin.url);
    assert.ok(Number(held[0]!['heldMs']) >= HOLD_MS);
    assert.equal(await metric(proxy, /robots_proxy_pacing_slot_hold_exceeded_total\{waiting_on="client-body"\} (\d+)/), 1);

    await waitFor(() => accessLines(logs, origin, '/upload').length === 1, 'the upload access line');
    const starts = sentStarts(logs, origin);
    assertSpacedByDelay(starts);
    // The bound runs from the upload's slot grant (its arrival plus its queue wait), not from when
    // its bytes left: on a busy machine the dispatch can trail the grant by a few ms.
    const upload = accessLines(logs, origin, '/upload')[0]!;
    const uploadGranted = Date.parse(String(upload['startedAt'])) + Number(upload['queueWaitMs']);
    const firstOther = Math.min(...accessLines(logs, origin).filter((l) => String(l['url']).includes('/page/upload-')).map((l) => Date.parse(String(l['upstreamStartedAt']))));
    // 2 ms: both times are logged at millisecond precision.
    assert.ok(firstOther - uploadGranted >= HOLD_MS - 2, `the others waited for the bound (${firstOther - uploadGranted} ms), not less`);
  });

  it('a client that stops reading a large response is cut loose from the slot at the bound; it can still read the whole body later', async () => {
    const before = logs.lines.filter((l) => l['event'] === 'slot-hold-exceeded').length;
    const hog = await rawClient(proxy.proxyAddress.port);
    hog.socket.write(`GET ${origin.url}/big HTTP/1.1\r\nhost: 127.0.0.1:${origin.port}\r\nuser-agent: ${UA}\r\n\r\n`);
    // Read the head, then stop reading: TCP backpressure stalls the proxy's writes.
    await waitFor(() => hog.bytes() > 0, 'the response head');
    hog.socket.pause();
    await waitFor(() => log.bigResponses.length === 1, 'the big response started at the origin');
    const statuses = await otherClients(proxy, origin, 'big');
    assert.deepEqual(statuses, [200, 200, 200, 200, 200]);
    assert.equal(log.bigResponses[0]!.finished, false, 'the other clients were served while the big response was stalled');
    const held = logs.lines.filter((l) => l['event'] === 'slot-hold-exceeded').slice(before);
    assert.equal(held.length, 1);
    assert.equal(held[0]!['waitingOn'], 'client-read');

    // Release, not abort: the stalled client gets every byte once it reads again.
    hog.socket.resume();
    await waitFor(() => hog.bytes() >= BIG_BYTES, 'the whole body', 30_000);
    hog.socket.destroy();
    await waitFor(() => accessLines(logs, origin, '/big').length === 1, 'the big access line');
    const line = accessLines(logs, origin, '/big')[0]!;
    assert.equal(line['status'], 200);
    assert.equal(line['bytesSent'], BIG_BYTES);
    assert.equal(line['error'], null);
    assertSpacedByDelay(sentStarts(logs, origin));
  });
});

describe('client timeouts on a request in progress', () => {
  const TIMEOUT_MS = 300;
  const log: OriginLog = { uploads: [], bigResponses: [] };
  let origin: TestOrigin;
  let proxy: Proxy;
  let logs: LogCapture;

  before(async () => {
    ({ origin, proxy, logs } = await startScenario(log, {
      // The hold bound is long here: only the client timeouts can end the exchange early.
      pacing: { maxSlotHold: '60s', maxWait: '60s' },
      clients: { requestBodyTimeout: `${TIMEOUT_MS}ms`, responseWriteTimeout: `${TIMEOUT_MS}ms` },
    }));
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('a request body that stalls gets 408 with Connection: close; the upstream exchange is abandoned and the slot freed', async () => {
    const client = await rawClient(proxy.proxyAddress.port);
    client.socket.write(`POST ${origin.url}/upload HTTP/1.1\r\nhost: 127.0.0.1:${origin.port}\r\nuser-agent: ${UA}\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n`);
    await client.ended;
    const text = client.text();
    assert.match(text, /^HTTP\/1\.1 408 /);
    assert.match(text, /\r\nconnection: close\r\n/i);
    assert.match(text, /\r\nx-robots-proxy-decision: allow; reason=client-timeout\r\n/i);
    await waitFor(() => accessLines(logs, origin, '/upload').length === 1, 'the access line');
    const line = accessLines(logs, origin, '/upload')[0]!;
    assert.equal(line['status'], 408);
    assert.equal(line['error'], 'CLIENT_BODY_TIMEOUT');
    assert.equal(line['clientAborted'], false);
    assert.equal((line['decision'] as Record<string, unknown>)['reason'], 'client-timeout');
    await waitFor(() => log.uploads.length === 1 && !log.uploads[0]!.complete, 'the origin saw the upload start');
    assert.equal(log.uploads[0]!.complete, false, 'the origin never got a complete body');
    assert.equal(await metric(proxy, /robots_proxy_client_timeouts_total\{kind="request-body"\} (\d+)/), 1);
    assert.equal(await metric(proxy, /robots_proxy_requests_total\{verdict="allow",reason="client-timeout"\} (\d+)/), 1);
    // The slot is free: the next request to the origin goes through.
    assert.equal((await proxyRequest(proxy.proxyAddress.port, `${origin.url}/after-upload`, { headers: { 'user-agent': UA } })).status, 200);
  });

  it('a response left unread is cut after the write timeout; the upstream exchange is abandoned and the slot freed', async () => {
    const client = await rawClient(proxy.proxyAddress.port);
    client.socket.write(`GET ${origin.url}/big HTTP/1.1\r\nhost: 127.0.0.1:${origin.port}\r\nuser-agent: ${UA}\r\n\r\n`);
    await waitFor(() => client.bytes() > 0, 'the response head');
    client.socket.pause();
    await waitFor(() => accessLines(logs, origin, '/big').length === 1, 'the access line, written when the proxy cut the client');
    const line = accessLines(logs, origin, '/big')[0]!;
    assert.equal(line['error'], 'CLIENT_WRITE_TIMEOUT');
    assert.equal(line['status'], 200, 'the head had been sent');
    assert.equal(line['clientAborted'], false);
    assert.equal((line['decision'] as Record<string, unknown>)['reason'], 'client-timeout');
    assert.ok(Number(line['bytesSent']) < BIG_BYTES);
    await waitFor(() => log.bigResponses[0]?.aborted === true, 'the origin\'s response abandoned');
    assert.equal(await metric(proxy, /robots_proxy_client_timeouts_total\{kind="response-write"\} (\d+)/), 1);
    // What the client reads now ends short: the connection was closed, not completed.
    client.socket.resume();
    await client.ended;
    assert.ok(client.bytes() < BIG_BYTES, `read ${client.bytes()} bytes`);
    assert.equal((await proxyRequest(proxy.proxyAddress.port, `${origin.url}/after-big`, { headers: { 'user-agent': UA } })).status, 200);
  });
});
