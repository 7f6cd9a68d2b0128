/**
 * CONNECT is checked before any certificate is signed (issue 7, item 0):
 * a bad target, a loop into the proxy and a private-network host are refused
 * at CONNECT time with an access line, and cost no leaf certificate; only a
 * tunnel that passed and whose client starts TLS gets one. The default
 * private-network guard is on here (the test origins are not needed).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { captureLogs, startTestProxy, type LogCapture } from '../helpers/harness.js';
import tls from 'node:tls';
import net from 'node:net';
import { once } from 'node:events';
import { leafCounters, openConnect, readToEnd, waitFor } from '../helpers/https-support.js';

describe('CONNECT checks before signing', () => {
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;

  before(async () => {
    logs = captureLogs();
    proxy = await startTestProxy({ upstream: { allowPrivateNetworks: false } }, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
  });

  const refusals: Array<[string, () => string, number, string]> = [
    ['a loopback host', () => '127.0.0.1:443', 403, 'target-private-network'],
    ['localhost with a trailing dot', () => 'localhost.:8443', 403, 'target-private-network'],
    ['an IPv6 loopback', () => '[::1]:443', 403, 'target-private-network'],
    ['a link-local metadata address', () => '169.254.169.254:443', 403, 'target-private-network'],
    ['a private range', () => '10.1.2.3:443', 403, 'target-private-network'],
    ['the proxy itself', () => `127.0.0.1:${proxy.proxyAddress.port}`, 400, 'bad-request'],
    ['a target without a port', () => 'example.com', 400, 'bad-request'],
    ['an unparsable target', () => '[::1:443', 400, 'bad-request'],
  ];

  for (const [label, authority, status, reason] of refusals) {
    it(`${label}: ${status} ${reason} at CONNECT, audited, no certificate signed`, async () => {
      const before = await leafCounters(proxy.adminUrl);
      assert.ok(Number.isFinite(before.issued) && Number.isFinite(before.cacheHits), 'the counters are exported');
      const answer = await openConnect(proxy.proxyAddress.port, authority(), { 'user-agent': 'ExampleBot/1.0' });
      assert.equal(answer.status, status);
      assert.equal(answer.headers['x-robots-proxy-decision'], `deny; reason=${reason}`);
      await readToEnd(answer.socket, answer.head);
      await waitFor(() => logs.lines.some((l) => l['msg'] === 'request' && l['via'] === 'connect' && l['url'] === authority()), 'the CONNECT access line');
      const line = logs.lines.filter((l) => l['msg'] === 'request' && l['url'] === authority()).at(-1)!;
      assert.equal(line['status'], status);
      assert.equal(line['method'], 'CONNECT');
      assert.deepEqual(await leafCounters(proxy.adminUrl), before, 'no signature, not even a cache lookup');
    });
  }

  /** Sends a CONNECT head with `fields` and `after` in one write; resolves with all the proxy wrote back until it closed or 2 s passed. */
  async function rawConnect(authority: string, fields: string, after: string): Promise<string> {
    const socket = net.connect(proxy.proxyAddress.port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nUser-Agent: ExampleBot/1.0\r\n${fields}\r\n${after}`);
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    await Promise.race([once(socket, 'close'), new Promise((resolve) => setTimeout(resolve, 2000))]);
    socket.destroy();
    return text;
  }

  it('a CONNECT that declares content (Content-Length over 0, chunked) is 400 before its 200: a CONNECT has none, and the bytes would be read as the tunnel\'s', async () => {
    const before = await leafCounters(proxy.adminUrl);
    const text = await rawConnect('body.invalid:443', 'Content-Length: 5\r\n', 'hello');
    assert.match(text, /^HTTP\/1\.1 400 /, text);
    assert.match(text, /x-robots-proxy-decision: deny; reason=bad-request\r\n/i);
    assert.match(text, /CONNECT has no content/);
    assert.doesNotMatch(text, / 200 Connection Established/);
    const chunked = await rawConnect('chunked.invalid:443', 'Transfer-Encoding: chunked\r\n', '5\r\nhello\r\n0\r\n\r\n');
    assert.match(chunked, /^HTTP\/1\.1 400 /, chunked);
    assert.match(chunked, /declares Transfer-Encoding: chunked/);
    assert.deepEqual(await leafCounters(proxy.adminUrl), before, 'no signature');
    // Content-Length: 0 declares none, as some clients send it: the tunnel opens.
    const empty = await rawConnect('empty.invalid:443', 'Content-Length: 0\r\n', '');
    assert.match(empty, /^HTTP\/1\.1 200 Connection Established\r\n/, empty);
  });

  it('a tunnel that passed the checks signs once the client starts TLS (the counter is live)', async () => {
    const before = await leafCounters(proxy.adminUrl);
    // `.invalid` never resolves (RFC 6761), so the guard has nothing to refuse; no upstream is needed for the handshake.
    const answer = await openConnect(proxy.proxyAddress.port, 'signed.invalid:443');
    assert.equal(answer.status, 200);
    const tlsSocket = tls.connect({ socket: answer.socket, servername: 'signed.invalid', rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      tlsSocket.once('secureConnect', () => resolve());
      tlsSocket.once('error', reject);
    });
    assert.match(String(tlsSocket.getPeerCertificate().subjectaltname), /DNS:signed\.invalid/);
    tlsSocket.destroy();
    assert.equal((await leafCounters(proxy.adminUrl)).issued, before.issued + 1);
  });
});
