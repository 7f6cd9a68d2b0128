/**
 * End-to-end differential against the reference matcher (test/robots/reference-port.ts, a
 * line-for-line port of google/robotstxt): N generated cases (scripts/e2e-cases.ts), each a
 * robots.txt served by a real loopback origin (status, redirects, content coding, framing,
 * Content-Type, BOM, line ends as the case says), fetched by a real proxy, and one request sent
 * through it with a real bot's User-Agent, on a raw socket (absolute-form, odd targets as written)
 * and, for a quarter of the cases, through a CONNECT tunnel (intercepted TLS) to the same path.
 *
 * Two proxies run side by side: one enforcing (its answer is the verdict under test) and one in
 * report mode (it forwards everything, so its origin hit shows the path the origin receives for
 * a refused request too). The expected verdict is the reference's, given the robots.txt octets
 * after content decoding, the fixture's product token, and the path the origin received, with
 * both sides spelt as RFC 9309 §2.2.2 says (the reference's own spelling is counted apart):
 * 4xx -> allow all (§2.3.1.3), 429/5xx -> disallow all (§2.3.1.4, the proxy's 503), more than
 * 5 redirects -> unavailable (§2.3.1.2). Each request of another agent pipelined before a case's
 * on one connection is checked the same way.
 *
 * Run by scripts/e2e-differential.ts (the hunt's command line) and test/scripts/e2e-differential.test.ts.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import tls, { type TLSSocket } from 'node:tls';
import { readFileSync, readdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { evaluate, extractPathAndQuery, normalisePath, normalisePattern, originDecodedPath, originResolvedPath, parseRobotsTxt } from '../src/robots/index.js';
import { extractProductTokens } from '../src/robots/agent.js';
import { referenceAllowed } from '../test/robots/reference-port.js';
import { createTestPki } from '../test/cache/support.js';
import { fakeResolver } from '../test/helpers/resolver.js';
import { startTestProxy } from '../test/helpers/harness.js';
import { rawExchange, rawHeader } from '../test/helpers/proxy-client.js';
import { parseRelayedResponse } from '../test/helpers/raw-origin.js';
import { caseOf, type E2eCase, type RealAgent } from './e2e-cases.js';
import { REPO_ROOT } from './shared-corpus.js';

const DOMAIN = '.e2e.test';
const MAX_BYTES = 500 * 1024;

/** What one proxy answered for one request: a verdict, or why there is none. */
export type Verdict = 'allow' | 'deny' | 'unreachable' | 'bad-target' | 'error';

/** One case's answers and what was expected of them. */
export interface Outcome {
  c: E2eCase;
  enforce: Verdict;
  decision: string;
  report: Verdict;
  tunnel: Verdict | undefined;
  /** The pipelined request of another agent sent first on the same connection: its verdict and expectation. */
  before: ({ verdict: Verdict } & Pick<Outcome, 'expected' | 'referenceRaw' | 'core'>) | undefined;
  received: string | undefined;
  expected: Verdict;
  /** The reference (RFC 9309 spelling) on the path and query the client sent, when the robots.txt was read (2xx). */
  sentVerdict: Verdict | undefined;
  referenceRaw: boolean | undefined;
  core: boolean | undefined;
}

/** The robots.txt bytes on the wire for `c`, content-coded as it says. */
function encoded(c: E2eCase): Buffer {
  switch (c.wire.coding) {
    case 'gzip':
      return gzipSync(c.body);
    case 'deflate':
      return deflateSync(c.body);
    case 'deflate-raw':
      return deflateRawSync(c.body);
    case 'br':
      return brotliCompressSync(c.body);
    default:
      return c.body;
  }
}

