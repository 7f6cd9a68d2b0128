import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { isPrivateAddress, TargetGuard, createGuardedConnector, createGuardedLookup, PRIVATE_TARGET_CODE } from '../../src/proxy/target-guard.js';

describe('isPrivateAddress', () => {
  const privateOnes = ['127.0.0.1', '127.8.9.10', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '[::1]', '::', 'fe80::1', 'fd00:ec2::254', 'fc00::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '224.0.0.1', '255.255.255.255'];
  const publicOnes = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '192.169.0.1', '2606:4700::1111', '::ffff:8.8.8.8', 'example.com', ''];
  for (const ip of privateOnes) it(`${ip} is private`, () => assert.equal(isPrivateAddress(ip), true));
  for (const ip of publicOnes) it(`${JSON.stringify(ip)} is not`, () => assert.equal(isPrivateAddress(ip), false));
});

describe('TargetGuard', () => {
  it('refuses loopback literals and names that resolve to loopback', async () => {
    const guard = new TargetGuard(false);
    assert.deepEqual(await guard.check('127.0.0.1'), { allowed: false, address: '127.0.0.1' });
    assert.deepEqual(await guard.check('[::1]'), { allowed: false, address: '::1' });
    const localhost = await guard.check('localhost');
    assert.equal(localhost.allowed, false);
  });

  it('allows everything when private networks are allowed', async () => {
    assert.deepEqual(await new TargetGuard(true).check('127.0.0.1'), { allowed: true });
  });

  it('the guarded lookup fails connections to private addresses with a stable code', async () => {
    const lookup = createGuardedLookup(false);
    const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => lookup('localhost', {}, (e) => resolve(e)));
    assert.equal(err?.code, PRIVATE_TARGET_CODE);
  });
});

describe('createGuardedConnector', () => {
  it('refuses IP-literal private targets (no DNS lookup runs for them), e.g. a robots.txt redirect', async () => {
    let hits = 0;
    const server = http.createServer((_req, res) => {
      hits++;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const guarded = new Agent({ connect: createGuardedConnector(false, { timeout: 2000 }) });
    const open = new Agent({ connect: createGuardedConnector(true, { timeout: 2000 }) });
    try {
      for (const url of [`http://127.0.0.1:${port}/`, `http://[::ffff:127.0.0.1]:${port}/`, `http://localhost:${port}/`]) {
        await assert.rejects(request(url, { dispatcher: guarded }), (err: NodeJS.ErrnoException) => err.code === PRIVATE_TARGET_CODE || (err.cause as NodeJS.ErrnoException | undefined)?.code === PRIVATE_TARGET_CODE, url);
      }
      assert.equal(hits, 0);
      const allowed = await request(`http://127.0.0.1:${port}/`, { dispatcher: open });
      assert.equal(await allowed.body.text(), 'ok');
      assert.equal(hits, 1);
    } finally {
      await guarded.close();
      await open.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
