/**
 * Admission rules end to end (real proxy, real sockets from several loopback addresses): a
 * throttled address still gets in with credentials it verified itself before (and only those),
 * and who wins when a client range names an identity and the client's credentials name another
 * (the credentials, unless the range is `binding`).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { captureLogs, startOrigin, startTestProxy, siteHandler, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { connectFrom, proxyRequest, waitFor, type ProxyAnswer } from '../helpers/proxy-client.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AccessControl, prepareAccess, type Admission } from '../../src/access/access-control.js';
import { validateConfig } from '../../src/config/index.js';
import { systemClock } from '../../src/clock.js';
import { forwardableHeaders } from '../../src/proxy/headers.js';
import { setFlagsFromString } from 'node:v8';

const UA = 'ExampleBot/1.0';
const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/** alice (her own identity), bob (identity lab-scrapers), carol (identity carol); bcrypt cost 4. */
function writeCredentials(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'robots-proxy-users-')), 'users');
  writeFileSync(file, `alice:${bcrypt.hashSync('alice-pw', 4)}\nbob:${bcrypt.hashSync('bob-pw', 4)}:lab-scrapers\ncarol:${bcrypt.hashSync('carol-pw', 4)}\n`, { mode: 0o600 });
  return file;
}

/** One absolute-form GET through the proxy from `localAddress`, on a connection of its own. */
function get(port: number, url: string, localAddress: string, authorization?: string): Promise<ProxyAnswer> {
  return proxyRequest(port, url, { localAddress, headers: { 'user-agent': UA, ...(authorization ? { 'proxy-authorization': authorization } : {}) } });
}

describe('a throttled address and the credentials it verified before', () => {
  let proxy: Proxy;
  let origin: TestOrigin;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    proxy = await startTestProxy({ access: { clients: ['127.0.0.0/8'], credentialsFile: writeCredentials(), maxAuthFailures: 3, authFailureWindow: '1m' } });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('admits its own verified credentials while throttled, and nothing else: no oracle over the shared cache', async () => {
    const port = proxy.proxyAddress.port;
    const guesser = '127.0.0.13';
    assert.equal((await get(port, `${origin.url}/a1`, guesser, basic('alice', 'alice-pw'))).status, 200, 'alice verified from the address');
    assert.equal((await get(port, `${origin.url}/b1`, '127.0.0.14', basic('bob', 'bob-pw'))).status, 200, 'bob verified from another address');
    for (let i = 0; i < 3; i++) assert.equal((await get(port, `${origin.url}/g${i}`, guesser, basic('carol', `guess-${i}`))).status, 407);
    const hitsBefore = origin.hits.length;
    // Throttled: alice's credentials, verified from here before (remembered, no bcrypt), still get in.
    const alice = await get(port, `${origin.url}/a2`, guesser, basic('alice', 'alice-pw'));
    assert.equal(alice.status, 200, alice.body.toString());
    // bob's are right and remembered too, but were never verified from here: admitting them would let a
    // throttled guesser test passwords against the cache (right: 200, wrong: 429).
    const bob = await get(port, `${origin.url}/b2`, guesser, basic('bob', 'bob-pw'));
    assert.equal(bob.status, 429);
    assert.equal(bob.headers['x-robots-proxy-decision'], 'deny; reason=proxy-auth-throttled');
    // carol's are right but never verified at all: a check is bcrypt work, which the budget withholds.
    assert.equal((await get(port, `${origin.url}/c`, guesser, basic('carol', 'carol-pw'))).status, 429);
    assert.equal((await get(port, `${origin.url}/a3`, guesser, basic('alice', 'wrong'))).status, 429);
    // That wrong password for alice ended her pass from this address: a guesser sharing it (a NAT) gets
    // one right-or-wrong answer per window, not one per request.
    assert.equal((await get(port, `${origin.url}/a4`, guesser, basic('alice', 'alice-pw'))).status, 429);
    assert.deepEqual(origin.hits.slice(hitsBefore).map((h) => h.url), ['/a2']);
    // Another address still has its budget, and bob's credentials work from where they were verified.
    assert.equal((await get(port, `${origin.url}/b3`, '127.0.0.14', basic('bob', 'bob-pw'))).status, 200);
  });
});

