/**
 * Names the JavaScript in a callgrind profile of node: callgrind sees V8's generated code as bare
 * addresses (`0x00003aa448923040`); node's `--perf-basic-prof` writes /tmp/perf-PID.map, which
 * names them. Prints the self instructions per function (per request with `--per N`), JS
 * functions by their perf-map name, the rest by callgrind's name, and totals by source file.
 * bench/PROFILE.md, "Per-request work, session 19".
 *
 *   node bench/callgrind-js.mjs callgrind.out.1-01 /tmp/perf-PID.map [--per 4000] [--top 60]
 *   node bench/callgrind-js.mjs A.out A.map --vs B.out B.map --per 4000   (A − B, by function)
 *   node bench/callgrind-js.mjs A.out A.map --per 4000 --inclusive 'connection-(drain|guard)'
 *   node bench/callgrind-js.mjs --threads DIR [--per 2000]   (the threads other than the main one)
 */
import { readFileSync, readdirSync } from 'node:fs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? dflt : args[i + 1];
};
const PER = Number(opt('per', 1));
const TOP = Number(opt('top', 60));

/** perf map: sorted [start, end, name]. */
function readMap(path) {
  const rows = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m) rows.push([parseInt(m[1], 16), parseInt(m[1], 16) + parseInt(m[2], 16), m[3]]);
  }
  rows.sort((a, b) => a[0] - b[0]);
  return rows;
}

function lookup(rows, addr) {
  let lo = 0;
  let hi = rows.length - 1;
  let found;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid][0] <= addr) {
      found = rows[mid];
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found && addr < found[1] ? found[2] : undefined;
}

/** Self cost per function name from a callgrind output file (Ir only). */
function selfCosts(path) {
  const names = new Map();
  const costs = new Map();
  let fn = '';
  let afterCalls = false;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.startsWith('fn=')) {
      const m = /^fn=\((\d+)\)(?: (.*))?$/.exec(line);
      if (m) {
        if (m[2] !== undefined) names.set(m[1], m[2]);
        fn = names.get(m[1]);
      } else fn = line.slice(3);
      continue;
    }
    if (line.startsWith('cfn=')) {
      const m = /^cfn=\((\d+)\)(?: (.*))?$/.exec(line);
      if (m && m[2] !== undefined) names.set(m[1], m[2]);
      continue;
    }
    if (line.startsWith('calls=')) {
      afterCalls = true;
      continue;
    }
    if (/^[+\-*]?\d|^\*/.test(line)) {
      if (afterCalls) {
        afterCalls = false;
        continue;
      }
      const parts = line.trim().split(/\s+/);
      const cost = Number(parts[1] ?? 0);
      if (cost) costs.set(fn, (costs.get(fn) ?? 0) + cost);
    }
  }
  return costs;
}

/**
 * `--threads DIR`: the instructions of the threads other than the main one (DIR's
 * callgrind.out.1-NN, NN > 01: V8's platform workers, libuv's pool), per request with --per, by
 * kind of work: `compile` (TurboFan and the other compilers' concurrent jobs), `gc` (concurrent
 * marking, sweeping, scavenging helpers), `sqlite`, `libc`, `other`. These scale with the
 * heap's growth and V8's tiering, not with requests alone (bench/PROFILE.md, "50 origins against
 * one under close").
 */
function threadKinds(dir) {
  const kindOf = (name) =>
    /compiler::|Compil|Turbofan|turboshaft|Maglev|InstructionSelector|RegisterAllocat|LiveRange|GraphReducer|JSHeapBroker|Zone::/.test(name)
      ? 'compile'
      : /Mark|Sweep|Scaveng|Evacuat|heap::|Heap|Remembered|SlotSet|Page|Collector|MemoryChunk|FreeList/.test(name)
        ? 'gc'
        : /sqlite/.test(name)
          ? 'sqlite'
          : /libc|malloc|free|memcpy|memset|memmove/.test(name)
            ? 'libc'
            : 'other';
  const kinds = new Map();
  for (const f of readdirSync(dir).filter((f) => /^callgrind\.out\.1-\d+$/.test(f) && !f.endsWith('-01'))) {
    for (const [fn, cost] of selfCosts(`${dir}/${f}`)) kinds.set(kindOf(fn), (kinds.get(kindOf(fn)) ?? 0) + cost);
  }
  const per = (n) => Math.round(n / PER);
  const total = [...kinds.values()].reduce((s, v) => s + v, 0);
  console.log(JSON.stringify({ otherThreads: per(total), ...Object.fromEntries([...kinds].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, per(v)])) }));
}
if (args[0] === '--threads') {
  threadKinds(args[1]);
  process.exit(0);
}

