/**
 * HTTPS interception (issue #4, "Benchmark"):
 * 1. Keep-alive req/s and p50/p99 through robots-proxy for HTTPS (intercept
 *    mode: CONNECT, TLS terminated with a leaf signed by the proxy CA, which
 *    the client trusts; the origin's certificate comes from a test CA made
 *    here and given to the proxy with `upstream.caFile`) against plain HTTP
 *    through the same proxy. Target: HTTPS >= 50% of HTTP. Rounds interleaved,
 *    medians reported.
 * 2. The first request to a new host through a fresh tunnel, ms, with a cold
 *    and a warm leaf-certificate cache. Hosts are loopback IP literals
 *    127.0.0.k (`*.localhost` names do not resolve here: /etc/hosts + DNS).
 *    Cold: a host never seen. Warm: the host's leaf was signed by an earlier
 *    request to another port on it, so the measured request is also to a new
 *    origin (robots.txt fetch, new upstream pool) and differs from the cold one
 *    only by the signing. Also: a new tunnel to an origin already seen, and a
 *    request on an open tunnel.
 * Prints figures; asserts nothing. Contacts 127.0.0.0/8 only. Runtime ~60 s.
 *
 * Processes: origins (HTTP and HTTPS) in a child process; the throughput
 * load generator (undici `ProxyAgent`, the same client for both schemes) in
 * another; robots-proxy and the first-request client in this process.
 */
import { webcrypto } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { createSecureContext, rootCertificates } from 'node:tls';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ProxyAgent, request, type Dispatcher } from 'undici';
import { forkRole, median, nextMessage, withCpu, type LoadResult } from './support.js';

const CONNECTIONS = 32;
const ROUNDS = 5;
const RUN_MS = 3000;
const RAMP_MS = 500;
const TRIALS = 8;
const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const ROBOTS_TXT = 'User-agent: *\nDisallow: /private/\n';
const PAGE_PATH = '/page/1?q=1';
/** 127.0.0.<COLD_BASE + i>: cold hosts; <WARM_BASE + i>: warm hosts; .9: the very first leaf. */
const COLD_BASE = 10;
const WARM_BASE = 40;
const FIRST_HOST = '127.0.0.9';

interface OriginSpec {
  certPem: string;
  keyPem: string;
  /** HTTPS listeners: [ip, how many ports]. */
  https: Array<[string, number]>;
}
interface OriginPorts {
  http: number;
  https: Record<string, number[]>;
}
interface LoadJob {
  proxyUrl: string;
  target: string;
  caPem: string | null;
  runMs: number;
}
// ---------------------------------------------------------------- child roles

async function runOrigins(spec: OriginSpec): Promise<void> {
  const page = Buffer.from('page\n'.repeat(20));
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    if (req.url === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(ROBOTS_TXT);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(page.length) });
    res.end(page);
  };
  const listen = async (server: http.Server, host: string): Promise<number> => {
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    return (server.address() as AddressInfo).port;
  };
  const ports: OriginPorts = { http: await listen(http.createServer(handler), '127.0.0.1'), https: {} };
  for (const [ip, count] of spec.https) {
    ports.https[ip] = [];
    for (let i = 0; i < count; i++) ports.https[ip]!.push(await listen(https.createServer({ key: spec.keyPem, cert: spec.certPem }, handler), ip));
  }
  process.send!(ports);
  process.on('disconnect', () => process.exit(0));
}

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/** Child role: CONNECTIONS request loops through one ProxyAgent; measures after a ramp-up. */
function runLoad(): void {
  process.on('message', async (job: LoadJob) => {
    const agent = new ProxyAgent({
      uri: job.proxyUrl,
      ...(job.caPem ? { requestTls: { ca: job.caPem } } : { proxyTunnel: false }),
      connections: CONNECTIONS,
    });
    const latencies: number[] = [];
    let ok = 0;
    let bad = 0;
    const t0 = performance.now();
    const measureFrom = t0 + RAMP_MS;
    const end = measureFrom + job.runMs;
    const loop = async (): Promise<void> => {
      while (performance.now() < end) {
        const start = performance.now();
        try {
          const r = await request(job.target, { dispatcher: agent, headers: { 'user-agent': BOT_UA } });
          await r.body.dump();
          if (start >= measureFrom) {
            if (r.statusCode === 200) ok++;
            else bad++;
            latencies.push(performance.now() - start);
          }
        } catch {
          if (start >= measureFrom) bad++;
        }
      }
    };
    await Promise.all(Array.from({ length: CONNECTIONS }, loop));
    const elapsedS = (performance.now() - measureFrom) / 1000;
    await agent.close();
    latencies.sort((a, b) => a - b);
    const result: LoadResult = { rps: ok / elapsedS, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), ok, bad };
    process.send!(result);
  });
  process.on('disconnect', () => process.exit(0));
}

