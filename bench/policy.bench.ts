/**
 * The operator policy's cost per request (issue 8), in process: compiling the 20 rules of
 * `bench:proxy`'s `rp-policy20` (bench/support.ts), and matching one request against them, in
 * three cases: the last rule matches (the bench origins), none matches, and the first matches;
 * plus an empty policy for reference. CPU µs per match, medians of 7 rounds of >= 200 ms.
 * Prints figures; asserts nothing. Run with `npm run bench:policy`.
 */
import os from 'node:os';
import { validateConfig } from '../src/config/index.js';
import { compilePolicy, type CompiledPolicy, type PolicyRequest } from '../src/policy/operator-policy.js';
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

console.log(`operator policy benchmark — node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log(`compile 20 rules: ${median(compileRounds).toFixed(3)} ms (median of 21; once per configuration load)`);
for (const [label, compiled, req] of cases) {
  const matched = compiled.match(req)?.name ?? '(none)';
  console.log(`${label.padEnd(58)} ${cpuMicrosPerMatch(compiled, req).toFixed(3)} µs CPU per match  -> ${matched}`);
}
if (sink === 0x7fffffff) console.log('');
