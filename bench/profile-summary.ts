/**
 * Summarises a V8 profile of robots-proxy under the proxy bench: a CPU
 * profile (`node --cpu-prof`: where the main thread's time goes) or a sampling
 * heap profile (bench/loop-probe.mjs with LOOP_PROBE_HEAP: where the bytes are
 * allocated). Prints the top self entries (file:function:line), a breakdown by
 * cost (access log, pacer, URL parsing, headers, undici, Node's HTTP server,
 * socket writes, ...) and a few inclusive entry points. Used for
 * bench/PROFILE.md; prints figures, asserts nothing.
 *
 *   node --import tsx bench/profile-summary.ts FILE.cpuprofile|FILE.heapprofile
 *     [--skip-ms N] [--top N] [--per-request X | --requests N] [--callers NAME]... [--under NAME]...
 *
 * CPU profiles: samples are counted (each ~1 ms of the main thread running);
 * shares are of the samples where it was not idle (GC helper threads and
 * libuv's pool are not in a V8 profile). --skip-ms drops the samples before
 * the first request the proxy served (start-up: module loading, the CA) and N
 * ms more (the bench's warm-up is 1000 ms). --per-request X scales the shares
 * to µs per request (X: the CPU per request the bench measured).
 * Heap profiles: weights are sampled bytes; --requests N (the access lines
 * the run wrote) turns them into bytes per request.
 * --callers NAME shows the stacks under which a function's self weight was
 * spent; --under NAME what ran beneath frames named NAME (e.g. processImmediate).
 *
 * The breakdown gives each sample to the first frame, from the leaf up,
 * that a rule below claims: so JSON.stringify called by pino counts as access
 * log, a socket write called by undici as a socket write, and the pipeline
 * only what its own functions run. Frames in dist/ (the tsc build `npm start`
 * runs) are mapped back to src/ file and line with the build's source maps.
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  /** 0-based, as V8 writes them. */
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}
/** V8's sampling heap profile: a tree of allocation sites with the bytes sampled at each. */
interface HeapProfileNode {
  id: number;
  callFrame: CallFrame;
  selfSize: number;
  children: HeapProfileNode[];
}
interface HeapProfile {
  head: HeapProfileNode;
}

