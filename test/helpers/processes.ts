/**
 * Real child processes for end-to-end tests: origins in their own process and
 * the proxy started through its CLI (`robots-proxy serve --config FILE`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { after } from 'node:test';
import { cliNodeArgs } from './cli.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Recorded hit of an origin process. */
export interface RemoteHit {
  method: string;
  url: string;
  /** ms since the epoch, read in the origin process. */
  atMs: number;
  userAgent: string | undefined;
}

/** Origins running in a child process. */
export interface OriginsProcess {
  ports: Record<string, number>;
  urlOf(name: string): string;
  hits(name: string): Promise<RemoteHit[]>;
  close(): Promise<void>;
}

/**
 * Resolves with the first line `child` writes to stdout. Rejects when it exits first or writes
 * nothing for `timeoutMs` ms; the caller then owns a child that may still run (see {@link stopAfterFailedStart}).
 */
export function firstLine(child: ChildProcess, what: string, timeoutMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => reject(new Error(`${what} did not start in ${timeoutMs} ms: ${stderr}`)), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code}: ${stderr}`));
    });
    lines.on('line', (line) => {
      clearTimeout(timer);
      resolve(line);
    });
  });
}

/** Child processes started through {@link track} that have not exited yet. */
const live = new Set<ChildProcess>();
/** Other things to end with them (a Redis server and its clients): see {@link onStopAll}. */
const closers = new Set<() => Promise<void>>();

/**
 * Records `child` until it exits, so that {@link stopAllProcesses} ends it if nobody else does
 * (a start that failed beside it in a `Promise.all`, whose result was never assigned, leaves it
 * out of the test's `after`). Returns `child`.
 */
export function track<T extends ChildProcess>(child: T): T {
  if (child.exitCode !== null || child.signalCode !== null) return child;
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/**
 * Registers `close` (idempotent: it may also be called by its owner) to run in {@link stopAllProcesses};
 * returns the function that unregisters it, for the owner to call once it has closed.
 */
export function onStopAll(close: () => Promise<void>): () => void {
  closers.add(close);
  return () => void closers.delete(close);
}

/** Pids of the tracked child processes still running. */
export function trackedPids(): number[] {
  return [...live].map((child) => child.pid).filter((pid): pid is number => pid !== undefined);
}

/**
 * Ends every tracked child process still running (see {@link stop}) and runs every registered
 * closer; resolves once all are done (a closer that throws is ignored: this is cleanup).
 * Inside a node:test file this runs by itself after the file's last test (a root-level `after`),
 * so a child left over by a failed `before` cannot keep the file's process alive (a hang in CI).
 */
export async function stopAllProcesses(): Promise<void> {
  const closing = [...closers];
  closers.clear();
  await Promise.all([...closing.map((close) => close().catch(() => undefined)), ...[...live].map((child) => stop(child))]);
}

// NODE_TEST_CONTEXT is set in the process of a test file run by `node --test`: the benches
// import this module too, and a root-level hook outside a test run would start node:test's harness.
if (process.env['NODE_TEST_CONTEXT'] !== undefined) after(stopAllProcesses);

/** Ends `child`: SIGTERM, then SIGKILL after 5 s; resolves once it has exited (and been reaped). */
export function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

/** A child process that did not start: the error says why; `pid` is the process, which has exited by the time this is thrown. */
export class StartFailure extends Error {
  constructor(
    message: string,
    readonly pid: number | undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'StartFailure';
  }
}

/**
 * Runs `starting`; when it fails (timeout, bad first line, early exit), kills `child` and waits
 * for its exit before rethrowing as a {@link StartFailure}, so a failed start leaves no process behind.
 */
export async function stopAfterFailedStart<T>(child: ChildProcess, starting: () => Promise<T>): Promise<T> {
  try {
    return await starting();
  } catch (error) {
    await stop(child);
    throw new StartFailure((error as Error).message, child.pid, { cause: error });
  }
}

/** Starts the origins of `specs` in a child process. */
export async function startOriginsProcess(
  specs: Record<string, { robots?: string; robotsStatus?: number; pageDelayMs?: number; robotsFirstDelayMs?: number; paths?: Record<string, { status?: number; retryAfter?: string; delayMs?: number }> }>,
): Promise<OriginsProcess> {
  const child = track(spawn(process.execPath, ['--import', 'tsx', join(root, 'test/helpers/origins-process.ts'), JSON.stringify(specs)], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] }));
  const ports = await stopAfterFailedStart(child, async () => JSON.parse(await firstLine(child, 'origins process')) as Record<string, number>);
  return {
    ports,
    urlOf: (name) => `http://127.0.0.1:${ports[name]}`,
    hits: async (name) => (await (await fetch(`http://127.0.0.1:${ports[name]}/__hits`)).json()) as RemoteHit[],
    close: () => stop(child),
  };
}

