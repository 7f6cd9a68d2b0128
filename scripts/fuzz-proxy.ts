/**
 * A hunt, not a check: fuzzes a real `node dist/cli.js serve` child for a while and watches that no
 * input takes it down (DESIGN.md, "Defaults that keep people safe": every bound answers with a defined
 * status, never a crash or unbounded memory). Kept out of `npm test`; run it with
 *
 *   npm run build && npm run fuzz -- --seed 7 --duration 300
 *
 * Options: --seed N (default: the clock), --duration S (load phase, seconds; default 120),
 * --workers N (concurrent clients; default 12), --configs N (mutated configs started with `serve`;
 * default 40), --https-mode intercept|tunnel|deny (default intercept). It prints one JSON summary
 * line and exits 1 when it found something.
 *
 * What runs, all on loopback:
 * - hostile origins: raw TCP servers whose every connection picks a misbehaviour from the seed
 *   (robots.txt of random bytes or of many MiB, trickled and never-ending chunked bodies, resets
 *   mid-head and mid-body, invalid status lines, 1xx floods, gzip/br/deflate bombs, redirect loops
 *   and redirects to odd schemes and hosts, huge and conflicting headers, silence), and a TLS origin
 *   whose certificate has expired and one that speaks garbage instead of TLS;
 * - clients: raw request heads and bodies, valid ones mutated by grammar (duplicated, huge and
 *   malformed headers, bad chunking, pipelining, half-closes, resets at a random byte offset, slow
 *   writes), CONNECT with garbage ClientHellos and garbage after a real handshake, garbage
 *   Proxy-Authorization against a credentials file;
 * - config: SIGHUP reloads under load with broken YAML (wrong types, huge numbers, unicode, alias
 *   bombs, deep nesting) and garbage credentials files; then `serve` started on mutated configs,
 *   which must start or exit 2 with a message, never with a stack trace or a hang.
 * The proxy is watched throughout: still running, nothing on its stderr, no `internal-error` or
 * `fatal` log line, admin /healthz answering, every answer a well-formed status line the proxy
 * defines (its own 500 is a finding) or a clean close within the timeouts, and its RSS and open file
 * descriptors (/proc/PID/status, /proc/PID/fd) back near their baseline once the load stops.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import zlib from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { createTestPki } from '../test/cache/support.js';
import { prng } from '../test/robots/reference-matcher.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const cli = join(root, 'dist/cli.js');

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
}
const SEED = option('seed', Date.now() % 1_000_000);
const DURATION_S = option('duration', 120);
const WORKERS = option('workers', 12);
const CONFIG_CASES = option('configs', 40);
/** https.mode of the proxy under test: intercept (the default), tunnel or deny. */
const HTTPS_MODE = process.argv.includes('--https-mode') ? process.argv[process.argv.indexOf('--https-mode') + 1]! : 'intercept';
/** Longest an exchange may take before it counts as a hang, ms (the proxy's timeouts below are 3-5 s). */
const HANG_MS = 30_000;

// mulberry32 (test/robots/reference-matcher.ts): a seed replays the same choices, timing aside.
const rand = prng(SEED);
const int = (n: number): number => Math.floor(rand() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => int(256)));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const findings: string[] = [];
const counts: Record<string, number> = {};
const bump = (key: string): void => void (counts[key] = (counts[key] ?? 0) + 1);
function finding(what: string): void {
  if (findings.length < 200 && !findings.includes(what)) findings.push(what);
  process.stderr.write(`FINDING: ${what}\n`);
}

// ---------------------------------------------------------------- hostile origins

const BOMB = 64 * 1024 * 1024;
const bombs = {
  gzip: zlib.gzipSync(Buffer.alloc(BOMB), { level: 9 }),
  deflate: zlib.deflateSync(Buffer.alloc(BOMB), { level: 9 }),
  'deflate-raw': zlib.deflateRawSync(Buffer.alloc(BOMB), { level: 9 }),
  br: zlib.brotliCompressSync(Buffer.alloc(BOMB)),
};

type Misbehaviour = (socket: net.Socket, head: string, self: number) => void;

const ODD_LOCATIONS = [
  'ftp://127.0.0.1/robots.txt', 'javascript:alert(1)', 'data:text/plain,User-agent: *', 'file:///etc/passwd',
  'http://[::1', 'http://0/', 'http://999.1.1.1/', '//', 'http://', `http://${'a'.repeat(300)}.invalid/`,
  `/${'x'.repeat(70_000)}`, 'http://user:pass@127.0.0.1:1/', 'gopher://127.0.0.1:70/', '\u0000', 'http://%zz/',
  'http://xn--/', 'https://127.0.0.1:1/',
];

function writeHead(socket: net.Socket, status: string, headers: string[]): void {
  socket.write(`HTTP/1.1 ${status}\r\n${headers.join('\r\n')}${headers.length ? '\r\n' : ''}\r\n`);
}