// ------------------------------------------------------------------ the driver

/** A test CA for the upstream origins and one leaf for all their addresses (ECDSA P-256). */
async function makeUpstreamCerts(ips: string[]): Promise<{ caPem: string; certPem: string; keyPem: string }> {
  const { x509 } = await import('../src/proxy/tls/x509-support.js');
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const notBefore = new Date(Date.now() - 3600_000);
  const notAfter = new Date(Date.now() + 86400_000);
  const caKeys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=robots-proxy bench upstream test CA',
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const leafKeys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
    subject: 'CN=127.0.0.1',
    issuer: ca.subject,
    notBefore,
    notAfter,
    publicKey: leafKeys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: 'localhost' }, ...ips.map((ip) => ({ type: 'ip' as const, value: ip }))]),
      await x509.AuthorityKeyIdentifierExtension.create(ca),
    ],
  });
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey);
  return { caPem: ca.toString('pem'), certPem: leaf.toString('pem'), keyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY') };
}

const fmt = (ms: number): string => ms.toFixed(1);
const summary = (values: number[]): string => `median ${fmt(median(values))} ms (min ${fmt(Math.min(...values))}, max ${fmt(Math.max(...values))}; n=${values.length})`;

/** Time of one GET through `agent` (body read), ms. */
async function timeGet(agent: Dispatcher, url: string): Promise<number> {
  const start = performance.now();
  const r = await request(url, { dispatcher: agent, headers: { 'user-agent': BOT_UA } });
  await r.body.dump();
  if (r.statusCode !== 200) throw new Error(`GET ${url} answered ${r.statusCode}: ${String(r.headers['x-robots-proxy-decision'])}`);
  return performance.now() - start;
}

