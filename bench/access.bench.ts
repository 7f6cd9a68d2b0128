/**
 * `npm run bench:access`: the CPU that admission (src/access/) adds to one request, in
 * process: `AccessControl.admit` for an anonymous loopback client, a named client range, and
 * Basic credentials already verified (the cache hit every request after the first one of a
 * credential takes), against the one bcrypt check (cost 10) a new credential costs. CPU time
 * (process.cpuUsage), so a loaded machine slows the run but not the figure much. Then the same
 * admissions on real new connections (`Connection: close`, one request each, `Proxy-Authorization`
 * sent before `Host` as wrk sends it), timing admit() and what the pipeline does with the headers
 * next (the forwarded copy, a few reads): what a new connection's admission costs amid a server's
 * other work, not in a hot loop (issue 8 under `Connection: close`). Prints figures; passes or
 * fails nothing.
 */
import http, { type IncomingMessage } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { AccessControl, prepareAccess } from '../src/access/access-control.js';
import { validateConfig } from '../src/config/index.js';
import { systemClock } from '../src/clock.js';
import { forwardableHeaders } from '../src/proxy/headers.js';

const ITERATIONS = Number(process.env['BENCH_ITERATIONS'] ?? 200_000);
const PASSWORD = 'bench-password';

function requestFrom(address: string, authorization?: string): IncomingMessage {
  return { socket: { remoteAddress: address }, headers: authorization === undefined ? {} : { 'proxy-authorization': authorization } } as unknown as IncomingMessage;
}

async function cpuMicrosPerCall(label: string, make: () => IncomingMessage, access: AccessControl, iterations = ITERATIONS): Promise<void> {
  for (let i = 0; i < 1_000; i++) await access.admit(make());
  const before = process.cpuUsage();
  for (let i = 0; i < iterations; i++) {
    const admitted = await access.admit(make());
    if (!admitted.isAdmitted) throw new Error(`${label}: refused (${admitted.refusal.reason})`);
  }
  const used = process.cpuUsage(before);
  console.log(`  ${label.padEnd(48)} ${((used.user + used.system) / iterations).toFixed(2)} us CPU per request`);
}

const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 4_000);

/**
 * Admission on real new connections: `CONNECTIONS` requests per round, each on a connection of its
 * own, admitted in the server's request handler; the time of admit(), the forwarded header copy
 * and a few header reads, per connection (wall clock: on a loaded machine the µs are the
 * machine's too). Interleaved rounds (anonymous, credentials verified before), 6; prints each and the median.
 */
async function newConnections(open: AccessControl, authenticated: AccessControl, authorization: string): Promise<void> {
  let access = open;
  let spentMs = 0;
  let sink = 0;
  const server = http.createServer((req, res) => {
    const started = performance.now();
    const admitted = access.admit(req, { origin: 'http://127.0.0.1:1' });
    if (admitted instanceof Promise || !admitted.isAdmitted) throw new Error('new connections: not admitted at once');
    sink += Object.keys(forwardableHeaders(req.headers, req.httpVersion, 'robots-proxy-bench')).length + (req.headers['user-agent']?.length ?? 0) + (req.headers['accept'] === undefined ? 1 : 0);
    spentMs += performance.now() - started;
    res.writeHead(200, { connection: 'close', 'content-length': '1' });
    res.end('x');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const one = (credentials: string | undefined): Promise<void> =>
    new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        const auth = credentials === undefined ? '' : `Proxy-Authorization: ${credentials}\r\n`;
        socket.write(`GET http://127.0.0.1:1/page HTTP/1.1\r\nUser-Agent: ExampleBot/2.1\r\nConnection: close\r\n${auth}Host: 127.0.0.1:1\r\n\r\n`);
      });
      socket.on('data', () => undefined).once('close', () => resolve()).once('error', reject);
    });
  const rounds: Record<'anonymous' | 'credentials', number[]> = { anonymous: [], credentials: [] };
  for (let round = 0; round < 6; round++) {
    for (const name of round % 2 === 0 ? (['anonymous', 'credentials'] as const) : (['credentials', 'anonymous'] as const)) {
      access = name === 'credentials' ? authenticated : open;
      const credentials = name === 'credentials' ? authorization : undefined;
      await one(credentials);
      spentMs = 0;
      for (let i = 0; i < CONNECTIONS; i++) await one(credentials);
      rounds[name].push((spentMs * 1000) / CONNECTIONS);
    }
  }
  server.close();
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`  on real new connections (${CONNECTIONS} per round; admit, the forwarded header copy, header reads; wall clock)${sink > 0 ? '' : ' (no headers?)'}:`);
  for (const name of ['anonymous', 'credentials'] as const) {
    console.log(`    ${name.padEnd(12)} ${median(rounds[name]).toFixed(2)} us per connection (rounds ${rounds[name].map((v) => v.toFixed(2)).join(' ')})`);
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-bench-access-'));
  const users = join(dir, 'users');
  writeFileSync(users, `bench:${bcrypt.hashSync(PASSWORD, 10)}\n`);
  const authorization = `Basic ${Buffer.from(`bench:${PASSWORD}`).toString('base64')}`;
  console.log(`bench:access: node ${process.version}, ${ITERATIONS} admissions per case`);

  const open = new AccessControl(prepareAccess(validateConfig({})), { clock: systemClock });
  await cpuMicrosPerCall('anonymous loopback client (default ranges)', () => requestFrom('127.0.0.1'), open);
  const named = new AccessControl(prepareAccess(validateConfig({ access: { clients: [{ range: '127.0.0.0/8', identity: 'lab' }, '10.0.0.0/8'] }, identities: { lab: { tokens: ['ExampleBot'] } } })), { clock: systemClock });
  await cpuMicrosPerCall('named client range, bound identity', () => requestFrom('127.0.0.1'), named);
  const authenticated = new AccessControl(prepareAccess(validateConfig({ access: { credentialsFile: users } })), { clock: systemClock });
  await cpuMicrosPerCall('Basic credentials, verified before (cache hit)', () => requestFrom('127.0.0.1', authorization), authenticated);

  const before = process.cpuUsage();
  const fresh = new AccessControl(prepareAccess(validateConfig({ access: { credentialsFile: users } })), { clock: systemClock });
  await fresh.admit(requestFrom('127.0.0.1', authorization));
  const used = process.cpuUsage(before);
  console.log(`  ${'first check of a credential (bcrypt cost 10)'.padEnd(48)} ${((used.user + used.system) / 1000).toFixed(0)} ms CPU, once per credential`);
  await newConnections(open, authenticated, authorization);
}

await main();