const misbehaviours: Record<string, Misbehaviour> = {
  ok: (s, head) => {
    const body = head.includes('/robots.txt') ? 'User-agent: *\nDisallow: /private\nCrawl-delay: 0\n' : 'hello';
    writeHead(s, '200 OK', [`Content-Length: ${body.length}`]);
    s.end(body);
  },
  randomRobots: (s) => {
    const body = bytes(int(4096));
    writeHead(s, '200 OK', [`Content-Length: ${body.length}`, 'Content-Type: text/plain']);
    s.end(body);
  },
  hugeBody: (s) => {
    writeHead(s, '200 OK', ['Transfer-Encoding: chunked']);
    const chunk = Buffer.alloc(256 * 1024, 'Disallow: /x\n');
    let left = 24; // 6 MiB
    const more = (): void => {
      while (left > 0) {
        left--;
        if (!s.write(`${chunk.length.toString(16)}\r\n`) || !s.write(chunk) || !s.write('\r\n')) return void s.once('drain', more);
      }
      s.end('0\r\n\r\n');
    };
    more();
  },
  trickle: (s) => {
    writeHead(s, '200 OK', ['Content-Length: 100000']);
    const timer = setInterval(() => (s.writable ? s.write('D') : clearInterval(timer)), 150);
    s.once('close', () => clearInterval(timer));
  },
  endlessChunked: (s) => {
    writeHead(s, '200 OK', ['Transfer-Encoding: chunked']);
    const timer = setInterval(() => (s.writable ? s.write('10\r\nUser-agent: *\nDis\r\n') : clearInterval(timer)), 5);
    s.once('close', () => clearInterval(timer));
  },
  resetMidHead: (s) => {
    s.write('HTTP/1.1 200 OK\r\nContent-Le');
    setTimeout(() => s.resetAndDestroy(), int(50));
  },
  resetMidBody: (s) => {
    writeHead(s, '200 OK', ['Content-Length: 1000']);
    s.write('User-agent: *\nDisallow: /');
    setTimeout(() => s.resetAndDestroy(), int(50));
  },
  invalidStatus: (s) => {
    s.end(Buffer.concat([pick([Buffer.from('HTTP/1.1 99999 X\r\n\r\n'), Buffer.from('HTTP/9.9 200\r\n\r\n'), Buffer.from('SSH-2.0-x\r\n'), bytes(1 + int(300)), Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n'), Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'), Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')])]));
  },
  informationalFlood: (s) => {
    const n = 1 + int(3000);
    let out = '';
    for (let i = 0; i < n; i++) out += pick(['HTTP/1.1 100 Continue\r\n\r\n', 'HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n', 'HTTP/1.1 102 Processing\r\n\r\n']);
    s.write(out);
    writeHead(s, '200 OK', ['Content-Length: 2']);
    s.end('ok');
  },
  interimForever: (s) => {
    // 1xx heads more often than upstream.timeout, never a final one (held the client for ever before
    // src/proxy/final-head-deadline.ts).
    const line = pick(['HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n', 'HTTP/1.1 102 Processing\r\n\r\n']);
    const timer = setInterval(() => (s.writable ? s.write(line) : clearInterval(timer)), 100 + int(400));
    s.once('close', () => clearInterval(timer));
  },
  bomb: (s) => {
    const coding = pick(Object.keys(bombs) as Array<keyof typeof bombs>);
    const body = bombs[coding];
    writeHead(s, '200 OK', [`Content-Encoding: ${coding === 'deflate-raw' ? 'deflate' : coding}`, `Content-Length: ${body.length}`]);
    s.end(body);
  },
  redirect: (s, head, self) => {
    const location = rand() < 0.4 ? `http://127.0.0.1:${self}/robots.txt?${int(1e6)}` : pick(ODD_LOCATIONS);
    writeHead(s, `${pick(['301', '302', '307', '308', '303'])} Moved`, [`Location: ${location}`, 'Content-Length: 0']);
    s.end();
  },
  hugeHeaders: (s) => {
    const headers = rand() < 0.5 ? [`X-Big: ${'a'.repeat(200_000)}`] : Array.from({ length: 5000 }, (_, i) => `X-${i}: v`);
    writeHead(s, '200 OK', [...headers, 'Content-Length: 2']);
    s.end('ok');
  },
  status429: (s) => {
    writeHead(s, pick(['429 Too Many', '503 Unavailable']), [`Retry-After: ${pick(['1', '0', '-1', '99999999999999999999', 'Wed, 21 Oct 2015 07:28:00 GMT', 'soon', '1e400'])}`, 'Content-Length: 0']);
    s.end();
  },
  silence: () => undefined,
  trailingGarbage: (s) => {
    // A complete keep-alive answer, then bytes no request asked for on the same connection.
    writeHead(s, '200 OK', ['Content-Length: 2', 'Connection: keep-alive']);
    s.write('ok');
    setTimeout(() => s.writable && s.write(pick([bytes(1 + int(500)), Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n')])), int(20));
  },
  shortBody: (s) => {
    writeHead(s, '200 OK', [`Content-Length: ${1000 + int(1e9)}`]);
    s.end('User-agent: *\nDisallow: /');
  },
  bodyOnBodiless: (s) => {
    writeHead(s, pick(['204 No Content', '304 Not Modified', '205 Reset']), ['Content-Length: 5']);
    s.end('abcde-extra');
  },
};
const MISBEHAVIOURS = Object.keys(misbehaviours);

interface Origins { ports: number[]; tlsExpired: number; tlsGarbage: number; servers: net.Server[]; names: Map<number, string> }

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as net.AddressInfo).port;
}

/** Reads a request head (at most 64 KiB) and answers it with a misbehaviour chosen by `choose`. */
function hostileServer(choose: () => string): net.Server {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let head = '';
    socket.on('data', function onData(d: Buffer) {
      head += d.toString('latin1');
      if (head.length > 65536) return void socket.destroy();
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.resume();
      const name = choose();
      bump(`origin:${name}`);
      try {
        misbehaviours[name]!(socket, head, (server.address() as net.AddressInfo).port);
      } catch {
        socket.destroy();
      }
    });
  });
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  (server as net.Server & { sockets?: Set<net.Socket> }).sockets = sockets;
  return server;
}

async function startOrigins(): Promise<Origins> {
  const servers: net.Server[] = [];
  const ports: number[] = [];
  const names = new Map<number, string>();
  // One origin per misbehaviour (its robots.txt always misbehaves that way), and four that mix them.
  for (const name of MISBEHAVIOURS) {
    const server = hostileServer(() => (rand() < 0.7 ? name : 'ok'));
    servers.push(server);
    ports.push(await listen(server));
    names.set(ports.at(-1)!, name);
  }
  for (let i = 0; i < 4; i++) {
    const server = hostileServer(() => pick(MISBEHAVIOURS));
    servers.push(server);
    ports.push(await listen(server));
    names.set(ports.at(-1)!, 'mixed');
  }
  const pki = await createTestPki({ leafNotAfter: new Date(Date.now() - 60_000) });
  const expired = tls.createServer({ cert: pki.certPem, key: pki.keyPem }, (s) => {
    s.on('error', () => undefined);
    s.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
  });
  expired.on('tlsClientError', () => undefined);
  servers.push(expired);
  const tlsExpired = await listen(expired);
  const garbage = net.createServer((s) => {
    s.on('error', () => undefined);
    s.end(bytes(1 + int(2000)));
  });
  servers.push(garbage);
  const tlsGarbage = await listen(garbage);
  names.set(tlsExpired, 'tls-expired');
  names.set(tlsGarbage, 'tls-garbage');
  return { ports, tlsExpired, tlsGarbage, servers, names };
}

// ---------------------------------------------------------------- the proxy child

interface Proxy {
  child: ChildProcess;
  pid: number;
  proxyPort: number;
  adminPort: number;
  stderr: () => string;
  events: Record<string, number>;
}

function proxyYaml(dir: string, credentials: string): string {
  return [
    'listen: { host: 127.0.0.1, port: 0 }',
    'admin: { host: 127.0.0.1, port: 0 }',
    'clients: { idleTimeout: 3s, requestBodyTimeout: 3s, responseWriteTimeout: 5s }',
    'robots: { ttl: 2s, minTtl: 1s, errorRetry: 1s, errorRetryMax: 2s, timeout: 4s, maxOrigins: 50 }',
    'pacing: { maxWait: 5s, maxQueue: 50, maxQueuePerIdentity: 20, maxRetryAfter: 2s, maxBackoff: 2s, backoff: 1s, maxSlotHold: 5s }',
    'upstream: { timeout: 5s, connectTimeout: 3s, allowPrivateNetworks: true }',
    `stateDir: ${dir}/state`,
    'ledger: { flushInterval: 200ms }',
    `https: { mode: ${HTTPS_MODE}, idleTimeout: 5s }`,
    'log: { level: info }',
    'access:',
    `  credentialsFile: ${credentials}`,
    '  maxAuthFailures: 5',
    '  clients:',
    '    - { range: 127.0.0.0/8, identity: fuzz-lab }',
    'policy:',
    '  rules:',
    '    - { name: no-secret, path: /secret, action: deny }',
    '',
  ].join('\n');
}

async function startProxy(configPath: string): Promise<Proxy> {
  const child = spawn(process.execPath, [cli, 'serve', '--config', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const events: Record<string, number> = {};
  const lines = createInterface({ input: child.stdout! });
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`proxy exited ${code}: ${stderr}`)));
    lines.on('line', (line) => {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line);
      } catch {
        return finding(`non-JSON stdout line: ${line.slice(0, 200)}`);
      }
      const event = String(record['event'] ?? record['msg']);
      events[event] = (events[event] ?? 0) + 1;
      if (event === 'internal-error' || event === 'fatal' || Number(record['level']) >= 60) {
        finding(`proxy log ${event}: ${JSON.stringify(record).slice(0, 600)}`);
      }
      if (event === 'listening') resolve(record);
    });
  });
  const portOf = (v: unknown): number => Number(String(v).split(':').pop());
  return { child, pid: child.pid!, proxyPort: portOf(ready['proxy']), adminPort: portOf(ready['admin']), stderr: () => stderr, events };
}