async function main(): Promise<void> {
  const { validateConfig } = await import('../src/config/index.js');
  const { startProxy } = await import('../src/main.js');
  const { pino } = await import('pino');

  const coldHosts = Array.from({ length: TRIALS }, (_, i) => `127.0.0.${COLD_BASE + i}`);
  const warmHosts = Array.from({ length: TRIALS }, (_, i) => `127.0.0.${WARM_BASE + i}`);
  const certs = await makeUpstreamCerts(['127.0.0.1', FIRST_HOST, ...coldHosts, ...warmHosts]);
  const dir = mkdtempSync(join(os.tmpdir(), 'robots-proxy-bench-'));
  writeFileSync(join(dir, 'upstream-ca.pem'), certs.caPem);

  const spec: OriginSpec = { certPem: certs.certPem, keyPem: certs.keyPem, https: [['127.0.0.1', 1], [FIRST_HOST, 1], ...coldHosts.map((h): [string, number] => [h, 1]), ...warmHosts.map((h): [string, number] => [h, 2])] };
  const origins = forkRole(fileURLToPath(import.meta.url), 'origins', JSON.stringify(spec));
  const load = forkRole(fileURLToPath(import.meta.url), 'load');
  const ports = await nextMessage<OriginPorts>(origins);
  const portsOf = (ip: string): number[] => ports.https[ip]!;

  const proxy = await startProxy(
    validateConfig({
      listen: { host: '127.0.0.1', port: 0 },
      admin: { enabled: false },
      log: { level: 'silent' },
      upstream: { allowPrivateNetworks: true, caFile: join(dir, 'upstream-ca.pem') },
      pacing: { maxConcurrency: 64 },
      https: { mode: 'intercept' },
      stateDir: join(dir, 'state'),
    }),
    { logger: pino({ level: 'silent' }) },
  );
  const proxyUrl = `http://127.0.0.1:${proxy.proxyAddress.port}`;
  const proxyCaPem = proxy.ca!.certPem;
  const newTunnelAgent = (): ProxyAgent => new ProxyAgent({ uri: proxyUrl, requestTls: { ca: proxyCaPem } });

  const loadAverage = (): string => os.loadavg().map((l) => l.toFixed(2)).join(' ');
  console.log(`https: node ${process.version}, ${os.cpus().length} CPUs, load average ${loadAverage()}; origins in child pid ${origins.pid}, load generator in child pid ${load.pid}, robots-proxy (intercept mode, log silent) in this process pid ${process.pid}`);

  // ---- 2. first request to a new host (measured first, while the proxy is idle)
  const leafMetrics = (): Promise<string> => proxy.metrics.render().then((t) => t.split('\n').filter((l) => /^robots_proxy_tls_leaf_certificate(s_issued|_cache_hits)_total /.test(l)).join(', '));
  const first = newTunnelAgent();
  const firstMs = await timeGet(first, `https://${FIRST_HOST}:${portsOf(FIRST_HOST)[0]}${PAGE_PATH}`);
  const onOpenTunnel: number[] = [];
  for (let i = 0; i < TRIALS; i++) onOpenTunnel.push(await timeGet(first, `https://${FIRST_HOST}:${portsOf(FIRST_HOST)[0]}${PAGE_PATH}`));
  await first.close();

  const cold: number[] = [];
  const warm: number[] = [];
  const seenOrigin: number[] = [];
  for (let i = 0; i < TRIALS; i++) {
    const coldHost = coldHosts[i]!;
    const warmHost = warmHosts[i]!;
    const [prewarmPort, warmPort] = portsOf(warmHost) as [number, number];
    const agents = [newTunnelAgent(), newTunnelAgent(), newTunnelAgent(), newTunnelAgent()] as const;
    await timeGet(agents[0], `https://${warmHost}:${prewarmPort}${PAGE_PATH}`); // signs the leaf for warmHost
    const runCold = async (): Promise<void> => void cold.push(await timeGet(agents[1], `https://${coldHost}:${portsOf(coldHost)[0]}${PAGE_PATH}`));
    const runWarm = async (): Promise<void> => void warm.push(await timeGet(agents[2], `https://${warmHost}:${warmPort}${PAGE_PATH}`));
    if (i % 2 === 0) {
      await runCold();
      await runWarm();
    } else {
      await runWarm();
      await runCold();
    }
    seenOrigin.push(await timeGet(agents[3], `https://${warmHost}:${warmPort}${PAGE_PATH}`));
    await Promise.all(agents.map((a) => a.close()));
  }
  console.log(`\n  first request through a fresh tunnel (CONNECT + client TLS handshake + inner request), ms:`);
  console.log(`    very first leaf (also generates the shared leaf key):        ${fmt(firstMs)} ms`);
  console.log(`    new host, cold certificate cache (sign a leaf) + new origin: ${summary(cold)}`);
  console.log(`    new host, warm certificate cache + new origin:              ${summary(warm)}`);
  console.log(`    => leaf signing on a cold cache costs about ${fmt(median(cold) - median(warm))} ms (difference of medians)`);
  console.log(`    new tunnel to an origin already seen (robots cached, pool open): ${summary(seenOrigin)}`);
  console.log(`    next request on an open tunnel (keep-alive):                 ${summary(onOpenTunnel)}`);
  console.log(`    (a new origin includes the robots.txt fetch over HTTPS and a new upstream TLS connection)`);
  const contextMs: number[] = [];
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    createSecureContext({ ca: [...rootCertificates, certs.caPem] });
    contextMs.push(performance.now() - start);
  }
  console.log(`    for reference: tls.createSecureContext({ ca: system roots + upstream.caFile }) takes ${summary(contextMs)};`);
  console.log(`      tls.connect builds one per connection when given \`ca\` instead of a \`secureContext\``);
  console.log(`    proxy metrics: ${await leafMetrics()}`);

  // ---- 1. keep-alive throughput, HTTPS vs HTTP through the proxy
  const configs: Array<{ name: string; job: LoadJob }> = [
    { name: 'http', job: { proxyUrl, target: `http://127.0.0.1:${ports.http}${PAGE_PATH}`, caPem: null, runMs: RUN_MS } },
    { name: 'https', job: { proxyUrl, target: `https://127.0.0.1:${portsOf('127.0.0.1')[0]}${PAGE_PATH}`, caPem: proxyCaPem, runMs: RUN_MS } },
  ];
  const pids = { proxy: process.pid, origins: origins.pid, load: load.pid };
  const run = async (job: LoadJob): Promise<LoadResult & { cpuUsPerReq: number; cores: string }> => {
    const [r, cpuS, wallS] = await withCpu(pids, async () => {
      load.send(job);
      return nextMessage<LoadResult>(load);
    });
    // The proxy's CPU per request (ramp-up included in both counts): less sensitive than req/s to other processes on the machine.
    const cpuUsPerReq = ((cpuS['proxy'] ?? NaN) / (r.rps * wallS)) * 1e6;
    return { ...r, cpuUsPerReq, cores: Object.entries(cpuS).map(([name, sec]) => `${name} ${(sec / wallS).toFixed(2)}`).join(', ') };
  };
  console.log(`\n  keep-alive throughput: undici ProxyAgent, ${CONNECTIONS} connections (https: ${CONNECTIONS} CONNECT tunnels; http: absolute-form), ${RAMP_MS} ms ramp-up then ${RUN_MS / 1000} s measured, ${ROUNDS} rounds interleaved`);
  for (const c of configs) await run({ ...c.job, runMs: 1000 }); // warm-up
  const results = new Map<string, Array<LoadResult & { cpuUsPerReq: number }>>(configs.map((c) => [c.name, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const c of round % 2 ? configs : [...configs].reverse()) {
      const r = await run(c.job);
      results.get(c.name)!.push(r);
      console.log(`    round ${round} ${c.name.padEnd(5)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${fmt(r.p50)} ms  p99 ${fmt(r.p99)} ms  proxy ${r.cpuUsPerReq.toFixed(0)} us CPU/req  (${r.ok} ok, ${r.bad} not 200/errors; cores used: ${r.cores})`);
    }
  }
  const med = (name: string, f: (r: LoadResult & { cpuUsPerReq: number }) => number): number => median(results.get(name)!.map(f));
  for (const c of configs) {
    console.log(`    ${c.name.padEnd(5)} median ${med(c.name, (r) => r.rps).toFixed(0)} req/s, p50 ${fmt(med(c.name, (r) => r.p50))} ms, p99 ${fmt(med(c.name, (r) => r.p99))} ms, proxy CPU ${med(c.name, (r) => r.cpuUsPerReq).toFixed(0)} us/req`);
  }
  console.log(`    HTTPS / HTTP through the proxy, req/s: ${(med('https', (r) => r.rps) / med('http', (r) => r.rps)).toFixed(3)}  (target >= 0.50)`);
  console.log(`    HTTP / HTTPS proxy CPU per request: ${(med('http', (r) => r.cpuUsPerReq) / med('https', (r) => r.cpuUsPerReq)).toFixed(3)}  (the req/s ratio were the proxy CPU-bound)`);
  console.log(`    (latency measured by the load generator per request; load average at the end ${loadAverage()}; other processes on the machine share the 2 cores)`);

  await proxy.close();
  origins.disconnect();
  load.disconnect();
}

const role = process.argv[2];
if (role === 'origins') await runOrigins(JSON.parse(process.argv[3] ?? '{}') as OriginSpec);
else if (role === 'load') runLoad();
else await main();
