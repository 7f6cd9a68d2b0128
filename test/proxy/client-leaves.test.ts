/**
 * A client that leaves while its request is with the origin: the upstream exchange is aborted
 * (the origin sees its connection close) and the access line says `CLIENT_ABORTED`: at once when
 * the origin's head had been relayed, once the origin answers when it had not (the request is in
 * the origin's hands until then, and holds its start slot: pacing-escapes.test.ts); and after the request was ended early (a drain's
 * `abandonInFlight`) while its relay still runs, a client that leaves still aborts the upstream
 * exchange, with no second access line. The response's `close` is watched by one listener of the
 * pipeline's, which tells the relay (issue 11); these are the cases that listener must not lose.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { captureLogs, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { openRawClient, waitFor, type RawClient } from '../helpers/proxy-client.js';

const UA = 'ExampleBot/1.0';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

describe('a client that leaves while its request is with the origin', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  let logs: LogCapture;
  /** Paths whose response the origin saw closed before it finished (the proxy abandoned the exchange). */
  const abandonedAtOrigin = new Set<string>();
  /** The responses of /silent/... requests, which the tests answer themselves. */
  const silent = new Map<string, import('node:http').ServerResponse>();
  const clients: RawClient[] = [];

  before(async () => {
    origin = await startOrigin((req, res) => {
      const url = req.url ?? '';
      if (url === '/robots.txt') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
      res.on('close', () => {
        if (!res.writableFinished) abandonedAtOrigin.add(url);
      });
      // /head/...: the head and a first chunk, then nothing more; /silent/...: not even a head, until the test writes one.
      if (url.startsWith('/silent/')) silent.set(url, res);
      if (url.startsWith('/head/')) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first bytes\n');
      }
    });
    logs = captureLogs();
    proxy = await startTestProxy({ log: { level: 'info' } }, { logger: logs.logger });
  });

  after(async () => {
    for (const client of clients) client.socket.destroy();
    await proxy?.close();
    await origin?.close();
  });

  const linesOf = (path: string): Array<Record<string, unknown>> => logs.lines.filter((l) => l['msg'] === 'request' && l['url'] === `${origin.url}${path}`);

  async function send(path: string): Promise<RawClient> {
    const client = await openRawClient(proxy.proxyAddress.port);
    clients.push(client);
    client.socket.write(`GET ${origin.url}${path} HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nUser-Agent: ${UA}\r\n\r\n`);
    return client;
  }

  it('after the head was relayed: the origin is cut, the line says CLIENT_ABORTED with the status', async () => {
    const client = await send('/head/1');
    await waitFor(() => client.received().includes('first bytes'), 'the first body bytes at the client');
    client.socket.destroy();
    await waitFor(() => abandonedAtOrigin.has('/head/1'), 'the origin to see the exchange abandoned');
    await waitFor(() => linesOf('/head/1').length === 1, 'the access line');
    const [line] = linesOf('/head/1');
    assert.equal(line?.['error'], 'CLIENT_ABORTED');
    assert.equal(line?.['clientAborted'], true);
    assert.equal(line?.['upstreamStatus'], 200);
  });

  it('before any head: the exchange lasts until the origin answers, then the origin is cut and the line says CLIENT_ABORTED', async () => {
    const client = await send('/silent/1');
    await waitFor(() => origin.hits.some((h) => h.url === '/silent/1'), 'the request at the origin');
    client.socket.destroy();
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(!abandonedAtOrigin.has('/silent/1'), 'not cut while the origin works on it');
    assert.equal(proxy.pacer.stats().inFlight, 1, 'the slot is held while the origin works on it');
    assert.equal(linesOf('/silent/1').length, 0, 'no line yet');
    const res = silent.get('/silent/1');
    res?.writeHead(200, { 'content-type': 'text/plain' });
    res?.write('late bytes\n');
    await waitFor(() => abandonedAtOrigin.has('/silent/1'), 'the origin to see the exchange abandoned once it answered');
    await waitFor(() => linesOf('/silent/1').length === 1, 'the access line');
    const [line] = linesOf('/silent/1');
    assert.equal(line?.['error'], 'CLIENT_ABORTED');
    assert.equal(line?.['clientAborted'], true);
    assert.equal(line?.['status'], 0, 'the client got nothing');
    assert.equal(line?.['upstreamStatus'], 200, 'the origin answered');
    await waitFor(() => proxy.pacer.stats().inFlight === 0, 'the slot to be freed');
  });

  it('ended early (abandonInFlight) while relayed, then the client leaves: the origin is still cut, one line', async () => {
    const client = await send('/head/2');
    await waitFor(() => client.received().includes('first bytes'), 'the first body bytes at the client');
    assert.equal(proxy.pipeline.abandonInFlight('TEST_ABANDONED'), 1);
    await waitFor(() => linesOf('/head/2').length === 1, 'the access line of the abandoned request');
    assert.equal(linesOf('/head/2')[0]?.['error'], 'TEST_ABANDONED');
    assert.ok(!abandonedAtOrigin.has('/head/2'), 'ending the request early does not cut its relay');
    client.socket.destroy();
    await waitFor(() => abandonedAtOrigin.has('/head/2'), 'the origin to see the exchange abandoned once the client left');
    await waitFor(() => proxy.pacer.stats().inFlight === 0, 'the slot to be freed');
    assert.equal(linesOf('/head/2').length, 1, 'no second line when the relay ends');
  });
});
