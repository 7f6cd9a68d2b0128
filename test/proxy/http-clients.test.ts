/**
 * Real HTTP clients through the plain-HTTP proxy (issue #3): `curl -x` and
 * Python's urllib with a ProxyHandler as child processes, undici's
 * `ProxyAgent` in process. Each fetches an allowed and a disallowed URL; the
 * robots.txt only allows the client's own product token, so an allowed page
 * also proves its User-Agent went through the proxy.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { ProxyAgent, request } from 'undici';
import { startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const ROBOTS = 'User-agent: ExampleBot\nDisallow: /private/\n\nUser-agent: *\nDisallow: /\n';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/** What every client reports. */
interface ClientAnswer {
  status: number;
  decision: string;
  body: string;
}

/** The environment without proxy variables, so nothing but the explicit proxy setting applies. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (/_proxy$/i.test(name)) delete env[name];
  return env;
}

function hasCommand(name: string): boolean {
  return spawnSync('which', [name], { encoding: 'utf8' }).status === 0;
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: cleanEnv(), timeout: 30_000, maxBuffer: 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} failed: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

async function viaCurl(proxyUrl: string, url: string): Promise<ClientAnswer> {
  // -q: ignore ~/.curlrc; -i: status line and headers before the body.
  const out = await run('curl', ['-q', '-sS', '-i', '--max-time', '20', '-x', proxyUrl, '-A', UA, url]);
  const split = out.indexOf('\r\n\r\n');
  const head = out.slice(0, split);
  const status = Number(/^HTTP\/[\d.]+ (\d{3})/.exec(head)?.[1]);
  const decision = /^x-robots-proxy-decision: *(.*)$/im.exec(head)?.[1]?.trim() ?? '';
  return { status, decision, body: out.slice(split + 4) };
}

const PYTHON_CLIENT = `
import json, sys, urllib.request, urllib.error
proxy, url, ua = sys.argv[1:4]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({'http': proxy}))
req = urllib.request.Request(url, headers={'User-Agent': ua})
try:
    with opener.open(req, timeout=20) as r:
        status, headers, body = r.status, r.headers, r.read()
except urllib.error.HTTPError as e:
    status, headers, body = e.code, e.headers, e.read()
print(json.dumps({'status': status, 'decision': headers.get('x-robots-proxy-decision', ''), 'body': body.decode('utf-8', 'replace')}))
`;

async function viaPython(proxyUrl: string, url: string): Promise<ClientAnswer> {
  return JSON.parse(await run('python3', ['-c', PYTHON_CLIENT, proxyUrl, url, UA])) as ClientAnswer;
}

async function viaUndici(agent: ProxyAgent, url: string): Promise<ClientAnswer> {
  const r = await request(url, { dispatcher: agent, headers: { 'user-agent': UA } });
  return { status: r.statusCode, decision: String(r.headers['x-robots-proxy-decision'] ?? ''), body: await r.body.text() };
}

describe('real clients through the plain-HTTP proxy', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  // Absolute-form requests for http:// targets (undici 7 defaults to a CONNECT tunnel).
  let agent: ProxyAgent;

  before(async () => {
    proxy = await startTestProxy({ https: { mode: 'tunnel' } });
    origin = await startOrigin((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url === '/robots.txt' ? ROBOTS : `page ${req.url}`);
    });
    agent = new ProxyAgent({ uri: proxy.proxyUrl, proxyTunnel: false });
  });
  after(async () => {
    await agent?.close();
    await proxy?.close();
    await origin?.close();
  });

  const clients: Array<{ name: string; available: () => boolean; fetch: (url: string) => Promise<ClientAnswer> }> = [
    { name: 'curl -x', available: () => hasCommand('curl'), fetch: (url) => viaCurl(proxy.proxyUrl, url) },
    { name: 'python urllib ProxyHandler', available: () => hasCommand('python3'), fetch: (url) => viaPython(proxy.proxyUrl, url) },
    { name: 'undici ProxyAgent', available: () => true, fetch: (url) => viaUndici(agent, url) },
  ];

  for (const client of clients) {
    it(`${client.name}: an allowed page passes, a disallowed one gets 403`, async (t) => {
      if (!client.available()) return t.skip(`${client.name} is not installed`);
      const path = `/page/${client.name.split(' ')[0]}`;
      const allowed = await client.fetch(`${origin.url}${path}`);
      assert.equal(allowed.status, 200, allowed.body);
      assert.equal(allowed.decision, 'allow; reason=no-matching-rule');
      assert.equal(allowed.body, `page ${path}`);
      const hit = origin.hits.find((h) => h.url === path);
      assert.ok(hit, 'the origin saw the allowed page');
      assert.equal(hit.headers['user-agent'], UA);
      assert.match(String(hit.headers['via']), /robots-proxy-/);

      const denied = await client.fetch(`${origin.url}/private/${client.name.split(' ')[0]}`);
      assert.equal(denied.status, 403);
      assert.equal(denied.decision, 'deny; reason=rule-disallow');
      assert.ok(!origin.hits.some((h) => h.url.startsWith('/private/')), 'nothing under /private/ reached the origin');
    });
  }
});
