/**
 * Proxy authentication end to end (issue 8, "Who may use it"): real clients give credentials
 * (curl --proxy-user, Python requests with credentials in the proxy URL, undici's ProxyAgent with
 * a token), for plain HTTP and through CONNECT (the proxy's CA from its stateDir); missing and
 * wrong credentials get 407 with the challenge; failed attempts are limited per client address;
 * the credentials file is reloaded; no secret reaches the log.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { writeFileSync, appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { ProxyAgent, request } from 'undici';
import { captureLogs, startOrigin, startTestProxy, siteHandler, type TestOrigin, type LogCapture } from '../helpers/harness.js';
import { createTestPki, runCurl, startTlsOrigin, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';

const UA = 'ExampleBot/1.0 (+https://bot.example/info)';
const ROBOTS = 'User-agent: ExampleBot\nDisallow: /private/\n\nUser-agent: *\nAllow: /\n';
const ALICE_PASSWORD = 'alice-Pa55:word';
const BOB_PASSWORD = 'b0b-secret';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** A credentials file with alice (identity alice) and bob (identity lab-scrapers), bcrypt cost 4 (fast tests). */
function writeCredentials(extra = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-users-'));
  const file = join(dir, 'users');
  writeFileSync(file, `# test users\nalice:${bcrypt.hashSync(ALICE_PASSWORD, 4)}\nbob:${bcrypt.hashSync(BOB_PASSWORD, 4)}:lab-scrapers\n${extra}`);
  return file;
}

/** One request through the proxy, absolute-form, from `localAddress`. */
function get(proxyPort: number, url: string, options: { headers?: http.OutgoingHttpHeaders; localAddress?: string } = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: proxyPort, path: url, headers: { 'user-agent': UA, ...options.headers }, agent: false, ...(options.localAddress ? { localAddress: options.localAddress } : {}) },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function hasPythonRequests(): boolean {
  return spawnSync('python3', ['-c', 'import requests'], { encoding: 'utf8' }).status === 0;
}

const PYTHON_CLIENT = `
import json, sys, requests
proxy, url, ua, ca = sys.argv[1:5]
r = requests.get(url, proxies={'http': proxy, 'https': proxy}, headers={'User-Agent': ua}, verify=ca, timeout=20)
print(json.dumps({'status': r.status_code, 'decision': r.headers.get('x-robots-proxy-decision', ''), 'body': r.text}))
`;