describe('a client range that names an identity, and credentials that name another', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  let logs: LogCapture;
  const BOUND = '127.0.0.21';
  const NAMED = '127.0.0.22';

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    logs = captureLogs();
    proxy = await startTestProxy(
      {
        access: {
          clients: ['127.0.0.1/32', { range: `${BOUND}/32`, identity: 'lab-scrapers', binding: true }, { range: `${NAMED}/32`, identity: 'lab-scrapers' }],
          credentialsFile: writeCredentials(),
        },
      },
      { logger: logs.logger },
    );
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  /** The identity name of the access line of the request for `path`. */
  async function identityOf(path: string): Promise<unknown> {
    await waitFor(() => logs.lines.some((l) => l['msg'] === 'request' && String(l['url']).endsWith(path)), `the access line of ${path}`);
    return logs.lines.find((l) => l['msg'] === 'request' && String(l['url']).endsWith(path))?.['identity'];
  }

  it('without binding, valid credentials name the identity; the range names it for clients without credentials', async () => {
    const port = proxy.proxyAddress.port;
    assert.equal((await get(port, `${origin.url}/n1`, NAMED, basic('alice', 'alice-pw'))).status, 200);
    assert.equal(await identityOf('/n1'), 'alice');
    assert.equal((await get(port, `${origin.url}/n2`, NAMED)).status, 200);
    assert.equal(await identityOf('/n2'), 'lab-scrapers');
    assert.equal((await get(port, `${origin.url}/n3`, NAMED, basic('alice', 'wrong'))).status, 407, 'wrong credentials are refused, not ignored');
  });

  it('a binding range refuses credentials for another identity (403 identity-mismatch), for requests and CONNECT, before any upstream contact', async () => {
    const port = proxy.proxyAddress.port;
    const hitsBefore = origin.hits.length;
    const refused = await get(port, `${origin.url}/b1`, BOUND, basic('alice', 'alice-pw'));
    assert.equal(refused.status, 403);
    assert.equal(refused.headers['x-robots-proxy-decision'], 'deny; reason=identity-mismatch');
    assert.match(refused.body.toString(), /bound to identity "lab-scrapers" \(access\.clients binding: true\); credentials for identity "alice" are not accepted/);
    assert.match(await connectFrom(port, `127.0.0.1:${new URL(origin.url).port}`, BOUND, [`Proxy-Authorization: ${basic('alice', 'alice-pw')}`]), /^HTTP\/1\.1 403 /);
    assert.equal(origin.hits.length, hitsBefore, 'the origin saw nothing');
    // Credentials for the range's own identity are fine; so is no credentials; wrong ones still get 407.
    assert.equal((await get(port, `${origin.url}/b2`, BOUND, basic('bob', 'bob-pw'))).status, 200);
    assert.equal(await identityOf('/b2'), 'lab-scrapers');
    assert.equal((await get(port, `${origin.url}/b3`, BOUND)).status, 200);
    assert.equal(await identityOf('/b3'), 'lab-scrapers');
    assert.equal((await get(port, `${origin.url}/b4`, BOUND, basic('alice', 'wrong'))).status, 407);
  });

  it('a reload that makes a range binding applies to the tunnels its clients opened with other credentials', async () => {
    const port = proxy.proxyAddress.port;
    const authority = `127.0.0.1:${new URL(origin.url).port}`;
    const tunnel = await openTunnel(port, authority, NAMED, basic('alice', 'alice-pw'));
    try {
      assert.match(await tunnel.exchange(`GET /t1 HTTP/1.1\r\nHost: ${authority}\r\nUser-Agent: ${UA}\r\n\r\n`), /^HTTP\/1\.1 200 /);
      const current = proxy.currentConfig();
      proxy.reload({ ...current, access: { ...current.access, clients: current.access.clients.map((c) => (c.range === `${NAMED}/32` ? { ...c, binding: true } : c)) } });
      const after = await tunnel.exchange(`GET /t2 HTTP/1.1\r\nHost: ${authority}\r\nUser-Agent: ${UA}\r\n\r\n`);
      assert.match(after, /^HTTP\/1\.1 403 /);
      assert.match(after, /x-robots-proxy-decision: deny; reason=identity-mismatch/i);
      assert.ok(!origin.hits.some((h) => h.url === '/t2'), 'the origin never saw the refused request');
    } finally {
      tunnel.close();
    }
  });
});

