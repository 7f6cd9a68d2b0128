import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, request } from 'undici';
import { fakeResolver } from '../helpers/resolver.js';
import { embeddedIpv4Addresses, isPrivateAddress, OWN_LISTENER_CODE, PRIVATE_TARGET_CODE, TargetGuard } from '../../src/proxy/target-guard.js';

const tableResolver = (table: Record<string, string[]>) => fakeResolver((hostname) => table[hostname]);

const codeOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException).code ?? ((err as { cause?: NodeJS.ErrnoException }).cause?.code);

describe('isPrivateAddress', () => {
  const notPublic: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['10.1.2.3', 'RFC 1918'],
    ['172.16.0.1', 'RFC 1918'],
    ['172.31.255.255', 'RFC 1918'],
    ['192.168.1.1', 'RFC 1918'],
    ['169.254.169.254', 'link-local, cloud metadata'],
    ['100.64.0.1', 'CGNAT 100.64/10'],
    ['100.127.255.254', 'CGNAT 100.64/10'],
    ['0.0.0.0', 'this network 0/8'],
    ['0.1.2.3', 'this network 0/8'],
    ['192.0.0.8', 'IETF protocol assignments 192.0.0/24'],
    ['192.0.2.1', 'TEST-NET-1'],
    ['198.18.0.1', 'benchmarking 198.18/15'],
    ['198.19.255.255', 'benchmarking 198.18/15'],
    ['198.51.100.7', 'TEST-NET-2'],
    ['203.0.113.9', 'TEST-NET-3'],
    ['240.0.0.1', 'reserved 240/4'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'limited broadcast'],
    ['::', 'unspecified ::/128'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback, bracketed'],
    ['fe80::1', 'link-local fe80::/10'],
    ['fe80::1%eth0', 'link-local with a zone'],
    ['febf::1', 'link-local fe80::/10'],
    ['fc00::1', 'unique local fc00::/7'],
    ['fd00:ec2::254', 'unique local, AWS metadata'],
    ['ff02::1', 'multicast'],
    ['fec0::1', 'deprecated site-local'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation (RFC 9637)'],
    ['2001:2::1', 'benchmarking'],
    ['100::1', 'discard-only'],
    ['5f00::1', 'SRv6 SIDs'],
    ['4000::1', 'outside 2000::/3'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped metadata'],
    ['64:ff9b::169.254.169.254', 'NAT64 of the metadata address'],
    ['[64:ff9b::169.254.169.254]', 'NAT64, bracketed'],
    ['64:ff9b::a9fe:a9fe', 'NAT64, hex'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'],
    ['64:ff9b:1::8.8.8.8', 'local-use NAT64 64:ff9b:1::/48 (RFC 8215)'],
    ['64:ff9b:1:ffff::1', 'local-use NAT64 64:ff9b:1::/48 (RFC 8215)'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['::a00:1', 'IPv4-compatible 10.0.0.1'],
    ['::ffff:0:127.0.0.1', 'IPv4-translated loopback (RFC 6145)'],
    ['::ffff:0:a9fe:a9fe', 'IPv4-translated metadata'],
    ['2002:7f00:1::1', '6to4 of 127.0.0.1'],
    ['2002:a9fe:a9fe::', '6to4 of 169.254.169.254'],
    ['2002:c0a8:101::1', '6to4 of 192.168.1.1'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo, client 127.0.0.1 (stored inverted)'],
    ['2001:0:a00:1:8000:63bf:f7f7:f7f7', 'Teredo, server 10.0.0.1'],
  ];
  const publicOnes = ['8.8.8.8', '1.1.1.1', '93.184.215.14', '172.32.0.1', '192.169.0.1', '100.128.0.1', '2606:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2002:808:808::1', '2001:0:4136:e378:8000:63bf:f7f7:f7f7'];
  for (const [ip, why] of notPublic) it(`${ip} is not public (${why})`, () => assert.equal(isPrivateAddress(ip), true));
  for (const ip of publicOnes) it(`${ip} is public`, () => assert.equal(isPrivateAddress(ip), false));
  for (const name of ['example.com', 'localhost', '']) it(`${JSON.stringify(name)} is a name, judged by what it resolves to`, () => assert.equal(isPrivateAddress(name), false));

  it('unwraps each kind of embedded IPv4 address', () => {
    const embedded = (ip: string): string[] => embeddedIpv4Addresses(ipaddr.IPv6.parse(ip)).map(String);
    assert.deepEqual(embedded('::ffff:1.2.3.4'), ['1.2.3.4']);
    assert.deepEqual(embedded('::ffff:0:1.2.3.4'), ['1.2.3.4']);
    assert.deepEqual(embedded('64:ff9b::1.2.3.4'), ['1.2.3.4']);
    assert.deepEqual(embedded('::1.2.3.4'), ['1.2.3.4']);
    assert.deepEqual(embedded('2002:102:304::'), ['1.2.3.4']);
    assert.deepEqual(embedded('2001:0:4136:e378:8000:63bf:80ff:fffe'), ['65.54.227.120', '127.0.0.1']);
    assert.deepEqual(embedded('2606:4700::1111'), []);
  });
});

describe('TargetGuard.check', () => {
  it('refuses private literals and names that resolve to them, with private networks disallowed', async () => {
    const guard = new TargetGuard({ allowPrivate: false, resolve: tableResolver({ 'meta.test': ['64:ff9b::a9fe:a9fe'], 'mixed.test': ['93.184.215.14', '10.0.0.1'] }) });
    assert.deepEqual(await guard.check('127.0.0.1', 80), { allowed: false, code: PRIVATE_TARGET_CODE, address: '127.0.0.1', port: 80 });
    assert.deepEqual(await guard.check('[::1]', 443), { allowed: false, code: PRIVATE_TARGET_CODE, address: '::1', port: 443 });
    assert.equal((await guard.check('localhost', 80)).allowed, false);
    assert.deepEqual(await guard.check('meta.test', 80), { allowed: false, code: PRIVATE_TARGET_CODE, address: '64:ff9b::a9fe:a9fe', port: 80 });
    assert.deepEqual(await guard.check('mixed.test', 80), { allowed: false, code: PRIVATE_TARGET_CODE, address: '10.0.0.1', port: 80 }, 'one private answer is enough');
    assert.deepEqual(await guard.check('93.184.215.14', 80), { allowed: true });
  });

  it('with private networks allowed, refuses only the own listeners, by address and port', async () => {
    const guard = new TargetGuard({ allowPrivate: true, resolve: tableResolver({ 'vm.test': ['127.0.0.1'] }) });
    guard.setOwnListeners([{ host: '127.0.0.1', port: 9091 }]);
    assert.deepEqual(await guard.check('vm.test', 9091), { allowed: false, code: OWN_LISTENER_CODE, address: '127.0.0.1', port: 9091 });
    assert.equal((await guard.check('localhost', 9091)).allowed, false);
    assert.equal((await guard.check('[::ffff:127.0.0.1]', 9091)).allowed, false);
    assert.equal((await guard.check('0.0.0.0', 9091)).allowed, false);
    assert.deepEqual(await guard.check('vm.test', 9092), { allowed: true });
    assert.deepEqual(await guard.check('127.0.0.2', 9091), { allowed: true }, 'a listener on 127.0.0.1 is not reached through 127.0.0.2');
    assert.deepEqual(await guard.check('10.0.0.1', 80), { allowed: true });
  });

  it('checkNow judges literals and cached names at once, and leaves a name not yet resolved to check', async () => {
    const guard = new TargetGuard({ allowPrivate: false, resolve: tableResolver({ 'mixed.test': ['93.184.215.14', '10.0.0.1'], 'public.test': ['93.184.215.14'] }) });
    assert.deepEqual(guard.checkNow('127.0.0.1', 80), { allowed: false, code: PRIVATE_TARGET_CODE, address: '127.0.0.1', port: 80 });
    assert.deepEqual(guard.checkNow('93.184.215.14', 80), { allowed: true });
    assert.equal(guard.checkNow('mixed.test', 80), undefined, 'not resolved yet');
    assert.equal(guard.checkNow('public.test', 80), undefined, 'not resolved yet');
    assert.equal((await guard.check('mixed.test', 80)).allowed, false);
    assert.equal((await guard.check('public.test', 80)).allowed, true);
    assert.deepEqual(guard.checkNow('mixed.test', 80), { allowed: false, code: PRIVATE_TARGET_CODE, address: '10.0.0.1', port: 80 }, 'the cached answers are judged again, the same way');
    assert.deepEqual(guard.checkNow('public.test', 80), { allowed: true });
  });

  it('a listener on 0.0.0.0 is reached through every loopback address', async () => {
    const guard = new TargetGuard({ allowPrivate: true });
    guard.setOwnListeners([{ host: '0.0.0.0', port: 9091 }]);
    for (const host of ['127.0.0.2', '127.255.0.1', 'localhost', '[::ffff:127.0.0.3]']) assert.equal((await guard.check(host, 9091)).allowed, false, host);
  });
});

describe('connections through the guard', () => {
  let server: http.Server;
  let port: number;
  let hits = 0;
  before(async () => {
    server = http.createServer((_req, res) => {
      hits++;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('the lookup fails with a stable code for a refused answer', async () => {
    const guard = new TargetGuard({ allowPrivate: false });
    const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => guard.lookupFor(80)('localhost', {}, (e) => resolve(e)));
    assert.equal(err?.code, PRIVATE_TARGET_CODE);
  });

  it('the undici connector refuses private literals (no DNS runs for them) and names, and lets allowed ones through', async () => {
    const before = hits;
    const guarded = new Agent({ connect: new TargetGuard({ allowPrivate: false }).connector({ timeout: 2000 }) });
    const open = new Agent({ connect: new TargetGuard({ allowPrivate: true }).connector({ timeout: 2000 }) });
    try {
      for (const url of [`http://127.0.0.1:${port}/`, `http://[::ffff:127.0.0.1]:${port}/`, `http://localhost:${port}/`, `http://2130706433:${port}/`, `http://0x7f.1:${port}/`]) {
        await assert.rejects(request(url, { dispatcher: guarded }), (err) => codeOf(err) === PRIVATE_TARGET_CODE, url);
      }
      assert.equal(hits, before);
      const allowed = await request(`http://127.0.0.1:${port}/`, { dispatcher: open });
      assert.equal(await allowed.body.text(), 'ok');
      assert.equal(hits, before + 1);
    } finally {
      await guarded.close();
      await open.close();
    }
  });

  it('the connector refuses an own listener by the address a name resolves to at connect time', async () => {
    // The first answer passes a pre-request check; the answer at connect time is the listener (DNS rebinding).
    let calls = 0;
    const rebinding = fakeResolver(() => [calls++ === 0 ? '127.0.0.2' : '127.0.0.1']);
    const guard = new TargetGuard({ allowPrivate: true, resolve: rebinding });
    guard.setOwnListeners([{ host: '127.0.0.1', port }]);
    assert.deepEqual(await guard.check('rebind.test', port), { allowed: true });
    const agent = new Agent({ connect: guard.connector({ timeout: 2000 }) });
    const before = hits;
    try {
      await assert.rejects(request(`http://rebind.test:${port}/`, { dispatcher: agent }), (err) => codeOf(err) === OWN_LISTENER_CODE);
      assert.equal(hits, before);
    } finally {
      await agent.close();
    }
  });

  it('connect() and the http agent refuse literals and names alike', async () => {
    const guard = new TargetGuard({ allowPrivate: true, resolve: tableResolver({ 'vm.test': ['127.0.0.1'] }) });
    guard.setOwnListeners([{ host: '127.0.0.1', port }]);
    for (const host of ['127.0.0.1', 'vm.test', '[::ffff:127.0.0.1]']) {
      const err = await new Promise<NodeJS.ErrnoException>((resolve) => guard.connect(host, port).once('error', resolve));
      assert.equal(err.code, OWN_LISTENER_CODE, host);
      const agentErr = await new Promise<NodeJS.ErrnoException>((resolve) => {
        http.get({ host, port, agent: guard.agentFor(false) }).once('error', resolve);
      });
      assert.equal(agentErr.code, OWN_LISTENER_CODE, `agent ${host}`);
    }
    const before = hits;
    const answer = await new Promise<string>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: port, agent: new TargetGuard({ allowPrivate: true }).agentFor(false) }, (res) => {
        res.setEncoding('utf8');
        let body = '';
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve(body));
      }).once('error', reject);
    });
    assert.equal(answer, 'ok');
    assert.equal(hits, before + 1);
  });
});
