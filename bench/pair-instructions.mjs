// Issue 8's same-process pair (rp-same vs rp-same-auth-policy20, bench/README.md) counted in instructions
// rather than CPU time (bench/PROFILE.md, "Issue 8 under close, instructions (session 19)"): one robots-proxy
// process (dist/: build first) runs under valgrind's callgrind, instrumented only during fixed-count loads;
// before each, its config is rewritten as the default or with the credentials file and the 20 rules and
// applied with POST /reload, then one request (the bcrypt check) and an uninstrumented warm-up load run,
// as bench:proxy's rp-same does. Configurations alternate in every round (order reversed every other one).
// The load: new connections, `Connection: close`, one request each (only the close shapes), wrk's header
// order, `--connections` at a time. No hardware counters needed (valgrind counts).
//
//   node --import tsx bench/pair-instructions.mjs [--cache-sim] [--rounds 3] [--requests 1000] [--warmup 1500]
//        [--shapes 1o-close,50o-close] [--configs rp-same,rp-same-auth-policy20] [--connections 50]
//
// Prints per request the main thread's instructions (Ir) and the other threads' (V8's GC and compiler
// workers, libuv's pool), with --cache-sim the main thread's simulated misses (I1mr, D1mr, D1mw: first
// level; ILmr, DLmr, DLmw: last level). Configs: rp-same, rp-same-auth, rp-same-policy20,
// rp-same-auth-policy20. Environment: PAIR_NODE_FLAGS (node flags for the proxy: for attribution
// `--log-code --logfile=F --no-logfile-per-isolate --interpreted-frames-native-stack`, with PAIR_V8LOG=F
// to record the log's size at each dump, so JIT addresses in a dump are named as they were then);
// PAIR_KEEP=1 keeps the work dir (the callgrind files: cg.PID.N-TID, one per dump and thread, thread 1
// the main one); PAIR_NATIVE=1 runs the proxy without valgrind and counts V8's tiering events per run
// (with PAIR_NODE_FLAGS='--trace-deopt --trace-opt'; PAIR_TRACE_SHOW=1 prints the deopts), or with
// PAIR_NODE_FLAGS=--trace-gc-nvp the bytes allocated and promoted per request (summed over the run's GCs). Use
// TMPDIR=/tmp/<name>-bench. Single rounds move by 5-15% (GC and timer work inside the window):
// compare medians of several rounds, and per-function costs, which repeat exactly.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, readdirSync, rmSync, mkdirSync, statSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import bcrypt from 'bcryptjs';
import { startOriginServers } from './origin-servers.mjs';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : process.argv[i + 1];
};
const CACHE_SIM = process.argv.includes('--cache-sim');
const ROUNDS = Number(arg('rounds', 3));
const REQUESTS = Number(arg('requests', 1000));
const WARMUP = Number(arg('warmup', 1500));
const CONNECTIONS = Number(arg('connections', 50));
const SHAPES = arg('shapes', '1o-close,50o-close').split(',');
if (SHAPES.some((s) => !/^(1|50)o-close$/.test(s))) throw new Error(`--shapes: 1o-close and 50o-close only (one request per connection), not ${SHAPES.join(',')}`);
const CONFIGS = (arg('configs', 'rp-same,rp-same-auth-policy20')).split(',');
const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const PAGE = Buffer.from('x'.repeat(95) + '\n');
const ROBOTS_TXT = 'User-agent: *\nAllow: /\n';
const PASSWORD = 'bench-password';
const { BENCH_POLICY_RULES } = await import(join(REPO, 'bench/support.ts'));

const work = mkdtempSync(join(os.tmpdir(), 'pair-instr-'));
const users = join(work, 'users');
writeFileSync(users, `bench:${bcrypt.hashSync(PASSWORD, 10)}\n`);
const authorization = `Basic ${Buffer.from(`bench:${PASSWORD}`).toString('base64')}`;

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

function configFile(path, placement, changes) {
  const doc = parseDocument(readFileSync(join(REPO, 'config/default.yaml'), 'utf8'));
  for (const [key, value] of [...placement, ...changes]) doc.setIn(key, value);
  writeFileSync(path, doc.toString());
}