/** The proxy running as `robots-proxy serve` in a child process. */
export interface ProxyProcess {
  proxyPort: number;
  adminPort: number | undefined;
  /** The config file it serves (rewrite it, then send SIGHUP). */
  configPath: string;
  /** JSON log lines seen so far. */
  logs: Array<Record<string, unknown>>;
  /** Resolves once `count` access log lines (msg `request`) have arrived; the proxy buffers its log for up to 100 ms. */
  waitForAccessLines(count: number, timeoutMs?: number): Promise<void>;
  /** Resolves with the first log line that has `event`, once it arrives. */
  waitForEvent(event: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Sends `signal` to the process. */
  kill(signal: NodeJS.Signals): void;
  /** Resolves when the process has exited and its stdout is read to the end. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  close(): Promise<void>;
}

/**
 * Writes `yaml` to a temp file and runs `robots-proxy serve --config` on it; resolves when it listens.
 * `openFileLimit`: run it under `ulimit -n` of that value (through `sh`, which execs node: one process).
 * `startTimeoutMs`: how long to wait for its `listening` line. @default 30000
 * @throws {StartFailure} when it exits first or does not listen in time; the process has then been
 *   killed and has exited, so a failed start leaves nothing running.
 */
export async function startProxyProcess(yaml: string, options: { openFileLimit?: number; startTimeoutMs?: number } = {}): Promise<ProxyProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-e2e-'));
  const configPath = join(dir, 'config.yaml');
  writeFileSync(configPath, yaml.replaceAll('$STATE', join(dir, 'state')));
  // tsx by name: the child runs in the repository (cwd), wherever this module was loaded from.
  const args = [...cliNodeArgs('tsx'), 'serve', '--config', configPath];
  const child = track(
    options.openFileLimit === undefined
      ? spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('sh', ['-c', `ulimit -n ${options.openFileLimit} && exec "$0" "$@"`, process.execPath, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const stdoutLines = createInterface({ input: child.stdout! });
  const stdoutEnded = new Promise<void>((resolve) => stdoutLines.once('close', () => resolve()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    child.once('exit', (code, signal) => void stdoutEnded.then(() => resolve({ code, signal, stderr })));
  });
  const listening = new Promise<Record<string, unknown>>((resolve, reject) => {
    const timeoutMs = options.startTimeoutMs ?? 30_000;
    const timer = setTimeout(() => reject(new Error(`proxy did not start in ${timeoutMs} ms: ${stderr}`)), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`proxy exited with ${code}: ${stderr}`));
    });
    stdoutLines.on('line', (line) => {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line);
      } catch {
        return;
      }
      logs.push(record);
      if (record['event'] === 'listening') {
        clearTimeout(timer);
        resolve(record);
      }
    });
  });
  const ready = await stopAfterFailedStart(child, () => listening);
  const portOf = (hostPort: unknown): number | undefined => (typeof hostPort === 'string' ? Number(hostPort.split(':').pop()) : undefined);
  const waitForAccessLines = async (count: number, timeoutMs = 5000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (logs.filter((l) => l['msg'] === 'request').length < count) {
      if (Date.now() > deadline) throw new Error(`only ${logs.filter((l) => l['msg'] === 'request').length} of ${count} access log lines after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const waitForEvent = async (event: string, timeoutMs = 10_000): Promise<Record<string, unknown>> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = logs.find((l) => l['event'] === event);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no "${event}" log line after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  return {
    proxyPort: portOf(ready['proxy'])!,
    adminPort: portOf(ready['admin']),
    configPath,
    logs,
    waitForAccessLines,
    waitForEvent,
    kill: (signal) => void child.kill(signal),
    exited,
    close: () => stop(child),
  };
}

/**
 * True while a process with this pid exists (signal 0 probes without sending anything) and, where
 * /proc says so, is not a zombie: a killed orphan whose new parent (a container's pid 1) never
 * reaps it has ended all the same.
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/PID/stat: "pid (comm) STATE ..."; comm may hold spaces and parentheses, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}
