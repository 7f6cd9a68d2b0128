/**
 * Child process of the demo: the origins. Each one listens on its own
 * 127.0.0.1 port, answers /robots.txt with a real robots.txt file read by path (or a
 * status), and any other path with a 200 page after a few milliseconds. It
 * records when each request reached it. Running in a process of its own keeps
 * those timestamps free of the proxy's and the crawler's event-loop load.
 *
 * Protocol (IPC channel): the parent sends `{ type: 'start', sites, pageDelayMs }`,
 * the child answers `{ type: 'ready', ports }`; `{ type: 'hits' }` is answered
 * with `{ type: 'hits', hits }` (one array per origin); `{ type: 'close' }`
 * closes every server and lets the process end.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';

/** An origin to start: robots.txt from `robotsFile`, else `robotsVersions` in turn, else `robotsStatus`. */
export interface ChildSite {
  robotsFile?: string;
  robotsStatus?: number;
  /** Bodies served in turn (fetch n gets version min(n, last)), each with `Cache-Control: max-age=<maxAgeSeconds>`. */
  robotsVersions?: readonly string[];
  maxAgeSeconds?: number;
}

/** One request as the origin saw it. */
export interface ChildHit {
  path: string;
  userAgent: string;
  /** `performance.now()` in the child when its request handler ran, ms. */
  atMs: number;
}

/** Messages from the parent. */
export type ToChild = { type: 'start'; sites: ChildSite[]; pageDelayMs: number } | { type: 'hits' } | { type: 'close' };
/** Messages to the parent. */
export type FromChild = { type: 'ready'; ports: number[] } | { type: 'hits'; hits: ChildHit[][] };

async function startOrigin(site: ChildSite, pageDelayMs: number, hits: ChildHit[]): Promise<http.Server> {
  const robotsBody = site.robotsFile === undefined ? undefined : readFileSync(site.robotsFile);
  let robotsFetches = 0;
  const server = http.createServer((req, res) => {
    hits.push({ path: req.url ?? '', userAgent: req.headers['user-agent'] ?? '', atMs: performance.now() });
    if (req.url === '/robots.txt' && site.robotsVersions !== undefined && site.robotsVersions.length > 0) {
      const body = site.robotsVersions[Math.min(robotsFetches++, site.robotsVersions.length - 1)]!;
      res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': `max-age=${site.maxAgeSeconds ?? 60}` });
      res.end(body);
      return;
    }
    if (req.url === '/robots.txt') {
      const status = robotsBody === undefined ? (site.robotsStatus ?? 404) : 200;
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(robotsBody ?? `status ${status}\n`);
      return;
    }
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<html><body>page ${req.url}</body></html>\n`);
    }, pageDelayMs);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return server;
}

function send(message: FromChild): void {
  process.send?.(message);
}

let servers: http.Server[] = [];
const hits: ChildHit[][] = [];

process.on('message', (message: ToChild) => {
  if (message.type === 'start') {
    void Promise.all(
      message.sites.map((site, i) => {
        hits[i] = [];
        return startOrigin(site, message.pageDelayMs, hits[i]!);
      }),
    ).then((started) => {
      servers = started;
      send({ type: 'ready', ports: servers.map((s) => (s.address() as AddressInfo).port) });
    });
  } else if (message.type === 'hits') {
    send({ type: 'hits', hits });
  } else if (message.type === 'close') {
    for (const server of servers) {
      server.close();
      server.closeAllConnections();
    }
    process.disconnect?.();
  }
});
// The parent going away (even abruptly) ends the child.
process.on('disconnect', () => {
  for (const server of servers) server.closeAllConnections();
  process.exit(0);
});
