/**
 * A private `redis-server` for one test file: the binary from the PATH, on a
 * free loopback port, no persistence, in a temp directory. Never the
 * machine's shared instance (6379), never FLUSHALL. Where the binary is
 * missing, {@link REDIS_SKIP} is the one line the tests skip with.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, after } from 'node:test';
import { Redis } from 'ioredis';
import { onStopAll, track } from './processes.js';

/** Undefined when `redis-server` runs; else the reason the Redis tests are skipped. */
export const REDIS_SKIP: string | undefined =
  spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0 ? undefined : 'redis-server is not on the PATH (.ci/run installs it): Redis tests skipped';

/** A running private Redis. */
export interface RedisServer {
  port: number;
  url: string;
  /** A client for the test's own checks (INFO, key reads); closed by {@link RedisServer.stop}. */
  client: Redis;
  /** Stops the server (SIGTERM, no save) and waits for it to exit. Idempotent. */
  stop(): Promise<void>;
  /** Starts it again on the same port (after {@link RedisServer.stop}); the data is gone. */
  restart(): Promise<void>;
  /** Sends `signal` to the server process (SIGSTOP: it stops answering with its connections open; SIGCONT resumes it). */
  signal(signal: NodeJS.Signals): void;
  /** Stops it for good and removes its directory. */
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts a private redis-server on a free port; resolves once it answers PING. */
export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  if (port === 6379) throw new Error('refusing the shared Redis port');
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-redis-'));
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    child = track(spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--protected-mode', 'no'], { stdio: 'ignore' }));
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: 0 });
    probe.on('error', () => undefined);
    // Disconnected however this ends: a probe left reconnecting every 50 ms keeps the test file's process alive.
    try {
      const deadline = Date.now() + 10_000;
      for (;;) {
        try {
          if (probe.status !== 'ready') await probe.connect().catch(() => undefined);
          if ((await probe.ping()) === 'PONG') break;
        } catch {
          // not up yet
        }
        if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      probe.disconnect();
    }
  };
  try {
    await launch();
  } catch (error) {
    await stop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  client.on('error', () => undefined);
  async function stop(): Promise<void> {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGTERM');
      setTimeout(() => running.kill('SIGKILL'), 3000).unref();
    });
  }
  const close = async (): Promise<void> => {
    unregister();
    client.disconnect();
    await stop();
    rmSync(dir, { recursive: true, force: true });
  };
  // A test whose `before` failed after this started may never reach its `after`: the client reconnects
  // every 100 ms, which would keep the file's process alive, so it is closed with the tracked processes.
  const unregister = onStopAll(close);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    client,
    stop,
    restart: launch,
    signal: (signal) => void child?.kill(signal),
    close,
  };
}

/**
 * Registers, in the calling `describe`, one private redis-server for its tests: started
 * before them and handed to `started`; after them, every connection in `opened` (those the
 * tests opened: closed here too, so a failed test leaves none open) and the server are closed.
 */
export function useRedisServer(opened: readonly { close(): Promise<unknown> }[], started: (redis: RedisServer) => void): void {
  let redis: RedisServer | undefined;
  before(async () => {
    redis = await startRedisServer();
    started(redis);
  });
  after(async () => {
    await Promise.all(opened.map((c) => c.close()));
    await redis?.close();
  });
}