/** The proxy's TCP and UDP sockets other than its listeners, as `proto state local -> peer (origin name)` (ss(8)). */
function openSockets(pid: number, origins: Origins): string[] {
  try {
    const out = execFileSync('ss', ['-tuanpH'], { encoding: 'utf8' });
    return out.split('\n').filter((l) => l.includes(`pid=${pid},`) && !/^\S+\s+LISTEN/.test(l)).map((l) => {
      const [netid, state, , , local, peer] = l.trim().split(/\s+/);
      const peerPort = Number(peer?.split(':').pop());
      return `${netid} ${state} ${local} -> ${peer} (${origins.names.get(peerPort) ?? 'client or other'})`;
    });
  } catch {
    return [];
  }
}

/** What the open descriptors point at, counted by kind (`socket`, `pipe`, `anon_inode:[eventfd]`, a file path). */
function descriptorKinds(pid: number): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`).replace(/:\[\d+\]$/, '');
      kinds[target] = (kinds[target] ?? 0) + 1;
    } catch {
      // closed meanwhile
    }
  }
  return kinds;
}

function procFigures(pid: number): { rssKiB: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return { rssKiB, fds: readdirSync(`/proc/${pid}/fd`).length };
}

/** Gauges from the admin /metrics (prom-client's default process metrics). */
async function metricFigures(adminPort: number): Promise<{ handles: number; heapUsedMiB: number }> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
    const value = (name: string): number => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    return { handles: value('nodejs_active_handles_total'), heapUsedMiB: Math.round(value('nodejs_heap_size_used_bytes') / 1048576) };
  } catch {
    return { handles: NaN, heapUsedMiB: NaN };
  }
}

async function healthy(adminPort: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${adminPort}/healthz`, { signal: AbortSignal.timeout(5000) });
    await res.arrayBuffer();
    return res.status === 200 || res.status === 503;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------- clients