/** The origin: `/robots.txt` (and its redirect hops) as each case says, any other path 200; hits recorded by case and tag. */
function originHandler(cases: Map<number, E2eCase>, hits: Map<string, string>, ports: { plain: number; tls: number }) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const id = Number(/^c(\d+)[.-]/.exec(String(req.headers.host ?? '').toLowerCase())?.[1] ?? -1);
    const c = cases.get(id);
    const url = req.url ?? '';
    const hop = url === '/robots.txt' ? 0 : Number(/^\/robots-hop-(\d+)\.txt$/.exec(url)?.[1] ?? -1);
    if (c !== undefined && hop >= 0 && req.headers['x-e2e'] === undefined) {
      if (hop < c.wire.hops) {
        const next = `/robots-hop-${hop + 1}.txt`;
        const isTls = (req.socket as TLSSocket).encrypted === true;
        const location =
          c.wire.hopTo === 'host' ? `http://c${id}-r${hop}${DOMAIN}:${ports.plain}${next}`
          : c.wire.hopTo === 'https' ? (isTls ? `http://c${id}${DOMAIN}:${ports.plain}${next}` : `https://c${id}${DOMAIN}:${ports.tls}${next}`)
          : hop % 2 === 0 ? next : `//${req.headers.host}${next}`;
        res.writeHead([301, 302, 307, 308][hop % 4]!, { location });
        return void res.end();
      }
      const bytes = c.wire.status === 200 ? encoded(c) : Buffer.from('no robots here\n');
      const headers: Record<string, string> = {};
      if (c.wire.contentType !== undefined) headers['content-type'] = c.wire.contentType;
      if (c.wire.status === 200 && c.wire.coding !== 'identity') headers['content-encoding'] = c.wire.coding === 'deflate-raw' ? 'deflate' : c.wire.coding;
      if (!c.wire.chunked) headers['content-length'] = String(bytes.length);
      res.writeHead(c.wire.status, headers);
      if (c.wire.chunked) res.write(bytes.subarray(0, bytes.length >> 1));
      return void res.end(c.wire.chunked ? bytes.subarray(bytes.length >> 1) : bytes);
    }
    hits.set(`${id} ${String(req.headers['x-e2e'])}`, url);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok\n');
  };
}

function verdictOf(status: number, decision: string): Verdict {
  if (status === 200 && decision.startsWith('allow')) return decision.includes('would-deny=robots-unreachable') ? 'unreachable' : decision.includes('would-deny') ? 'deny' : 'allow';
  if (status === 403 && decision.startsWith('deny')) return 'deny';
  if (status === 503 && decision.includes('robots-unreachable')) return 'unreachable';
  if (status === 400) return 'bad-target';
  return 'error';
}

/** The absolute-form URL of `c` on `port`, spelt as the case says. */
function absoluteUrl(c: E2eCase, port: number): string {
  const host = `c${c.id}${DOMAIN}:${port}`;
  if (c.authority === 'upper') return `HTTP://${host.toUpperCase()}${c.target}`;
  if (c.authority === 'userinfo') return `http://user:pw@${host}${c.target}`;
  return `http://${host}${c.target}`;
}

/** One answer read off the front of `raw`: its verdict and decision header, and the rest of `raw`. */
function readAnswer(raw: string): { verdict: Verdict; decision: string; rest: string } {
  const answer = parseRelayedResponse(raw);
  if (answer === undefined) return { verdict: 'error', decision: '', rest: '' };
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer.statusLine)?.[1] ?? 0);
  const decision = answer.lines.find((l) => l.toLowerCase().startsWith('x-robots-proxy-decision:'))?.slice(24).trim() ?? '';
  return { verdict: verdictOf(status, decision), decision, rest: raw.slice(answer.wireLength) };
}

/**
 * `c`'s request on a new connection to the proxy, absolute-form as written; when `before` is given, a request
 * for the same target with that agent goes first on the same connection (pipelined).
 */
