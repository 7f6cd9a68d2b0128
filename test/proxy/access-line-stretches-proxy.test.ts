/**
 * The access line's cached stretches (src/audit/access-line.ts) through the real proxy: lines of
 * requests that differ from the one before only in a field inside a stretch (allow, deny, allow;
 * a 404 then a 200; another User-Agent, a cut one, the first again; an origin whose robots.txt
 * cannot be fetched then one whose can; a queued request then one that was not) must be the lines
 * the reference path writes. Three proxies share one origin: two log through loggers made by
 * `createLogger` (the encoder, its stretches shared module-wide between them; the second a child
 * with other bindings), the third through a plain pino logger (`toAccessLogRecord` serialised by
 * pino: the reference, no stretches). Every request is sent to all three in turn, so each
 * encoder line follows a line of the other encoder logger; the lines are compared field by field
 * after the per-request values (ids, times, ports, durations) are blanked, and each proxy's
 * bindings checked.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../src/audit/logger.js';
import { CapturedLines } from '../audit/factories.js';
import { captureLogs, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { closedPort, proxyRequest, waitFor, type ProxyAnswer } from '../helpers/proxy-client.js';

const UA_A = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const UA_A2 = 'Mozilla/5.0 (compatible; ExampleBot/2.2; +https://bot.example/other)';
const UA_B = 'OtherBot/1.0 (+https://other.example)';
const UA_LONG = `LongBot/3.0 ${'x'.repeat(5000)}`;

type Line = Record<string, unknown>;

/** Values that differ between two proxies' lines of the same request (ids, times, ports, durations). */
const VOLATILE = ['level', 'time', 'requestId', 'startedAt', 'clientPort', 'durationMs', 'queueWaitMs', 'upstreamMs', 'upstreamStartedAt', 'pid', 'hostname', 'component'];
const VOLATILE_SNAPSHOT = ['fetchedAtMs', 'expiresAtMs', 'fetchedAt', 'expiresAt'];

function comparable(line: Line): Line {
  const copy = JSON.parse(JSON.stringify(line)) as Line;
  for (const k of VOLATILE) delete copy[k];
  const decision = copy['decision'] as Record<string, unknown>;
  const snapshot = decision['snapshot'] as Record<string, unknown> | null;
  if (snapshot) for (const k of VOLATILE_SNAPSHOT) delete snapshot[k];
  const pacing = decision['pacing'] as Record<string, unknown> | undefined;
  if (pacing) delete pacing['waitedMs'];
  return copy;
}

