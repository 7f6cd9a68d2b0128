/**
 * HTTP spoken inside a relayed WebSocket stream (escape hunt, session 30): an origin that answers
 * 101 and goes on parsing HTTP (a front that relays the upgrade to a backend which did not switch)
 * got `GET /private` from the client's side of the stream, undecided. The client's side is now read
 * as WebSocket frames (RFC 6455 §5.2) and closed at the first byte that is not one.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { createHash } from 'node:crypto';
import { captureLogs, startTestProxy, type LogCapture } from '../helpers/harness.js';
import { openRawClient, sleep, waitFor } from '../helpers/proxy-client.js';
import { ClientFrameReader } from '../../src/proxy/websocket-frames.js';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/** A masked client frame (`mask` all zero unless given): FIN set, `opcode`, `payload`. */
function clientFrame(opcode: number, payload: Buffer, options: { fin?: boolean; masked?: boolean; rsv?: number } = {}): Buffer {
  const first = ((options.fin ?? true) ? 0x80 : 0) | ((options.rsv ?? 0) << 4) | opcode;
  const mask = options.masked ?? true ? 0x80 : 0;
  const length = payload.length < 126 ? Buffer.from([mask | payload.length]) : payload.length < 65536 ? Buffer.from([mask | 126, payload.length >> 8, payload.length & 0xff]) : (() => {
    const b = Buffer.alloc(9);
    b[0] = mask | 127;
    b.writeUInt32BE(payload.length, 5);
    return b;
  })();
  return Buffer.concat([Buffer.from([first]), length, options.masked ?? true ? Buffer.from([1, 2, 3, 4]) : Buffer.alloc(0), payload]);
}

describe('ClientFrameReader', () => {
  it('passes masked data and control frames, whole or cut anywhere', () => {
    const stream = Buffer.concat([clientFrame(1, Buffer.from('hello')), clientFrame(2, Buffer.alloc(300, 7)), clientFrame(9, Buffer.from('p')), clientFrame(0, Buffer.alloc(70000, 1), { fin: false }), clientFrame(8, Buffer.alloc(2))]);
    assert.equal(new ClientFrameReader(false).read(stream), undefined);
    for (const cut of [1, 2, 3, 7, 13]) {
      const reader = new ClientFrameReader(false);
      for (let at = 0; at < stream.length; at += cut) assert.equal(reader.read(stream.subarray(at, at + cut)), undefined, `in pieces of ${cut}`);
    }
  });

  it('refuses an HTTP request, an unmasked frame, reserved opcodes and bits, long or fragmented control frames', () => {
    const refused: Array<[string, Buffer, boolean]> = [
      ['HTTP', Buffer.from('GET /private HTTP/1.1\r\n\r\n'), false],
      ['HTTP after a frame', Buffer.concat([clientFrame(1, Buffer.from('x')), Buffer.from('GET /private HTTP/1.1\r\n\r\n')]), false],
      ['unmasked', clientFrame(1, Buffer.from('x'), { masked: false }), false],
      ['opcode 3', clientFrame(3, Buffer.from('x')), false],
      ['opcode 11', clientFrame(11, Buffer.from('x')), false],
      ['RSV1 without an extension', clientFrame(1, Buffer.from('x'), { rsv: 4 }), false],
      ['ping of 126', clientFrame(9, Buffer.alloc(126)), false],
      ['fragmented close', clientFrame(8, Buffer.alloc(2), { fin: false }), false],
    ];
    for (const [name, bytes, allows] of refused) assert.ok(new ClientFrameReader(allows).read(bytes) !== undefined, name);
    assert.equal(new ClientFrameReader(true).read(clientFrame(1, Buffer.from('x'), { rsv: 4 })), undefined, 'RSV1 with an extension (permessage-deflate)');
    const reader = new ClientFrameReader(false);
    assert.ok(reader.read(Buffer.from('G')) !== undefined);
    assert.ok(reader.read(clientFrame(1, Buffer.from('x'))) !== undefined, 'a refused stream stays refused');
  });
});

describe('a relayed WebSocket stream to an origin that parses HTTP after its 101', () => {
  let proxy: Proxy;
  let logs: LogCapture;
  let server: net.Server;
  let port = 0;
  /** Request lines the origin parsed, and the bytes it got after its 101. */
  const lines: string[] = [];
  let afterSwitch = Buffer.alloc(0);
  const sockets = new Set<net.Socket>();

  before(async () => {
    server = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      let buffered = Buffer.alloc(0);
      let switched = false;
      socket.on('data', (d: Buffer) => {
        if (switched) afterSwitch = Buffer.concat([afterSwitch, d]);
        buffered = Buffer.concat([buffered, d]);
        for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
          const head = buffered.subarray(0, end).toString('latin1');
          buffered = buffered.subarray(end + 4);
          const line = head.split('\r\n')[0] ?? '';
          lines.push(line);
          const key = /\r\nsec-websocket-key: *([^\r]*)/i.exec(head)?.[1];
          if (key !== undefined) {
            const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
            socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
            switched = true;
            continue;
          }
          const body = line.startsWith('GET /robots.txt') ? 'User-agent: *\nDisallow: /private\n' : 'page\n';
          socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as net.AddressInfo).port;
    logs = captureLogs();
    proxy = await startTestProxy({ log: { level: 'info' } }, { logger: logs.logger });
  });

  after(async () => {
    for (const s of sockets) s.destroy();
    await proxy?.close();
    await new Promise<void>((r) => server.close(() => r()));
  });

  const upgradeHead = (): string =>
    `GET http://127.0.0.1:${port}/ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUser-Agent: ExampleBot/1.0\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;

  it('an HTTP request sent into the stream is not relayed: both sides are closed and logged', async () => {
    const client = await openRawClient(proxy.proxyAddress.port);
    client.socket.write(upgradeHead());
    await waitFor(() => client.received().includes('101 Switching Protocols'), 'the 101');
    client.socket.write(`GET /private/inside HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    await waitFor(() => client.isClosed(), 'the proxy to close the stream', 3000);
    await sleep(100);
    assert.deepEqual(lines.filter((l) => l.includes('/private')), [], 'the origin parsed no request for /private');
    assert.equal(afterSwitch.length, 0, 'not a byte of it reached the origin');
    const warned = logs.lines.find((l) => l['event'] === 'websocket-stream-refused');
    assert.match(String(warned?.['problem']), /reserved bits|opcode/);
  });

  it('the same in the upgrade\'s own write (bytes after the head)', async () => {
    afterSwitch = Buffer.alloc(0);
    const client = await openRawClient(proxy.proxyAddress.port);
    client.socket.write(`${upgradeHead()}GET /private/same-write HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    await waitFor(() => client.isClosed(), 'the proxy to close the stream', 3000);
    await sleep(100);
    assert.deepEqual(lines.filter((l) => l.includes('/private')), []);
    assert.equal(afterSwitch.length, 0);
  });

  it('WebSocket frames are relayed byte for byte', async () => {
    afterSwitch = Buffer.alloc(0);
    const client = await openRawClient(proxy.proxyAddress.port);
    client.socket.write(upgradeHead());
    await waitFor(() => client.received().includes('101 Switching Protocols'), 'the 101');
    const frames = Buffer.concat([clientFrame(1, Buffer.from('hello')), clientFrame(2, Buffer.alloc(200, 9))]);
    client.socket.write(frames);
    await waitFor(() => afterSwitch.length === frames.length, 'the frames at the origin');
    assert.ok(afterSwitch.equals(frames));
    assert.equal(client.isClosed(), false);
    client.socket.destroy();
  });
});