async function sendPlain(proxyPort: number, c: E2eCase, originPort: number, tag: string, before?: RealAgent): Promise<{ verdict: Verdict; decision: string; beforeVerdict?: Verdict }> {
  const request = (ua: string, last: boolean): string =>
    `GET ${absoluteUrl(c, originPort)} HTTP/1.1\r\nHost: c${c.id}${DOMAIN}:${originPort}\r\nUser-Agent: ${ua}\r\nX-E2e: ${tag}${last ? '' : '-before'}\r\n${last ? 'Connection: close\r\n' : ''}\r\n`;
  const raw = await rawExchange(proxyPort, (before !== undefined ? request(before.ua, false) : '') + request(c.agent.ua, true));
  if (before === undefined) return readAnswer(raw);
  const first = readAnswer(raw);
  // A 400 closes the connection: the second request is never read.
  const second = first.verdict === 'bad-target' ? first : readAnswer(first.rest);
  return { verdict: second.verdict, decision: second.decision, beforeVerdict: first.verdict };
}

/** The same request (origin-form) inside a CONNECT tunnel: intercepted TLS, or plain HTTP when `originPort` is the HTTP origin's. */
function sendTunnel(proxyPort: number, c: E2eCase, originPort: number, isTls: boolean): Promise<Verdict> {
  const authority = `c${c.id}${DOMAIN}:${originPort}`;
  return new Promise((resolve) => {
    const socket = net.connect(proxyPort, '127.0.0.1', () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`));
    let head = '';
    const fail = (): void => resolve('error');
    socket.on('error', fail);
    socket.setTimeout(10_000, () => socket.destroy());
    const onData = (d: Buffer): void => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      if (!head.startsWith('HTTP/1.1 200')) return void resolve('error');
      const target = c.target.startsWith('/') ? c.target : '/' + c.target;
      const request = `GET ${target} HTTP/1.1\r\nHost: ${authority}\r\nUser-Agent: ${c.agent.ua}\r\nX-E2e: tunnel\r\nConnection: close\r\n\r\n`;
      const secure = isTls ? tls.connect({ socket, servername: `c${c.id}${DOMAIN}`, rejectUnauthorized: false }, () => secure.write(request)) : socket;
      if (!isTls) socket.write(request);
      let answer = '';
      secure.on('data', (b: Buffer) => (answer += b.toString('latin1')));
      secure.on('error', fail);
      secure.on('close', () => {
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
        resolve(verdictOf(status, rawHeader(answer, 'x-robots-proxy-decision') ?? ''));
      });
    };
    socket.on('data', onData);
  });
}

/** The expected verdict for `c` given the path its origin received (undefined: none received). */
function expectedOf(c: E2eCase, received: string | undefined): Pick<Outcome, 'expected' | 'referenceRaw' | 'core'> {
  if (c.wire.hops > 5) return { expected: 'allow', referenceRaw: undefined, core: undefined };
  if (c.wire.status === 429 || c.wire.status >= 500) return { expected: 'unreachable', referenceRaw: undefined, core: undefined };
  if (c.wire.status >= 400) return { expected: 'allow', referenceRaw: undefined, core: undefined };
  if (received === undefined) return { expected: 'error', referenceRaw: undefined, core: undefined };
  const path = extractPathAndQuery(`http://h${received}`);
  const core = evaluate(parseRobotsTxt(c.body), extractProductTokens(c.agent.ua), path).allowed;
  if (path === '/robots.txt') return { expected: 'allow', referenceRaw: true, core };
  const referenceRaw = referenceAllowed(c.body, c.agent.token, `http://h${path}`);
  const rfc = referenceAllowed(c.body, c.agent.token, `http://h${normalisePath(path)}`, (value) => normalisePattern(value));
  return { expected: rfc ? 'allow' : 'deny', referenceRaw, core };
}

/**
 * The classes of a disagreement between the enforcing proxy and the expectation. The `designed` ones
 * are the project's deliberate readings, argued in README and bench/PROFILE.md; any other is a bug to find.
 */
export const DISAGREEMENT = {
  /** The proxy also decides the path as an origin may resolve or decode it (`//`, `%2F`, `;`, dot segments, `%3A`): README "No bypass by encoding". */
  originSpelling: 'the origin may resolve or decode the path (designed: README "No bypass by encoding")',
  /** A product token with a digit or `.` (`MJ12bot`, `008`): read whole here, cut at its first such character by the reference (product-token.ts). */
  tokenChars: 'token outside [A-Za-z_-] (designed: the reference cuts it)',
  /** A file past 500 KiB: the rest is ignored (RFC 9309 §2.5, DESIGN.md), the reference library reads it all. */
  sizeLimit: 'size-limit (designed: file > 500 KiB)',
  /** The request target's dot segments removed before the decision and the forwarding (RFC 3986 §5.2.4, as the URL parser does): the origin receives the resolved path. */
  dotSegments: 'sent-vs-received: dot segments resolved (designed: the origin receives the resolved path)',
  /** The origin received another spelling than the client sent, and the reference's verdict differs between the two. */
  respelt: 'sent-vs-received: the proxy respelt the target',
  proxyVsCore: 'proxy-vs-core (end to end)',
  headerToken: 'header -> token (another candidate chose the group)',
  coreVsReference: 'core-vs-reference',
} as const;

/** The classes of {@link DISAGREEMENT} that are designed readings. */
export const DESIGNED_DISAGREEMENTS: ReadonlySet<string> = new Set([DISAGREEMENT.originSpelling, DISAGREEMENT.tokenChars, DISAGREEMENT.sizeLimit, DISAGREEMENT.dotSegments]);

/** A `.` or `..` segment, written or escaped (`%2e`), as the URL parser removes it. */
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?:\/|$)/i;

/** The class of a disagreement between the enforcing proxy and the expectation (one of {@link DISAGREEMENT}, or `proxy-<verdict>` for no verdict). */
export function classOf(o: Outcome): string {
  const { c } = o;
  if (o.enforce === 'bad-target' || o.enforce === 'error') return `proxy-${o.enforce}`;
  if (c.body.length > MAX_BYTES && c.wire.status === 200) return DISAGREEMENT.sizeLimit;
  if (o.core !== undefined && (o.core ? 'allow' : 'deny') !== o.enforce) {
    const path = normalisePath(extractPathAndQuery(`http://h${o.received ?? '/'}`));
    const resolved = originResolvedPath(path);
    if (o.enforce === 'deny' && (resolved !== undefined || originDecodedPath(resolved ?? path) !== undefined)) return DISAGREEMENT.originSpelling;
    return DISAGREEMENT.proxyVsCore;
  }
  if (!/^[A-Za-z_-]+$/.test(c.agent.token)) return DISAGREEMENT.tokenChars;
  const tokenOnly = evaluate(parseRobotsTxt(c.body), [c.agent.token], extractPathAndQuery(`http://h${o.received ?? '/'}`)).allowed;
  if ((tokenOnly ? 'allow' : 'deny') === o.expected) return DISAGREEMENT.headerToken;
  return DISAGREEMENT.coreVsReference;
}

function readAgents(): RealAgent[] {
  const lines = readFileSync(join(REPO_ROOT, 'test/fixtures/user-agents.jsonl'), 'utf8').split('\n').filter((l) => l.trim() !== '');
  return lines.map((l) => JSON.parse(l) as { ua: string; token: string; robots?: string }).map((a) => ({ ua: a.ua, token: a.token, written: a.robots ?? a.token }));
}

/** Options of {@link runE2eDifferential}. */
export interface E2eOptions {
  /** Cases to run. */
  total: number;
  seed: number;
  /** The share of cases whose robots.txt is a real file of `corpusDir` (0 to 1). */
  corpusShare: number;
  /** A directory of real robots.txt files (`*.txt`), or undefined for generated files only. */
  corpusDir: string | undefined;
  /** Where the test CA is written (a fresh directory is made in it). */
  tmpDir: string;
  /** Cases in flight at once. @default 6 */
  concurrency?: number;
}

/** What {@link runE2eDifferential} found. */
export interface E2eReport {
  outcomes: Outcome[];
  /** Disagreements by class ({@link classOf}'s, and `enforce-vs-report`, `connect-vs-plain`, `pipelined first request: <class>`). */
  byClass: Map<string, Outcome[]>;
  /** Cases also sent through CONNECT. */
  tunnels: number;
  /** Cases where the reference given the spelling as sent differs from it given the RFC 9309 spelling. */
  encodingOnly: number;
  elapsedMs: number;
}

/**
 * Runs `total` cases end to end: two origins (HTTP and HTTPS, one robots.txt per case, told by host name), an
 * enforcing and a reporting proxy (in this process, on loopback ports), each case's requests on raw sockets.
 * Closes everything before it settles. Rejects only when a server cannot start.
 */
export async function runE2eDifferential(options: E2eOptions): Promise<E2eReport> {
  const { total, seed, corpusShare, corpusDir } = options;
  const files = corpusDir !== undefined ? readdirSync(corpusDir).filter((f) => f.endsWith('.txt')).sort() : [];
  const corpus = (random: () => number): { name: string; body: Buffer } | undefined => {
    if (files.length === 0 || corpusDir === undefined) return undefined;
    const name = files[Math.floor(random() * files.length)]!;
    return { name, body: readFileSync(join(corpusDir, name)) };
  };
  const agents = readAgents();
  const cases = new Map<number, E2eCase>();
  const hits = new Map<string, string>();
  const ports = { plain: 0, tls: 0 };
  const handler = originHandler(cases, hits, ports);
  const pki = await createTestPki({ dnsNames: [`*${DOMAIN}`] });
  const dir = mkdtempSync(join(options.tmpDir, 'e2e-diff-'));
  writeFileSync(join(dir, 'ca.pem'), pki.caPem);
  const plainOrigin = http.createServer(handler);
  const tlsOrigin = https.createServer({ cert: pki.certPem, key: pki.keyPem }, handler);
  await Promise.all([plainOrigin, tlsOrigin].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
  const plainPort = (plainOrigin.address() as AddressInfo).port;
  const tlsPort = (tlsOrigin.address() as AddressInfo).port;
  Object.assign(ports, { plain: plainPort, tls: tlsPort });
  const resolve = fakeResolver((host) => (host.toLowerCase().endsWith(DOMAIN) ? ['127.0.0.1'] : undefined));
  const config = { pacing: { enabled: false }, ledger: { enabled: false }, upstream: { caFile: join(dir, 'ca.pem') }, robots: { maxOrigins: Math.max(1000, total * 2) } };
  const enforcing = await startTestProxy(config, { resolve });
  const reporting = await startTestProxy({ ...config, enforcement: 'report' }, { resolve });
  const port = (p: { proxyUrl: string }): number => Number(new URL(p.proxyUrl).port);

  const outcomes: Outcome[] = [];
  const runOne = async (id: number): Promise<void> => {
    const c = caseOf(seed, id, agents, corpus, corpusShare);
    cases.set(id, c);
    const [enforce, report, tunnel] = await Promise.all([
      sendPlain(port(enforcing), c, plainPort, 'enforce', c.before),
      sendPlain(port(reporting), c, plainPort, 'report'),
      c.tunnel !== undefined ? sendTunnel(port(enforcing), c, c.tunnel === 'tls' ? tlsPort : plainPort, c.tunnel === 'tls') : Promise.resolve(undefined),
    ]);
    const received = hits.get(`${id} report`);
    const before = c.before === undefined ? undefined : { verdict: enforce.beforeVerdict ?? 'error', ...expectedOf({ ...c, agent: c.before }, received) };
    const sent = extractPathAndQuery(`http://h${c.target.startsWith('/') ? c.target : '/' + c.target}`);
    const sentVerdict = received === undefined || expectedOf(c, received).core === undefined ? undefined : expectedOf(c, sent).expected;
    outcomes.push({ c, enforce: enforce.verdict, decision: enforce.decision, report: report.verdict, tunnel, before, received, sentVerdict, ...expectedOf(c, received) });
    cases.delete(id);
  };
  const started = Date.now();
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: options.concurrency ?? 6 }, async () => {
        while (next < total) await runOne(next++);
      }),
    );
  } finally {
    await Promise.all([enforcing.close(), reporting.close()]);
    for (const origin of [plainOrigin, tlsOrigin]) {
      origin.close();
      origin.closeAllConnections();
    }
  }
  return { ...classify(outcomes), outcomes, elapsedMs: Date.now() - started };
}