function viaPython(proxyUrl: string, url: string, ca: string): Promise<{ status: number; decision: string; body: string }> {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (/_proxy$/i.test(name) || name === 'REQUESTS_CA_BUNDLE' || name === 'CURL_CA_BUNDLE') delete env[name];
  return new Promise((resolve, reject) => {
    execFile('python3', ['-c', PYTHON_CLIENT, proxyUrl, url, UA, ca], { env, timeout: 30_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`python3 failed: ${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as { status: number; decision: string; body: string });
    });
  });
}

describe('proxy authentication with real clients', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  let tlsOrigin: TlsOrigin;
  let logs: LogCapture;
  let proxyCaFile: string;
  let credentialsFile: string;

  before(async () => {
    const pki = await createTestPki();
    origin = await startOrigin(siteHandler({ robots: ROBOTS }));
    tlsOrigin = await startTlsOrigin((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url === '/robots.txt' ? ROBOTS : `tls page ${req.url}\n`);
    }, { cert: pki.certPem, key: pki.keyPem });
    credentialsFile = writeCredentials();
    logs = captureLogs();
    const config = {
      listen: { host: '127.0.0.1', port: 0 },
      admin: { host: '127.0.0.1', port: 0 },
      stateDir: mkdtempSync(join(tmpdir(), 'robots-proxy-state-')),
      access: { clients: ['127.0.0.1/32'], credentialsFile },
      upstream: { allowPrivateNetworks: true, caFile: writeTempFile('upstream-ca.pem', pki.caPem) },
      log: { level: 'info' },
    };
    // JSON is YAML: the file POST /reload re-reads.
    const configPath = writeTempFile('config.yaml', JSON.stringify(config));
    proxy = await startTestProxy(config, { logger: logs.logger, configPath });
    proxyCaFile = proxy.ca!.certPath;
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
    await tlsOrigin?.close();
  });

  it('answers 407 with a Basic challenge when credentials are missing or wrong, and nothing reaches the origin', async () => {
    const before = origin.hits.length;
    const missing = await get(proxy.proxyAddress.port, `${origin.url}/page`);
    assert.equal(missing.status, 407);
    assert.equal(missing.headers['proxy-authenticate'], 'Basic realm="robots-proxy", charset="UTF-8"');
    assert.equal(missing.headers['x-robots-proxy-decision'], 'deny; reason=proxy-auth-required');
    const wrong = await get(proxy.proxyAddress.port, `${origin.url}/page`, { headers: { 'proxy-authorization': basic('alice', 'not-it') } });
    assert.equal(wrong.status, 407);
    assert.equal(origin.hits.length, before, 'no robots.txt fetch, no page');
  });

  it('curl --proxy-user: plain HTTP and HTTPS through CONNECT', async () => {
    const plain = await runCurl(['-q', '-x', proxy.proxyUrl, '--proxy-user', `alice:${ALICE_PASSWORD}`, '-A', UA, `${origin.url}/page`]);
    assert.equal(plain.status, 200, plain.stderr);
    assert.equal(plain.body, 'page /page\n');
    const refused = await runCurl(['-q', '-x', proxy.proxyUrl, '--proxy-user', `alice:${ALICE_PASSWORD}`, '-A', UA, `${origin.url}/private/x`]);
    assert.equal(refused.status, 403);
    assert.match(refused.body, /identity: +alice \(proxy credentials\)/);
    const tunnelled = await runCurl(['-q', '-x', proxy.proxyUrl, '--proxy-user', `alice:${ALICE_PASSWORD}`, '--cacert', proxyCaFile, '-A', UA, `${tlsOrigin.origin}/secure`]);
    assert.equal(tunnelled.status, 200, tunnelled.stderr);
    assert.equal(tunnelled.body, 'tls page /secure\n');
    const noCredentials = await runCurl(['-q', '-x', proxy.proxyUrl, '--cacert', proxyCaFile, '-A', UA, `${tlsOrigin.origin}/secure`]);
    assert.notEqual(noCredentials.exitCode, 0, 'the CONNECT is refused, so curl cannot open the tunnel');
    assert.match(noCredentials.stderr, /407/);
  });

  it('Python requests with credentials in the proxy URL: plain HTTP and HTTPS through CONNECT', { skip: hasPythonRequests() ? false : 'python3 with requests is not installed' }, async () => {
    const proxyWithCredentials = `http://bob:${encodeURIComponent(BOB_PASSWORD)}@127.0.0.1:${proxy.proxyAddress.port}`;
    const plain = await viaPython(proxyWithCredentials, `${origin.url}/py`, proxyCaFile);
    assert.deepEqual([plain.status, plain.body], [200, 'page /py\n']);
    const tunnelled = await viaPython(proxyWithCredentials, `${tlsOrigin.origin}/py-secure`, proxyCaFile);
    assert.deepEqual([tunnelled.status, tunnelled.body], [200, 'tls page /py-secure\n']);
    const refused = await viaPython(proxyWithCredentials, `${tlsOrigin.origin}/private/py`, proxyCaFile);
    assert.equal(refused.status, 403);
  });

  it('undici ProxyAgent with a token: every request inside its CONNECT tunnels is covered', async () => {
    const agent = new ProxyAgent({ uri: proxy.proxyUrl, token: basic('alice', ALICE_PASSWORD), requestTls: { ca: proxy.ca!.certPem } });
    try {
      for (const url of [`${origin.url}/u1`, `${origin.url}/u2`, `${tlsOrigin.origin}/u3`, `${tlsOrigin.origin}/u4`]) {
        const r = await request(url, { dispatcher: agent, headers: { 'user-agent': UA } });
        assert.equal(r.statusCode, 200, url);
        await r.body.text();
      }
    } finally {
      await agent.close();
    }
    const lines = logs.lines.filter((l) => l['msg'] === 'request' && /\/u[1-4]$/.test(String(l['url'])));
    assert.equal(lines.length, 4);
    for (const line of lines) assert.equal(line['identity'], 'alice');
    assert.ok(lines.every((l) => l['via'] === 'http-tunnelled' || l['via'] === 'https-intercepted'), 'undici tunnels http: URLs too');
  });

  it('never writes a password or the credentials header to the log', () => {
    const text = JSON.stringify(logs.lines);
    for (const secret of [ALICE_PASSWORD, BOB_PASSWORD, Buffer.from(`alice:${ALICE_PASSWORD}`).toString('base64'), Buffer.from(`bob:${BOB_PASSWORD}`).toString('base64')]) {
      assert.ok(!text.includes(secret), 'a secret reached the log');
    }
    assert.ok(logs.lines.some((l) => (l['decision'] as { reason?: string } | undefined)?.reason === 'proxy-auth-required'), 'refusals are logged');
  });

  it('reloads the credentials file on POST /reload; a bad file fails the reload and keeps the old one', async () => {
    const carol = 'carol-pw';
    appendFileSync(credentialsFile, `carol:${bcrypt.hashSync(carol, 4)}\n`);
    const reloaded = await fetch(`${proxy.adminUrl}/reload`, { method: 'POST' });
    assert.equal(reloaded.status, 200);
    const answer = (await reloaded.json()) as { applied: string[]; credentials: unknown };
    assert.deepEqual(answer.credentials, { users: 3, added: 1, removed: 0, changed: 0 }, 'the answer counts the added user');
    assert.ok(answer.applied.includes('access.credentialsFile'), 'a changed file is among the applied keys');
    const unchanged = (await (await fetch(`${proxy.adminUrl}/reload`, { method: 'POST' })).json()) as { applied: string[]; credentials: unknown };
    assert.deepEqual(unchanged.credentials, { users: 3, added: 0, removed: 0, changed: 0 });
    assert.ok(!unchanged.applied.includes('access.credentialsFile'), 'the same file again changes nothing');
    assert.equal((await get(proxy.proxyAddress.port, `${origin.url}/c`, { headers: { 'proxy-authorization': basic('carol', carol) } })).status, 200);
    appendFileSync(credentialsFile, 'dave:plain-text-password\n');
    const bad = await fetch(`${proxy.adminUrl}/reload`, { method: 'POST' });
    assert.equal(bad.status, 422);
    const body = (await bad.json()) as { error: string; message: string; key: string };
    assert.equal(body.key, 'access.credentialsFile');
    assert.match(body.message, /users:5: user "dave" has no bcrypt hash/);
    assert.doesNotMatch(body.message, /plain-text-password/);
    assert.equal((await get(proxy.proxyAddress.port, `${origin.url}/c2`, { headers: { 'proxy-authorization': basic('carol', carol) } })).status, 200, 'the previous file stays in force');
  });
});

describe('credentials on a keep-alive connection', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  let credentialsFile: string;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: ROBOTS }));
    credentialsFile = writeCredentials();
    const config = { access: { clients: ['127.0.0.1/32'], credentialsFile } };
    proxy = await startTestProxy(config, { configPath: writeTempFile('config.yaml', JSON.stringify({ ...config, listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 }, upstream: { allowPrivateNetworks: true } })) });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('are checked on every request: other, missing or reloaded-away credentials on the same connection get 407', async () => {
    // One socket for every request: the proxy remembers what it verified on a connection, and must
    // still refuse whatever differs from it, and what a reload took away.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const ports = new Set<number>();
    const send = (path: string, authorization?: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port: proxy.proxyAddress.port, path: `${origin.url}${path}`, agent, headers: { 'user-agent': UA, ...(authorization ? { 'proxy-authorization': authorization } : {}) } },
          (res) => {
            ports.add(res.socket.localPort ?? 0);
            res.resume().on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject).end();
      });
    try {
      assert.equal(await send('/1', basic('alice', ALICE_PASSWORD)), 200);
      assert.equal(await send('/2', basic('alice', ALICE_PASSWORD)), 200, 'the same credentials again');
      assert.equal(await send('/3', basic('alice', 'not-it')), 407, 'a wrong password after a right one');
      assert.equal(await send('/4'), 407, 'no credentials after right ones');
      assert.equal(await send('/5', basic('bob', BOB_PASSWORD)), 200, 'another user on the same connection');
      assert.equal(await send('/6', basic('alice', ALICE_PASSWORD)), 200);
      // alice's password changes in the file; the connection that verified the old one stays open.
      const text = readFileSync(credentialsFile, 'utf8').replace(/^alice:.*$/m, `alice:${bcrypt.hashSync('alice-new-password', 4)}`);
      writeFileSync(credentialsFile, text);
      assert.equal((await fetch(`${proxy.adminUrl}/reload`, { method: 'POST' })).status, 200);
      assert.equal(await send('/7', basic('alice', ALICE_PASSWORD)), 407, 'the old password, after the reload');
      assert.equal(await send('/8', basic('alice', 'alice-new-password')), 200, 'the new one');
      assert.equal(ports.size, 1, `every request went over one connection (client ports ${[...ports].join(', ')})`);
    } finally {
      agent.destroy();
    }
  });
});

