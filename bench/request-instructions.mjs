/**
 * Instructions per proxied request, counted by valgrind's callgrind: a count that does not move
 * with the machine's load (this machine has no hardware counters for `perf stat -e instructions`).
 * bench/PROFILE.md, "Per-request work, session 19".
 *
 *   node bench/request-instructions.mjs [--repo DIR] [--origins 50] [--mc 4] [--level warn]
 *     [--warm 20000] [--n 4000] [--node-flags "--import=/abs/probe.mjs"] [--no-valgrind]
 *     [--close] [--role bare-dispatch] [--role-options '{"stableAccept":true}']
 *     [--set ledger.flushInterval=1m] (repeatable) [--stdout FILE]
 *
 * `--close`: every request on a new connection with `Connection: close` (50 at a time, one request
 * each, the next connection opened when one closes): what a connection costs. `--mc` and `--level`
 * accept `default` (the value of DIR's config/default.yaml, not overridden). `--role VARIANT` runs
 * `node DIR/bench/floor-roles.mjs VARIANT` (e.g. `bare-dispatch`, `rp-forwarder`: bench/PROFILE.md,
 * "The Node floor") under the same counting instead of the proxy. `--set a.b=VALUE` (repeatable)
 * sets one more config key (VALUE read as YAML): e.g. `ledger.flushInterval=1m` keeps the
 * ledger's once-a-second write out of the counted window, work that scales with wall time and
 * with the origins written per second, not with requests, and that valgrind's slowdown inflates
 * per request (bench/PROFILE.md, "50 origins against one under close").
 *
 * Starts `count` origins (one process, plain node: robots.txt allowing everything, a 96-byte
 * page), and `node DIR/dist/cli.js serve --config F` (DIR's config/default.yaml with the listen
 * and admin ports, stateDir, `upstream.allowPrivateNetworks: true`, `log.level` and
 * `pacing.maxConcurrency` set) under `valgrind --tool=callgrind --instr-atstart=no`. A client of
 * 50 keep-alive connections (raw sockets, absolute-form GETs rotating over the origins, the
 * bench's User-Agent) sends `--warm` requests uninstrumented (JIT warm-up), then instrumentation
 * is switched on (`callgrind_control -i on`), exactly `--n` requests are sent, and the counts are
 * dumped: every thread of the proxy (main thread, GC helpers, libuv's pool), every instruction
 * in user space (Node, V8's generated code, libc), from the first of the n requests to the last
 * response. Prints one JSON line: `{ requests, instructions, perRequest, bad }`.
 * `--no-valgrind` runs the same without valgrind (e.g. with a counting probe in `--node-flags`).
 * Needs the repo built (`npm run build`). Contacts 127.0.0.1 only.
 */
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, writeFileSync, readdirSync, rmSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { startOriginServers } from './origin-servers.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? dflt : args[i + 1];
};
const REPO = resolve(opt('repo', join(HERE, '..')));
const ORIGINS = Number(opt('origins', 50));
const MAX_CONCURRENCY = opt('mc', '4') === 'default' ? 'default' : Number(opt('mc', 4));
const LEVEL = opt('level', 'warn');
const WARM = Number(opt('warm', 20_000));
const N = Number(opt('n', 4000));
const NODE_FLAGS = (opt('node-flags', '') ?? '').split(' ').filter(Boolean);
const VALGRIND = !args.includes('--no-valgrind');
const CLOSE = args.includes('--close');
const ROLE = opt('role', undefined);
const ROLE_OPTIONS = opt('role-options', '{}');
/** `--stdout FILE`: the proxy's standard output (its access log, `--trace-gc` lines) into FILE instead of nowhere. */
const STDOUT = opt('stdout', undefined);
/** `--set a.b=VALUE` pairs: config paths and their YAML values. */
const SETS = args.flatMap((a, i) => (a === '--set' ? [args[i + 1]] : [])).map((kv) => {
  const eq = kv.indexOf('=');
  if (eq < 1) throw new Error(`--set wants key.path=value, got ${kv}`);
  return [kv.slice(0, eq).split('.'), kv.slice(eq + 1)];
});
const CONNECTIONS = 50;
const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const ROBOTS_TXT = 'User-agent: *\nAllow: /\n';
const PAGE = Buffer.from('x'.repeat(95) + '\n');