/** A CONNECT tunnel opened from `localAddress` with `authorization`, carrying plain HTTP: one request at a time. */
async function openTunnel(port: number, authority: string, localAddress: string, authorization: string): Promise<{ exchange(request: string): Promise<string>; close(): void }> {
  const socket = net.connect({ host: '127.0.0.1', port, localAddress });
  socket.setEncoding('latin1');
  let buffered = '';
  let waiting: (() => void) | undefined;
  socket.on('data', (d: string) => {
    buffered += d;
    waiting?.();
  });
  /** Resolves with the next complete response (head, and a body of its Content-Length, or chunks to the last). */
  const nextResponse = (): Promise<string> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.slice(0, end);
        let total: number;
        if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
          const last = buffered.indexOf('\r\n0\r\n\r\n', end);
          if (last < 0) return;
          total = last + 7;
        } else {
          total = end + 4 + Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
          if (buffered.length < total) return;
        }
        const response = buffered.slice(0, total);
        buffered = buffered.slice(total);
        waiting = undefined;
        resolve(response);
      };
      waiting = check;
      socket.once('error', reject);
      check();
    });
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: ${authorization}\r\n\r\n`);
  const established = await nextResponse();
  assert.match(established, /^HTTP\/1\.1 200 /);
  return {
    exchange: (request) => {
      socket.write(request);
      return nextResponse();
    },
    close: () => socket.destroy(),
  };
}

/**
 * A real server whose requests are held, unanswered, for the test to admit by hand
 * ({@link AccessControl.admit} on the real IncomingMessage of a real connection from a chosen
 * loopback address). Each request is on a connection of its own.
 */
async function startHoldingServer(): Promise<{ requestFrom(localAddress: string, authorization: string, headers?: http.OutgoingHttpHeaders): Promise<http.IncomingMessage>; close(): Promise<void> }> {
  const waiting: Array<(req: http.IncomingMessage) => void> = [];
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    held.push(res);
    waiting.shift()?.(req);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    // agent: false sends `Connection: close` unless `headers` says otherwise.
    requestFrom(localAddress, authorization, headers = {}) {
      const arrived = new Promise<http.IncomingMessage>((resolve) => waiting.push(resolve));
      http.request({ host: '127.0.0.1', port, path: '/', localAddress, agent: false, headers: { 'proxy-authorization': authorization, ...headers } }).on('error', () => undefined).end();
      return arrived;
    },
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('admission of credentials verified before, on a new connection (AccessControl, real requests)', () => {
  let server: Awaited<ReturnType<typeof startHoldingServer>>;
  let credentialsFile: string;
  const config = (extra: Record<string, unknown> = {}) =>
    validateConfig({ access: { clients: ['127.0.0.0/8', { range: '127.0.0.40/32', identity: 'robots-lab', binding: true }], credentialsFile, maxAuthFailures: 2, authFailureWindow: '1m' }, ...extra });
  const admitted = (a: Admission) => (a.isAdmitted ? a.identity?.name : a.refusal.reason);

  before(async () => {
    credentialsFile = writeCredentials();
    server = await startHoldingServer();
  });
  after(async () => server?.close());

  it('is synchronous and costs no bcrypt while the address has budget; the range binding is still judged', async () => {
    const access = new AccessControl(prepareAccess(config()), { clock: systemClock });
    const first = access.admit(await server.requestFrom('127.0.0.31', basic('alice', 'alice-pw')), { origin: 'http://a.example' });
    assert.ok(first instanceof Promise, 'the first check runs bcrypt');
    assert.equal(admitted(await first), 'alice');
    assert.equal(access.verifier?.bcryptRuns, 1);
    const again = access.admit(await server.requestFrom('127.0.0.32', basic('alice', 'alice-pw')), { origin: 'http://a.example' });
    assert.ok(!(again instanceof Promise), 'a new connection with remembered credentials is answered at once');
    assert.equal(admitted(again), 'alice');
    const bound = access.admit(await server.requestFrom('127.0.0.40', basic('alice', 'alice-pw')), { origin: 'http://a.example' });
    assert.ok(!(bound instanceof Promise));
    assert.equal(admitted(bound), 'identity-mismatch', 'a binding range refuses another identity\'s credentials, remembered or not');
    assert.equal(access.verifier?.bcryptRuns, 1);
  });

  it('not while checks in flight use the address\'s budget: then only credentials verified from the address itself get in', async () => {
    const access = new AccessControl(prepareAccess(config()), { clock: systemClock });
    assert.equal(admitted(await access.admit(await server.requestFrom('127.0.0.33', basic('bob', 'bob-pw')))), 'lab-scrapers');
    assert.equal(admitted(await access.admit(await server.requestFrom('127.0.0.34', basic('alice', 'alice-pw')))), 'alice');
    const guesses = [await server.requestFrom('127.0.0.34', basic('carol', 'guess-1')), await server.requestFrom('127.0.0.34', basic('carol', 'guess-2'))];
    const bob = await server.requestFrom('127.0.0.34', basic('bob', 'bob-pw'));
    const alice = await server.requestFrom('127.0.0.34', basic('alice', 'alice-pw'));
    // Two guesses begun (bcrypt running), none failed yet: the budget of 2 is spent by checks in flight.
    const checks = guesses.map((req) => access.admit(req));
    // bob's credentials are remembered (verified from .33): admitting them now would answer a guess at cache speed.
    assert.equal(admitted(await access.admit(bob)), 'proxy-auth-throttled');
    assert.equal(admitted(await access.admit(alice)), 'alice', 'verified from this address before');
    assert.deepEqual((await Promise.all(checks)).map(admitted), ['proxy-auth-required', 'proxy-auth-required']);
  });

  it('records the credentials as verified from the new address: they still get in once it is throttled', async () => {
    const access = new AccessControl(prepareAccess(config()), { clock: systemClock });
    assert.equal(admitted(await access.admit(await server.requestFrom('127.0.0.35', basic('alice', 'alice-pw')))), 'alice');
    const fromCache = access.admit(await server.requestFrom('127.0.0.36', basic('alice', 'alice-pw')));
    assert.ok(!(fromCache instanceof Promise));
    for (const guess of ['g1', 'g2']) assert.equal(admitted(await access.admit(await server.requestFrom('127.0.0.36', basic('carol', guess)))), 'proxy-auth-required');
    assert.equal(admitted(await access.admit(await server.requestFrom('127.0.0.36', basic('carol', 'g3')))), 'proxy-auth-throttled');
    assert.equal(admitted(await access.admit(await server.requestFrom('127.0.0.36', basic('alice', 'alice-pw')))), 'alice');
    assert.equal(access.verifier?.bcryptRuns, 3);
  });

  it('runs at most access.maxCredentialChecks bcrypt checks at once: a new check beyond is 429 unchecked, not counted as a failure; remembered credentials still get in', async () => {
    const bounded = validateConfig({ access: { clients: ['127.0.0.0/8'], credentialsFile, maxAuthFailures: 2, authFailureWindow: '1m', maxCredentialChecks: 1 } });
    const access = new AccessControl(prepareAccess(bounded), { clock: systemClock });
    assert.equal(admitted(await access.admit(await server.requestFrom('127.0.0.37', basic('alice', 'alice-pw')))), 'alice');
    const [first, second] = [await server.requestFrom('127.0.0.38', basic('alice', 'guess-1')), await server.requestFrom('127.0.0.39', basic('alice', 'guess-2'))];
    const running = access.admit(first);
    assert.ok(running instanceof Promise, 'bcrypt runs');
    const busy = await access.admit(second);
    assert.equal(admitted(busy), 'proxy-auth-throttled', 'the one check allowed is in flight');
    assert.ok(!busy.isAdmitted && busy.refusal.retryAfterSeconds === 1);
    assert.match(!busy.isAdmitted ? String(busy.refusal.detail) : '', /access\.maxCredentialChecks/);
    const remembered = access.admit(await server.requestFrom('127.0.0.39', basic('alice', 'alice-pw')));
    assert.ok(!(remembered instanceof Promise), 'remembered credentials need no check');
    assert.equal(admitted(remembered), 'alice');
    assert.equal(admitted(await running), 'proxy-auth-required');
    // The unchecked attempt spent none of .39's budget of 2: two real failures follow before it is throttled.
    for (const guess of ['guess-2', 'guess-3']) assert.equal(admitted(await access.admit(await server.requestFrom('127.0.0.39', basic('alice', guess)))), 'proxy-auth-required');
    assert.equal(admitted(await access.admit(await server.requestFrom('127.0.0.39', basic('alice', 'guess-4')))), 'proxy-auth-throttled');
    assert.equal(access.verifier?.bcryptRuns, 4);
  });

  it('takes Proxy-Authorization out of the request\'s headers without deleting the field: no secret in a copy, the object keeps fast properties', async () => {
    const access = new AccessControl(prepareAccess(config()), { clock: systemClock });
    // Sent before Host (as wrk sends it): deleting a field that is not the last one added turns
    // the object into a dictionary (V8's slow properties), which every later header read pays for.
    const req = await server.requestFrom('127.0.0.41', basic('alice', 'alice-pw'));
    const names = req.rawHeaders.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase());
    assert.ok(names.indexOf('proxy-authorization') < names.length - 1, `the credentials are not the last field (${names.join(', ')})`);
    assert.equal(admitted(await access.admit(req)), 'alice');
    assert.equal(req.headers['proxy-authorization'], undefined);
    assert.doesNotMatch(JSON.stringify(req.headers), /proxy-authorization|Basic /i);
    assert.equal(forwardableHeaders(req.headers, '1.1', 'robots-proxy-test')['proxy-authorization'], undefined);
    setFlagsFromString('--allow-natives-syntax');
    const hasFastProperties = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean;
    assert.equal(hasFastProperties(req.headers), true, 'the headers object is still in fast mode');
  });

  it('remembers credentials on the connection for the next request on it, for this AccessControl only', async () => {
    const access = new AccessControl(prepareAccess(config()), { clock: systemClock });
    const req = await server.requestFrom('127.0.0.42', basic('alice', 'alice-pw'), { connection: 'keep-alive' });
    assert.equal(admitted(await access.admit(req)), 'alice');
    // Spend the address's failure budget (2): remembered credentials from the cache now go through
    // the throttled path (a promise); the connection's own memo still answers at once.
    for (const guess of ['g1', 'g2']) assert.equal(admitted(await access.admit(await server.requestFrom('127.0.0.42', basic('carol', guess)))), 'proxy-auth-required');
    req.headers['proxy-authorization'] = basic('alice', 'alice-pw');
    const next = access.admit(req);
    assert.ok(!(next instanceof Promise), 'the next request on the connection is admitted from its memo');
    assert.equal(admitted(next), 'alice');
    // Another AccessControl (its own cache, nothing verified) does not read this one's memo on the same socket.
    const other = new AccessControl(prepareAccess(config()), { clock: systemClock });
    req.headers['proxy-authorization'] = basic('alice', 'alice-pw');
    const checked = other.admit(req);
    assert.ok(checked instanceof Promise, 'a check of its own');
    assert.equal(admitted(await checked), 'alice');
    assert.equal(other.verifier?.bcryptRuns, 1);
  });

  it('remembers nothing on a connection whose request says Connection: close (no request follows on it)', async () => {
    const access = new AccessControl(prepareAccess(config()), { clock: systemClock });
    const req = await server.requestFrom('127.0.0.43', basic('alice', 'alice-pw'), { connection: 'Keep-Alive, Close' });
    assert.equal(admitted(await access.admit(req)), 'alice');
    assert.deepEqual(Object.getOwnPropertySymbols(req.socket).filter((s) => s.description === 'robots-proxy.verifiedOnConnection'), [], 'no memo on the socket');
    // With the address's budget spent, the same credentials on that socket take the throttled path (a promise), not a memo.
    for (const guess of ['g1', 'g2']) assert.equal(admitted(await access.admit(await server.requestFrom('127.0.0.43', basic('carol', guess)))), 'proxy-auth-required');
    req.headers['proxy-authorization'] = basic('alice', 'alice-pw');
    const next = access.admit(req);
    assert.ok(next instanceof Promise, 'no memo: the throttled path');
    assert.equal(admitted(await next), 'alice', 'credentials verified from this address are still admitted');
    // A keep-alive request's socket does get the memo (the control: the symbol is found when set).
    const kept = await server.requestFrom('127.0.0.44', basic('alice', 'alice-pw'), { connection: 'keep-alive' });
    assert.equal(admitted(await access.admit(kept)), 'alice');
    assert.equal(Object.getOwnPropertySymbols(kept.socket).filter((s) => s.description === 'robots-proxy.verifiedOnConnection').length, 1);
  });

  it('a reload applies to remembered credentials: the identity\'s binding as configured now', async () => {
    const prepared = prepareAccess(config());
    const access = new AccessControl(prepared, { clock: systemClock });
    const before = await access.admit(await server.requestFrom('127.0.0.37', basic('bob', 'bob-pw')));
    assert.deepEqual(before.isAdmitted && before.identity?.boundTokens, []);
    // The same credentials file (the same entries), another configuration.
    access.apply({ ...prepared, config: config({ identities: { 'lab-scrapers': { tokens: ['ExampleBot'] } } }) });
    const after = access.admit(await server.requestFrom('127.0.0.38', basic('bob', 'bob-pw')));
    assert.ok(!(after instanceof Promise));
    assert.deepEqual(after.isAdmitted && after.identity?.boundTokens, ['ExampleBot']);
  });
});