const TOKENS = ['GPTBot', 'Googlebot/2.1', 'curl/8', '', 'Mozilla/5.0 (compatible; X)', '\u00ff\u00fe', 'a'.repeat(9000)];

function requestHead(origin: string, extra: string[] = []): string {
  const path = pick(['/', '/robots.txt', '/private/x', '/secret', '/%zz', '/a?b=c', `/${'p'.repeat(int(3000))}`, '/..%2f', '/\u00e9']);
  const method = pick(['GET', 'GET', 'HEAD', 'POST', 'PUT', 'OPTIONS', 'DELETE', 'PATCH', 'TRACE', 'XYZ', 'get']);
  const headers = [`Host: ${origin.replace('http://', '')}`, `User-Agent: ${pick(TOKENS)}`, ...extra];
  return `${method} ${origin}${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`;
}

const HEADER_MUTATIONS: Array<() => string> = [
  () => `X-Dup: 1\r\nX-Dup: 2`,
  () => `Content-Length: ${pick(['5', '-1', '1e3', '99999999999999999999', '0x10', '5, 6', ''])}`,
  () => `Content-Length: 3\r\nContent-Length: 4`,
  () => `Transfer-Encoding: ${pick(['chunked', 'gzip, chunked', 'chunked, gzip', 'identity', 'xchunked', ' chunked'])}`,
  () => `Proxy-Authorization: ${pick(['Basic ', 'Basic !!!!', `Basic ${Buffer.from('fuzz:wrong').toString('base64')}`, `Basic ${Buffer.from('\u0000:\u0000').toString('base64')}`, `Basic ${Buffer.from('x'.repeat(5000)).toString('base64')}`, 'Bearer x', 'Basic', `Basic ${Buffer.from('fuzz:').toString('base64')}`, `Basic ${Buffer.from('fuzz:right-password').toString('base64')}`, `Basic ${bytes(40).toString('base64')}`])}`,
  () => `X-Huge: ${'h'.repeat(int(70_000))}`,
  () => Array.from({ length: int(300) }, (_, i) => `X-M${i}: ${i}`).join('\r\n'),
  () => `Expect: ${pick(['100-continue', 'x', '100-CONTINUE'])}`,
  () => `Connection: ${pick(['close', 'keep-alive', 'upgrade', 'Upgrade, close', 'te, x-a'])}`,
  () => `Upgrade: ${pick(['websocket', 'h2c', 'x'.repeat(100)])}`,
  () => `Max-Forwards: ${pick(['0', '-1', 'abc', '99999999999999'])}`,
  () => `Via: ${pick(['1.1 robots-proxy', 'x'.repeat(1000)])}`,
  () => `Bad Header: x`,
  () => `X-Nul: a\u0000b`,
  () => `X-Folded: a\r\n  folded`,
  () => `: empty-name`,
  () => `X-Latin: ${bytes(30).toString('latin1').replace(/[\r\n]/g, '')}`,
  () => `Accept: ${pick(['application/json', '*/*;q=x', 'application/json;q=0'])}`,
  () => `Host: ${pick(['', 'a b', '[::1', '127.0.0.1:99999', 'x'.repeat(300)])}`,
];

function body(): string {
  return pick([
    '',
    'hello',
    '5\r\nhello\r\n0\r\n\r\n',
    'zz\r\nbad\r\n',
    'fffffffffffffffff\r\n',
    '5\r\nhel',
    '3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\n',
    bytes(int(5000)).toString('latin1'),
  ]);
}

