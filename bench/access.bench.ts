/**
 * `npm run bench:access`: the CPU that admission (src/access/) adds to one request, in
 * process: `AccessControl.admit` for an anonymous loopback client, a named client range, and
 * Basic credentials already verified (the cache hit every request after the first one of a
 * credential takes), against the one bcrypt check (cost 10) a new credential costs. CPU time
 * (process.cpuUsage), so a loaded machine slows the run but not the figure much. Prints
 * figures; passes or fails nothing.
 */
import type { IncomingMessage } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { AccessControl, prepareAccess } from '../src/access/access-control.js';
import { validateConfig } from '../src/config/index.js';
import { systemClock } from '../src/clock.js';

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
}

await main();
