/**
 * The drain of a running proxy (issue #7 item 6), in process with real
 * sockets: in-flight requests finish with their bodies, queued ones get 503
 * `proxy-shutting-down` with Retry-After, every request has an access line,
 * the start and end are logged; the timeout and a second stop cut what is
 * left, audited; intercepted tunnels close when idle, after their response when busy.
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { captureLogs, slowPagesSite, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest, waitFor, type ProxyAnswer } from '../helpers/proxy-client.js';
import { createTestPki, openConnect, startTlsOrigin, TunnelAgent, agentGet, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';
import { DRAIN_TIMEOUT_ERROR, SHUTDOWN_FORCED_ERROR } from '../../src/lifecycle/drain.js';
import { SHUTDOWN_RETRY_AFTER_SECONDS } from '../../src/proxy/responses.js';

const UA = 'ExampleBot/1.0';

function accessLines(logs: LogCapture): Array<Record<string, unknown>> {
  return logs.lines.filter((l) => l['msg'] === 'request');
}

function eventLine(logs: LogCapture, event: string): Record<string, unknown> | undefined {
  return logs.lines.find((l) => l['event'] === event);
}

describe('RunningProxy.shutdown', () => {
  let origin: TestOrigin | undefined;
  let tlsOrigin: TlsOrigin | undefined;
  let proxy: Awaited<ReturnType<typeof startTestProxy>> | undefined;

  afterEach(async () => {
    await proxy?.close();
    await origin?.close();
    await tlsOrigin?.close();
    proxy = undefined;
    origin = undefined;
    tlsOrigin = undefined;
  });

  it('lets requests in flight finish, answers queued ones 503 with Retry-After, audits every request', async () => {
    origin = await startOrigin(slowPagesSite);
    const logs = captureLogs();
    proxy = await startTestProxy({ pacing: { maxConcurrency: 2 } }, { logger: logs.logger });
    const port = proxy.proxyAddress.port;
    // An idle keep-alive connection, which the drain closes at once.
    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
    assert.equal((await proxyRequest(port, `${origin.url}/warm`, { headers: { 'user-agent': UA }, agent: keepAlive })).status, 200);
    const idleSocket = [...Object.values(keepAlive.freeSockets).flat()][0] as net.Socket;
    assert.ok(idleSocket, 'the agent kept its connection');
    const idleClosed = new Promise<void>((r) => idleSocket.once('close', () => r()));

    const inFlight = [1, 2].map((i) => proxyRequest(port, `${origin!.url}/slow/700/${i}`, { headers: { 'user-agent': UA } }));
    await waitFor(() => proxy!.pacer.stats().inFlight === 2, 'two requests in flight');
    const queued = [3, 4, 5].map((i) => proxyRequest(port, `${origin!.url}/slow/700/${i}`, { headers: { 'user-agent': UA } }));
    await waitFor(() => proxy!.pacer.stats().queued === 3, 'three requests queued');

    const stopped = proxy.shutdown({ trigger: 'test', drainTimeoutMs: 10_000 });
    const health = await fetch(`${proxy.adminUrl}/healthz`);
    assert.equal(health.status, 503, 'the admin listener tells load balancers to stop sending traffic');
    assert.deepEqual(await health.json(), { status: 'unavailable', details: { state: 'shutting-down' } });

    const refused = await Promise.all(queued);
    for (const answer of refused) {
      assert.equal(answer.status, 503);
      assert.equal(answer.decision, 'deny; reason=proxy-shutting-down');
      assert.equal(answer.headers['retry-after'], String(SHUTDOWN_RETRY_AFTER_SECONDS));
      assert.equal(answer.headers['connection'], 'close');
    }
    await idleClosed;
    const finished: ProxyAnswer[] = await Promise.all(inFlight);
    assert.deepEqual(
      finished.map((a) => [a.status, a.body.toString()]),
      [
        [200, 'body of /slow/700/1\n'],
        [200, 'body of /slow/700/2\n'],
      ],
    );
    for (const answer of finished) assert.equal(answer.headers['connection'], 'close');

    const report = await stopped;
    assert.deepEqual({ outcome: report.outcome, completed: report.completed, refused: report.refused, cut: report.cut }, { outcome: 'drained', completed: 2, refused: 3, cut: 0 });
    assert.deepEqual(origin.hits.map((h) => h.url).filter((u) => u.startsWith('/slow/')).sort(), ['/slow/700/1', '/slow/700/2'], 'nothing queued went upstream');

    const lines = accessLines(logs);
    assert.equal(lines.length, 6, 'one access line per request');
    const byUrl = new Map(lines.map((l) => [String(l['url']).replace(origin!.url, ''), l]));
    for (const i of [3, 4, 5]) {
      const line = byUrl.get(`/slow/700/${i}`);
      assert.equal((line?.['decision'] as Record<string, unknown>)['reason'], 'proxy-shutting-down');
      assert.equal(line?.['status'], 503);
    }
    for (const i of [1, 2]) assert.equal(byUrl.get(`/slow/700/${i}`)?.['status'], 200);

    const start = eventLine(logs, 'shutdown-start');
    assert.deepEqual(
      { trigger: start?.['trigger'], requestsInFlight: start?.['requestsInFlight'], queued: start?.['queued'], drainTimeoutMs: start?.['drainTimeoutMs'] },
      { trigger: 'test', requestsInFlight: 5, queued: 3, drainTimeoutMs: 10_000 },
    );
    const end = eventLine(logs, 'shutdown-end');
    assert.deepEqual({ outcome: end?.['outcome'], completed: end?.['completed'], refused: end?.['refused'], cut: end?.['cut'] }, { outcome: 'drained', completed: 2, refused: 3, cut: 0 });
    assert.ok(logs.lines.indexOf(start!) < logs.lines.indexOf(end!));

    await assert.rejects(proxyRequest(port, `${origin.url}/after`), /ECONNREFUSED/, 'the listener is closed');
    keepAlive.destroy();
  });

  it('refuses a request that arrives on an open connection during the drain, sending nothing upstream', async () => {
    origin = await startOrigin(slowPagesSite);
    const logs = captureLogs();
    proxy = await startTestProxy({}, { logger: logs.logger });
    const socket = net.connect(proxy.proxyAddress.port, '127.0.0.1');
    let received = '';
    socket.setEncoding('latin1').on('data', (d: string) => (received += d));
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.write(`GET ${origin.url}/slow/500/first HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: ${UA}\r\n\r\n`);
    await waitFor(() => origin!.hits.some((h) => h.url === '/slow/500/first'), 'the first request upstream');
    const stopped = proxy.shutdown({ trigger: 'test', drainTimeoutMs: 10_000 });
    socket.write(`GET ${origin.url}/second HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: ${UA}\r\n\r\n`);
    await closed;
    await stopped;
    assert.match(received, /^HTTP\/1\.1 200 OK/);
    assert.match(received, /body of \/slow\/500\/first/);
    assert.ok(!origin.hits.some((h) => h.url === '/second'), 'the request that came during the drain never went upstream');
    const second = accessLines(logs).find((l) => String(l['url']).endsWith('/second'));
    assert.equal((second?.['decision'] as Record<string, unknown> | undefined)?.['reason'], 'proxy-shutting-down');
    assert.equal(second?.['status'], 503);
  });

  it('cuts what still runs at drainTimeout, with an access line that says so', async () => {
    origin = await startOrigin(slowPagesSite);
    const logs = captureLogs();
    proxy = await startTestProxy({}, { logger: logs.logger });
    const slow = proxyRequest(proxy.proxyAddress.port, `${origin.url}/slow/5000/x`, { headers: { 'user-agent': UA } }).catch((err: Error) => err);
    await waitFor(() => proxy!.pacer.stats().inFlight === 1, 'the request in flight');
    const report = await proxy.shutdown({ trigger: 'test', drainTimeoutMs: 200 });
    assert.equal(report.outcome, 'timeout');
    assert.equal(report.cut, 1);
    assert.ok(await slow instanceof Error, 'the client sees the connection cut');
    const line = accessLines(logs).find((l) => String(l['url']).endsWith('/slow/5000/x'));
    assert.equal(line?.['error'], DRAIN_TIMEOUT_ERROR);
    assert.equal(accessLines(logs).length, 1, 'exactly one line for it, not a second one when its socket closed');
    assert.equal(eventLine(logs, 'shutdown-timeout')?.['requestsInFlight'], 1);
    assert.equal(eventLine(logs, 'shutdown-end')?.['outcome'], 'timeout');
  });

  it('ends the drain at once on a second stop', async () => {
    origin = await startOrigin(slowPagesSite);
    const logs = captureLogs();
    proxy = await startTestProxy({}, { logger: logs.logger });
    const slow = proxyRequest(proxy.proxyAddress.port, `${origin.url}/slow/5000/y`, { headers: { 'user-agent': UA } }).catch((err: Error) => err);
    await waitFor(() => proxy!.pacer.stats().inFlight === 1, 'the request in flight');
    const stopped = proxy.shutdown({ trigger: 'SIGTERM', drainTimeoutMs: 60_000 });
    assert.equal(proxy.shutdown({ trigger: 'SIGTERM' }), stopped, 'a second call shares the first');
    await waitFor(() => eventLine(logs, 'shutdown-start') !== undefined, 'the drain to begin');
    proxy.forceShutdown('SIGINT');
    const report = await stopped;
    assert.equal(report.outcome, 'forced');
    assert.ok(await slow instanceof Error);
    assert.equal(accessLines(logs).find((l) => String(l['url']).endsWith('/slow/5000/y'))?.['error'], SHUTDOWN_FORCED_ERROR);
    assert.equal(eventLine(logs, 'shutdown-forced')?.['trigger'], 'SIGINT');
  });

  it('closes an idle intercepted tunnel at once and a busy one after its response', async () => {
    const pki = await createTestPki();
    tlsOrigin = await startTlsOrigin(slowPagesSite, { cert: pki.certPem, key: pki.keyPem });
    const logs = captureLogs();
    proxy = await startTestProxy({ upstream: { caFile: writeTempFile('upstream-ca.pem', pki.caPem) } }, { logger: logs.logger });
    const caPem = proxy.ca!.certPem;
    const idleAgent = new TunnelAgent(proxy.proxyAddress.port, caPem);
    const busyAgent = new TunnelAgent(proxy.proxyAddress.port, caPem);
    const base = `https://localhost:${tlsOrigin.port}`;
    const warm = await agentGet(idleAgent, `${base}/warm`, { 'user-agent': UA });
    assert.equal(warm.status, 200);
    const idleClosed = new Promise<void>((r) => warm.socket.once('close', () => r()));
    const busy = agentGet(busyAgent, `${base}/slow/600/in-tunnel`, { 'user-agent': UA });
    await waitFor(() => tlsOrigin!.hits.includes('/slow/600/in-tunnel'), 'the request inside the tunnel upstream');

    const stopped = proxy.shutdown({ trigger: 'test', drainTimeoutMs: 10_000 });
    await idleClosed;
    const answer = await busy;
    assert.equal(answer.status, 200);
    assert.equal(answer.body, 'body of /slow/600/in-tunnel\n');
    assert.equal(answer.headers['connection'], 'close');
    const report = await stopped;
    assert.equal(report.outcome, 'drained');
    assert.equal(report.completed, 1);
    assert.equal(eventLine(logs, 'tls-client-error'), undefined, 'closing idle tunnels is not reported as a client TLS failure');
    idleAgent.destroy();
    busyAgent.destroy();
  });

  it('does not wait for an opaque tunnel (https.mode: tunnel): it is closed once the requests are done', async () => {
    const pki = await createTestPki();
    tlsOrigin = await startTlsOrigin(slowPagesSite, { cert: pki.certPem, key: pki.keyPem });
    const logs = captureLogs();
    proxy = await startTestProxy({ https: { mode: 'tunnel' }, upstream: { caFile: writeTempFile('upstream-ca.pem', pki.caPem) } }, { logger: logs.logger });
    const tunnel = await openConnect(proxy.proxyAddress.port, `localhost:${tlsOrigin.port}`, { 'user-agent': UA });
    assert.equal(tunnel.status, 200);
    const closed = new Promise<void>((r) => tunnel.socket.once('close', () => r()));
    tunnel.socket.on('error', () => undefined);
    const report = await proxy.shutdown({ trigger: 'test', drainTimeoutMs: 30_000 });
    assert.equal(report.outcome, 'drained');
    assert.ok(report.durationMs < 30_000, 'the drain did not wait for its timeout');
    await closed;
    assert.equal(eventLine(logs, 'shutdown-start')?.['tunnels'], 1);
  });
});