function mutateBytes(buf: Buffer): Buffer {
  const out = Buffer.from(buf);
  const flips = 1 + int(4);
  for (let i = 0; i < flips && out.length > 0; i++) {
    const at = int(out.length);
    out[at] = pick([int(256), 0, 13, 10, 32, 58, 0xff]);
  }
  return rand() < 0.2 ? out.subarray(0, int(out.length + 1)) : out;
}

/** One client exchange's bytes: a valid request mutated by grammar, by bytes, pipelined, or pure noise. */
function clientPayload(origins: Origins): Buffer {
  const origin = `http://127.0.0.1:${pick(origins.ports)}`;
  const kind = int(10);
  if (kind === 0) return bytes(int(2000));
  const heads: string[] = [];
  const n = kind === 1 ? 2 + int(4) : 1; // pipelining
  for (let i = 0; i < n; i++) {
    const extra = rand() < 0.4 ? [] : Array.from({ length: 1 + int(2) }, () => pick(HEADER_MUTATIONS)());
    heads.push(requestHead(origin, extra) + (rand() < 0.4 ? body() : ''));
  }
  const text = Buffer.from(heads.join(''), 'latin1');
  return kind === 2 || kind === 3 ? mutateBytes(text) : text;
}

interface Answer { data: Buffer; closed: boolean; hung: boolean }

/** Writes `payload` in the chosen manner and reads until the proxy closes, goes quiet, or the hang limit. */
function exchange(port: number, payload: Buffer, manner: string): Promise<Answer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let done = false;
    let quiet: NodeJS.Timeout | undefined;
    let lastDataMs = Date.now();
    const finish = (closed: boolean, hung = false): void => {
      if (done) return;
      done = true;
      clearTimeout(hang);
      clearTimeout(quiet);
      socket.destroy();
      resolve({ data: Buffer.concat(chunks), closed, hung });
    };
    // At the limit, an answer still streaming (a trickling origin relayed) is no hang; silence is.
    const hang = setTimeout(() => (Date.now() - lastDataMs < 6000 ? (bump('answer:still-streaming'), finish(false)) : finish(false, true)), HANG_MS);
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('data', (d: Buffer) => {
      if (manner === 'abort-mid-response') return void (chunks.push(d), socket.resetAndDestroy(), finish(true));
      chunks.push(d);
      lastDataMs = Date.now();
      clearTimeout(quiet);
      // An answer that went quiet for 6 s (longer than idleTimeout) is complete; the keep-alive is not awaited.
      quiet = setTimeout(() => finish(false), 6000);
    });
    socket.on('connect', async () => {
      try {
        if (manner === 'reset') {
          socket.write(payload.subarray(0, int(payload.length + 1)));
          await sleep(int(30));
          return void (socket.resetAndDestroy(), finish(true));
        }
        if (manner === 'slow') {
          for (let i = 0; i < payload.length && !done; ) {
            const n = 1 + int(40);
            socket.write(payload.subarray(i, i + n));
            i += n;
            await sleep(int(60));
          }
        } else socket.write(payload);
        if (manner === 'half-close') socket.end();
        if (manner === 'no-read') {
          // Reads nothing for a while (backpressure on the proxy: responseWriteTimeout), then leaves.
          socket.pause();
          await sleep(2000 + int(8000));
          return void (socket.destroy(), finish(true));
        }
      } catch {
        finish(true);
      }
    });
  });
}

/** Checks every status line in an answer: well-formed, and a status the proxy may give. */
function judge(answer: Answer, what: string): void {
  if (answer.hung) return finding(`hang: ${what}`);
  const text = answer.data.toString('latin1');
  if (text.length === 0) return bump('answer:close');
  if (!text.startsWith('HTTP/1.')) return finding(`answer is not HTTP: ${what}: ${JSON.stringify(text.slice(0, 80))}`);
  for (const m of text.matchAll(/(?:^|\r\n)HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n/g)) {
    const status = Number(m[1]);
    bump(`status:${status}`);
    // The origins here never answer 500, and the proxy's own 5xx are 501-505 (DESIGN.md, "The proxy's own
    // responses"): a 500 is its error boundary, an exception on the request path.
    if (status === 500 || status > 505) finding(`status ${status}: ${what}: ${JSON.stringify(text.slice(0, 400))}`);
  }
}

/** Each CONNECT case as `time target what manner`, to name the ones to an origin whose socket outlived the load. */
const tunnelCases: string[] = [];

