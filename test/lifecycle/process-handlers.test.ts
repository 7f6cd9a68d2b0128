/**
 * Signals and internal errors in real child processes (issue #7 item 6):
 * `robots-proxy serve` on a temp config, origins on loopback. SIGHUP reloads
 * (a valid file takes effect for queued requests too, connections survive; a
 * bad one changes nothing and says where); SIGTERM and SIGINT drain and exit 0
 * with every request audited; a second signal cuts the drain short; SIGKILL
 * loses at most the last flush interval; an uncaught error logs, audits and exits 1.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { slowPagesSite, startOrigin, type TestOrigin } from '../helpers/harness.js';
import { startProxyProcess, type ProxyProcess } from '../helpers/processes.js';
import { proxyRequest, sleep, waitFor, type ProxyAnswer } from '../helpers/proxy-client.js';
import { LOG_FLUSH_INTERVAL_MS } from '../../src/audit/logger.js';
import { SHUTDOWN_RETRY_AFTER_SECONDS } from '../../src/proxy/responses.js';
import { REPEATED_SIGNAL_MS } from '../../src/lifecycle/process-handlers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const UA = 'ExampleBot/1.0';

/** The config of these tests, `extra` appended (YAML). */
function configYaml(extra: string): string {
  return `listen: { host: 127.0.0.1, port: 0 }\nadmin: { host: 127.0.0.1, port: 0 }\nupstream: { allowPrivateNetworks: true }\nhttps: { mode: tunnel }\nstateDir: $STATE\nlog: { level: info }\n${extra}`;
}

function accessLines(proxy: ProxyProcess): Array<Record<string, unknown>> {
  return proxy.logs.filter((l) => l['msg'] === 'request');
}

function get(proxy: ProxyProcess, url: string, agent?: http.Agent): Promise<ProxyAnswer> {
  return proxyRequest(proxy.proxyPort, url, { headers: { 'user-agent': UA }, ...(agent ? { agent } : {}) });
}