describe('failed credential checks are limited per client address', () => {
  let proxy: Proxy;
  let origin: TestOrigin;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: ROBOTS }));
    proxy = await startTestProxy({ access: { clients: ['127.0.0.0/8'], credentialsFile: writeCredentials(), maxAuthFailures: 3, authFailureWindow: '1m' } });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('past the budget an address gets 429 without a check, even with the right password; another address is not slowed', async () => {
    const port = proxy.proxyAddress.port;
    for (let i = 0; i < 3; i++) {
      const r = await get(port, `${origin.url}/g${i}`, { headers: { 'proxy-authorization': basic('alice', `guess-${i}`) }, localAddress: '127.0.0.3' });
      assert.equal(r.status, 407, `guess ${i}`);
    }
    const throttled = await get(port, `${origin.url}/g`, { headers: { 'proxy-authorization': basic('alice', ALICE_PASSWORD) }, localAddress: '127.0.0.3' });
    assert.equal(throttled.status, 429);
    assert.equal(throttled.headers['x-robots-proxy-decision'], 'deny; reason=proxy-auth-throttled');
    const retryAfter = Number(throttled.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${throttled.headers['retry-after']}`);
    const other = await get(port, `${origin.url}/other`, { headers: { 'proxy-authorization': basic('alice', ALICE_PASSWORD) }, localAddress: '127.0.0.4' });
    assert.equal(other.status, 200);
    const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    assert.match(metrics, /robots_proxy_requests_total\{verdict="deny",reason="proxy-auth-throttled"\} 1\b/);
    assert.match(metrics, /robots_proxy_requests_total\{verdict="deny",reason="proxy-auth-required"\} 3\b/);
  });
});