/** CONNECT, then garbage, a mutated ClientHello, or a real handshake and garbage inside it. */
async function connectCase(proxyPort: number, origins: Origins): Promise<void> {
  const target = pick([`127.0.0.1:${origins.tlsExpired}`, `127.0.0.1:${origins.tlsGarbage}`, `127.0.0.1:${pick(origins.ports)}`, 'fuzz.invalid:443', '[::1', `127.0.0.1:${int(70000)}`]);
  const auth = rand() < 0.3 ? `Proxy-Authorization: Basic ${bytes(int(60)).toString('base64')}\r\n` : '';
  const head = `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth}User-Agent: ${pick(TOKENS)}\r\n\r\n`;
  const style = int(3);
  if (style < 2) {
    const hello = style === 0 ? bytes(int(3000)) : mutateBytes(CLIENT_HELLO);
    const manner = pick(['plain', 'half-close', 'reset', 'slow']);
    tunnelCases.push(`${new Date().toISOString()} CONNECT ${target} ${style === 0 ? 'random bytes' : 'mutated hello'} ${manner}`);
    judge(await exchange(proxyPort, Buffer.concat([Buffer.from(head, 'latin1'), hello]), manner), `CONNECT ${target} + garbage hello`);
    return;
  }
  // A real handshake with the proxy's interception certificate, then garbage or a mutated request.
  await new Promise<void>((resolve) => {
    const socket = net.connect(proxyPort, '127.0.0.1', () => socket.write(head));
    const timer = setTimeout(() => {
      finding(`hang: CONNECT ${target} then TLS`);
      socket.destroy();
      resolve();
    }, HANG_MS);
    const end = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    };
    socket.on('error', end);
    socket.once('data', (d: Buffer) => {
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(d.toString('latin1'))?.[1] ?? 0);
      bump(`connect:${status}`);
      if (status !== 200) return end();
      const host = target.split(':')[0]!;
      const secure = tls.connect({ socket, rejectUnauthorized: false, servername: net.isIP(host) ? undefined : host });
      secure.on('error', end);
      secure.on('close', end);
      secure.on('data', (x: Buffer) => {
        const s = /^HTTP\/1\.[01] (\d{3})/.exec(x.toString('latin1'))?.[1];
        if (s !== undefined) bump(`tunnel-status:${s}`);
        if (s === '500') finding(`500 inside tunnel to ${target}`);
      });
      secure.once('secureConnect', () => {
        tunnelCases.push(`${new Date().toISOString()} CONNECT ${target} handshake then garbage`);
        const inner = rand() < 0.5 ? bytes(int(3000)) : mutateBytes(Buffer.from(requestHead(`https://${target}`, [pick(HEADER_MUTATIONS)()]).replace(/https:\/\/[^/]+/, ''), 'latin1'));
        secure.write(inner);
        if (rand() < 0.5) secure.end();
        setTimeout(end, 4000 + int(3000));
      });
    });
  });
}

/** A real TLS 1.2/1.3 ClientHello for servername fuzz.invalid, captured once. */
let CLIENT_HELLO: Buffer = Buffer.alloc(0);
async function captureClientHello(): Promise<void> {
  const server = net.createServer((s) => s.once('data', (d: Buffer) => ((CLIENT_HELLO = d), s.destroy())));
  const port = await listen(server);
  await new Promise<void>((r) => {
    const c = tls.connect({ port, host: '127.0.0.1', servername: 'fuzz.invalid', rejectUnauthorized: false });
    c.on('error', () => r());
    c.on('close', () => r());
  });
  server.close();
}

// ---------------------------------------------------------------- configs

const BROKEN_CONFIGS: Array<() => string> = [
  () => 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + Array.from({ length: 9 }, (_, i) => `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(9).fill(`*${String.fromCharCode(97 + i)}`).join(',')}]`).join('\n') + '\n',
  () => `pacing:\n  maxQueue: ${pick(['1e308', '-1', '99999999999999999999999', '"lots"', 'NaN', '.inf', '[]', '{}', 'null', '0x7fffffff'])}\n`,
  () => `robots:\n  ttl: ${pick(['1e400s', '-5s', '24h1ms', '0.0000001ms', '9999999999999d', 'ß', '"1h"', '[1h]'])}\n`,
  () => `${'['.repeat(5000)}${']'.repeat(5000)}\n`,
  () => `${'a:\n '.repeat(3000)}b\n`.replace(/\n /g, (_, i: number) => `\n${' '.repeat(Math.min(i, 4000) / 4)}`),
  () => `listen: { host: "${'\u202e\u00e9\ud83d\ude00'.repeat(20)}", port: 0 }\n`,
  () => `clients: { maxConnections: ${pick(['0', '-1', '1e12', 'auto ', '"auto"', 'true'])} }\n`,
  () => bytes(int(3000)).toString('latin1'),
  () => `policy:\n  rules:\n${Array.from({ length: 2000 }, (_, i) => `    - { name: r${i}, path: "/${'*'.repeat(int(50))}", action: deny }`).join('\n')}\n`,
  () => `access:\n  credentialsFile: /dev/zero\n`,
  () => `access:\n  credentialsFile: /proc/self/mem\n`,
  () => `stateDir: /proc/1/nope\nhttps: { caCert: /dev/null, caKey: /dev/null }\n`,
  () => `hosts:\n  "${'*.'.repeat(200)}x": { minDelay: 1s }\n  "http://[::1": {}\n`,
  () => `identities:\n  ${'\u0000'}: { tokens: [${'"",'.repeat(100)}] }\n`,
  () => `%YAML 9.9\n--- !!binary\nAAAA\n--- \n...\n`,
  () => `log: { level: ${pick(['verbose', '7', 'null', '"INFO"'])} }\n`,
  () => `admin: { token: "${'x'.repeat(int(40))}", tokenFile: /dev/null }\n`,
  () => `metrics: { tokenLabels: ${pick(['1e9', '0', '-0', '1.5'])} }\n`,
];

