/**
 * The operator policy's cost per request (issue 8), in process: compiling the 20 rules of
 * `bench:proxy`'s `rp-policy20` (bench/support.ts), and matching one request against them, in
 * three cases: the last rule matches (the bench origins), none matches, and the first matches;
 * plus an empty policy for reference. CPU µs per match, medians of 7 rounds of >= 200 ms.
 * Then what the rules add to a request's pipeline path as `bench:proxy` sends it, in process: the
 * real {@link RequestPipeline.decideFor} (identity, target guard, policy, robots.txt decision,
 * the rule's facts in the Decision) and the pacer's `acquire` with the rule's `maxConcurrency`
 * (as the pipeline calls it), then the slot's release, over 50 origins; no rules, the 20 with the
 * last matching, the 20 with none matching; CPU µs and heap bytes allocated per request,
 * interleaved rounds (run with `--min-semi-space-size=64 --max-semi-space-size=64` for the bytes:
 * `npm run bench:policy` does). Prints figures; asserts nothing.
 */
import os from 'node:os';
import v8 from 'node:v8';
import { validateConfig, type Config } from '../src/config/index.js';
import { compilePolicy, type CompiledPolicy, type PolicyRequest } from '../src/policy/operator-policy.js';
import { Pacer } from '../src/pacing/pacer.js';
import type { AcquireOptions, RequestLimits } from '../src/pacing/types.js';
import { RequestPipeline, type PipelineDeps } from '../src/proxy/pipeline.js';
import type { TargetGuard } from '../src/proxy/target-guard.js';
import { parseRobotsTxt } from '../src/robots/parse.js';
import type { RobotsSnapshot } from '../src/policy/snapshot.js';
import { systemClock } from '../src/clock.js';
import { pacingOptionsOf } from '../src/main.js';
import { BENCH_POLICY_RULES, median } from './support.js';

const rules = validateConfig({ policy: { rules: BENCH_POLICY_RULES } }).policy.rules;
let sink = 0;

/** CPU µs per call of `match` on `request` (median of 7 rounds of at least 200 ms). */
function cpuMicrosPerMatch(policy: CompiledPolicy, request: PolicyRequest): number {
  const rounds: number[] = [];
  for (let round = 0; round < 7; round++) {
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    let calls = 0;
    do {
      for (let i = 0; i < 1000; i++) sink ^= policy.match(request)?.name.length ?? 1;
      calls += 1000;
    } while (performance.now() - start < 200);
    const used = process.cpuUsage(cpu0);
    rounds.push((used.user + used.system) / calls);
  }
  return median(rounds);
}

/**
 * POLICY_PATH_ONLY=KEY POLICY_PATH_REQUESTS=N: only the pipeline path KEY (rp, rp-policy20, rp-policy20-none), N
 * requests after its warm-up, then exit; nothing timed. For an instruction count that the machine's load does not move:
 * the difference of two runs under `valgrind --tool=cachegrind --cache-sim=no` (bench/PROFILE.md, "Issue 8").
 */
const only = process.env['POLICY_PATH_ONLY'];

const compileRounds: number[] = [];
for (let i = 0; i < 21; i++) {
  const t0 = performance.now();
  sink ^= compilePolicy(rules).size;
  compileRounds.push(performance.now() - t0);
}

const request = (fields: Partial<PolicyRequest>): PolicyRequest => ({
  identity: '127.0.0.1',
  productTokens: ['ExampleBot'],
  origin: 'http://127.0.0.1:40123',
  pathAndQuery: '/page/1?q=1',
  method: 'GET',
  ...fields,
});
const policy = compilePolicy(rules);
const cases: Array<[string, CompiledPolicy, PolicyRequest]> = [
  ['20 rules, the last matches (bench:proxy\'s requests)', policy, request({})],
  ['20 rules, none matches (https://www.example.org/a/b?c=d)', policy, request({ origin: 'https://www.example.org', pathAndQuery: '/a/b?c=d' })],
  ['20 rules, the first matches (/wp-admin/x)', policy, request({ pathAndQuery: '/wp-admin/x' })],
  ['no rules', compilePolicy([]), request({})],
];