/** Cost categories, first match wins (tested on a frame's url and function name). */
const RULES: Array<[string, (f: CallFrame) => boolean]> = [
  // The socket write system calls themselves (loopback TCP: the kernel's work is charged to them).
  // fs writeString (the log's write(2)) is not here: it counts as access log, through src/audit/logger.ts (or sonic-boom before it).
  ['socket writes: write(2)/writev(2) to client and upstream', (f) => f.url === '' && /^(writev|writeLatin1String|writeUtf8String|writeAsciiString|writeUcs2String|writeBuffer)$/.test(f.functionName)],
  ['access log (src/audit/access-log.ts, access-line.ts, iso-time.ts, logger.ts, pino, JSON)', (f) => /src\/audit\/(access-log|access-line|iso-time|logger|redact)\.ts|node_modules\/(pino|sonic-boom|pino-std-serializers|quick-format-unescaped|fast-redact|on-exit-leak-free|thread-stream)\//.test(f.url)],
  ['metrics (src/audit/metrics.ts, bot-metrics.ts, top-labels.ts, prom-client)', (f) => /src\/audit\/(metrics|bot-metrics|top-labels)\.ts|node_modules\/(prom-client|tdigest|bintrees)\//.test(f.url)],
  ['pacer bookkeeping (src/pacing/)', (f) => /src\/pacing\//.test(f.url)],
  ['header copying (src/proxy/headers.ts)', (f) => /src\/proxy\/headers\.ts/.test(f.url)],
  ['URL parsing (WHATWG URL)', (f) => /internal\/url/.test(f.url) || (f.url === '' && /^(URL|parse)$/.test(f.functionName))],
  ['robots decision (src/robots, src/policy, src/cache)', (f) => /src\/(robots|policy|cache)\//.test(f.url)],
  ['target guard (src/proxy/target-guard.ts)', (f) => /src\/proxy\/target-guard\.ts/.test(f.url)],
  ['undici (client, pool, llhttp parser in wasm)', (f) => /node_modules\/undici\/|^wasm:/.test(f.url)],
  ['pipeline and proxy glue (other src/proxy, src/main.ts)', (f) => /\/src\//.test(f.url)],
  ['Node HTTP server/client (_http_*)', (f) => /node:_http_|internal\/http|_http_/.test(f.url)],
  ['Node net and streams', (f) => /node:net|node:stream|internal\/streams|internal\/stream_base_commons|node:events|internal\/event_target/.test(f.url)],
  ['timers', (f) => /internal\/timers|node:timers/.test(f.url)],
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
  ['microtasks, next ticks, async hooks', (f) => /internal\/process\/task_queues|internal\/async_hooks|internal\/process\/promises/.test(f.url)],
];
const OTHER = 'other (native, unattributed: "(program)", libuv, syscalls)';

function main(): void {
  process.stdout.on('error', () => process.exit(0)); // piped into head
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'skip-ms': { type: 'string', default: '0' },
      top: { type: 'string', default: '25' },
      'per-request': { type: 'string' },
      requests: { type: 'string' },
      callers: { type: 'string', multiple: true },
      under: { type: 'string', multiple: true },
    },
  });
  const file = positionals[0];
  if (file === undefined) throw new Error('usage: profile-summary.ts FILE.cpuprofile|FILE.heapprofile [--skip-ms N] [--top N] [--per-request X | --requests N] [--callers NAME]... [--under NAME]...');
  const raw = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile | HeapProfile;
  const top = Number(values.top);
  const maps = new Map<string, SourceMap | undefined>();
  const { nodes, weights, header, unit } = 'head' in raw ? heapWeights(raw) : cpuWeights(raw, Number(values['skip-ms']) * 1000);
  for (const n of nodes) n.callFrame = toSource(n.callFrame, maps);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const total = [...weights.values()].reduce((a, b) => a + b, 0);
  // Per request: µs from a CPU per request (CPU profiles), bytes from a request count (heap profiles).
  const perRequest =
    values['per-request'] !== undefined
      ? { scale: Number(values['per-request']) / total, unit: 'us/req' }
      : values.requests !== undefined
        ? { scale: 1 / Number(values.requests), unit: 'B/req' }
        : undefined;

  const where = (f: CallFrame): string => {
    const path = f.url.includes('/node_modules/') ? f.url.slice(f.url.lastIndexOf('/node_modules/') + 1) : f.url.replace(/^file:\/\/\/?/, '');
    return `${path || '(native)'}:${f.functionName || '(anonymous)'}${f.url ? `:${f.lineNumber + 1}` : ''}`;
  };
  const share = (w: number): string => `${((w / total) * 100).toFixed(1).padStart(5)}%${perRequest === undefined ? '' : `  ${(w * perRequest.scale).toFixed(1).padStart(7)} ${perRequest.unit}`}`;

  console.log(`${file}: ${header}`);
  console.log(`\nTop ${top} self entries (share of ${unit}${perRequest === undefined ? '' : `; ${perRequest.unit}`}):`);
  const selfByWhere = new Map<string, number>();
  for (const [id, us] of weights) {
    const key = where(byId.get(id)!.callFrame);
    selfByWhere.set(key, (selfByWhere.get(key) ?? 0) + us);
  }
  for (const [key, us] of [...selfByWhere].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${share(us)}  ${key}`);

  const byCategory = new Map<string, number>();
  /** Per category: the claiming frame (file:function:line) and its samples. */
  const claimedBy = new Map<string, Map<string, number>>();
  for (const [id, us] of weights) {
    let category = OTHER;
    let claim = where(byId.get(id)!.callFrame);
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const frame = byId.get(n)!.callFrame;
      const rule = RULES.find(([, test]) => test(frame));
      if (rule !== undefined) {
        category = rule[0];
        claim = where(frame);
        break;
      }
    }
    byCategory.set(category, (byCategory.get(category) ?? 0) + us);
    const claims = claimedBy.get(category) ?? new Map<string, number>();
    claims.set(claim, (claims.get(claim) ?? 0) + us);
    claimedBy.set(category, claims);
  }
  console.log('\nBreakdown (each sample to the first claimed frame from the leaf up; under each, the claiming frames, with what they call):');
  for (const [category, us] of [...byCategory].sort((a, b) => b[1] - a[1])) {
    console.log(`  ${share(us)}  ${category}`);
    for (const [claim, n] of [...claimedBy.get(category)!].sort((a, b) => b[1] - a[1]).slice(0, 4)) console.log(`      ${share(n)}  ${claim}`);
  }

  // Inclusive time of a few entry points, for the top-level picture.
  const inclusive = (test: (f: CallFrame) => boolean): number => {
    let total = 0;
    for (const [id, us] of weights) {
      for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
        if (test(byId.get(n)!.callFrame)) {
          total += us;
          break;
        }
      }
    }
    return total;
  };
  const ENTRY_POINTS: Array<[string, (f: CallFrame) => boolean]> = [
    ['writeAccessLog (src/audit/access-line.ts) and below', (f) => f.functionName === 'writeAccessLog'],
    ['pino LOG (node_modules/pino/lib/tools.js) and below', (f) => /node_modules\/pino\/lib\/tools\.js/.test(f.url) && f.functionName === 'LOG'],
    ['pino stringify (JSON of the record) and below', (f) => /node_modules\/pino\/lib\/tools\.js/.test(f.url) && f.functionName === 'stringify'],
    ['the log write(2): LogWriter (src/audit/logger.ts) or sonic-boom, and below', (f) => /node_modules\/sonic-boom\//.test(f.url) || (/src\/audit\/logger\.ts/.test(f.url) && /writeSome|flush/.test(f.functionName))],
    ['ProxyMetrics.observe and below', (f) => f.functionName === 'observe' && /src\/audit\/metrics\.ts/.test(f.url)],
    ['Pacer (any src/pacing frame) and below', (f) => /src\/pacing\//.test(f.url)],
    ['RequestPipeline (src/proxy/pipeline.ts) and below', (f) => /src\/proxy\/pipeline\.ts/.test(f.url)],
    ['UpstreamForwarder (src/proxy/forwarder.ts) and below', (f) => /src\/proxy\/forwarder\.ts/.test(f.url)],
    ['undici and below', (f) => /node_modules\/undici\//.test(f.url)],
    ['timer API (setTimeout, clearTimeout, setImmediate, their lists) and below', (f) => /internal\/timers|node:timers/.test(f.url) && !/^process(Timers|Immediate)$|^listOnTimeout$/.test(f.functionName)],
    ['callbacks run by timers and immediates (processTimers, processImmediate) and below', (f) => /^process(Timers|Immediate)$/.test(f.functionName)],
    ['garbage collector', (f) => f.functionName === '(garbage collector)'],
    ['AbortController/AbortSignal and below', (f) => /internal\/abort_controller/.test(f.url)],
  ];
  console.log('\nInclusive (a sample counts once if any frame of its stack matches):');
  for (const [label, test] of ENTRY_POINTS) console.log(`  ${share(inclusive(test))}  ${label}`);

  // --callers NAME: where the self time of functions named NAME comes from (4 frames up).
  for (const name of values.callers ?? []) {
    const chains = new Map<string, number>();
    for (const [id, us] of weights) {
      if (byId.get(id)!.callFrame.functionName !== name) continue;
      // Up to the first frame of our code or of a package (who asked for it), at most 12 frames.
      const chain: string[] = [];
      for (let n = parent.get(id); n !== undefined && chain.length < 12; n = parent.get(n)) {
        const frame = byId.get(n)!.callFrame;
        chain.push(where(frame));
        if (/\/src\/|node_modules/.test(frame.url)) break;
      }
      const key = chain.length > 3 ? [chain[0], '...', ...chain.slice(-2)].join(' < ') : chain.join(' < ');
      chains.set(key, (chains.get(key) ?? 0) + us);
    }
    console.log(`\nCallers of ${name} (self time):`);
    for (const [chain, us] of [...chains].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`  ${share(us)}  < ${chain}`);
  }

  // --under NAME: the self time spent beneath frames named NAME, by function.
  for (const name of values.under ?? []) {
    const below = new Map<string, number>();
    for (const [id, us] of weights) {
      for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
        if (byId.get(n)!.callFrame.functionName === name) {
          const key = where(byId.get(id)!.callFrame);
          below.set(key, (below.get(key) ?? 0) + us);
          break;
        }
      }
    }
    console.log(`\nSelf time beneath ${name}:`);
    for (const [key, us] of [...below].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`  ${share(us)}  ${key}`);
  }
}

/** Maps a frame in dist/*.js to its src/*.ts file and line through the build's source map; other frames as they are. */
function toSource(frame: CallFrame, maps: Map<string, SourceMap | undefined>): CallFrame {
  if (!/^file:.*\/dist\/.*\.js$/.test(frame.url)) return frame;
  if (!maps.has(frame.url)) {
    const mapPath = fileURLToPath(frame.url) + '.map';
    maps.set(frame.url, existsSync(mapPath) ? new SourceMap(JSON.parse(readFileSync(mapPath, 'utf8'))) : undefined);
  }
  const entry = maps.get(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber) as { originalSource?: string; originalLine?: number } | undefined;
  if (entry?.originalSource === undefined) return frame;
  const source = entry.originalSource.replace(/^.*?(?=src\/)/, '');
  return { ...frame, url: `file:///${source}`, lineNumber: entry.originalLine ?? frame.lineNumber };
}

/** CPU profile: the samples of each node from `skipUs` after the first request, idle ones left out. */
function cpuWeights(profile: CpuProfile, skipUs: number): { nodes: ProfileNode[]; weights: Map<number, number>; header: string; unit: string } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // The first request: the first sample with Node's HTTP server handing a request over on its stack.
  const servesRequest = new Set<number>();
  for (const n of profile.nodes) {
    for (let id: number | undefined = n.id; id !== undefined; id = parent.get(id)) {
      if (byId.get(id)!.callFrame.functionName === 'parserOnIncoming') {
        servesRequest.add(n.id);
        break;
      }
    }
  }
  let firstRequestUs = profile.endTime;
  for (let i = 0, at = profile.startTime; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (servesRequest.has(profile.samples[i]!)) {
      firstRequestUs = at;
      break;
    }
  }
  // Samples are counted, not weighted by their time deltas: a thread the OS preempted takes its
  // next sample late, with a long delta that is waiting, not running.
  const weights = new Map<number, number>();
  let t = profile.startTime;
  let idle = 0;
  let busy = 0;
  let windowUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < firstRequestUs + skipUs) continue;
    windowUs += profile.timeDeltas[i] ?? 0;
    const id = profile.samples[i]!;
    if (byId.get(id)!.callFrame.functionName === '(idle)') {
      idle++;
      continue;
    }
    busy++;
    weights.set(id, (weights.get(id) ?? 0) + 1);
  }
  const header = `CPU profile, ${(windowUs / 1e6).toFixed(1)} s from ${skipUs / 1000} ms after the first request (${((firstRequestUs - profile.startTime) / 1e6).toFixed(1)} s after start); ${busy} busy samples, ${idle} idle`;
  return { nodes: profile.nodes, weights, header, unit: 'busy samples' };
}

/** Heap profile: flattened to the CPU profile's node shape, weighted by sampled bytes. */
function heapWeights(profile: HeapProfile): { nodes: ProfileNode[]; weights: Map<number, number>; header: string; unit: string } {
  const nodes: ProfileNode[] = [];
  const weights = new Map<number, number>();
  const walk = (n: HeapProfileNode): void => {
    nodes.push({ id: n.id, callFrame: n.callFrame, children: n.children.map((c) => c.id) });
    if (n.selfSize > 0) weights.set(n.id, n.selfSize);
    n.children.forEach(walk);
  };
  walk(profile.head);
  const bytes = [...weights.values()].reduce((a, b) => a + b, 0);
  return { nodes, weights, header: `heap profile, ${(bytes / 1e6).toFixed(1)} MB sampled`, unit: 'sampled bytes' };
}

main();
