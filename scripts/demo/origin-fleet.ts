/**
 * The demo's origins, run in a child process (see `origins-child.ts`) so
 * that the request times they record are not skewed by the proxy and the
 * crawler, which share this process's event loop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildHit, ChildSite, FromChild, ToChild } from './origins-child.js';

/** Origins running in the child process. */
export interface OriginFleet {
  /** `http://127.0.0.1:<port>`, in the order of the sites given. */
  urls: string[];
  /** What each origin has received so far (timestamps on the child's clock, ms). */
  hits(): Promise<ChildHit[][]>;
  /** Closes every origin and waits for the child to end. */
  close(): Promise<void>;
}

const CHILD_SCRIPT = fileURLToPath(new URL('./origins-child.ts', import.meta.url));
const START_TIMEOUT_MS = 30_000;

function nextMessage<T extends FromChild['type']>(child: ChildProcess, type: T): Promise<Extract<FromChild, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`origins process: no "${type}" message in ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    const onMessage = (message: FromChild): void => {
      if (message.type !== type) return;
      cleanup();
      resolve(message as Extract<FromChild, { type: T }>);
    };
    const onExit = (code: number | null): void => fail(new Error(`origins process exited (code ${code})`));
    const cleanup = (): void => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const fail = (error: Error): void => {
      cleanup();
      reject(error);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/**
 * Starts one origin per site in a child process (`node --import tsx`), each on its own 127.0.0.1 port.
 * @throws Error when the child does not come up within 30 s.
 */
export async function startOriginFleet(sites: ChildSite[], pageDelayMs: number): Promise<OriginFleet> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD_SCRIPT], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const post = (message: ToChild): void => {
    child.send(message);
  };
  const ready = nextMessage(child, 'ready');
  post({ type: 'start', sites, pageDelayMs });
  let ports: number[];
  try {
    ({ ports } = await ready);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    urls: ports.map((port) => `http://127.0.0.1:${port}`),
    async hits() {
      const answer = nextMessage(child, 'hits');
      post({ type: 'hits' });
      return (await answer).hits;
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(killer);
          resolve();
        });
        if (child.connected) post({ type: 'close' });
        else child.kill('SIGTERM');
      }),
  };
}