if (only === undefined) console.log(`operator policy benchmark — node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
if (only === undefined) console.log(`compile 20 rules: ${median(compileRounds).toFixed(3)} ms (median of 21; once per configuration load)`);
for (const [label, compiled, req] of only === undefined ? cases : []) {
  const matched = compiled.match(req)?.name ?? '(none)';
  console.log(`${label.padEnd(58)} ${cpuMicrosPerMatch(compiled, req).toFixed(3)} µs CPU per match  -> ${matched}`);
}

// ---- what the rules add to a request's pipeline path (decide, then the pacer as the pipeline calls it)

const ORIGINS = Array.from({ length: 50 }, (_, i) => `http://127.0.0.1:${40000 + i}`);
const TARGETS = ORIGINS.map((origin) => new URL(`${origin}/page/1?q=1`));
const USER_AGENT = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const nowMs = Date.now();
const SNAPSHOT: RobotsSnapshot = {
  info: { url: '', state: 'ok', status: 200, error: undefined, fetchedAtMs: nowMs, expiresAtMs: nowMs + 86_400_000, bytes: 23, truncated: false },
  robots: parseRobotsTxt('User-agent: *\nAllow: /\n'),
};
const NO_LIMITS = (): RequestLimits => ({ delayMs: 0 });

/** A pipeline with `config`, the robots cache answering at once, the guard allowing every target; and its own pacer. */
function pipelineWith(config: Config): { pipeline: RequestPipeline; pacer: Pacer } {
  const pacer = new Pacer(pacingOptionsOf(config), systemClock);
  const guard = { checkNow: () => ({ allowed: true }), check: async () => ({ allowed: true }) } as unknown as TargetGuard;
  const deps = {
    config,
    robots: { getFresh: () => SNAPSHOT, get: async () => SNAPSHOT },
    pacer,
    forwarder: undefined,
    guard,
    clock: systemClock,
    viaPseudonym: 'bench',
    onFinished: () => undefined,
    access: { admit: () => undefined },
  } as unknown as PipelineDeps;
  return { pipeline: new RequestPipeline(deps), pacer };
}

/** One request's decision and slot, as `RequestPipeline.handle` runs them (no sockets, no log line). */
function requestPath(pipeline: RequestPipeline, pacer: Pacer, i: number): void {
  const decided = pipeline.decideFor(TARGETS[i % TARGETS.length]!, USER_AGENT, null, 'GET');
  if (decided instanceof Promise) throw new Error('the bench expects a synchronous decision');
  const options: AcquireOptions = { identity: '127.0.0.1/32', signal: undefined, limits: NO_LIMITS };
  const maxConcurrency = decided.matched?.rule?.pacing.maxConcurrency;
  if (maxConcurrency !== undefined) options.maxConcurrency = maxConcurrency;
  const outcome = pacer.acquire(decided.decision.origin, 0, options);
  if (outcome instanceof Promise || !outcome.granted) throw new Error('the bench expects a slot at once');
  sink ^= decided.decision.policy === undefined ? 1 : 2;
  outcome.slot.release();
}

const noneMatching = BENCH_POLICY_RULES.map((r) => (r['name'] === 'bench-origins' ? { ...r, origin: '127.0.0.2' } : r));
const paths: Array<[string, { pipeline: RequestPipeline; pacer: Pacer }]> = [
  ['no rules (rp)', pipelineWith(validateConfig({}))],
  ['20 rules, the last matches (rp-policy20)', pipelineWith(validateConfig({ policy: { rules: BENCH_POLICY_RULES } }))],
  ['20 rules, none matches (rp-policy20-none)', pipelineWith(validateConfig({ policy: { rules: noneMatching } }))],
];

/** Heap bytes allocated per request: the used heap's growth over 2,000 requests in a burst without a GC (the lowest of 5 tries). */
function bytesPerRequest(pipeline: RequestPipeline, pacer: Pacer): number {
  let best = Infinity;
  for (let attempt = 0; attempt < 5; attempt++) {
    const before = v8.getHeapStatistics().used_heap_size;
    for (let i = 0; i < 2000; i++) requestPath(pipeline, pacer, i);
    const grown = v8.getHeapStatistics().used_heap_size - before;
    if (grown >= 0) best = Math.min(best, grown / 2000);
  }
  return best;
}

if (only !== undefined) {
  const chosen = paths.find(([label]) => label.includes(`(${only})`));
  if (chosen === undefined) throw new Error(`POLICY_PATH_ONLY: one of rp, rp-policy20, rp-policy20-none`);
  const { pipeline, pacer } = chosen[1];
  for (let i = 0; i < 50_000; i++) requestPath(pipeline, pacer, i);
  const n = Number(process.env['POLICY_PATH_REQUESTS'] ?? 0);
  for (let i = 0; i < n; i++) requestPath(pipeline, pacer, i);
  process.exit(sink === 0x7fffffff ? 1 : 0);
}
for (const [, { pipeline, pacer }] of paths) for (let i = 0; i < 50_000; i++) requestPath(pipeline, pacer, i); // warm-up
const cpu = new Map<string, number[]>(paths.map(([label]) => [label, []]));
for (let round = 0; round < 9; round++) {
  // Interleaved, the order rotated every round: the machine's load falls on every path alike.
  for (let k = 0; k < paths.length; k++) {
    const [label, { pipeline, pacer }] = paths[(k + round) % paths.length]!;
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < 20_000; i++) requestPath(pipeline, pacer, i);
    const used = process.cpuUsage(cpu0);
    cpu.get(label)!.push((used.user + used.system) / 20_000);
  }
}
console.log('\nA request\'s pipeline path (decideFor, then the pacer\'s acquire and release, 50 origins), medians of 9 interleaved rounds of 20,000:');
const base = median(cpu.get(paths[0]![0])!);
for (const [label, { pipeline, pacer }] of paths) {
  const us = median(cpu.get(label)!);
  console.log(`${label.padEnd(58)} ${us.toFixed(3)} µs CPU (+${(us - base).toFixed(3)}), ${bytesPerRequest(pipeline, pacer).toFixed(0)} heap bytes per request`);
}
if (sink === 0x7fffffff) console.log('');