/** `count` requests, `Connection: close` (or keep-alive), `connections` at a time, rotating over `origins`; resolves with the non-200 count. */
function load({ port, origins, count, close, auth }) {
  const requests = origins.map((hp) =>
    Buffer.from(
      `GET http://${hp}/page/1?q=1 HTTP/1.1\r\nUser-Agent: ${BOT_UA}\r\n${close ? 'Connection: close\r\n' : ''}${auth ? `Proxy-Authorization: ${auth}\r\n` : ''}Host: ${hp}\r\n\r\n`,
    ),
  );
  let sent = 0;
  let done = 0;
  let bad = 0;
  return new Promise((resolve) => {
    const one = () => {
      if (sent >= count) return;
      const req = requests[sent % requests.length];
      sent += 1;
      const socket = net.connect(port, '127.0.0.1');
      let head = '';
      socket.setEncoding('latin1');
      socket.on('data', (d) => {
        if (head.length < 12) head += d;
      });
      socket.on('error', () => {});
      socket.on('close', () => {
        if (!head.startsWith('HTTP/1.1 200')) bad += 1;
        done += 1;
        if (done === count) resolve(bad);
        else one();
      });
      socket.write(req);
    };
    for (let i = 0; i < Math.min(CONNECTIONS, count); i++) one();
  });
}

function post(port, path) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${path}: ${res.statusCode} ${body}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

