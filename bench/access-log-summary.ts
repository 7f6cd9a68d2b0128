/**
 * Reads what a robots-proxy process under the proxy bench wrote on stdout
 * (BENCH_KEEP=1 keeps it: WORKDIR/rp/stdout.log) and prints where the time of
 * a request went, from its own access lines: percentiles of durationMs
 * (arrival to last byte), queueWaitMs (waiting for a start slot), upstreamMs
 * (upstream request to the end of its response) and the rest (in the proxy
 * before and after). With `--trace-gc` or `--trace-gc-nvp` in
 * BENCH_PROXY_NODE_OPTIONS the same file holds V8's GC lines: their pauses
 * are summarised too, and with -nvp the bytes allocated per access line.
 *
 *   node --import tsx bench/access-log-summary.ts WORKDIR/rp/stdout.log
 *
 * Prints figures; asserts nothing.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

interface Percentiles {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

function percentiles(values: number[]): Percentiles {
  const s = Float64Array.from(values).sort();
  const at = (p: number): number => (s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!);
  return { count: s.length, p50: at(50), p90: at(90), p99: at(99), max: at(100) };
}

const show = (label: string, p: Percentiles, unit = 'ms'): string =>
  `  ${label.padEnd(34)} n=${String(p.count).padStart(7)}  p50 ${p.p50.toFixed(2).padStart(8)}  p90 ${p.p90.toFixed(2).padStart(8)}  p99 ${p.p99.toFixed(2).padStart(8)}  max ${p.max.toFixed(2).padStart(8)} ${unit}`;

async function main(): Promise<void> {
  const file = process.argv[2];
  if (file === undefined) throw new Error('usage: access-log-summary.ts STDOUT_LOG');
  const duration: number[] = [];
  const queue: number[] = [];
  const upstream: number[] = [];
  const rest: number[] = [];
  const statuses = new Map<number, number>();
  let lineBytes = 0;
  const gcPause = new Map<string, number[]>();
  let allocatedBytes = 0;
  let nvpLines = 0;

  for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    if (line.startsWith('{')) {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue; // a line cut by the process's end
      }
      if (record['msg'] !== 'request') continue;
      lineBytes += line.length + 1;
      const d = record['durationMs'] as number;
      const q = (record['queueWaitMs'] as number | null) ?? 0;
      const u = (record['upstreamMs'] as number | null) ?? 0;
      duration.push(d);
      queue.push(q);
      upstream.push(u);
      rest.push(d - q - u);
      statuses.set(record['status'] as number, (statuses.get(record['status'] as number) ?? 0) + 1);
      continue;
    }
    // --trace-gc: "[pid:0x...]   1234 ms: Scavenge 37.8 (56.5) -> 27.7 (59.0) MB, 10.92 / 0.06 ms  (...) reason"
    const human = /\d+ ms: (Scavenge|Mark-Compact|Mark-Compact \(reduce\)|Minor Mark-Sweep)[^,]*, ([\d.]+) \/ ([\d.]+) ms/.exec(line);
    if (human) {
      const list = gcPause.get(human[1]!) ?? [];
      list.push(Number(human[2]));
      gcPause.set(human[1]!, list);
      continue;
    }
    // --trace-gc-nvp: "... pause=1.2 ... gc=s ... allocated=123456 ..."
    if (/\bpause=/.test(line) && /\bgc=/.test(line)) {
      nvpLines++;
      const kind = /\bgc=(\S+)/.exec(line)![1]!;
      const list = gcPause.get(`gc=${kind}`) ?? [];
      list.push(Number(/\bpause=([\d.]+)/.exec(line)![1]));
      gcPause.set(`gc=${kind}`, list);
      allocatedBytes += Number(/\ballocated=(\d+)/.exec(line)?.[1] ?? 0);
    }
  }

  console.log(`${file}: ${duration.length} access lines (${(lineBytes / Math.max(1, duration.length)).toFixed(0)} bytes each on average), statuses ${[...statuses].map(([s, n]) => `${s}: ${n}`).join(', ')}`);
  console.log('Time of a request, from its access line:');
  console.log(show('durationMs (arrival to last byte)', percentiles(duration)));
  console.log(show('queueWaitMs (waiting for a slot)', percentiles(queue)));
  console.log(show('upstreamMs (upstream exchange)', percentiles(upstream)));
  console.log(show('the rest (in the proxy)', percentiles(rest)));
  if (gcPause.size > 0) {
    console.log('GC pauses (V8 trace, wall time of the pause):');
    for (const [kind, pauses] of gcPause) console.log(show(kind, percentiles(pauses)) + `  total ${pauses.reduce((a, b) => a + b, 0).toFixed(0)} ms`);
  }
  if (nvpLines > 0 && duration.length > 0) console.log(`Allocated: ${(allocatedBytes / 1e6).toFixed(0)} MB over ${nvpLines} GCs, ${(allocatedBytes / duration.length / 1024).toFixed(1)} KiB per access line (warm-up and start-up included)`);
}

await main();