const require = createRequire(join(REPO, 'package.json'));
const { parseDocument } = require('yaml');

if (process.argv[2] === '--origins-role') {
  const ports = await startOriginServers(Number(process.argv[3]), { robotsTxt: ROBOTS_TXT, page: PAGE, keepAliveMs: 600_000 });
  process.send({ ports });
  process.on('disconnect', () => process.exit(0));
} else {
  await main();
}

function freePort() {
  return new Promise((res) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

async function waitForPort(port, child, ms) {
  const until = Date.now() + ms;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`proxy exited with ${child.exitCode}`);
    const ok = await new Promise((r) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), r(true)));
      s.on('error', () => r(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`port ${port} not open`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Sends exactly `total` requests over 50 keep-alive connections; resolves with the count of non-200 answers. */
function load(port, requests, total) {
  let sent = 0;
  let done = 0;
  let bad = 0;
  return new Promise((resolveAll, reject) => {
    let open = 0;
    const one = (i) => {
      const sock = net.connect(port, '127.0.0.1');
      sock.setNoDelay(true);
      open++;
      let buf = Buffer.alloc(0);
      let k = i;
      const next = () => {
        if (sent >= total) {
          sock.end();
          return;
        }
        sent++;
        sock.write(requests[k++ % requests.length]);
      };
      sock.on('connect', next);
      sock.on('data', (d) => {
        buf = buf.length ? Buffer.concat([buf, d]) : d;
        for (;;) {
          const end = buf.indexOf('\r\n\r\n');
          if (end < 0) return;
          const head = buf.subarray(0, end).toString('latin1');
          const m = /content-length: *(\d+)/i.exec(head);
          const len = m ? Number(m[1]) : 0;
          if (buf.length < end + 4 + len) return;
          if (!head.startsWith('HTTP/1.1 200')) bad++;
          buf = buf.subarray(end + 4 + len);
          done++;
          next();
        }
      });
      sock.on('error', reject);
      sock.on('close', () => {
        if (--open === 0) done === total ? resolveAll(bad) : reject(new Error(`${done} of ${total} answered`));
      });
    };
    for (let i = 0; i < CONNECTIONS; i++) one(i);
  });
}

/**
 * Sends exactly `total` requests, each on a new connection that the request closes (`Connection:
 * close`), `CONNECTIONS` connections at a time; resolves with the count of non-200 answers.
 */
function loadClose(port, requests, total) {
  let sent = 0;
  let done = 0;
  let bad = 0;
  return new Promise((resolveAll) => {
    const one = () => {
      if (sent >= total) return;
      const req = requests[sent % requests.length];
      sent++;
      const sock = net.connect(port, '127.0.0.1');
      sock.setNoDelay(true);
      let head = '';
      sock.setEncoding('latin1');
      sock.on('data', (d) => {
        if (head.length < 12) head += d;
      });
      sock.on('error', () => {});
      sock.on('close', () => {
        if (!head.startsWith('HTTP/1.1 200')) bad++;
        if (++done === total) resolveAll(bad);
        else one();
      });
      sock.write(req);
    };
    for (let i = 0; i < Math.min(CONNECTIONS, total); i++) one();
  });
}

async function main() {
  const work = mkdtempSync(join(process.env.TMPDIR ?? os.tmpdir(), 'req-instr-'));
  const origins = spawn(process.execPath, [fileURLToPath(import.meta.url), '--origins-role', String(ORIGINS)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { ports } = await new Promise((r) => origins.once('message', r));
  const [port, adminPort] = [await freePort(), await freePort()];
  const doc = parseDocument(readFileSync(join(REPO, 'config/default.yaml'), 'utf8'));
  for (const [key, value] of [
    [['listen', 'port'], port],
    [['admin', 'port'], adminPort],
    [['stateDir'], join(work, 'state')],
    [['upstream', 'allowPrivateNetworks'], true],
    [['log', 'level'], LEVEL],
    [['pacing', 'maxConcurrency'], MAX_CONCURRENCY],
  ])
    if (value !== 'default' && !Number.isNaN(value)) doc.setIn(key, value);
  for (const [path, value] of SETS) doc.setIn(path, parseDocument(value).toJS());
  const configPath = join(work, 'config.yaml');
  writeFileSync(configPath, doc.toString());
  const outFile = join(work, 'callgrind.out');
  const nodeArgv =
    ROLE === undefined
      ? [process.execPath, ...NODE_FLAGS, join(REPO, 'dist/cli.js'), 'serve', '--config', configPath]
      : [process.execPath, ...NODE_FLAGS, join(REPO, 'bench/floor-roles.mjs'), ROLE, ROLE_OPTIONS];
  const argv = VALGRIND ? ['valgrind', '--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${outFile}`, ...nodeArgv] : nodeArgv;
  const stdout = STDOUT === undefined ? 'ignore' : openSync(STDOUT, 'w');
  const proxy = spawn(argv[0], argv.slice(1), { cwd: REPO, stdio: ['ignore', stdout, 'pipe', ...(ROLE === undefined ? [] : ['ipc'])] });
  let stderr = '';
  proxy.stderr.on('data', (d) => (stderr += d));
  try {
    // A floor role listens on a port of its own choosing and sends it over IPC.
    const target = ROLE === undefined ? port : (await new Promise((r) => proxy.once('message', r))).port;
    await waitForPort(target, proxy, 300_000);
    const requests = ports.map((p) =>
      Buffer.from(`GET http://127.0.0.1:${p}/page/1?q=1 HTTP/1.1\r\nHost: 127.0.0.1:${p}\r\nUser-Agent: ${BOT_UA}\r\n${CLOSE ? 'Connection: close\r\n' : ''}\r\n`, 'latin1'),
    );
    const send = CLOSE ? loadClose : load;
    await send(target, requests, WARM);
    if (VALGRIND) execFileSync('callgrind_control', ['-i', 'on', String(proxy.pid)], { stdio: 'ignore' });
    const bad = await send(target, requests, N);
    if (VALGRIND) {
      execFileSync('callgrind_control', ['-d', String(proxy.pid)], { stdio: 'ignore' });
      execFileSync('callgrind_control', ['-i', 'off', String(proxy.pid)], { stdio: 'ignore' });
    }
    proxy.kill('SIGTERM');
    await new Promise((r) => (proxy.exitCode !== null ? r() : proxy.once('exit', r)));
    let instructions = null;
    let mainThread = null;
    if (VALGRIND) {
      // The dump at -d: the n requests, one file per thread (callgrind.out.1-01 is the main
      // thread); the dump at exit holds the moments between -d and -i off.
      instructions = 0;
      for (const f of readdirSync(work).filter((f) => /^callgrind\.out\.1-\d+$/.test(f))) {
        const m = /^totals: (\d+)/m.exec(readFileSync(join(work, f), 'utf8'));
        const n = m ? Number(m[1]) : NaN;
        instructions += n;
        if (f.endsWith('-01')) mainThread = n;
      }
    }
    console.log(JSON.stringify({ repo: REPO, ...(ROLE !== undefined ? { role: ROLE, roleOptions: JSON.parse(ROLE_OPTIONS) } : {}), close: CLOSE, pid: proxy.pid, origins: ORIGINS, maxConcurrency: MAX_CONCURRENCY, level: LEVEL, ...(SETS.length ? { set: Object.fromEntries(SETS.map(([p, v]) => [p.join('.'), v])) } : {}), requests: N, bad, instructions, perRequest: instructions === null ? null : Math.round(instructions / N), mainThreadPerRequest: mainThread === null ? null : Math.round(mainThread / N) }));
  } catch (err) {
    console.error(String(err), stderr.slice(-2000));
    process.exitCode = 1;
  } finally {
    proxy.kill('SIGTERM');
    await new Promise((r) => (proxy.exitCode !== null ? r() : proxy.once('exit', r)));
    origins.disconnect();
    if (!process.env.KEEP) rmSync(work, { recursive: true, force: true });
  }
}
