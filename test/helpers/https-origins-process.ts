/**
 * Loopback HTTPS origins in their own process (the HTTPS twin of
 * origins-process.ts), so the timestamps they record are not delayed by the
 * test's client load.
 * argv[2]: JSON `{ "<name>": { "robots"?: string, "robotsStatus"?: number, "pageDelayMs"?: number } }`.
 * argv[3]: JSON `{ "certPem": string, "keyPem": string }`: the server certificate every origin presents.
 * Prints one JSON line `{ "<name>": port }` when listening.
 * `GET /__hits` on an origin answers its recorded hits (not recorded itself).
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';

interface SiteSpec {
  robots?: string;
  robotsStatus?: number;
  pageDelayMs?: number;
}

const specs = JSON.parse(process.argv[2] ?? '{}') as Record<string, SiteSpec>;
const tlsFiles = JSON.parse(process.argv[3] ?? '{}') as { certPem: string; keyPem: string };
const ports: Record<string, number> = {};

for (const [name, spec] of Object.entries(specs)) {
  const hits: Array<{ method: string; url: string; atMs: number; userAgent: string | undefined }> = [];
  const server = https.createServer({ cert: tlsFiles.certPem, key: tlsFiles.keyPem }, (req, res) => {
    if (req.url === '/__hits') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(hits));
      return;
    }
    hits.push({ method: req.method ?? '', url: req.url ?? '', atMs: performance.timeOrigin + performance.now(), userAgent: req.headers['user-agent'] });
    if (req.url === '/robots.txt') {
      res.writeHead(spec.robotsStatus ?? 200, { 'content-type': 'text/plain' });
      res.end(spec.robots ?? '');
      return;
    }
    const answer = (): void => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`page ${req.url}\n`);
    };
    if (spec.pageDelayMs) setTimeout(answer, spec.pageDelayMs);
    else answer();
  });
  // Node's default. undici closes a connection whose Keep-Alive hint is at most its 2 s
  // threshold after one response, so a shorter value makes the proxy open (and, with
  // upstream.caFile, build a TLS context for) a new upstream connection per request.
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ports[name] = (server.address() as AddressInfo).port;
}
process.stdout.write(JSON.stringify(ports) + '\n');
// Ends with its parent: stdin closes when the test process goes away.
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
