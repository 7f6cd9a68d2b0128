/**
 * Pieces the benchmarks share: child roles over IPC, CPU accounting per
 * process, free ports, medians. Benchmarks print figures; nothing here asserts.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { delimiter, join } from 'node:path';

/** What a load generator reports back, reduced. Latencies in ms. */
export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  bad: number;
}

/** User + system CPU seconds of a process so far (Linux /proc; clock ticks assumed 100/s); NaN elsewhere. */
export function cpuSecondsOf(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  if (pid === process.pid) {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  }
  try {
    // Fields after "(comm) ": state is [0], utime [11], stime [12] (proc(5): fields 14 and 15).
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/**
 * System (kernel) CPU seconds of a process so far: its stime, all threads (Linux /proc; clock ticks
 * assumed 100/s); NaN elsewhere. The share of `cpuSecondsOf` spent in system calls (a socket write on
 * loopback runs the receiver's TCP path too) and page faults.
 */
export function systemCpuSecondsOf(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  if (pid === process.pid) return process.cpuUsage().system / 1e6;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return Number(fields[12]) / 100;
  } catch {
    return NaN;
  }
}

/**
 * Seconds the main thread of a process has spent runnable but waiting for a
 * CPU (the second field of /proc/PID/schedstat), NaN where unavailable: how
 * much the machine's other processes held it back.
 */
export function runQueueWaitSecondsOf(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e9;
  } catch {
    return NaN;
  }
}

/** Runs `work`; returns its result, the CPU seconds each named process used meanwhile, and the wall seconds. */
export async function withCpu<T>(pids: Record<string, number | undefined>, work: () => Promise<T>): Promise<[T, Record<string, number>, number]> {
  const before = Object.entries(pids).map(([name, pid]) => [name, pid, cpuSecondsOf(pid)] as const);
  const t0 = performance.now();
  const result = await work();
  const wallS = (performance.now() - t0) / 1000;
  const cpuS: Record<string, number> = {};
  for (const [name, pid, start] of before) cpuS[name] = cpuSecondsOf(pid) - start;
  return [result, cpuS, wallS];
}

/** Options of {@link forkRole}. */
export interface ForkOptions {
  /** A command (and its arguments) that execs node, e.g. `['taskset', '-c', '0']`. */
  prefix?: string[];
  /** Extra node flags (`--cpu-prof`, ...). */
  nodeFlags?: string[];
}

/** Forks `script` (a bench file run with tsx) in the role named by `args[0]`, with an IPC channel. */
export function forkRole(script: string, ...args: string[]): ChildProcess;
export function forkRole(options: ForkOptions, script: string, ...args: string[]): ChildProcess;
export function forkRole(first: string | ForkOptions, ...rest: string[]): ChildProcess {
  const [options, script, args] = typeof first === 'string' ? [{}, first, rest] : [first, rest[0]!, rest.slice(1)];
  const prefix = options.prefix ?? [];
  const execArgv = [...(options.nodeFlags ?? []), '--import', 'tsx'];
  if (prefix.length === 0) return fork(script, args, { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // fork() runs process.execPath itself; a prefix command (taskset) must exec node, so name it explicitly.
  return fork(script, args, { execPath: prefix[0]!, execArgv: [...prefix.slice(1), process.execPath, ...execArgv], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}

/** The next IPC message of `child`; rejects if it exits first. */
export function nextMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`child exited with ${code}`));
    child.once('exit', onExit);
    child.once('message', (m) => {
      child.off('exit', onExit);
      resolve(m as T);
    });
  });
}

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * The path of an executable named `name` on the PATH, or in /usr/sbin and
 * /sbin (where Debian puts daemons such as squid, often off a user's PATH);
 * undefined when there is none.
 */
export function findExecutable(name: string): string | undefined {
  const dirs = [...(process.env['PATH'] ?? '').split(delimiter), '/usr/sbin', '/sbin'].filter((d) => d !== '');
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A TCP port free on 127.0.0.1 a moment ago (bound to port 0, then released: for programs that need a number). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resolves once 127.0.0.1:`port` accepts a connection; rejects after `timeoutMs` or when `child` exits. */
export async function waitForPort(port: number, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (child !== undefined && child.exitCode !== null) throw new Error(`process exited with ${child.exitCode} before listening on ${port}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (performance.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Sends SIGTERM to `child` and waits for it to exit; SIGKILL after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/**
 * The 20 policy rules of `bench:proxy`'s `rp-policy20` and of `bench:policy` (issue 8): a realistic mix that none of the bench's
 * requests matches (other origins and globs, admin paths, other product tokens, write methods,
 * identities), then one rule that matches every origin of `bench:proxy` (127.0.0.1, any port) and changes nothing (pace with the
 * default `maxConcurrency`), so every request is matched against all 20.
 */
export const BENCH_POLICY_RULES: ReadonlyArray<Record<string, unknown>> = [
  { name: 'no-wp-admin', path: ['/wp-admin', '/wp-login.php'], action: 'deny' },
  { name: 'no-writes', method: ['POST', 'PUT', 'DELETE', 'PATCH'], action: 'deny' },
  { name: 'gptbot-report', token: 'GPTBot', action: 'report' },
  { name: 'ccbot-deny', token: ['CCBot', 'Bytespider'], action: 'deny' },
  { name: 'partner-consent', identity: 'partner-a', origin: 'https://partner.example.org', action: 'allow', rate: '30/m' },
  { name: 'intranet', origin: '*.corp.example.com', action: 'deny' },
  { name: 'news-slow', origin: ['news.example.net', 'www.news.example.net'], minDelay: '2s' },
  { name: 'cdn-fast', origin: '*.cdn.example.net', maxConcurrency: 16 },
  { name: 'pdf-pace', origin: '*.docs.example.org', path: '/*.pdf$', rate: '10/m' },
  { name: 'search-pages', origin: 'www.example.com', path: ['/search', '/*?q='], action: 'deny' },
  { name: 'shop-checkout', origin: '*.shop.example', path: ['/cart', '/checkout'], action: 'deny' },
  { name: 'scraper-a', identity: ['scraper-a', 'scraper-b'], action: 'report' },
  { name: 'archive-consent', origin: 'https://archive.example.org', token: 'ExampleArchiver', action: 'allow' },
  { name: 'api-rate', origin: 'api.example.com', rate: '5/s' },
  { name: 'login-pages', path: ['/login', '/account/*', '/*/signin$'], action: 'deny' },
  { name: 'media-hosts', origin: ['*.img.example.com', '*.video.example.com'], maxConcurrency: 2 },
  { name: 'claudebot-report', token: 'ClaudeBot', origin: '*.example.edu', action: 'report' },
  { name: 'head-only', method: 'HEAD', origin: 'status.example.com', action: 'allow' },
  { name: 'gov-slow', origin: '*.gov.example', minDelay: '5s' },
  { name: 'bench-origins', origin: '127.0.0.1', maxConcurrency: 4 },
];
