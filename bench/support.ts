/**
 * Pieces the benchmarks share: child roles over IPC, CPU accounting per
 * process, medians. Benchmarks print figures; nothing here asserts.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

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
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
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

/** Forks `script` (a bench file run with tsx) in the role named by `args[0]`, with an IPC channel. */
export function forkRole(script: string, ...args: string[]): ChildProcess {
  return fork(script, args, { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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
