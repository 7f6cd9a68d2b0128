/**
 * Proxy throughput (issue #11): the cost of one proxied request, side by side
 * with Squid, in one run. Prints figures; asserts nothing. See bench/README.md.
 *
 * Targets (each its own process, its main thread pinned to core 0 with taskset when it is
 * available, its other threads (V8 workers, libuv's pool) on core 1: BENCH_HELPERS; started
 * once, measured in turn):
 *   squid          Squid (when installed), no cache, access log on (stdio: module, a file in the temp dir)
 *   squid-nolog    the same Squid config with `access_log none`
 *   bare           a bare forwarder: one undici Pool per origin, hop-by-hop headers dropped, nothing else
 *   node-floor-server, bare-request, bare-http, bare-dispatch, bare-dispatch-raw, rp-forwarder
 *                  the Node floor (bench/floor-roles.mjs, plain node): Node's server answering
 *                  itself; `bare` under plain node; forwarders on node:http's client, on undici
 *                  Pool.dispatch (header objects, raw header arrays); robots-proxy's
 *                  UpstreamForwarder alone; rp-forwarder-cap4: the same behind a FIFO semaphore of 4
 *                  per origin (the cap's structural cost). BENCH_FLOOR_EXTRA adds variants with options.
 *                  Only with BENCH_FLOOR=1, or when BENCH_ONLY names them.
 *   rp             robots-proxy `serve` with config/default.yaml (access log at info, stdout to a file)
 *   rp-warn        the same with log.level warn (no access lines)
 *   rp-mc64        rp with pacing.maxConcurrency 64 (one-origin shapes only: over 50
 *                  origins each origin has about one request in flight, the cap never binds)
 *   rp-warn-mc64   rp-warn with pacing.maxConcurrency 64 (one origin, keep-alive only: the
 *                  issue's row)
 *   rp-policy20    rp with 20 policy rules (issue 8): 19 that match none of the bench's
 *                  requests (a mix of origins, globs, paths, tokens, methods, identities),
 *                  then one that matches every origin of the bench (`origin: 127.0.0.1`,
 *                  action pace, maxConcurrency 4: the default, so pacing is unchanged)
 *   rp-policy20-none  the same 20 rules with the last one on 127.0.0.2: none matches (the
 *                  matching alone, without a rule's facts in the Decision and the log line)
 *   rp-same, rp-same-auth-policy20  ONE robots-proxy process measured as both: before each
 *                  run its config file is rewritten (rp's, or rp-auth-policy20's) and
 *                  `POST /reload` applies it, then one request warms it (the credential's
 *                  bcrypt check). The two are measured back to back in every round, so their
 *                  ratio is free of the state that makes one process differ from another
 *                  (issue 8's "within 5% of the same run without them"); printed per pair
 * robots-proxy deviates from config/default.yaml in upstream.allowPrivateNetworks
 * (true: the origins are on loopback, which the default refuses), and in the
 * ports and stateDir (free ports, a temp dir); nothing else.
 *
 * Shapes: 50 connections to one origin, or spread over 50 origins (50
 * loopback ports, each robots.txt allowing everything), keep-alive or
 * `Connection: close`. Load: wrk -t1 -c50 (a Lua script sends absolute-form
 * requests, rotating over the origins), pinned to core 1 with the origins.
 * Without wrk, autocannon runs the keep-alive shapes only.
 *
 * Rounds: every (target, shape) is warmed up once, then measured ROUNDS times,
 * round-robin across targets (order reversed every other round); medians.
 * CPU per request: utime+stime of the target process (/proc/PID/stat) over
 * the run, divided by the requests wrk completed.
 *
 * Environment: BENCH_FLOOR=1 (the floor targets too), BENCH_QUICK=1 (1 round of 1 s), BENCH_ONLY=key,... (target
 * and shape keys; a category left out runs whole), BENCH_SECONDS, BENCH_ROUNDS,
 * BENCH_PIN=0 (no taskset), BENCH_HELPERS=load|target|both (a target's threads other than its main
 * thread: on the load core (default), on the target core, or both: a twin KEY-h0 of every target with them on the
 * target core), BENCH_REPLICAS=N (every robots-proxy target as N processes, each
 * measured every round; figures are medians over replicas x rounds, each replica's printed too),
 * BENCH_VARIANT_NODE_OPTIONS (adds target `rp-flags`: rp with these node flags, e.g.
 * "--max-semi-space-size=16" for V8's own young generation),
 * BENCH_PROXY_NODE_OPTIONS (extra node flags for the robots-proxy processes,
 * e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"), BENCH_BARE_NODE_OPTIONS (the
 * same for the bare forwarder), BENCH_BASELINE=DIR[,DIR2] (other checkouts,
 * built: adds targets `base`, `base-warn` and `base-mc64` run from DIR, `base2`... from
 * DIR2, for before/after in one run), BENCH_KEEP=1 (keep the temp
 * dir: configs, logs, Squid's cache.log). Contacts 127.0.0.1 only.
 */
import { createRequire } from 'node:module';
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { parseDocument } from 'yaml';
import bcrypt from 'bcryptjs';
import { BENCH_POLICY_RULES, cpuSecondsOf, systemCpuSecondsOf, runQueueWaitSecondsOf, findExecutable, forkRole, freePort, median, nextMessage, stopChild, waitForPort } from './support.js';

const SCRIPT = fileURLToPath(import.meta.url);
const REPO = resolve(dirname(SCRIPT), '..');
const QUICK = process.env['BENCH_QUICK'] === '1';
/** The password of the `rp-auth` target's one user. */
const BENCH_PASSWORD = 'bench-password';
const CONNECTIONS = 50;
const ORIGINS = 50;
/** Processes per robots-proxy target (BENCH_REPLICAS): one process differs from another of the same build by several %, so a figure over several is steadier. */
const REPLICAS = Math.max(1, Math.floor(Number(process.env['BENCH_REPLICAS'] ?? 1)) || 1);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? (QUICK ? 1 : 5));
/** Other checkouts of robots-proxy, already built (`tsc -b`), measured beside this one as `base`, `base-warn`, `base-mc64`, `base2`, ... */
const BASELINES = (process.env['BENCH_BASELINE'] ?? '').split(',').filter((d) => d !== '');
const RUN_SECONDS = Number(process.env['BENCH_SECONDS'] ?? (QUICK ? 1 : 2));
/** wrk takes whole seconds. */
const WARMUP_SECONDS = 1;
/**
 * BENCH_PREWARM: seconds of unmeasured load right before every measured run (0: none). A Node target
 * idle while the others ran comes back colder (V8's memory reducer shrinks its heap, caches go to the
 * others): without it, the second of two back-to-back runs of one process cost ~20% less CPU per
 * request than the first (same-process pair, 2026-12-01), whichever config ran first.
 */
const PREWARM_SECONDS = Number(process.env['BENCH_PREWARM'] ?? 1);
const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const ROBOTS_TXT = 'User-agent: *\nAllow: /\n';
const PAGE_PATH = '/page/1?q=1';
/** The upstream answer's body: 96 bytes, as in the issue's measurement. */
const PAGE = Buffer.from('x'.repeat(95) + '\n');
const TARGET_CORE = '0';
const LOAD_CORE = '1';

// ---------------------------------------------------------------- child roles