function named(outPath, mapPath) {
  const rows = readMap(mapPath);
  const byName = new Map();
  for (const [fn, cost] of selfCosts(outPath)) {
    let name = fn;
    const m = /^0x([0-9a-f]+)$/.exec(fn);
    if (m) name = lookup(rows, parseInt(m[1], 16)) ?? 'JIT code (unnamed)';
    byName.set(name, (byName.get(name) ?? 0) + cost);
  }
  return byName;
}

const fileOf = (name) => {
  const m = /(file:\/\/\/\S+?|node:\S+?|\/\S+?\.m?js)(?::\d+)+$/.exec(name);
  if (m) return m[1].replace(/^.*\/dist\//, 'dist/').replace(/^.*node_modules\//, '');
  if (/^Builtins_|^Builtin:/.test(name)) return '(V8 builtins)';
  return '(native: V8, node, libc)';
};

const a = named(args[0], args[1]);
const vsIndex = args.indexOf('--vs');
const b = vsIndex < 0 ? new Map() : named(args[vsIndex + 1], args[vsIndex + 2]);
const diff = new Map();
for (const [k, v] of a) diff.set(k, v - (b.get(k) ?? 0));
for (const [k, v] of b) if (!a.has(k)) diff.set(k, -v);
const total = [...diff.values()].reduce((s, v) => s + v, 0);
console.log(`total ${(total / PER).toFixed(0)} per ${PER === 1 ? 'profile' : 'request'}`);
const rows = [...diff].sort((x, y) => Math.abs(y[1]) - Math.abs(x[1])).slice(0, TOP);
for (const [k, v] of rows) console.log(`${(v / PER).toFixed(0).padStart(9)}  ${k.slice(0, 160)}`);
const files = new Map();
for (const [k, v] of diff) files.set(fileOf(k), (files.get(fileOf(k)) ?? 0) + v);
console.log('\nby file:');
for (const [k, v] of [...files].sort((x, y) => Math.abs(y[1]) - Math.abs(x[1])).slice(0, 40)) console.log(`${(v / PER).toFixed(0).padStart(9)}  ${k}`);

/**
 * `--callers REGEX`: for callees whose (named) name matches, the callers and the inclusive
 * instructions of those calls (per request with --per).
 */
const callersOf = opt('callers', undefined);
if (callersOf !== undefined) {
  const rows = readMap(args[1]);
  const nameOf = (fn) => {
    const m = /^0x([0-9a-f]+)$/.exec(fn);
    return m ? (lookup(rows, parseInt(m[1], 16)) ?? 'JIT code (unnamed)') : fn;
  };
  const names = new Map();
  const edges = new Map();
  let fn = '';
  let callee = '';
  let pending = false;
  const idName = (line, prefix) => {
    const m = new RegExp(`^${prefix}=\\((\\d+)\\)(?: (.*))?$`).exec(line);
    if (!m) return line.slice(prefix.length + 1);
    if (m[2] !== undefined) names.set(m[1], m[2]);
    return names.get(m[1]);
  };
  for (const line of readFileSync(args[0], 'utf8').split('\n')) {
    if (line.startsWith('fn=')) fn = idName(line, 'fn');
    else if (line.startsWith('cfn=')) callee = idName(line, 'cfn');
    else if (line.startsWith('calls=')) pending = true;
    else if (pending && /^[+\-*]?\d/.test(line)) {
      pending = false;
      const cost = Number(line.trim().split(/\s+/)[1] ?? 0);
      const to = nameOf(callee);
      if (!new RegExp(callersOf).test(to)) continue;
      const key = `${nameOf(fn)}  ->  ${to}`;
      edges.set(key, (edges.get(key) ?? 0) + cost);
    }
  }
  console.log(`\ncallers of /${callersOf}/ (inclusive):`);
  for (const [k, v] of [...edges].sort((x, y) => y[1] - x[1]).slice(0, TOP)) console.log(`${(v / PER).toFixed(0).padStart(9)}  ${k.slice(0, 200)}`);
}

/** `--count REGEX`: calls per request (with --per) into functions whose callgrind name matches (native and builtins: calls counted by callgrind). */
const countOf = opt('count', undefined);
if (countOf !== undefined) {
  const tally = (path) => {
    const names = new Map();
    const out = new Map();
    let callee = '';
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      const m = /^c?fn=\((\d+)\)(?: (.*))?$/.exec(line);
      if (m) {
        if (m[2] !== undefined) names.set(m[1], m[2]);
        if (line.startsWith('cfn=')) callee = names.get(m[1]);
        continue;
      }
      if (line.startsWith('calls=') && new RegExp(countOf).test(callee)) {
        const key = callee.replace(/\(.*$/, '');
        out.set(key, (out.get(key) ?? 0) + Number(line.slice(6).split(' ')[0]));
      }
    }
    return out;
  };
  const ca = tally(args[0]);
  const cb = vsIndex < 0 ? undefined : tally(args[vsIndex + 1]);
  console.log(`\ncalls per request into /${countOf}/${cb ? ' (this, then --vs)' : ''}:`);
  for (const k of new Set([...ca.keys(), ...(cb?.keys() ?? [])])) console.log(`${((ca.get(k) ?? 0) / PER).toFixed(2).padStart(9)}${cb ? ((cb.get(k) ?? 0) / PER).toFixed(2).padStart(9) : ''}  ${k.slice(0, 120)}`);
}

/**
 * `--summary`: the main thread's instructions per request (with --per), and the same without the
 * two shares that scale with wall time rather than with requests under valgrind's ~50x slowdown:
 * work run from timers (`processTimers` and below, inclusive: the ledger's flush every second,
 * pacer and connection sweeps) and the garbage collector's own frames (scavenges and marking,
 * whose timing moves from run to run). What is left is the request path: compare builds by it.
 */
if (args.includes('--summary')) {
  const rows = readMap(args[1]);
  const nameOf = (fn) => {
    const m = /^0x([0-9a-f]+)$/.exec(fn);
    return m ? (lookup(rows, parseInt(m[1], 16)) ?? 'JIT code (unnamed)') : fn;
  };
  const isTimers = (name) => /JS:.processTimers /.test(name);
  const isGc = (name) => /Scaveng|Marking|MarkCompact|Sweeper|IterateObjectCache|Evacuat|GCTracer|Heap::|RememberedSet|SlotSet|ObjectVisitor|BodyDescriptor|WeakObjects|GlobalHandles|PretenuringHandler/.test(name);
  const names = new Map();
  let fn = '';
  let callee = '';
  let pending = false;
  let total = 0;
  let timers = 0;
  let gc = 0;
  for (const line of readFileSync(args[0], 'utf8').split('\n')) {
    const m = /^(c?fn)=\((\d+)\)(?: (.*))?$/.exec(line);
    if (m) {
      if (m[3] !== undefined) names.set(m[2], m[3]);
      if (m[1] === 'fn') fn = nameOf(names.get(m[2]));
      else callee = nameOf(names.get(m[2]));
      continue;
    }
    if (line.startsWith('calls=')) {
      pending = true;
      continue;
    }
    if (/^[+\-]?\d/.test(line)) {
      const cost = Number(line.trim().split(/\s+/)[1] ?? 0);
      if (pending) {
        pending = false;
        if (isTimers(callee) && !isTimers(fn) && !/Prologue/.test(fn)) timers += cost;
      } else {
        total += cost;
        if (isGc(fn)) gc += cost;
      }
    }
  }
  const per = (n) => Math.round(n / PER);
  console.log(JSON.stringify({ mainThread: per(total), timers: per(timers), gcSelf: per(gc), requestPath: per(total - timers - gc) }));
}

/**
 * `--inclusive REGEX`: for functions whose (named) name matches, self and inclusive instructions
 * (self plus every call they make; per request with --per). A recursive function counts its
 * inner calls twice.
 */
const inclusiveOf = opt('inclusive', undefined);
if (inclusiveOf !== undefined) {
  const rows = readMap(args[1]);
  const nameOf = (fn) => {
    const m = /^0x([0-9a-f]+)$/.exec(fn);
    return m ? (lookup(rows, parseInt(m[1], 16)) ?? 'JIT code (unnamed)') : fn;
  };
  const re = new RegExp(inclusiveOf);
  const names = new Map();
  const self = new Map();
  const incl = new Map();
  let fn = '';
  let pending = false;
  for (const line of readFileSync(args[0], 'utf8').split('\n')) {
    const m = /^(c?fn)=\((\d+)\)(?: (.*))?$/.exec(line);
    if (m) {
      if (m[3] !== undefined) names.set(m[2], m[3]);
      if (m[1] === 'fn') fn = nameOf(names.get(m[2]));
      continue;
    }
    if (line.startsWith('calls=')) {
      pending = true;
      continue;
    }
    if (/^[+\-*]?\d/.test(line)) {
      const cost = Number(line.trim().split(/\s+/)[1] ?? 0);
      if (!re.test(fn)) {
        pending = false;
        continue;
      }
      if (!pending) self.set(fn, (self.get(fn) ?? 0) + cost);
      incl.set(fn, (incl.get(fn) ?? 0) + cost);
      pending = false;
    }
  }
  console.log(`\nfunctions /${inclusiveOf}/: self, inclusive`);
  for (const [k, v] of [...incl].sort((x, y) => y[1] - x[1]).slice(0, TOP)) console.log(`${((self.get(k) ?? 0) / PER).toFixed(0).padStart(9)}${(v / PER).toFixed(0).padStart(9)}  ${k.slice(0, 160)}`);
}