function garbageCredentials(): string {
  return pick([
    bytes(int(4000)).toString('latin1'),
    'fuzz:plaintext\n',
    `fuzz:$2b$04$${'x'.repeat(53)}\n`,
    `${'u'.repeat(10000)}:$2b$04$abc\n`,
    Array.from({ length: 5000 }, (_, i) => `u${i}:$2b$99$${'.'.repeat(53)}`).join('\n'),
    ':\n::\n:::::\n',
    '\ufeff\u0000fuzz:$2y$04$aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:\u00e9\n',
  ]);
}

/** Starts `serve` on each mutated config; it must start (then stop on SIGTERM) or exit 2, with no stack trace. */
async function fuzzConfigs(dir: string, base: string): Promise<number> {
  let cases = 0;
  for (let i = 0; i < CONFIG_CASES; i++) {
    const mutated = rand() < 0.5 ? pick(BROKEN_CONFIGS)() : base + pick(BROKEN_CONFIGS)().replace(/^/gm, rand() < 0.5 ? '' : '  ');
    const path = join(dir, `config-case-${i}.yaml`);
    writeFileSync(path, mutated.replaceAll('port: 8080', 'port: 0').replaceAll('port: 9090', 'port: 0'));
    const child = spawn(process.execPath, [cli, 'serve', '--config', path], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let stdout = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.includes('"listening"')) child.kill('SIGTERM');
    });
    const outcome = await new Promise<{ code: number | null; signal: string | null } | 'hung'>((resolve) => {
      const timer = setTimeout(() => resolve('hung'), 30_000);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal });
      });
    });
    cases++;
    if (outcome === 'hung') {
      child.kill('SIGKILL');
      finding(`config case ${i} hung: ${mutated.slice(0, 200)}`);
      continue;
    }
    bump(`config-exit:${outcome.code ?? outcome.signal}`);
    const trace = /\n\s+at .+\(|Uncaught|FATAL ERROR|heap out of memory/.test(stderr + stdout);
    if (trace || (outcome.code !== 0 && outcome.code !== 2)) {
      // Kept for replay, outside the run's directory (removed at the end) and outside the tree.
      const kept = join(process.env['TMPDIR'] ?? tmpdir(), `fuzz-config-${SEED}-${i}.yaml`);
      writeFileSync(kept, mutated);
      finding(`config case ${i} (${kept}) exit ${outcome.code ?? outcome.signal}${trace ? ' with a stack trace' : ''}: ${(stderr || stdout).slice(0, 400)}`);
    }
  }
  return cases;
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const dir = mkdtempSync(join(process.env['TMPDIR'] ?? tmpdir(), 'fuzz-proxy-'));
  await captureClientHello();
  const origins = await startOrigins();
  const credentials = join(dir, 'users');
  await new Promise<void>((resolve) => {
    const p = spawn(process.execPath, [cli, 'passwd', credentials, 'fuzz', '--cost', '4'], { stdio: ['pipe', 'ignore', 'inherit'] });
    p.stdin!.end('right-password\n');
    p.once('exit', () => resolve());
  });
  const goodCredentials = readFileSync(credentials, 'utf8');
  const configPath = join(dir, 'config.yaml');
  const good = proxyYaml(dir, credentials);
  writeFileSync(configPath, good);
  const proxy = await startProxy(configPath);
  let exited: string | undefined;
  let stopping = false;
  proxy.child.once('exit', (code, signal) => {
    exited = `${code ?? signal}`;
    if (!stopping) finding(`proxy exited (${exited}); stderr: ${proxy.stderr().slice(0, 2000)}`);
  });

  // Warm-up: a few ordinary requests, then the baseline.
  for (const port of origins.ports.slice(0, 3)) await exchange(proxy.proxyPort, Buffer.from(requestHead(`http://127.0.0.1:${port}`)), 'plain');
  await sleep(2000);
  const baseline = procFigures(proxy.pid);
  const baselineKinds = descriptorKinds(proxy.pid);
  const baselineMetrics = await metricFigures(proxy.adminPort);
  let peak = baseline;
  const started = Date.now();
  const deadline = started + DURATION_S * 1000;
  let inputs = 0;
  let reloads = 0;

  const monitor = (async () => {
    while (Date.now() < deadline && exited === undefined) {
      await sleep(2000);
      if (exited !== undefined) break;
      const now = procFigures(proxy.pid);
      if (now.rssKiB > peak.rssKiB) peak = { ...peak, rssKiB: now.rssKiB };
      if (now.fds > peak.fds) peak = { ...peak, fds: now.fds };
      if (!(await healthy(proxy.adminPort))) finding(`admin /healthz did not answer at ${Math.round((Date.now() - started) / 1000)} s`);
      const unexpected = proxy.stderr().split('\n').filter((l) => l !== '' && !l.startsWith('robots-proxy listening:'));
      if (unexpected.length > 0) finding(`stderr: ${unexpected.join('\n').slice(0, 1000)}`);
    }
  })();

  const reloader = (async () => {
    while (Date.now() < deadline && exited === undefined) {
      await sleep(3000 + int(4000));
      if (exited !== undefined) break;
      const what = int(5);
      if (what < 2) writeFileSync(configPath, rand() < 0.5 ? pick(BROKEN_CONFIGS)() : good + pick(BROKEN_CONFIGS)());
      else if (what < 4) writeFileSync(credentials, garbageCredentials());
      else {
        // A named pipe where a file was (it froze the proxy on SIGHUP before src/read-bounded.ts refused it).
        const path = rand() < 0.5 ? credentials : configPath;
        rmSync(path, { force: true });
        execFileSync('mkfifo', ['-m', '600', path]);
      }
      proxy.child.kill('SIGHUP');
      reloads++;
      await sleep(1000 + int(1000));
      for (const path of [configPath, credentials]) rmSync(path, { force: true });
      writeFileSync(configPath, good);
      writeFileSync(credentials, goodCredentials, { mode: 0o600 });
      proxy.child.kill('SIGHUP');
    }
  })();

  const worker = async (): Promise<void> => {
    while (Date.now() < deadline && exited === undefined) {
      inputs++;
      if (rand() < 0.2) {
        bump('case:connect');
        await connectCase(proxy.proxyPort, origins);
        continue;
      }
      const manner = pick(['plain', 'plain', 'plain', 'half-close', 'reset', 'slow', 'no-read', 'abort-mid-response']);
      bump(`case:${manner}`);
      const payload = clientPayload(origins);
      judge(await exchange(proxy.proxyPort, payload, manner), `${manner} ${JSON.stringify(payload.toString('latin1').slice(0, 160))}`);
    }
  };
  await Promise.all([monitor, reloader, ...Array.from({ length: WORKERS }, worker)]);

  // After the load: idle connections and robots.txt fetches time out (3-5 s), then the figures.
  await sleep(15_000);
  const after = exited === undefined ? procFigures(proxy.pid) : { rssKiB: NaN, fds: NaN };
  const stillHealthy = exited === undefined && (await healthy(proxy.adminPort));
  if (exited === undefined && !stillHealthy) finding('admin /healthz did not answer after the load');
  // Every client has left by now (an exchange ends at HANG_MS at the latest), and every upstream
  // timeout (5 s) has passed: a socket to an origin that is still open then belongs to nobody.
  await sleep(HANG_MS);
  const leftSockets = exited === undefined ? openSockets(proxy.pid, origins) : [];
  const afterKinds = exited === undefined ? descriptorKinds(proxy.pid) : {};
  for (const socket of leftSockets) {
    if (socket.endsWith('(client or other)')) continue;
    const port = /-> [^ ]*:(\d+) /.exec(socket)?.[1];
    const cases = tunnelCases.filter((c) => c.includes(`:${port} `));
    finding(`upstream socket open ${HANG_MS / 1000 + 15} s after the load: ${socket}; CONNECTs to it: ${cases.join(' | ').slice(0, 3000)}`);
  }
  const afterMetrics = exited === undefined ? await metricFigures(proxy.adminPort) : { handles: NaN, heapUsedMiB: NaN };
  if (afterMetrics.handles > baselineMetrics.handles + 8) finding(`active handles ${baselineMetrics.handles} -> ${afterMetrics.handles} after the load`);
  if (after.fds > baseline.fds + 8) finding(`open files ${baseline.fds} -> ${after.fds} after the load`);
  if (after.rssKiB > baseline.rssKiB * 3 + 100_000) finding(`RSS ${baseline.rssKiB} KiB -> ${after.rssKiB} KiB after the load`);
  const events = { ...proxy.events };
  stopping = true;
  proxy.child.kill('SIGTERM');
  await new Promise((r) => (exited === undefined ? proxy.child.once('exit', r) : r(undefined)));
  for (const s of origins.servers) s.close();
  for (const s of origins.servers) (s as net.Server & { sockets?: Set<net.Socket> }).sockets?.forEach((x) => x.destroy());

  const configCases = await fuzzConfigs(dir, good);
  rmSync(dir, { recursive: true, force: true });
  const summary = {
    seed: SEED, durationS: DURATION_S, workers: WORKERS, httpsMode: HTTPS_MODE, inputs, reloads, configCases,
    rssKiB: { baseline: baseline.rssKiB, peak: peak.rssKiB, after: after.rssKiB },
    fds: { baseline: baseline.fds, peak: peak.fds, after: after.fds },
    handles: { baseline: baselineMetrics.handles, after: afterMetrics.handles },
    heapUsedMiB: { baseline: baselineMetrics.heapUsedMiB, after: afterMetrics.heapUsedMiB },
    leftSockets,
    descriptors: { baseline: baselineKinds, after: afterKinds },
    counts, events, findings,
  };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  process.exit(findings.length > 0 ? 1 : 0);
}

void main();
