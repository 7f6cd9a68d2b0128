/**
 * Loopback origins in their own process, so the timestamps they record are
 * not delayed by the test's client load (each process has its own event loop).
 * argv[2]: JSON `{ "<name>": { "robots"?: string, "robotsStatus"?: number, "pageDelayMs"?: number,
 *   "robotsFirstDelayMs"?: number, "paths"?: { "<path>": { "status"?, "retryAfter"?, "delayMs"? } } } }`:
 *   `robotsFirstDelayMs` delays the first robots.txt answer only; `paths` answers those paths
 *   (query excluded) otherwise than a page.
 * argv[3] (optional): JSON `{ "certPem": string, "keyPem": string }`: serve HTTPS with that certificate.
 * Prints one JSON line `{ "<name>": port }` when listening.
 * `GET /__hits` on an origin answers its recorded hits (not recorded itself).
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { systemClock } from '../../src/clock.js';

interface SiteSpec {
  robots?: string;
  robotsStatus?: number;
  pageDelayMs?: number;
  robotsFirstDelayMs?: number;
  paths?: Record<string, { status?: number; retryAfter?: string; delayMs?: number }>;
}

const specs = JSON.parse(process.argv[2] ?? '{}') as Record<string, SiteSpec>;
const tls = process.argv[3] ? (JSON.parse(process.argv[3]) as { certPem: string; keyPem: string }) : undefined;
const ports: Record<string, number> = {};

for (const [name, spec] of Object.entries(specs)) {
  const hits: Array<{ method: string; url: string; atMs: number; userAgent: string | undefined }> = [];
  let robotsAnswered = 0;
  const handler: http.RequestListener = (req, res) => {
    if (req.url === '/__hits') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(hits));
      return;
    }
    hits.push({ method: req.method ?? '', url: req.url ?? '', atMs: systemClock.nowMs(), userAgent: req.headers['user-agent'] });
    if (req.url === '/robots.txt') {
      const answerRobots = (): void => {
        res.writeHead(spec.robotsStatus ?? 200, { 'content-type': 'text/plain' });
        res.end(spec.robots ?? '');
      };
      if (robotsAnswered++ === 0 && spec.robotsFirstDelayMs) setTimeout(answerRobots, spec.robotsFirstDelayMs);
      else answerRobots();
      return;
    }
    const special = spec.paths?.[(req.url ?? '').split('?')[0]!];
    if (special) {
      setTimeout(() => {
        res.writeHead(special.status ?? 200, { 'content-type': 'text/plain', ...(special.retryAfter ? { 'retry-after': special.retryAfter } : {}) });
        res.end(`answer ${req.url}\n`);
      }, special.delayMs ?? 0);
      return;
    }
    const answer = (): void => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`page ${req.url}\n`);
    };
    if (spec.pageDelayMs) setTimeout(answer, spec.pageDelayMs);
    else answer();
  };
  const server = tls ? https.createServer({ cert: tls.certPem, key: tls.keyPem }, handler) : http.createServer(handler);
  // Like real servers (Node 5 s, nginx 75 s): undici reuses a connection only while more than 2 s of the
  // server's keep-alive hint are left, so a short hint would make every request open a new connection.
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ports[name] = (server.address() as AddressInfo).port;
}
process.stdout.write(JSON.stringify(ports) + '\n');
// Ends with its parent: stdin closes when the test process goes away.
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
