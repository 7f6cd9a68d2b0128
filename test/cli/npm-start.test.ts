/**
 * `npm start` as an operator runs it, a real `npm` child process (its own
 * process group, like a terminal's foreground job): it serves
 * `$ROBOTS_PROXY_CONFIG` (or `-- --config FILE`), and signals sent to npm
 * reach the proxy: SIGTERM drains a request in flight, a terminal's Ctrl-C
 * (SIGINT to the whole group, which npm passes on as well) drains rather than
 * cutting the drain short, SIGHUP to the proxy's own pid reloads, and SIGHUP to
 * npm (which npm does not pass on and dies of) stops the proxy instead of
 * leaving it running detached.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { slowPagesSite, startOrigin, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest, waitFor } from '../helpers/proxy-client.js';
import { isRunning } from '../helpers/processes.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const UA = 'ExampleBot/1.0';

/** `npm start` running in its own process group, with the proxy's JSON log lines. */
interface NpmStart {
  npm: ChildProcess;
  /** pid of the proxy (node) process, from its log lines. */
  proxyPid: number;
  proxyPort: number;
  logs: Array<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

function configFile(extra = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-npm-start-'));
  const path = join(dir, 'config.yaml');
  writeFileSync(
    path,
    `listen: { host: 127.0.0.1, port: 0 }\nadmin: { host: 127.0.0.1, port: 0 }\nupstream: { allowPrivateNetworks: true }\nhttps: { mode: tunnel }\nledger: { enabled: false }\nstateDir: ${join(dir, 'state')}\n${extra}`,
  );
  return path;
}

async function npmStart(args: string[], env: NodeJS.ProcessEnv = {}): Promise<NpmStart> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (env['ROBOTS_PROXY_CONFIG'] === undefined) delete childEnv['ROBOTS_PROXY_CONFIG'];
  // detached: a process group of its own, so a test can send what a terminal's Ctrl-C sends.
  const npm = spawn('npm', ['start', ...(args.length > 0 ? ['--', ...args] : [])], { cwd: root, env: childEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  // Its own process group does not get the signal that stops the test run: end it with this process.
  const killGroup = (): void => {
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
  };
  process.once('exit', killGroup);
  npm.once('exit', () => process.off('exit', killGroup));
  let stderr = '';
  npm.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const logs: Array<Record<string, unknown>> = [];
  const lines = createInterface({ input: npm.stdout! });
  const ended = new Promise<void>((resolve) => lines.once('close', () => resolve()));
  lines.on('line', (line) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // npm's own "> robots-proxy@x start" banner
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    npm.once('exit', (code, signal) => void ended.then(() => resolve({ code, signal })));
  });
  // `prestart` compiles what changed (tsc -b): generous, the machine may be loaded.
  await waitFor(() => logs.some((l) => l['event'] === 'listening') || npm.exitCode !== null, 'npm start to listen', 120_000);
  const listening = logs.find((l) => l['event'] === 'listening');
  assert.ok(listening, `npm start did not listen: ${stderr}`);
  return {
    npm,
    proxyPid: listening['pid'] as number,
    proxyPort: Number(String(listening['proxy']).split(':').pop()),
    logs,
    exited,
    stderr: () => stderr,
  };
}

function eventsOf(run: NpmStart, event: string): Array<Record<string, unknown>> {
  return run.logs.filter((l) => l['event'] === event);
}

describe('npm start', { timeout: 300_000 }, () => {
  let origin: TestOrigin;
  const started: NpmStart[] = [];

  before(async () => {
    origin = await startOrigin(slowPagesSite);
  });
  after(async () => {
    for (const run of started) {
      if (isRunning(run.proxyPid)) process.kill(run.proxyPid, 'SIGKILL');
      if (run.npm.exitCode === null) run.npm.kill('SIGKILL');
    }
    await origin.close();
  });

  it('serves $ROBOTS_PROXY_CONFIG; SIGTERM to npm drains the request in flight and both exit 0', async () => {
    const run = await npmStart([], { ROBOTS_PROXY_CONFIG: configFile() });
    started.push(run);
    assert.notEqual(run.proxyPid, run.npm.pid, 'the proxy runs as npm\'s child');
    const inFlight = proxyRequest(run.proxyPort, `${origin.url}/slow/1500/term`, { headers: { 'user-agent': UA } });
    await waitFor(() => origin.hits.some((h) => h.url === '/slow/1500/term'), 'the request upstream');
    run.npm.kill('SIGTERM');
    const answer = await inFlight;
    assert.equal(answer.status, 200);
    assert.equal(answer.body.toString(), 'body of /slow/1500/term\n');
    assert.deepEqual(await run.exited, { code: 0, signal: null }, run.stderr());
    assert.equal(eventsOf(run, 'shutdown-end')[0]?.['outcome'], 'drained');
    assert.equal(isRunning(run.proxyPid), false);
  });

  it('Ctrl-C (SIGINT to the process group; npm passes it on too) drains once, not cut short', async () => {
    const run = await npmStart(['--config', configFile()]);
    started.push(run);
    const inFlight = proxyRequest(run.proxyPort, `${origin.url}/slow/1500/int`, { headers: { 'user-agent': UA } });
    await waitFor(() => origin.hits.some((h) => h.url === '/slow/1500/int'), 'the request upstream');
    process.kill(-run.npm.pid!, 'SIGINT');
    const answer = await inFlight;
    assert.equal(answer.status, 200, 'the request in flight finished');
    await run.exited;
    assert.equal(eventsOf(run, 'shutdown-forced').length, 0, 'one keypress is one stop');
    assert.equal(eventsOf(run, 'shutdown-end')[0]?.['outcome'], 'drained');
  });

  it('SIGHUP to the proxy\'s pid reloads; SIGHUP to npm (which dies of it) stops the proxy rather than leaving it detached', async () => {
    const configPath = configFile();
    const run = await npmStart(['--config', configPath]);
    started.push(run);
    writeFileSync(configPath, `${readFileSync(configPath, 'utf8')}log: { level: debug }\n`);
    process.kill(run.proxyPid, 'SIGHUP');
    await waitFor(() => eventsOf(run, 'config-reloaded').length === 1, 'the reload', 20_000);
    assert.deepEqual(eventsOf(run, 'config-reloaded')[0]?.['applied'], ['log.level']);

    run.npm.kill('SIGHUP');
    await waitFor(() => !isRunning(run.proxyPid), 'the proxy to stop after npm died', 20_000);
    assert.equal(eventsOf(run, 'parent-exited').length, 1);
    assert.equal(eventsOf(run, 'shutdown-end')[0]?.['outcome'], 'drained');
  });
});