/** Reads a gauge from the proxy's /metrics. */
async function gauge(proxy: ProxyProcess, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${proxy.adminPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

describe('robots-proxy serve: signals', () => {
  let origin: TestOrigin;
  let proxy: ProxyProcess | undefined;

  before(async () => {
    origin = await startOrigin(slowPagesSite);
  });
  after(() => origin.close());
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  it('SIGHUP applies a valid file: queued requests take the new pacing, connections and queues survive, all audited', async () => {
    proxy = await startProxyProcess(configYaml('pacing: { maxConcurrency: 1 }\n'));
    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const first = await get(proxy, `${origin.url}/warm`, keepAlive);
    assert.equal(first.status, 200);
    const socketBefore = [...Object.values(keepAlive.freeSockets).flat()][0];
    assert.ok(socketBefore, 'the client kept its connection');

    // One request in flight (500 ms each, one at a time), three queued behind it.
    const queued = [1, 2, 3, 4].map((i) => get(proxy!, `${origin.url}/slow/500/q${i}`));
    await waitFor(() => origin.hits.some((h) => h.url === '/slow/500/q1'), 'the first request upstream');

    writeFileSync(proxy.configPath, configYaml('pacing: { maxConcurrency: 1 }\nhosts: { "127.0.0.1": { minDelay: 700ms } }\n').replaceAll('$STATE', `${proxy.configPath}.state`));
    proxy.kill('SIGHUP');
    const reloaded = await proxy.waitForEvent('config-reloaded');
    assert.deepEqual(reloaded['applied'], ['hosts["127.0.0.1"]']);
    assert.deepEqual(reloaded['restartRequired'], ['stateDir']);

    const answers = await Promise.all(queued);
    assert.deepEqual(
      answers.map((a) => [a.status, a.body.toString()]),
      [1, 2, 3, 4].map((i) => [200, `body of /slow/500/q${i}\n`]),
      'every queued request survived the reload with its real body',
    );
    const again = await get(proxy, `${origin.url}/after`, keepAlive);
    assert.equal(again.status, 200);
    const socketAfter = [...Object.values(keepAlive.freeSockets).flat()][0];
    assert.equal(socketAfter, socketBefore, 'the keep-alive connection from before the reload carried a request after it');

    await proxy.waitForAccessLines(6);
    const lines = accessLines(proxy);
    assert.equal(lines.length, 6, 'one access line per request, none lost');
    // Starts as sent (the access log's upstreamStartedAt): the requests that started after the
    // reload are 700 ms apart, where 500 ms (the service time) would have been enough before.
    const startsMs = lines
      .filter((l) => /\/slow\/500\/q[234]$/.test(String(l['url'])))
      .map((l) => Date.parse(String(l['upstreamStartedAt'])))
      .sort((a, b) => a - b);
    assert.equal(startsMs.length, 3);
    for (let i = 1; i < startsMs.length; i++) {
      const gap = startsMs[i]! - startsMs[i - 1]!;
      assert.ok(gap >= 699, `gap ${i} as sent is ${gap} ms (the new minDelay is 700 ms)`);
    }
    assert.equal(proxy.logs.some((l) => l['level'] === 'fatal'), false);
    keepAlive.destroy();
  });

  it('SIGHUP with a broken file keeps the running config and logs the file, key and line', async () => {
    proxy = await startProxyProcess(configYaml(''));
    const running = proxy;
    writeFileSync(proxy.configPath, `${configYaml('hosts: { "127.0.0.1": { minDelay: 2s } }\npacing:\n  maxWiat: 3s\n').replaceAll('$STATE', `${proxy.configPath}.state`)}`);
    proxy.kill('SIGHUP');
    const failed = await proxy.waitForEvent('config-reload-failed');
    assert.equal(failed['level'], 'error');
    assert.equal(failed['file'], proxy.configPath);
    assert.equal(failed['key'], 'pacing.maxWiat');
    assert.equal(failed['line'], 9);
    assert.match(String(failed['error']), /unknown key "maxWiat" in pacing \(did you mean "maxWait"\?\)/);

    // Still serving, on the old config: the 2 s minDelay of the bad file is not in force.
    const a = await get(running, `${origin.url}/broken/a`);
    const b = await get(running, `${origin.url}/broken/b`);
    assert.deepEqual([a.status, b.status], [200, 200]);
    await running.waitForAccessLines(2);
    const [sa, sb] = accessLines(running).map((l) => Date.parse(String(l['upstreamStartedAt'])));
    assert.ok(sb! - sa! < 2000, `the second request started ${sb! - sa!} ms after the first`);
    assert.equal((await fetch(`http://127.0.0.1:${running.adminPort}/healthz`)).status, 200);
  });

  it('SIGTERM: in-flight requests complete with their bodies, queued ones get 503 + Retry-After, every request is audited, exit 0', async () => {
    proxy = await startProxyProcess(configYaml('pacing: { maxConcurrency: 10 }\nshutdown: { drainTimeout: 20s }\n'));
    const running = proxy;
    const inFlight = Array.from({ length: 10 }, (_, i) => get(running, `${origin.url}/slow/2000/f${i}`));
    await waitFor(() => origin.hits.filter((h) => h.url.startsWith('/slow/2000/f')).length === 10, 'ten requests upstream');
    const queued = Array.from({ length: 50 }, (_, i) => get(running, `${origin.url}/slow/2000/q${i}`));
    for (let tries = 0; (await gauge(running, 'robots_proxy_pacing_queued_requests')) !== 50; tries++) {
      assert.ok(tries < 200, 'fifty requests queued');
      await sleep(25);
    }

    running.kill('SIGTERM');
    const refused = await Promise.all(queued);
    for (const answer of refused) {
      assert.equal(answer.status, 503);
      assert.equal(answer.decision, 'deny; reason=proxy-shutting-down');
      assert.equal(answer.headers['retry-after'], String(SHUTDOWN_RETRY_AFTER_SECONDS));
    }
    const finished = await Promise.all(inFlight);
    assert.deepEqual(
      finished.map((a) => [a.status, a.body.toString()]),
      Array.from({ length: 10 }, (_, i) => [200, `body of /slow/2000/f${i}\n`]),
    );
    const exit = await running.exited;
    assert.deepEqual([exit.code, exit.signal], [0, null], exit.stderr);

    const lines = accessLines(running);
    assert.equal(lines.length, 60, 'every request has its access line');
    assert.equal(lines.filter((l) => (l['decision'] as Record<string, unknown>)['reason'] === 'proxy-shutting-down').length, 50);
    assert.equal(lines.filter((l) => l['status'] === 200).length, 10);
    assert.ok(!origin.hits.some((h) => h.url.startsWith('/slow/2000/q')), 'nothing queued went upstream');
    const start = running.logs.find((l) => l['event'] === 'shutdown-start');
    assert.deepEqual([start?.['trigger'], start?.['requestsInFlight'], start?.['queued'], start?.['drainTimeoutMs']], ['SIGTERM', 60, 50, 20_000]);
    const end = running.logs.find((l) => l['event'] === 'shutdown-end');
    assert.deepEqual([end?.['outcome'], end?.['completed'], end?.['refused'], end?.['cut']], ['drained', 10, 50, 0]);
  });

  it('SIGINT drains the same way', async () => {
    proxy = await startProxyProcess(configYaml('pacing: { maxConcurrency: 1 }\n'));
    const running = proxy;
    const inFlight = get(running, `${origin.url}/slow/800/int-1`);
    await waitFor(() => origin.hits.some((h) => h.url === '/slow/800/int-1'), 'the request upstream');
    const queued = get(running, `${origin.url}/slow/800/int-2`);
    for (let tries = 0; (await gauge(running, 'robots_proxy_pacing_queued_requests')) !== 1; tries++) {
      assert.ok(tries < 200, 'one request queued');
      await sleep(25);
    }
    running.kill('SIGINT');
    assert.equal((await queued).status, 503);
    const done = await inFlight;
    assert.deepEqual([done.status, done.body.toString()], [200, 'body of /slow/800/int-1\n']);
    const exit = await running.exited;
    assert.equal(exit.code, 0, exit.stderr);
    assert.equal(accessLines(running).length, 2);
    assert.equal(running.logs.find((l) => l['event'] === 'shutdown-start')?.['trigger'], 'SIGINT');
    assert.equal(running.logs.find((l) => l['event'] === 'shutdown-end')?.['outcome'], 'drained');
  });

  it('a second signal ends the drain at once; the request cut is audited', async () => {
    proxy = await startProxyProcess(configYaml('shutdown: { drainTimeout: 60s }\n'));
    const running = proxy;
    const slow = get(running, `${origin.url}/slow/30000/long`).catch((err: Error) => err);
    await waitFor(() => origin.hits.some((h) => h.url === '/slow/30000/long'), 'the request upstream');
    running.kill('SIGTERM');
    await running.waitForEvent('shutdown-start');
    running.kill('SIGINT');
    const exit = await running.exited;
    assert.equal(exit.code, 0, exit.stderr);
    assert.ok((await slow) instanceof Error, 'the client sees the connection cut');
    assert.equal(running.logs.find((l) => l['event'] === 'shutdown-forced')?.['trigger'], 'SIGINT');
    assert.equal(running.logs.find((l) => l['event'] === 'shutdown-end')?.['outcome'], 'forced');
    const [line] = accessLines(running);
    assert.equal(line?.['error'], 'PROXY_SHUTDOWN_FORCED');
  });

  it('the same signal twice at once is one stop (a Ctrl-C under npm start arrives twice); once more later ends the drain', async () => {
    proxy = await startProxyProcess(configYaml('shutdown: { drainTimeout: 60s }\n'));
    const running = proxy;
    const slow = get(running, `${origin.url}/slow/30000/twice`).catch((err: Error) => err);
    await waitFor(() => origin.hits.some((h) => h.url === '/slow/30000/twice'), 'the request upstream');
    running.kill('SIGINT');
    // Apart, or the kernel merges the two pending signals into one.
    await sleep(50);
    running.kill('SIGINT');
    await running.waitForEvent('shutdown-start');
    await waitFor(() => running.logs.filter((l) => l['event'] === 'signal').length === 2, 'both signals logged');
    assert.equal(running.logs.filter((l) => l['repeated'] === true).length, 1, 'the repeat is logged as one');
    assert.equal(running.logs.some((l) => l['event'] === 'shutdown-forced'), false, 'the drain goes on');
    await sleep(REPEATED_SIGNAL_MS + 200);
    running.kill('SIGINT');
    const exit = await running.exited;
    assert.equal(exit.code, 0, exit.stderr);
    assert.ok((await slow) instanceof Error, 'the client sees the connection cut');
    assert.equal(running.logs.find((l) => l['event'] === 'shutdown-end')?.['outcome'], 'forced');
  });

  it('SIGKILL loses at most the lines of the last flush interval', async () => {
    proxy = await startProxyProcess(configYaml(''));
    const running = proxy;
    for (let i = 0; i < 5; i++) assert.equal((await get(running, `${origin.url}/k${i}`)).status, 200);
    // Idle for ten flush intervals: every line must be out, although nothing else is written.
    await sleep(10 * LOG_FLUSH_INTERVAL_MS);
    running.kill('SIGKILL');
    const exit = await running.exited;
    assert.equal(exit.signal, 'SIGKILL');
    assert.deepEqual(
      accessLines(running).map((l) => String(l['url']).replace(origin.url, '')),
      ['/k0', '/k1', '/k2', '/k3', '/k4'],
    );
  });
});

describe('last-resort handlers', () => {
  for (const [mode, origin] of [
    ['throw', 'uncaughtException'],
    ['reject', 'unhandledRejection'],
  ] as const) {
    it(`${origin}: logs it as fatal, audits the requests in flight, flushes every line, exits 1`, async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/log-process.ts', mode], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      assert.equal(code, 1);
      const records = stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.deepEqual(records.filter((r) => r['msg'] === 'line').map((r) => r['n']), [0, 1, 2], 'the lines buffered before the crash were written');
      const fatal = records.find((r) => r['event'] === 'fatal');
      assert.equal(fatal?.['level'], 'fatal');
      assert.equal(fatal?.['origin'], origin);
      assert.match(String((fatal?.['err'] as Record<string, unknown>)['message']), /^boom/);
      assert.equal(records.find((r) => r['event'] === 'abandoned')?.['error'], 'PROXY_FATAL_ERROR');
    });
  }
});