/** Child role: `count` origins (one port each) in one process: robots.txt allowing everything, a 96-byte page. */
async function runOrigins(count: number): Promise<void> {
  const ports: number[] = [];
  for (let i = 0; i < count; i++) {
    const server = http.createServer((req, res) => {
      if (req.url === '/robots.txt') {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(ROBOTS_TXT.length) });
        res.end(ROBOTS_TXT);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(PAGE.length) });
      res.end(PAGE);
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ports.push((server.address() as AddressInfo).port);
  }
  process.send!({ ports });
  process.on('disconnect', () => process.exit(0));
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** Copies headers without hop-by-hop fields, nor those named in Connection (RFC 9110 §7.6.1). */
function stripHopByHop(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const named = new Set(String(headers['connection'] ?? '').toLowerCase().split(',').map((s) => s.trim()));
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name) && !named.has(name)) out[name] = value;
  return out;
}

/** Child role: a minimal forward proxy, absolute-form requests to one undici Pool per origin (robots-proxy's forwarding technique, nothing else). */
async function runBareForwarder(): Promise<void> {
  const pools = new Map<string, Pool>();
  const server = http.createServer((req, res) => {
    const target = new URL(req.url ?? '');
    let pool = pools.get(target.origin);
    if (pool === undefined) {
      pool = new Pool(target.origin, { connections: 64, pipelining: 1 });
      pools.set(target.origin, pool);
    }
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const headers = stripHopByHop(req.headers);
    headers['host'] = target.host;
    const hasBody = req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined;
    pool.request({ method: req.method as 'GET', path: target.pathname + target.search, headers, body: hasBody ? req : null, signal: abort.signal }).then(
      (up) => {
        res.writeHead(up.statusCode, stripHopByHop(up.headers));
        pipeline(up.body, res, () => undefined);
      },
      () => {
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      },
    );
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.send!({ port: (server.address() as AddressInfo).port });
  process.on('disconnect', () => process.exit(0));
  // A normal exit, so that --cpu-prof and exit hooks (bench/loop-probe.mjs) write their files.
  process.on('SIGTERM', () => process.exit(0));
}

/** A job for the load generator. Latencies come back in ms. */
interface LoadJob {
  proxyPort: number;
  origins: string[];
  close: boolean;
  seconds: number;
  /** A `Proxy-Authorization` value every request carries (the `rp-auth` target). */
  proxyAuthorization?: string;
}
interface LoadOutcome {
  requests: number;
  seconds: number;
  /** Responses not 2xx/3xx, and socket errors and timeouts. */
  bad: number;
  p50: number;
  p99: number;
}

/** Child role (fallback without wrk): autocannon, one job per message; keep-alive only. */
function runAutocannon(): void {
  const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<Record<string, any>>;
  process.on('message', async (job: LoadJob) => {
    const r = await autocannon({
      url: `http://127.0.0.1:${job.proxyPort}`,
      connections: CONNECTIONS,
      duration: job.seconds,
      pipelining: 1,
      requests: job.origins.map((o) => ({
        method: 'GET',
        path: `http://${o}${PAGE_PATH}`,
        headers: { host: o, 'user-agent': BOT_UA, ...(job.proxyAuthorization ? { 'proxy-authorization': job.proxyAuthorization } : {}) },
      })),
    });
    const outcome: LoadOutcome = {
      requests: (r['2xx'] as number) + (r['non2xx'] as number),
      seconds: r['duration'] as number,
      bad: (r['non2xx'] as number) + (r['errors'] as number) + (r['timeouts'] as number),
      p50: r['latency'].p50,
      p99: r['latency'].p99,
    };
    process.send!(outcome);
  });
  process.on('disconnect', () => process.exit(0));
}

// --------------------------------------------------------------- load generator

/**
 * wrk script: absolute-form GETs rotating over BENCH_ORIGINS (host:port,...),
 * formatted once in init; `done` prints one JSON line (latencies in µs).
 */
const WRK_SCRIPT = `
local origins = {}
for hp in string.gmatch(os.getenv("BENCH_ORIGINS"), "[^,]+") do origins[#origins + 1] = hp end
local reqs = {}
local n = 0
init = function(args)
  for i, hp in ipairs(origins) do
    local headers = { ["Host"] = hp, ["User-Agent"] = os.getenv("BENCH_UA") }
    if os.getenv("BENCH_CLOSE") == "1" then headers["Connection"] = "close" end
    local auth = os.getenv("BENCH_AUTH")
    if auth ~= nil and auth ~= "" then headers["Proxy-Authorization"] = auth end
    reqs[i] = wrk.format("GET", "http://" .. hp .. os.getenv("BENCH_PATH"), headers)
  end
end
request = function()
  n = n + 1
  if n > #reqs then n = 1 end
  return reqs[n]
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCH_RESULT {"requests":%d,"durationUs":%d,"bad":%d,"p50Us":%d,"p99Us":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`;

/** Runs wrk once (pinned to the load core) and parses its JSON line. */
function runWrk(wrk: string, scriptPath: string, pin: string[], job: LoadJob): Promise<LoadOutcome> {
  return new Promise((resolve, reject) => {
    const args = [...pin, wrk, '-t1', `-c${CONNECTIONS}`, `-d${job.seconds}s`, '--timeout', '10s', '-s', scriptPath, `http://127.0.0.1:${job.proxyPort}`];
    const child = spawn(args[0]!, args.slice(1), {
      env: { ...process.env, BENCH_ORIGINS: job.origins.join(','), BENCH_CLOSE: job.close ? '1' : '0', BENCH_UA: BOT_UA, BENCH_PATH: PAGE_PATH, BENCH_AUTH: job.proxyAuthorization ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = /BENCH_RESULT (\{.*\})/.exec(out);
      if (code !== 0 || line === null) return reject(new Error(`wrk exited with ${code}: ${out.trim()}`));
      const r = JSON.parse(line[1]!) as { requests: number; durationUs: number; bad: number; p50Us: number; p99Us: number };
      resolve({ requests: r.requests, seconds: r.durationUs / 1e6, bad: r.bad, p50: r.p50Us / 1000, p99: r.p99Us / 1000 });
    });
  });
}

// ------------------------------------------------------------------ the targets

/** Node flags from an environment variable, split on spaces. */
const flagsOf = (name: string): string[] => (process.env[name] ?? '').split(' ').filter((f) => f !== '');

interface Running {
  pid: number;
  port: number;
  /** The `Proxy-Authorization` its clients send (a target with proxy authentication). */
  proxyAuthorization?: string;
  /** The access log file, when this target writes one. */
  logFile?: string;
  /**
   * robots-proxy only: rewrites its config file as `rp`'s plus `changes` and applies it (`POST /reload`);
   * rejects when the reload is refused.
   */
  reconfigure?(changes: Array<[string[], unknown]>): Promise<void>;
  /** BENCH_HELPERS=both: the core this twin's other threads run on (else the run's default). */
  helpersCore?: string;
  stop(): Promise<void>;
}
interface Target {
  key: string;
  label: string;
  /** The shapes it runs in (keys); absent: all. */
  shapes?: string[];
  /** A floor target: runs when BENCH_FLOOR=1 or when BENCH_ONLY names it (it would double the default run). */
  floor?: boolean;
  start(): Promise<Running>;
  /** Called before each run of this target (warm-up included), untimed: e.g. a reload into this target's config. `origin`: `host:port` of one origin of the shape. */
  prepare?(run: Running, origin: string): Promise<void>;
}

/** Squid's minimal config: no cache, loopback clients only, one process, every file in `dir`. */
function squidConfig(dir: string, port: number, accessLog: boolean): string {
  return [
    `http_port 127.0.0.1:${port}`,
    'workers 1',
    'http_access allow localhost',
    'http_access deny all',
    'cache deny all',
    'cache_mem 0 MB',
    accessLog ? `access_log stdio:${join(dir, 'access.log')}` : 'access_log none',
    `cache_log ${join(dir, 'cache.log')}`,
    `pid_filename ${join(dir, 'squid.pid')}`,
    `coredump_dir ${dir}`,
    'pinger_enable off',
    'shutdown_lifetime 0 seconds',
    '',
  ].join('\n');
}

/** Starts `squid -N` (no daemon: one process, the one measured) on a free port. */
async function startSquid(squid: string, pin: string[], workDir: string, name: string, accessLog: boolean): Promise<Running> {
  const dir = join(workDir, name);
  mkdirSync(dir);
  // Squid started as root drops to its own user, which must be able to write here.
  chmodSync(dir, 0o777);
  const port = await freePort();
  const conf = join(dir, 'squid.conf');
  writeFileSync(conf, squidConfig(dir, port, accessLog));
  const child = spawn(pin[0] ?? squid, [...pin.slice(1), ...(pin.length > 0 ? [squid] : []), '-N', '-f', conf], { stdio: ['ignore', 'ignore', 'inherit'] });
  await waitForPort(port, 30_000, child);
  return { pid: child.pid!, port, ...(accessLog ? { logFile: join(dir, 'access.log') } : {}), stop: () => stopChild(child) };
}

/**
 * Writes `repo`'s config/default.yaml with only `changes` applied (comments kept), so
 * the proxy runs what `npm start` runs, whatever the defaults are today. A baseline
 * checkout (BENCH_BASELINE) gets its own default.yaml: its schema may not know today's keys.
 */
function proxyConfigFile(path: string, changes: Array<[string[], unknown]>, repo: string = REPO): void {
  const doc = parseDocument(readFileSync(join(repo, 'config/default.yaml'), 'utf8'));
  for (const [key, value] of changes) doc.setIn(key, value);
  writeFileSync(path, doc.toString());
}

/**
 * Builds dist/ as `npm start` does (its prestart: `tsc -b tsconfig.json`,
 * which compiles only what changed). The proxy must run from the tsc build:
 * under tsx, esbuild's keepNames wraps closures in `__name()` calls at run
 * time, which costs CPU on the hot path that `npm start` does not pay.
 * @returns what was done, for the header.
 */
function ensureBuild(): string {
  const t0 = performance.now();
  execFileSync(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-b', join(REPO, 'tsconfig.json')], { stdio: 'inherit' });
  return `tsc -b tsconfig.json: ${((performance.now() - t0) / 1000).toFixed(0)} s`;
}

/**
 * Starts `node dist/cli.js serve --config FILE`, which is what `npm start`
 * runs, from the repository root, stdout (where the log goes) to a file in
 * the temp dir.
 */
async function startRobotsProxy(pin: string[], workDir: string, name: string, changes: Array<[string[], unknown]>, repo: string = REPO, nodeFlags: string[] = []): Promise<Running> {
  const dir = join(workDir, name);
  mkdirSync(dir);
  const [port, adminPort] = [await freePort(), await freePort()];
  const configPath = join(dir, 'config.yaml');
  const placement: Array<[string[], unknown]> = [
    [['listen', 'port'], port],
    [['admin', 'port'], adminPort],
    [['stateDir'], join(dir, 'state')],
    [['upstream', 'allowPrivateNetworks'], true],
  ];
  proxyConfigFile(configPath, [...placement, ...changes], repo);
  const logFile = join(dir, 'stdout.log');
  const stdout = openSync(logFile, 'a');
  const stderr = openSync(join(dir, 'stderr.log'), 'a');
  const argv = [process.execPath, ...flagsOf('BENCH_PROXY_NODE_OPTIONS'), ...nodeFlags, join(repo, 'dist/cli.js'), 'serve', '--config', configPath];
  const command = [...pin, ...argv];
  const child = spawn(command[0]!, command.slice(1), { cwd: repo, stdio: ['ignore', stdout, stderr] });
  closeSync(stdout);
  closeSync(stderr);
  try {
    await waitForPort(port, 60_000, child);
  } catch (err) {
    throw new Error(`${name}: ${(err as Error).message}; stderr: ${readFileSync(join(dir, 'stderr.log'), 'utf8').slice(0, 2000)}`);
  }
  const reconfigure = async (next: Array<[string[], unknown]>): Promise<void> => {
    proxyConfigFile(configPath, [...placement, ...next], repo);
    const answer = await httpExchange({ port: adminPort, method: 'POST', path: '/reload' });
    if (answer.status !== 200) throw new Error(`${name}: POST /reload answered ${answer.status}: ${answer.body.slice(0, 500)}`);
  };
  return { pid: child.pid!, port, logFile, reconfigure, stop: () => stopChild(child) };
}

/** One HTTP exchange on 127.0.0.1 (no keep-alive); resolves with the status and body. */
function httpExchange(options: { port: number; method: string; path: string; headers?: http.OutgoingHttpHeaders }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', agent: false, ...options }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * `rp-same` and `rp-same-auth-policy20`: one robots-proxy process (started by whichever of the two
 * starts first) that each of them reconfigures into its own config before each of its runs
 * (`POST /reload`, then one request through it: the credential's one bcrypt check and the new
 * policy's first match happen there, not in the measured run). The process is stopped once.
 */
function sameProcessPair(pin: string[], workDir: string): Target[] {
  const usersDir = join(workDir, 'rp-same-users');
  const users = join(usersDir, 'users');
  const authorization = `Basic ${Buffer.from(`bench:${BENCH_PASSWORD}`).toString('base64')}`;
  const withRules: Array<[string[], unknown]> = [[['access', 'credentialsFile'], users], [['policy', 'rules'], [...BENCH_POLICY_RULES]]];
  let shared: Promise<Running> | undefined;
  let stopping: Promise<void> | undefined;
  /** The config the process has now: the key of the target it was last prepared for. */
  let current = 'rp-same';
  const start = (): Promise<Running> =>
    (shared ??= (async () => {
      mkdirSync(usersDir);
      writeFileSync(users, `bench:${bcrypt.hashSync(BENCH_PASSWORD, 10)}\n`);
      const running = await startRobotsProxy(pin, workDir, 'rp-same', []);
      return { ...running, stop: () => (stopping ??= running.stop()) };
    })());
  const prepareFor = (key: string, changes: Array<[string[], unknown]>, proxyAuthorization: string | undefined) => async (run: Running, origin: string): Promise<void> => {
    if (current !== key) {
      await run.reconfigure!(changes);
      current = key;
    }
    const answer = await httpExchange({ port: run.port, method: 'GET', path: `http://${origin}${PAGE_PATH}`, headers: proxyAuthorization ? { 'proxy-authorization': proxyAuthorization } : {} });
    if (answer.status !== 200) throw new Error(`${key}: the warming request after the reload answered ${answer.status}: ${answer.body.slice(0, 300)}`);
  };
  return [
    { key: 'rp-same', label: 'robots-proxy, default config (rp-same: one process, reloaded between the pair)', start, prepare: prepareFor('rp-same', [], undefined) },
    {
      key: 'rp-same-auth-policy20',
      label: 'the same process reloaded with proxy authentication + 20 policy rules (rp-auth-policy20\'s config)',
      start: async () => ({ ...(await start()), proxyAuthorization: authorization }),
      prepare: prepareFor('rp-same-auth-policy20', withRules, authorization),
    },
  ];
}

/** The pairs measured on one process (reloaded between them): [target, its reference], printed as ratios per round. */
const SAME_PROCESS_PAIRS: Array<[string, string]> = [['rp-same-auth-policy20', 'rp-same']];

/**
 * Starts a variant of bench/floor-roles.mjs (the Node floor: `node-floor-server`, `bare-http`,
 * `bare-dispatch`, `bare-dispatch-raw`) under plain node (no tsx loader), pinned, with
 * BENCH_BARE_NODE_OPTIONS; `options` go to it as JSON (server and Pool options, cork).
 */
async function startFloorRole(pin: string[], variant: string, options: Record<string, unknown> = {}): Promise<Running> {
  const script = join(dirname(SCRIPT), 'floor-roles.mjs');
  const execArgv = flagsOf('BENCH_BARE_NODE_OPTIONS');
  const args = [variant, JSON.stringify(options)];
  const stdio: Array<'ignore' | 'inherit' | 'ipc'> = ['ignore', 'inherit', 'inherit', 'ipc'];
  const child =
    pin.length === 0
      ? fork(script, args, { execArgv, stdio })
      : fork(script, args, { execPath: pin[0]!, execArgv: [...pin.slice(1), process.execPath, ...execArgv], stdio });
  const { port } = await nextMessage<{ port: number }>(child);
  return { pid: child.pid!, port, stop: () => stopChild(child) };
}

/**
 * Extra floor targets from BENCH_FLOOR_EXTRA, a JSON object `{"key": ["variant", {options}]}`,
 * e.g. `{"raw-cork": ["bare-dispatch-raw", {"cork": true}]}`: options of the variants side by
 * side with the plain ones, in one run.
 */
function floorExtraTargets(pin: string[]): Target[] {
  const extra = JSON.parse(process.env['BENCH_FLOOR_EXTRA'] ?? '{}') as Record<string, [string, Record<string, unknown>]>;
  return Object.entries(extra).map(([key, [variant, options]]) => ({ key, floor: true, label: `${variant} ${JSON.stringify(options)}`, start: () => startFloorRole(pin, variant, options) }));
}

/**
 * More robots-proxy targets from BENCH_RP_EXTRA, a JSON object `{"key": [[["path", "to", "key"], value], ...]}`:
 * `rp` with these config changes, e.g. `{"rp-noledger": [[["ledger", "enabled"], false]]}`; one process each.
 */
function rpExtraTargets(pin: string[], workDir: string): Target[] {
  const extra = JSON.parse(process.env['BENCH_RP_EXTRA'] ?? '{}') as Record<string, Array<[string[], unknown]>>;
  return Object.entries(extra).map(([key, changes]) => ({ key, label: `rp ${changes.map(([path, value]) => `${path.join('.')}=${JSON.stringify(value)}`).join(' ')}`, start: () => startRobotsProxy(pin, workDir, key, changes) }));
}

/** Starts a bench child role as its own process, pinned; it answers with its port(s). */
async function startRole<T>(pin: string[], role: string, ...args: string[]): Promise<[ChildProcess, T]> {
  const child = forkRole({ prefix: pin, nodeFlags: role === 'bare' ? flagsOf('BENCH_BARE_NODE_OPTIONS') : [] }, SCRIPT, role, ...args);
  return [child, await nextMessage<T>(child)];
}

// ------------------------------------------------------------------ the driver

interface Shape {
  key: string;
  label: string;
  origins: number;
  close: boolean;
}
const SHAPES: Shape[] = [
  { key: '1o-ka', label: `one origin, keep-alive, ${CONNECTIONS} connections`, origins: 1, close: false },
  { key: '50o-ka', label: `${ORIGINS} origins, keep-alive, ${CONNECTIONS} connections`, origins: ORIGINS, close: false },
  { key: '1o-close', label: `one origin, Connection: close, ${CONNECTIONS} connections`, origins: 1, close: true },
  { key: '50o-close', label: `${ORIGINS} origins, Connection: close, ${CONNECTIONS} connections`, origins: ORIGINS, close: true },
];

interface Sample {
  /** The replica (1..BENCH_REPLICAS) of the target measured. */
  replica: number;
  /** The round (1..BENCH_ROUNDS; 0: the warm-up). */
  round: number;
  rps: number;
  cpuUs: number;
  /** The kernel's part of `cpuUs` (stime): system calls, e.g. the socket writes and the loopback TCP path they run. */
  sysUs: number;
  p50: number;
  p99: number;
  bad: number;
  logBytesPerReq: number;
  cores: number;
  /** Share of the run the target's main thread spent runnable but not running (other processes had the core). */
  waitShare: number;
  originCores: number;
  /** CPU the other targets (idle, on the same core) used during this run, ms. */
  siblingCpuMs: number;
  /** BENCH_PERF_STAT: the target's events per request (syscalls, loop turns, context switches), by name. */
  perf?: Record<string, number>;
}

/**
 * BENCH_PERF_STAT=1: `perf stat` counts these events in the target process (all its threads)
 * during each measured run; printed per request. Loop turns are epoll_pwait calls (libuv's poll);
 * voluntary context switches are mostly the main thread going to sleep in it; wakes: processes
 * the target woke (a write to a sleeping origin or load generator wakes it, at the writer's cost).
 */
const PERF_EVENTS: Array<[name: string, event: string]> = [
  ['syscalls', 'raw_syscalls:sys_enter'],
  ['epoll', 'syscalls:sys_enter_epoll_pwait'],
  ['writev', 'syscalls:sys_enter_writev'],
  ['write', 'syscalls:sys_enter_write'],
  ['read', 'syscalls:sys_enter_read'],
  ['cs', 'context-switches'],
  // Wake-ups the target causes (a write to a sleeping origin or client wakes it; the waker pays for it).
  ['wakes', 'sched:sched_waking'],
];

/** Starts `perf stat` on `pid`; the returned function stops it and resolves with each event's count. */
function perfStat(pid: number): () => Promise<Record<string, number>> {
  const child = spawn('perf', ['stat', '-x', ',', '-e', PERF_EVENTS.map(([, e]) => e).join(','), '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return async () => {
    child.kill('SIGINT');
    await exited;
    const counts: Record<string, number> = {};
    for (const line of err.split('\n')) {
      const [value, , event] = line.split(',');
      const named = PERF_EVENTS.find(([, e]) => e === event);
      if (named && value !== undefined) counts[named[0]] = Number(value);
    }
    return counts;
  };
}

const perfLine = (perf: Record<string, number>): string => PERF_EVENTS.map(([name]) => `${name} ${fmt(perf[name] ?? NaN, 2)}`).join(', ');
const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const loadAverage = (): string => os.loadavg().map((l) => l.toFixed(2)).join(' ');
const sizeOf = (path: string | undefined): number => {
  if (path === undefined) return NaN;
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};
/** A target that runs robots-proxy itself (`serve`: rp*, base*), the ones BENCH_REPLICAS replicates; not the floor's `rp-forwarder`. */
const isRobotsProxyTarget = (t: Target): boolean => t.floor !== true && (t.key.startsWith('rp') || t.key.startsWith('base'));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Puts every thread of process `pid` but its main thread on `core` (taskset -p per thread; threads that
 * ended meanwhile are skipped). A Node target's other threads are V8's workers (parallel scavenges,
 * concurrent marking and sweeping, the optimising compiler) and libuv's pool: pinned with the main thread
 * they take its core in slices of up to several ms while requests wait (bench/PROFILE.md, "p99").
 * Re-applied before every run: a thread started later (libuv's pool starts on first use) inherits the main
 * thread's core.
 */
function pinHelperThreads(taskset: string, pid: number, core: string): void {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`).filter((tid) => tid !== String(pid));
  } catch {
    return;
  }
  for (const tid of tids) {
    try {
      execFileSync(taskset, ['-p', '-c', core, tid], { stdio: 'ignore' });
    } catch {
      // The thread ended.
    }
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const only = (process.env['BENCH_ONLY'] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
  const taskset = process.env['BENCH_PIN'] === '0' ? undefined : findExecutable('taskset');
  const pinTarget = taskset !== undefined && os.cpus().length > 1 ? [taskset, '-c', TARGET_CORE] : [];
  const pinLoad = taskset !== undefined && os.cpus().length > 1 ? [taskset, '-c', LOAD_CORE] : [];
  const squid = findExecutable('squid');
  const wrk = findExecutable('wrk');
  const workDir = mkdtempSync(join(os.tmpdir(), 'bench-proxy-'));
  chmodSync(workDir, 0o755);

  const squidVersion = squid === undefined ? undefined : /Version (\S+)/.exec(spawnText(squid, ['-v']))?.[1] ?? '?';
  // Built per work dir: a replica (BENCH_REPLICAS) of a target starts from its own dir (configs, logs, credentials).
  const targetsIn = (workDir: string): Target[] => [
    ...(squid === undefined
      ? []
      : [
          { key: 'squid', label: `Squid ${squidVersion}, access log on`, start: () => startSquid(squid, pinTarget, workDir, 'squid', true) },
          { key: 'squid-nolog', label: `Squid ${squidVersion}, no access log`, start: () => startSquid(squid, pinTarget, workDir, 'squid-nolog', false) },
        ]),
    {
      key: 'bare',
      label: 'bare undici forwarder',
      start: async () => {
        const [child, { port }] = await startRole<{ port: number }>(pinTarget, 'bare');
        return { pid: child.pid!, port, stop: () => stopChild(child) };
      },
    },
    // The Node floor (bench/floor-roles.mjs, plain node): the server alone, and the cheapest forwarders.
    { key: 'node-floor-server', floor: true, label: 'Node http server answering itself', start: () => startFloorRole(pinTarget, 'node-floor-server') },
    { key: 'bare-request', floor: true, label: 'bare (Pool.request + pipeline), plain node', start: () => startFloorRole(pinTarget, 'bare-request') },
    { key: 'bare-http', floor: true, label: 'bare node:http client forwarder', start: () => startFloorRole(pinTarget, 'bare-http') },
    { key: 'bare-dispatch', floor: true, label: 'bare undici dispatch forwarder', start: () => startFloorRole(pinTarget, 'bare-dispatch') },
    { key: 'bare-dispatch-raw', floor: true, label: 'bare undici dispatch, raw headers', start: () => startFloorRole(pinTarget, 'bare-dispatch-raw') },
    { key: 'rp-forwarder', floor: true, label: "robots-proxy's forwarder alone (no pipeline)", start: () => startFloorRole(pinTarget, 'rp-forwarder') },
    // The per-origin cap's structural cost: fewer responses per loop turn with 4 in flight, whoever keeps the queue.
    { key: 'rp-forwarder-cap4', floor: true, label: 'rp-forwarder, a FIFO semaphore of 4 per origin', start: () => startFloorRole(pinTarget, 'rp-forwarder', { cap: 4 }) },
    ...floorExtraTargets(pinTarget),
    { key: 'rp', label: 'robots-proxy, default config (log info)', start: () => startRobotsProxy(pinTarget, workDir, 'rp', []) },
    {
      key: 'rp-auth',
      label: 'robots-proxy, default + proxy authentication (bcrypt cost 10, every request authenticated)',
      start: async () => {
        // The issue's figure: throughput with authentication on stays within 5% of rp. Verified credentials are
        // remembered, so after the first check per credential a request costs a SHA-256 and a map lookup.
        const dir = join(workDir, 'rp-auth-users');
        mkdirSync(dir);
        const users = join(dir, 'users');
        writeFileSync(users, `bench:${bcrypt.hashSync(BENCH_PASSWORD, 10)}\n`);
        const running = await startRobotsProxy(pinTarget, workDir, 'rp-auth', [[['access', 'credentialsFile'], users]]);
        return { ...running, proxyAuthorization: `Basic ${Buffer.from(`bench:${BENCH_PASSWORD}`).toString('base64')}` };
      },
    },
    {
      key: 'rp-auth-policy20',
      label: 'robots-proxy, default + proxy authentication + 20 policy rules (the last matches)',
      start: async () => {
        // Issue 8's figure: authentication and 20 policy rules together, against rp.
        const dir = join(workDir, 'rp-auth-policy20-users');
        mkdirSync(dir);
        const users = join(dir, 'users');
        writeFileSync(users, `bench:${bcrypt.hashSync(BENCH_PASSWORD, 10)}\n`);
        const changes: Array<[string[], unknown]> = [[['access', 'credentialsFile'], users], [['policy', 'rules'], [...BENCH_POLICY_RULES]]];
        const running = await startRobotsProxy(pinTarget, workDir, 'rp-auth-policy20', changes);
        return { ...running, proxyAuthorization: `Basic ${Buffer.from(`bench:${BENCH_PASSWORD}`).toString('base64')}` };
      },
    },
    // Issue 8's figure without the process-to-process variance: rp and rp-auth-policy20's configs on one process.
    ...sameProcessPair(pinTarget, workDir),
    ...(flagsOf('BENCH_VARIANT_NODE_OPTIONS').length === 0
      ? []
      : [
          {
            key: 'rp-flags',
            label: `robots-proxy, default + node ${flagsOf('BENCH_VARIANT_NODE_OPTIONS').join(' ')}`,
            start: () => startRobotsProxy(pinTarget, workDir, 'rp-flags', [], REPO, flagsOf('BENCH_VARIANT_NODE_OPTIONS')),
          },
        ]),
    ...rpExtraTargets(pinTarget, workDir),
    { key: 'rp-warn', label: 'robots-proxy, log at warn', start: () => startRobotsProxy(pinTarget, workDir, 'rp-warn', [[['log', 'level'], 'warn']]) },
    { key: 'rp-mc64', label: 'robots-proxy, default + maxConcurrency 64', shapes: ['1o-ka', '1o-close'], start: () => startRobotsProxy(pinTarget, workDir, 'rp-mc64', [[['pacing', 'maxConcurrency'], 64]]) },
    {
      key: 'rp-policy20',
      label: 'robots-proxy, default + 20 policy rules (the last matches)',
      start: () => startRobotsProxy(pinTarget, workDir, 'rp-policy20', [[['policy', 'rules'], [...BENCH_POLICY_RULES]]]),
    },
    {
      key: 'rp-policy20-none',
      label: 'robots-proxy, default + 20 policy rules (none matches)',
      start: () =>
        startRobotsProxy(pinTarget, workDir, 'rp-policy20-none', [[['policy', 'rules'], BENCH_POLICY_RULES.map((r) => (r['name'] === 'bench-origins' ? { ...r, origin: '127.0.0.2' } : r))]]),
    },
    {
      key: 'rp-warn-mc64',
      label: 'robots-proxy, log warn + maxConcurrency 64',
      shapes: ['1o-ka'],
      start: () => startRobotsProxy(pinTarget, workDir, 'rp-warn-mc64', [[['log', 'level'], 'warn'], [['pacing', 'maxConcurrency'], 64]]),
    },
    // BENCH_BASELINE=DIR[,DIR2...]: base, base-mc64, base-warn, base2, ...
    ...BASELINES.flatMap((dir, i) => {
      const key = i === 0 ? 'base' : `base${i + 1}`;
      return [
        { key, label: `${key} (${dir}), default config`, start: () => startRobotsProxy(pinTarget, workDir, key, [], dir) },
        { key: `${key}-mc64`, label: `${key}, default + maxConcurrency 64`, shapes: ['1o-ka', '1o-close'], start: () => startRobotsProxy(pinTarget, workDir, `${key}-mc64`, [[['pacing', 'maxConcurrency'], 64]], dir) },
        // rp-warn's twin: base minus base-warn is the baseline's access line, beside rp minus rp-warn.
        { key: `${key}-warn`, label: `${key}, log at warn`, start: () => startRobotsProxy(pinTarget, workDir, `${key}-warn`, [[['log', 'level'], 'warn']], dir) },
      ];
    }),
  ];
  // BENCH_HELPERS: where a target's threads other than its main thread run (see pinHelperThreads): `load` (default)
  // on the load generator's core, as on a machine with a core to spare; `target` with the main thread (the bench
  // before 2026-12-01); `both`: every target also as a twin `KEY-h0` with them on the target's core, measured beside.
  const helpers = pinTarget.length === 0 ? 'none' : (process.env['BENCH_HELPERS'] ?? 'load');
  if (!['none', 'load', 'target', 'both'].includes(helpers)) throw new Error(`BENCH_HELPERS: load, target or both, not ${helpers}`);
  const defaultHelpersCore = helpers === 'target' ? TARGET_CORE : LOAD_CORE;
  // The twins start from a work dir of their own (configs, logs); Squid has no other threads: no twin.
  const withTwins = (dir: string): Target[] => {
    if (helpers !== 'both') return targetsIn(dir);
    const twinDir = join(dir, 'h0');
    mkdirSync(twinDir);
    const twins = targetsIn(twinDir)
      .filter((t) => !t.key.startsWith('squid'))
      .map((t) => ({ ...t, key: `${t.key}-h0`, label: `${t.label} [helpers on core ${TARGET_CORE}]`, start: async () => ({ ...(await t.start()), helpersCore: TARGET_CORE }) }));
    return [...targetsIn(dir), ...twins];
  };
  const targets = withTwins(workDir);
  const allKeys = [...targets.map((t) => t.key), 'squid', 'squid-nolog', ...SHAPES.map((s) => s.key)];
  const unknown = only.filter((k) => !allKeys.includes(k));
  if (unknown.length > 0) throw new Error(`BENCH_ONLY: unknown key(s) ${unknown.join(', ')}; targets: ${targets.map((t) => t.key).join(', ')}; shapes: ${SHAPES.map((s) => s.key).join(', ')}`);
  const onlyTargets = only.filter((k) => !SHAPES.some((s) => s.key === k));
  const onlyShapes = only.filter((k) => SHAPES.some((s) => s.key === k));
  const withFloor = process.env['BENCH_FLOOR'] === '1';
  const chosenTargets = targets.filter((t) => (onlyTargets.length === 0 ? withFloor || t.floor !== true : onlyTargets.includes(t.key) || (t.key.endsWith('-h0') && onlyTargets.includes(t.key.slice(0, -3)))));
  const shapes = SHAPES.filter((s) => (onlyShapes.length === 0 || onlyShapes.includes(s.key)) && (wrk !== undefined || !s.close));
  // Every robots-proxy target runs as REPLICAS processes; a round measures each of them (replica 1 of every target, then replica 2, ...).
  const replicasOf = (t: Target): number => (isRobotsProxyTarget(t) ? REPLICAS : 1);
  const cells = shapes.flatMap((shape) =>
    Array.from({ length: REPLICAS }, (_, r) => r + 1).flatMap((replica) =>
      chosenTargets.filter((t) => (t.shapes === undefined || t.shapes.includes(shape.key)) && replica <= replicasOf(t)).map((target) => ({ shape, target, replica })),
    ),
  );
  /** The process of `target`'s replica `replica`: named by the key alone for a target with one process (always without BENCH_REPLICAS), else `key#N`. */
  const instanceOf = (target: Target, replica: number): string => (replicasOf(target) === 1 ? target.key : `${target.key}#${replica}`);

  console.log(`proxy-throughput: node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), load average ${loadAverage()} (1, 5, 15 min)`);
  console.log(squid === undefined ? '  Squid: not found (PATH, /usr/sbin, /sbin): no Squid series, no ratios; see bench/README.md to install it' : `  Squid: ${squid} (${squidVersion}), squid -N, no cache, workers 1`);
  console.log(wrk === undefined ? '  wrk: not found: autocannon runs the keep-alive shapes, the Connection: close shapes are skipped; see bench/README.md' : `  load: ${wrk} -t1 -c${CONNECTIONS}, absolute-form GET ${PAGE_PATH} (96-byte answer), rotating over the shape's origins`);
  console.log(pinTarget.length > 0 ? `  pinning: targets on core ${TARGET_CORE}; load generator and origins on core ${LOAD_CORE} (taskset); the targets' other threads (V8 workers, libuv pool) ${helpers === 'both' ? `on core ${LOAD_CORE}, and in the -h0 twins on core ${TARGET_CORE}` : `on core ${defaultHelpersCore}`} (BENCH_HELPERS=${helpers})` : `  pinning: none (${process.env['BENCH_PIN'] === '0' ? 'BENCH_PIN=0' : 'taskset not found, or one CPU'})`);
  console.log(`  runs: ${RUN_SECONDS} s each, ${ROUNDS} round(s) round-robin across targets after a ${WARMUP_SECONDS} s warm-up, each run after ${PREWARM_SECONDS} s of unmeasured load (BENCH_PREWARM); medians${QUICK ? ' (BENCH_QUICK)' : ''}`);
  if (REPLICAS > 1) console.log(`  replicas: every robots-proxy target runs as ${REPLICAS} processes (BENCH_REPLICAS), each measured every round; a target's figure is the median over replicas x rounds`);
  // About 0.4 s per run besides its length: wrk's start, the log's flush, reading /proc; and the processes' start.
  const estimateS = cells.length * (WARMUP_SECONDS + 0.4 + ROUNDS * (PREWARM_SECONDS + RUN_SECONDS + 0.4)) + chosenTargets.reduce((n, t) => n + replicasOf(t), 0) * 1.5;
  console.log(`  estimate: about ${Math.ceil(estimateS / 60)} min (${cells.length} runs of each round)`);
  const build = chosenTargets.some((t) => t.key.startsWith('rp')) ? ensureBuild() : 'not needed';
  console.log(`  robots-proxy: node dist/cli.js serve --config (${build}), config/default.yaml, log on stdout redirected to a file; deviations: listen.port, admin.port (free ports),`);
  console.log('    stateDir (temp dir), and upstream.allowPrivateNetworks: true, deliberately: the origins are on loopback, which the default refuses (403 target-private-network)');
  console.log(`  work dir: ${workDir}${process.env['BENCH_KEEP'] === '1' ? ' (kept)' : ' (removed at the end; BENCH_KEEP=1 keeps it)'}`);

  const [originsChild, { ports }] = await startRole<{ ports: number[] }>(pinLoad, 'origins', String(ORIGINS));
  const origins = ports.map((p) => `127.0.0.1:${p}`);
  const scriptPath = join(workDir, 'rotate.lua');
  writeFileSync(scriptPath, WRK_SCRIPT);
  const autocannon = wrk === undefined ? forkRole({ prefix: pinLoad }, SCRIPT, 'autocannon') : undefined;

  const running = new Map<string, Running>();
  try {
    for (let replica = 1; replica <= REPLICAS; replica++) {
      // Replica 1 starts from the work dir itself (as without replicas), each further one from a dir of its own.
      const dir = replica === 1 ? workDir : join(workDir, `replica-${replica}`);
      if (replica > 1) mkdirSync(dir);
      const inDir = replica === 1 ? targets : withTwins(dir);
      for (const target of chosenTargets.filter((t) => replica <= replicasOf(t))) {
        const name = instanceOf(target, replica);
        running.set(name, await inDir.find((t) => t.key === target.key)!.start());
        console.log(`  started ${name.padEnd(12)} pid ${running.get(name)!.pid}, port ${running.get(name)!.port}`);
      }
    }

    const load = (job: LoadJob): Promise<LoadOutcome> => {
      if (wrk !== undefined) return runWrk(wrk, scriptPath, pinLoad, job);
      autocannon!.send(job);
      return nextMessage<LoadOutcome>(autocannon!);
    };
    const measure = async (target: Target, replica: number, shape: Shape, seconds: number, round: number): Promise<Sample> => {
      const run = running.get(instanceOf(target, replica))!;
      await target.prepare?.(run, origins[0]!);
      if (helpers !== 'none') pinHelperThreads(pinTarget[0]!, run.pid, run.helpersCore ?? defaultHelpersCore);
      if (PREWARM_SECONDS > 0 && round > 0) {
        await load({ proxyPort: run.port, origins: origins.slice(0, shape.origins), close: shape.close, seconds: PREWARM_SECONDS, ...(run.proxyAuthorization ? { proxyAuthorization: run.proxyAuthorization } : {}) });
      }
      const logBefore = sizeOf(run.logFile);
      // The other targets, idle meanwhile but pinned to the same core: what they run (V8's memory reducer, timers) takes the core from this one.
      const siblings = [...new Set([...running.values()].map((r) => r.pid))].filter((pid) => pid !== run.pid);
      const pids: Record<string, number> = { target: run.pid, origins: originsChild.pid!, ...Object.fromEntries(siblings.map((pid) => [`sibling ${pid}`, pid])) };
      const cpuBefore = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSecondsOf(pid)]));
      const sysBefore = systemCpuSecondsOf(run.pid);
      const waitBefore = runQueueWaitSecondsOf(run.pid);
      const stopPerf = process.env['BENCH_PERF_STAT'] === '1' ? perfStat(run.pid) : undefined;
      const t0 = performance.now();
      const r = await load({ proxyPort: run.port, origins: origins.slice(0, shape.origins), close: shape.close, seconds, ...(run.proxyAuthorization ? { proxyAuthorization: run.proxyAuthorization } : {}) });
      const wallS = (performance.now() - t0) / 1000;
      const cpu = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSecondsOf(pid) - cpuBefore[k]!]));
      const sys = systemCpuSecondsOf(run.pid) - sysBefore;
      const waited = runQueueWaitSecondsOf(run.pid) - waitBefore;
      const siblingCpuS = siblings.reduce((sum, pid) => sum + (cpu[`sibling ${pid}`] ?? 0), 0);
      const perfCounts = await stopPerf?.();
      const perf = perfCounts ? Object.fromEntries(Object.entries(perfCounts).map(([k, n]) => [k, n / r.requests])) : undefined;
      // robots-proxy's logger flushes its buffer every 100 ms; Squid (buffered_logs off) writes each line at once.
      await sleep(run.logFile === undefined ? 50 : 150);
      const logBytes = sizeOf(run.logFile) - logBefore;
      return {
        replica,
        round,
        rps: r.requests / r.seconds,
        cpuUs: (cpu['target']! / r.requests) * 1e6,
        sysUs: (sys / r.requests) * 1e6,
        p50: r.p50,
        p99: r.p99,
        bad: r.bad,
        logBytesPerReq: logBytes / r.requests,
        cores: cpu['target']! / wallS,
        waitShare: waited / wallS,
        originCores: cpu['origins']! / wallS,
        siblingCpuMs: siblingCpuS * 1000,
        ...(perf ? { perf } : {}),
      };
    };

    // Warm-up: fetches robots.txt for every origin, opens upstream connections, lets V8 optimise.
    for (const { target, replica, shape } of cells) await measure(target, replica, shape, WARMUP_SECONDS, 0);
    // Settle: after their warm-up the Node targets go on compiling and collecting for seconds (up to 1.8 s of CPU
    // seen during the first measured run), on the core the next target is measured on. Wait (at most 20 s) until
    // all of them together use less than 5% of a core over a second (idle, each robots-proxy uses ~0.6%: its timers).
    const settleStart = performance.now();
    const allPids = [...running.values()].map((r) => r.pid);
    for (;;) {
      const before = allPids.reduce((sum, pid) => sum + cpuSecondsOf(pid), 0);
      await sleep(1000);
      const used = allPids.reduce((sum, pid) => sum + cpuSecondsOf(pid), 0) - before;
      if (used < 0.05 || performance.now() - settleStart > 20_000) {
        console.log(`  settled after the warm-up: ${fmt((performance.now() - settleStart) / 1000, 1)} s (the targets' CPU in the last second: ${fmt(used * 1000)} ms)`);
        break;
      }
    }

    // Every replica's samples under its target's key: the target's figure is their median.
    const results = new Map<string, Sample[]>(cells.map((c) => [`${c.target.key} ${c.shape.key}`, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const shape of shapes) {
        const inShape = cells.filter((c) => c.shape === shape);
        for (const { target, replica } of round % 2 === 1 ? inShape : [...inShape].reverse()) {
          const s = await measure(target, replica, shape, RUN_SECONDS, round);
          results.get(`${target.key} ${shape.key}`)!.push(s);
          console.log(
            `  round ${round} ${shape.key.padEnd(9)} ${instanceOf(target, replica).padEnd(12)} ${fmt(s.rps).padStart(6)} req/s  ${fmt(s.cpuUs).padStart(4)} us CPU/req (sys ${fmt(s.sysUs)})  p50 ${fmt(s.p50, 1)} ms  p99 ${fmt(s.p99, 1)} ms` +
              `  target ran ${fmt(s.cores, 2)} cores, waited for a core ${fmt(s.waitShare * 100)}%; origins ${fmt(s.originCores, 2)} cores; idle targets ${fmt(s.siblingCpuMs)} ms CPU${s.perf ? `; per req ${perfLine(s.perf)}` : ''}${s.bad > 0 ? `  ${s.bad} NOT 2xx/3xx OR ERRORS` : ''}`,
          );
        }
      }
    }

    console.log(`\nMedians of ${ROUNDS} round(s)${REPLICAS > 1 ? ` x ${REPLICAS} replicas (robots-proxy targets)` : ''}; "vs Squid" = req/s / req/s of Squid with its access log on, same shape; CPU = target process utime+stime per request, sys = its stime (the kernel's part);`);
    console.log('  log B/req = access log bytes written per request; waited = share of the run the target was runnable but another process had the core');
    for (const shape of shapes) {
      const inShape = cells.filter((c) => c.shape === shape && c.replica === 1);
      const med = (key: string, f: (s: Sample) => number): number => median(results.get(`${key} ${shape.key}`)!.map(f));
      const squidRps = inShape.some((c) => c.target.key === 'squid') ? med('squid', (s) => s.rps) : NaN;
      console.log(`\n  ${shape.label}`);
      console.log(`  ${'target'.padEnd(44)} ${'req/s'.padStart(7)} ${'vs Squid'.padStart(9)} ${'CPU us/req'.padStart(11)} ${'sys'.padStart(5)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'log B/req'.padStart(10)} ${'waited'.padStart(7)}  req/s of each round`);
      for (const { target } of inShape) {
        const rps = med(target.key, (s) => s.rps);
        const bad = results.get(`${target.key} ${shape.key}`)!.reduce((n, s) => n + s.bad, 0);
        console.log(
          `  ${target.label.padEnd(44)} ${fmt(rps).padStart(7)} ${fmt(rps / squidRps, 2).padStart(9)} ${fmt(med(target.key, (s) => s.cpuUs)).padStart(11)} ${fmt(med(target.key, (s) => s.sysUs)).padStart(5)} ${fmt(med(target.key, (s) => s.p50), 1).padStart(7)} ${fmt(med(target.key, (s) => s.p99), 1).padStart(7)} ${fmt(med(target.key, (s) => s.logBytesPerReq)).padStart(10)} ${(fmt(med(target.key, (s) => s.waitShare * 100)) + '%').padStart(7)}  ` +
            results.get(`${target.key} ${shape.key}`)!.map((s) => fmt(s.rps)).join(', ') + (bad > 0 ? `  (${bad} not 2xx/3xx or errors)` : ''),
        );
        const samples = results.get(`${target.key} ${shape.key}`)!;
        if (samples[0]?.perf) {
          const medians = Object.fromEntries(PERF_EVENTS.map(([name]) => [name, median(samples.map((x) => x.perf?.[name] ?? NaN))]));
          console.log(`  ${''.padEnd(44)} per request (perf stat, medians): ${perfLine(medians)}`);
        }
      }
    }
    if (REPLICAS > 1) printReplicaSpread(shapes, cells, results, instanceOf);
    printSameProcessPairs(shapes, results);
    if (squid === undefined) console.log('\n  Squid was not found: no ratios. Install it (apt-get install squid) and run again.');
    console.log(`\n  load average at the end ${loadAverage()}; ${((performance.now() - started) / 1000).toFixed(0)} s in all. The machine's other processes share the cores: CPU per request is steadier than req/s.`);
  } finally {
    await Promise.all([...running.values()].map((r) => r.stop()));
    originsChild.disconnect();
    autocannon?.disconnect();
    if (process.env['BENCH_KEEP'] !== '1') rmSync(workDir, { recursive: true, force: true });
  }
}

/**
 * With BENCH_REPLICAS > 1: per shape, each robots-proxy target's CPU per request and req/s
 * against `rp`'s (medians over replicas x rounds), and each replica's own medians with their
 * spread ((max - min) / min): how far one process differs from another of the same build (the
 * replicas of `rp` are an A/A comparison).
 */
function printReplicaSpread(
  shapes: Shape[],
  cells: Array<{ shape: Shape; target: Target; replica: number }>,
  results: Map<string, Sample[]>,
  instanceOf: (target: Target, replica: number) => string,
): void {
  const spread = (values: number[]): string => `${fmt(((Math.max(...values) - Math.min(...values)) / Math.min(...values)) * 100, 1)}%`;
  console.log(`\nReplicas (BENCH_REPLICAS=${REPLICAS}): "vs rp" = the target's median / rp's, same shape (CPU: above 1 costs more; req/s: below 1 serves fewer);`);
  console.log('  per replica: the median over rounds of each process; spread = (max - min) / min of those');
  for (const shape of shapes) {
    const inShape = cells.filter((c) => c.shape === shape && c.replica === 1 && isRobotsProxyTarget(c.target));
    const samplesOf = (key: string): Sample[] => results.get(`${key} ${shape.key}`) ?? [];
    const rp = samplesOf('rp');
    const [rpCpu, rpRps] = [median(rp.map((s) => s.cpuUs)), median(rp.map((s) => s.rps))];
    console.log(`\n  ${shape.label}`);
    console.log(`  ${'target'.padEnd(18)} ${'CPU us/req'.padStart(10)} ${'vs rp'.padStart(6)} ${'req/s'.padStart(7)} ${'vs rp'.padStart(6)}  CPU us/req per replica (spread); req/s per replica (spread)`);
    for (const { target } of inShape) {
      const samples = samplesOf(target.key);
      const replicas = [...new Set(samples.map((s) => s.replica))].sort((a, b) => a - b);
      const perReplica = (f: (s: Sample) => number): number[] => replicas.map((r) => median(samples.filter((s) => s.replica === r).map(f)));
      const [cpu, rps] = [median(samples.map((s) => s.cpuUs)), median(samples.map((s) => s.rps))];
      const [cpus, rpss] = [perReplica((s) => s.cpuUs), perReplica((s) => s.rps)];
      console.log(
        `  ${target.key.padEnd(18)} ${fmt(cpu, 1).padStart(10)} ${fmt(cpu / rpCpu, 3).padStart(6)} ${fmt(rps).padStart(7)} ${fmt(rps / rpRps, 3).padStart(6)}  ` +
          `${replicas.map((r, i) => `${instanceOf(target, r)} ${fmt(cpus[i]!, 1)}`).join(', ')} (${spread(cpus)}); ${rpss.map((v) => fmt(v)).join(', ')} (${spread(rpss)})`,
      );
    }
  }
}

/**
 * The pairs of {@link SAME_PROCESS_PAIRS} that ran: per shape, the target's CPU per request and
 * req/s over its reference's, one ratio per (replica, round) from the two runs of one process back
 * to back, and their median; the order-balanced ratio (geometric mean of the odd and of the even
 * rounds' medians: the pair runs in one order in odd rounds, the other in even ones); then each replica's median ratio (the spread between processes that
 * remains). Above 1 (CPU) the target costs more; below 1 (req/s) it serves fewer.
 */
function printSameProcessPairs(shapes: Shape[], results: Map<string, Sample[]>): void {
  for (const [key, reference] of SAME_PROCESS_PAIRS) {
    const ran = shapes.filter((shape) => (results.get(`${key} ${shape.key}`)?.length ?? 0) > 0 && (results.get(`${reference} ${shape.key}`)?.length ?? 0) > 0);
    if (ran.length === 0) continue;
    console.log(`\nSame process (${key} / ${reference}: one process per replica, reloaded between them, measured back to back): ratio per replica and round, median;`);
    console.log('  CPU above 1: costs more; req/s below 1: serves fewer');
    for (const shape of ran) {
      const of = (k: string): Sample[] => results.get(`${k} ${shape.key}`)!;
      const pairs = of(key).flatMap((s) => {
        const ref = of(reference).find((r) => r.replica === s.replica && r.round === s.round);
        return ref === undefined ? [] : [{ replica: s.replica, round: s.round, cpu: s.cpuUs / ref.cpuUs, rps: s.rps / ref.rps, refCpu: ref.cpuUs, cpuUs: s.cpuUs, refRps: ref.rps, rpsOf: s.rps }];
      });
      // The pair's order alternates with the round's parity: the geometric mean of the odd and even
      // rounds' medians cancels what running first or second does to a run.
      const balanced = (field: 'cpu' | 'rps'): string => {
        const odd = pairs.filter((p) => p.round % 2 === 1).map((p) => p[field]);
        const even = pairs.filter((p) => p.round % 2 === 0).map((p) => p[field]);
        return odd.length > 0 && even.length > 0 ? fmt(Math.sqrt(median(odd) * median(even)), 3) : 'n/a (one round)';
      };
      const replicas = [...new Set(pairs.map((p) => p.replica))].sort((a, b) => a - b);
      const perReplica = replicas.map((r) => `#${r} ${fmt(median(pairs.filter((p) => p.replica === r).map((p) => p.cpu)), 3)}`).join(', ');
      console.log(
        `  ${shape.key.padEnd(9)} CPU us/req ${fmt(median(pairs.map((p) => p.refCpu)), 1)} -> ${fmt(median(pairs.map((p) => p.cpuUs)), 1)}, ratio ${fmt(median(pairs.map((p) => p.cpu)), 3)}, order-balanced ${balanced('cpu')} ` +
          `(${pairs.map((p) => fmt(p.cpu, 2)).join(' ')}; per replica ${perReplica}); req/s ${fmt(median(pairs.map((p) => p.refRps)))} -> ${fmt(median(pairs.map((p) => p.rpsOf)))}, ratio ${fmt(median(pairs.map((p) => p.rps)), 3)}, order-balanced ${balanced('rps')}`,
      );
    }
  }
}

function spawnText(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return '';
  }
}

const role = process.argv[2];
if (role === 'origins') await runOrigins(Number(process.argv[3]));
else if (role === 'bare') await runBareForwarder();
else if (role === 'autocannon') runAutocannon();
else await main();