async function waitForPort(port, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.on('connect', () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`port ${port} not open`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

const control = (pid, ...args) => execFileSync('callgrind_control', [...args, String(pid)], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

/** Totals per thread of the dump numbered `n` (files cg.PID.N-TID), by event name. */
function readDump(dir, pid, n) {
  const out = {};
  for (const f of readdirSync(dir)) {
    const m = new RegExp(`^cg\\.${pid}\\.${n}-(\\d+)$`).exec(f);
    if (!m) continue;
    const text = readFileSync(join(dir, f), 'utf8');
    const events = /^events: (.*)$/m.exec(text)[1].split(' ');
    const totals = (/^totals: (.*)$/m.exec(text) ?? /^summary: (.*)$/m.exec(text))[1].split(' ').map(Number);
    out[Number(m[1])] = Object.fromEntries(events.map((e, i) => [e, totals[i] ?? 0]));
  }
  return out;
}

const originPorts = await startOriginServers(50, { robotsTxt: ROBOTS_TXT, page: PAGE, keepAliveMs: 60_000 });
const [port, adminPort] = [await freePort(), await freePort()];
const configPath = join(work, 'config.yaml');
const placement = [
  [['listen', 'port'], port],
  [['admin', 'port'], adminPort],
  [['stateDir'], join(work, 'state')],
  [['upstream', 'allowPrivateNetworks'], true],
];
const changesOf = {
  'rp-same': [],
  'rp-same-auth': [[['access', 'credentialsFile'], users]],
  'rp-same-policy20': [[['policy', 'rules'], [...BENCH_POLICY_RULES]]],
  'rp-same-auth-policy20': [[['access', 'credentialsFile'], users], [['policy', 'rules'], [...BENCH_POLICY_RULES]]],
};
configFile(configPath, placement, []);
const cgDir = join(work, 'cg');
mkdirSync(cgDir);
const vg = [
  'valgrind', '--tool=callgrind', '--separate-threads=yes', '--instr-atstart=no', `--cache-sim=${CACHE_SIM ? 'yes' : 'no'}`,
  '--smc-check=all-non-file', '--compress-strings=no', '--compress-pos=no', `--callgrind-out-file=${join(cgDir, 'cg.%p')}`,
];
const nodeFlags = (process.env.PAIR_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const NATIVE = process.env.PAIR_NATIVE === '1';
const child = spawn(NATIVE ? process.execPath : vg[0], [...(NATIVE ? [] : vg.slice(1)), ...(NATIVE ? [] : [process.execPath]), ...nodeFlags, join(REPO, 'dist/cli.js'), 'serve', '--config', configPath], {
  cwd: work,
  stdio: ['ignore', NATIVE ? 'pipe' : 'ignore', 'pipe'],
});
let stderr = '';
child.stderr.on('data', (d) => (stderr += d));
// PAIR_NATIVE=1 (no valgrind; PAIR_NODE_FLAGS='--trace-deopt --trace-opt'): V8's tiering events per run.
let traceText = '';
child.stdout?.on('data', (d) => (traceText += d));
await waitForPort(port, 300_000).catch((e) => {
  console.error(stderr.slice(-3000));
  throw e;
});
const pid = child.pid;
console.log(`proxy pid ${pid} ${NATIVE ? 'without valgrind' : `under callgrind (cache-sim ${CACHE_SIM})`}, work dir ${work}; ${REQUESTS} requests per run, ${WARMUP} warm-up, ${CONNECTIONS} connections, ${ROUNDS} rounds`);

let current = 'rp-same';
let dumps = 0;
const results = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const shape of SHAPES) {
    const origins = originPorts.slice(0, shape.startsWith('50o') ? 50 : 1).map((p) => `127.0.0.1:${p}`);
    const close = shape.endsWith('close');
    const order = round % 2 === 0 ? CONFIGS : [...CONFIGS].reverse();
    for (const key of order) {
      const auth = key.includes('auth') ? authorization : undefined;
      if (current !== key) {
        configFile(configPath, placement, changesOf[key]);
        await post(adminPort, '/reload');
        current = key;
      }
      // One request alone first: the credential's bcrypt check (the verifier is new after a reload from the default config).
      const warmBad = (await load({ port, origins, count: 1, close, auth })) + (await load({ port, origins, count: WARMUP, close, auth }));
      if (NATIVE) {
        traceText = '';
        const t0 = Date.now();
        const bad = await load({ port, origins, count: REQUESTS, close, auth });
        await new Promise((r) => setTimeout(r, 200));
        const count = (re) => (traceText.match(re) ?? []).length;
        // With --trace-gc-nvp: the bytes allocated (and promoted) per request, from the GCs during the run.
        const sumOf = (field) => [...traceText.matchAll(new RegExp(`\\b${field}=(\\d+)`, 'g'))].reduce((sum, m) => sum + Number(m[1]), 0);
        const gc = /\ballocated=/.test(traceText) ? `; allocated ${(sumOf('allocated') / REQUESTS).toFixed(0)} B/req, promoted ${(sumOf('promoted') / REQUESTS).toFixed(0)} B/req, ${count(/\bgc=s\b/g)} scavenges` : '';
        console.log(`round ${round} ${shape} ${key.padEnd(22)} deopts ${count(/bailout \(kind/g)}, optimized ${count(/completed optimizing|completed compiling/g)}, marked ${count(/marking .* for optimization|for optimization to/g)}${gc}; ${Date.now() - t0} ms${bad ? ` BAD ${bad}` : ''}`);
        if (process.env.PAIR_TRACE_SHOW) for (const l of traceText.split('\n').filter((l) => /bailout \(kind/.test(l))) console.log('   ', l.slice(0, 220));
        continue;
      }
      control(pid, '-z');
      control(pid, '-i', 'on');
      const t0 = Date.now();
      const bad = await load({ port, origins, count: REQUESTS, close, auth });
      control(pid, '-i', 'off');
      control(pid, '-d', `${key}-${shape}-${round}`);
      dumps += 1;
      // PAIR_V8LOG: the V8 log (--log-code --logfile=...) as long as it was at this dump, to name JIT code as it was then.
      if (process.env.PAIR_V8LOG) writeFileSync(join(cgDir, `v8log-size.${dumps}`), String(statSync(process.env.PAIR_V8LOG).size));
      await new Promise((r) => setTimeout(r, 300));
      const perThread = readDump(cgDir, pid, dumps);
      const main = perThread[1] ?? {};
      const others = {};
      for (const [tid, ev] of Object.entries(perThread)) if (tid !== '1') for (const [e, v] of Object.entries(ev)) others[e] = (others[e] ?? 0) + v;
      const r = { round, shape, key, bad: bad + warmBad, seconds: (Date.now() - t0) / 1000, main, others };
      results.push(r);
      const per = (ev, e) => ((ev[e] ?? 0) / REQUESTS).toFixed(0);
      const cache = CACHE_SIM ? ` I1mr ${per(main, 'I1mr')} D1mr ${per(main, 'D1mr')} D1mw ${per(main, 'D1mw')} ILmr ${per(main, 'ILmr')} DLmr ${per(main, 'DLmr')} DLmw ${per(main, 'DLmw')}` : '';
      console.log(`round ${round} ${shape} ${key.padEnd(22)} main Ir/req ${per(main, 'Ir')}${cache}; other threads Ir/req ${per(others, 'Ir')}; ${r.seconds.toFixed(0)} s${r.bad ? ` BAD ${r.bad}` : ''}`);
    }
  }
}
writeFileSync(join(work, 'results.json'), JSON.stringify(results, null, 1));
console.log(`results: ${join(work, 'results.json')}`);
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
if (process.env.PAIR_KEEP !== '1') rmSync(work, { recursive: true, force: true });
process.exit(0);