/** The prefix of a class found on the request of another agent pipelined before a case's. */
export const PIPELINED = 'pipelined first request: ';

/** The disagreements of `outcomes` by class, and the counts beside them. */
function classify(outcomes: Outcome[]): Pick<E2eReport, 'byClass' | 'tunnels' | 'encodingOnly'> {
  const byClass = new Map<string, Outcome[]>();
  const add = (name: string, o: Outcome): void => void byClass.set(name, [...(byClass.get(name) ?? []), o]);
  let tunnels = 0;
  let encodingOnly = 0;
  for (const o of outcomes) {
    if (o.enforce !== o.expected && !(o.enforce === 'bad-target' && o.report === 'bad-target')) add(classOf(o), o);
    if (o.enforce !== o.report && o.report !== 'error') add('enforce-vs-report', o);
    if (o.enforce === o.expected && o.sentVerdict !== undefined && o.sentVerdict !== o.expected) {
      add(DOT_SEGMENT.test(o.c.target.replace(/[?#].*/, '')) ? DISAGREEMENT.dotSegments : DISAGREEMENT.respelt, o);
    }
    if (o.before !== undefined && o.before.verdict !== o.before.expected && o.enforce !== 'bad-target') {
      const { verdict, ...expected } = o.before;
      add(`${PIPELINED}${classOf({ ...o, ...expected, c: { ...o.c, agent: o.c.before! }, enforce: verdict, before: undefined })}`, o);
    }
    if (o.tunnel !== undefined) {
      tunnels++;
      if (o.tunnel !== o.enforce && o.enforce !== 'bad-target') add('connect-vs-plain', o);
    }
    if (o.referenceRaw !== undefined && (o.referenceRaw ? 'allow' : 'deny') !== o.expected) encodingOnly++;
  }
  return { byClass, tunnels, encodingOnly };
}

/** One outcome in two lines, for a disagreement's listing. */
export function describeOutcome(o: Outcome): string {
  const w = o.c.wire;
  return [
    `#${o.c.id} ${o.c.source} ${JSON.stringify(o.c.agent.ua.slice(0, 60))} token=${o.c.agent.token} target=${JSON.stringify(o.c.target)} (${o.c.authority}) received=${JSON.stringify(o.received)}`,
    `  wire ${w.status} hops=${w.hops}${w.hops > 0 ? ' to ' + w.hopTo : ''} ${w.coding}${w.chunked ? ' chunked' : ''} ${w.contentType ?? '(no type)'} ${o.c.body.length} B; proxy ${o.enforce} (${o.decision}) report ${o.report} tunnel ${o.c.tunnel ?? ''} ${o.tunnel ?? '-'} before ${o.c.before?.token ?? '-'} ${o.before?.verdict ?? ''}/${o.before?.expected ?? ''} expected ${o.expected} core ${o.core} reference-as-sent ${o.referenceRaw} reference-on-sent-path ${o.sentVerdict}`,
  ].join('\n');
}