describe('access lines through the proxy, encoder (two loggers, stretches shared) against the reference path', () => {
  const reference = captureLogs();
  const outA = new CapturedLines();
  const outC = new CapturedLines();
  const encoderA = createLogger({ level: 'info', destination: outA });
  const encoderC = createLogger({ level: 'info', destination: outC }).child({ component: 'second "proxy"' });
  let proxies: Array<Awaited<ReturnType<typeof startTestProxy>>> = [];
  let origin: TestOrigin;
  let origin2: TestOrigin;
  let deadOrigin = '';
  const held = new Map<string, () => void>();

  before(async () => {
    origin = await startOrigin((req, res) => {
      const url = req.url ?? '';
      if (url === '/robots.txt') {
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: OtherBot\nDisallow: /b-only\n\nUser-agent: *\nDisallow: /private\nAllow: /\n');
      }
      if (url.startsWith('/hold')) return void held.set(url, () => {
        held.delete(url);
        res.writeHead(200, { 'content-type': 'text/plain' }).end('held');
      });
      if (url.startsWith('/reset')) return void req.socket.destroy();
      if (url.startsWith('/missing')) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('no');
      if (url.startsWith('/error')) return void res.writeHead(503, { 'content-type': 'text/plain' }).end('busy');
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`page ${url}`);
    });
    origin2 = await startOrigin((req, res) => {
      if (req.url === '/robots.txt') {
        // Line 6 as the first origin's, another pattern.
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: OtherBot\nDisallow: /b-only\n\nUser-agent: *\nDisallow: /private\nAllow: /a\n');
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`page ${req.url ?? ''}`);
    });
    deadOrigin = `http://127.0.0.1:${await closedPort()}`;
    const config = { pacing: { maxConcurrency: 1, maxQueue: 1 } };
    proxies = [
      await startTestProxy(config, { logger: encoderA }),
      await startTestProxy(config, { logger: encoderC }),
      await startTestProxy(config, { logger: reference.logger }),
    ];
  });
  after(async () => {
    for (const end of [...held.values()]) end();
    for (const p of proxies) await p.close();
    await origin?.close();
    await origin2?.close();
  });

  const send = (p: number, url: string, ua: string, localAddress = '127.0.0.1'): Promise<ProxyAnswer> =>
    proxyRequest((proxies[p] as (typeof proxies)[number]).proxyAddress.port, url, { headers: { 'user-agent': ua }, localAddress });

  /** Each proxy's request lines (msg "request"), in order. */
  const linesOf = (): Line[][] => [
    outA.records().filter((l) => l['msg'] === 'request'),
    outC.records().filter((l) => l['msg'] === 'request'),
    reference.lines.filter((l) => l['msg'] === 'request'),
  ];

  it('writes the reference line for every request of a sequence changing one stretch field at a time', { timeout: 60_000 }, async () => {
    const o = origin.url;
    const o2 = origin2.url;
    // [url, User-Agent, the reference's verdict:status, the client's address]
    const steps: Array<[string, string, string, string?]> = [
      [`${o}/a`, UA_A, 'allow:200'],
      [`${o}/private/x`, UA_A, 'deny:403'], // deny (rule)
      [`${o}/a`, UA_A, 'allow:200'], // allow again
      [`${o}/missing`, UA_A, 'allow:404'], // upstream 404
      [`${o}/a`, UA_A, 'allow:200'],
      [`${o}/error`, UA_A, 'allow:503'], // upstream 503
      [`${o}/a`, UA_A2, 'allow:200'], // the same product token in another User-Agent string
      [`${o}/a`, UA_A, 'allow:200'],
      [`${o2}/a`, UA_A, 'allow:200'], // the same group, rule kind and line, another pattern (another origin)
      [`${o}/a`, UA_A, 'allow:200'],
      [`${o}/a`, UA_B, 'allow:200'], // another agent, another group
      [`${o}/b-only`, UA_B, 'deny:403'], // denied for B only
      [`${deadOrigin}/x`, UA_B, 'deny:503'], // robots.txt unreachable: denied, status 403 -> 503 with no upstream status either time
      [`${o}/b-only`, UA_A, 'allow:200'], // allowed for A (same url, other agent and rule)
      [`${o}/a`, UA_LONG, 'allow:200'], // a cut User-Agent
      [`${o}/a`, UA_A, 'allow:200'], // then a whole one
      [`${o}/a`, UA_A, 'allow:200', '127.0.0.2'], // another client address
      [`${o}/a`, UA_A, 'allow:200'],
      [`${o}/reset`, UA_A, 'allow:502'], // upstream error (connection reset)
      [`${o}/a`, UA_A, 'allow:200'], // then a success
      [`${o}/a`, '', 'allow:200'], // no product token
      [`${o}/a`, UA_A, 'allow:200'],
    ];
    for (const [url, ua, , address] of steps) {
      for (let p = 0; p < 3; p++) await send(p, url, ua, address);
    }
    // Refused (queue full: pacing's queue facts), queued, then not: hold the slot, queue one request,
    // one more is refused, free the slot, then one more unqueued.
    for (let p = 0; p < 3; p++) {
      const hold = '/hold/q'; // the same path for each proxy (one at a time)
      const first = send(p, `${o}${hold}`, UA_A);
      await waitFor(() => held.has(hold), `${hold} to reach the origin`);
      const queued = send(p, `${o}/after-hold`, UA_A);
      await waitFor(() => (proxies[p]?.pacer.originStats(o)?.queued ?? 0) === 1, 'a request to be queued');
      assert.equal((await send(p, `${o}/refused`, UA_A)).status, 429);
      held.get(hold)?.();
      await first;
      await queued;
      await send(p, `${o}/a`, UA_A);
    }
    const want = [...steps.map((s) => s[2]), 'deny:429', 'allow:200', 'allow:200', 'allow:200'];
    const expected = want.length;
    await waitFor(() => linesOf().every((l) => l.length === expected), `${expected} request lines from each proxy`);
    const [a, c, ref] = linesOf() as [Line[], Line[], Line[]];
    if (process.env['DUMP']) for (const l of ref) console.log(JSON.stringify([l['url'], l['status'], (l['decision'] as Line)['pacing'], (l['decision'] as Line)['rule']]));
    // The reference sequence is the one intended (so that a wrong reference cannot hide a wrong encoder).
    assert.deepEqual(ref.map((l) => `${(l['decision'] as Line)['verdict'] as string}:${String(l['status'])}`), want);
    assert.ok((ref[14]?.['truncated'] as string[]).includes('userAgent'), 'the long User-Agent is cut');
    assert.equal((ref[12]?.['decision'] as Line)['reason'], 'robots-unreachable');
    assert.equal(ref[16]?.['clientAddress'], '127.0.0.2');
    assert.notEqual(ref[18]?.['error'], null, 'the reset is an upstream error');
    assert.equal(((ref[8]?.['decision'] as Line)['rule'] as Line)['pattern'], '/a');
    assert.equal(((ref[8]?.['decision'] as Line)['rule'] as Line)['line'], ((ref[7]?.['decision'] as Line)['rule'] as Line)['line']);
    for (let i = 0; i < expected; i++) {
      assert.deepEqual(comparable(a[i] as Line), comparable(ref[i] as Line), `line ${i} of the first encoder proxy`);
      assert.deepEqual(comparable(c[i] as Line), comparable(ref[i] as Line), `line ${i} of the second encoder proxy (child bindings)`);
      assert.equal(a[i]?.['component'], undefined, `line ${i}: the first logger has no component binding`);
      assert.equal(c[i]?.['component'], 'second "proxy"', `line ${i}: the child logger's binding`);
    }
    for (const p of proxies) {
      assert.equal(p.pipeline.requestsInFlight, 0);
      assert.equal(p.pacer.originStats(o)?.inFlight ?? 0, 0);
      assert.equal(p.pacer.originStats(o)?.queued ?? 0, 0);
    }
  });

  it("logs each proxy's current robots snapshot, frozen by the cache and copied as encoded bytes, also after a refetch", { timeout: 30_000 }, async () => {
    // The two encoder proxies alternate (their snapshots of one origin are distinct objects, both frozen); the
    // first refetches between lines (a new frozen object for the same origin): each line must log its own
    // proxy's snapshot as the cache holds it now, never the other proxy's or the previous one's bytes.
    const o = origin.url;
    const logged = async (p: 0 | 1): Promise<[Line, Line]> => {
      const count = (linesOf()[p] as Line[]).length;
      await send(p, `${o}/a`, UA_A);
      await waitFor(() => (linesOf()[p] as Line[]).length === count + 1, 'the line');
      const line = (linesOf()[p] as Line[]).at(-1) as Line;
      const info = (await (proxies[p] as (typeof proxies)[number]).robotsCache.peek(o))?.info;
      assert.ok(info !== undefined && Object.isFrozen(info), 'the cache holds a frozen snapshot');
      const want = JSON.parse(JSON.stringify({ ...info, fetchedAt: new Date(info.fetchedAtMs).toISOString(), expiresAt: new Date(info.expiresAtMs).toISOString() })) as Line;
      return [(line['decision'] as Line)['snapshot'] as Line, want];
    };
    const before = linesOf()[0]?.length ?? 0;
    const [a1, wantA1] = await logged(0);
    assert.deepEqual(a1, wantA1);
    const [c1, wantC1] = await logged(1);
    assert.deepEqual(c1, wantC1);
    for (let round = 0; round < 2; round++) {
      (proxies[0] as (typeof proxies)[number]).robotsCache.invalidate(o);
      await new Promise((resolve) => setTimeout(resolve, 5)); // another fetchedAtMs
      const [a2, wantA2] = await logged(0);
      assert.deepEqual(a2, wantA2, `after refetch ${round}`);
      assert.notEqual(a2['fetchedAtMs'], a1['fetchedAtMs'], 'the first proxy refetched');
      const [c2, wantC2] = await logged(1);
      assert.deepEqual(c2, wantC2);
      const [a3, wantA3] = await logged(0);
      assert.deepEqual(a3, wantA3);
    }
    assert.ok((linesOf()[0]?.length ?? 0) >= before + 5);
  });
});
