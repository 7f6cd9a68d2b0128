/**
 * A client's legitimate WebSocket stream cut anywhere by TCP (review, session 30): the proxy reads
 * the client's side as RFC 6455 frames (src/proxy/websocket-frames.ts) while relaying it, so a
 * frame header cut at any byte, a fragmented message with a ping between its fragments (§5.4,
 * §5.5: control frames may be injected in the middle of a fragmented message), 16- and 64-bit
 * lengths (§5.2), a zero-length frame and the close frame must reach the origin byte for byte
 * whatever the TCP segments.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { createHash } from 'node:crypto';
import { startTestProxy } from '../helpers/harness.js';
import { openRawClient, sleep, waitFor } from '../helpers/proxy-client.js';

/** A masked client frame: `first` byte as given (FIN, RSV, opcode), mask 0x01020304 on `payload`. */
function clientFrame(first: number, payload: Buffer): Buffer {
  const n = payload.length;
  const length = n < 126 ? Buffer.from([0x80 | n]) : n < 65536 ? Buffer.from([0x80 | 126, n >> 8, n & 0xff]) : (() => {
    const b = Buffer.alloc(9);
    b[0] = 0x80 | 127;
    b.writeBigUInt64BE(BigInt(n), 1);
    return b;
  })();
  const mask = Buffer.from([1, 2, 3, 4]);
  const masked = Buffer.from(payload);
  for (let i = 0; i < masked.length; i++) masked[i] = (masked[i] as number) ^ (mask[i % 4] as number);
  return Buffer.concat([Buffer.from([first]), length, mask, masked]);
}

/** A stream a browser or a WebSocket library may send: fragments with a ping between, every length form, a pong, the close. */
const STREAM = Buffer.concat([
  clientFrame(0x01, Buffer.from('frag-one ')), // text, FIN clear
  clientFrame(0x89, Buffer.from('ping-in-between')),
  clientFrame(0x00, Buffer.alloc(130, 0x61)), // continuation, 16-bit length
  clientFrame(0x80, Buffer.from(' last')), // final continuation
  clientFrame(0x82, Buffer.alloc(0)), // empty binary
  clientFrame(0x8a, Buffer.alloc(125, 0x70)), // the longest pong
  clientFrame(0x82, Buffer.alloc(65536, 0x5a)), // 64-bit length
  clientFrame(0x81, Buffer.from('é✓')),
  clientFrame(0x88, Buffer.from([0x03, 0xe8, 0x62, 0x79, 0x65])), // close 1000 "bye"
]);

describe('a WebSocket stream cut by TCP at every offset', () => {
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let server: net.Server;
  let port = 0;
  /** Bytes each origin connection got after its 101, by the Sec-WebSocket-Key it was opened with. */
  const afterSwitch = new Map<string, Buffer>();
  const sockets = new Set<net.Socket>();

  before(async () => {
    server = net.createServer((socket) => {
      // The stream's key once the upgrade's head is whole; the head's bytes until then.
      let key: string | undefined;
      let buffered = Buffer.alloc(0);
      sockets.add(socket.on('error', () => undefined));
      socket.on('data', (d: Buffer) => {
        if (key !== undefined) return void afterSwitch.set(key, Buffer.concat([afterSwitch.get(key) as Buffer, d]));
        buffered = Buffer.concat([buffered, d]);
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.subarray(0, end).toString('latin1');
        const found = /\r\nsec-websocket-key: *([^\r]*)/i.exec(head)?.[1];
        if (found === undefined) {
          const body = 'User-agent: *\nAllow: /\n';
          return void socket.end(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
        }
        key = found;
        afterSwitch.set(key, buffered.subarray(end + 4));
        const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
        socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as net.AddressInfo).port;
    proxy = await startTestProxy({ pacing: { maxConcurrency: 16 } });
  });

  after(async () => {
    for (const s of sockets) s.destroy();
    await proxy?.close();
    await new Promise<void>((r) => server.close(() => r()));
  });

  /** Opens a relayed stream with `key`, writes `parts` as separate TCP segments, and returns what the origin got. */
  async function relay(key: string, parts: Buffer[]): Promise<{ got: Buffer; closed: boolean }> {
    const client = await openRawClient(proxy.proxyAddress.port);
    client.socket.setNoDelay(true);
    client.socket.write(`GET http://127.0.0.1:${port}/ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUser-Agent: ExampleBot/1.0\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    await waitFor(() => client.received().includes('101 Switching Protocols'), 'the 101');
    for (const part of parts) {
      client.socket.write(part);
      await sleep(1);
    }
    const total = parts.reduce((n, p) => n + p.length, 0);
    await waitFor(() => (afterSwitch.get(key)?.length ?? 0) >= total || client.isClosed(), 'the stream at the origin');
    const closed = client.isClosed();
    client.socket.destroy();
    return { got: afterSwitch.get(key) ?? Buffer.alloc(0), closed };
  }

  it('cut in two at each offset of its first 400 bytes and of the 64-bit header: the origin gets it unchanged', async () => {
    const bigHeaderAt = STREAM.indexOf(Buffer.from([0x82, 0x80 | 127]));
    const offsets = [...Array.from({ length: 400 }, (_, i) => i + 1), ...Array.from({ length: 16 }, (_, i) => bigHeaderAt + i)];
    for (let i = 0; i < offsets.length; i += 16) {
      await Promise.all(
        offsets.slice(i, i + 16).map(async (at) => {
          const { got, closed } = await relay(Buffer.from(`split-${at}`.padEnd(16, '.')).toString('base64'), [STREAM.subarray(0, at), STREAM.subarray(at)]);
          assert.equal(closed, false, `cut at ${at}: not closed`);
          assert.ok(got.equals(STREAM), `cut at ${at}: the origin got the stream unchanged`);
        }),
      );
    }
  });

  it('one byte per TCP segment over its first 300 bytes: unchanged', async () => {
    const parts = [...Array.from({ length: 300 }, (_, i) => STREAM.subarray(i, i + 1)), STREAM.subarray(300)];
    const { got, closed } = await relay(Buffer.from('bytewise........').toString('base64'), parts);
    assert.equal(closed, false);
    assert.ok(got.equals(STREAM));
  });
});
