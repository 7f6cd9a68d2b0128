/**
 * Legitimate WebSocket traffic through the proxy from a real browser (Debian's chromium, driven by
 * playwright-core): the proxy reads the client's side of a relayed stream as RFC 6455 frames
 * (src/proxy/websocket-frames.ts) and closes it at the first byte that is not one, so what a
 * browser really sends must pass unchanged: masked text and binary frames, 16- and 64-bit
 * lengths, permessage-deflate (RFC 7692: RSV1 on compressed messages), pongs to the origin's
 * pings, the close handshake, and many messages fast. The origin below is a minimal RFC 6455
 * server that echoes each message as it got it (fragments, RSV1 and all; echoing the client's
 * compressed bytes in order keeps the browser's inflater in step with its own deflater).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { chromium, type Browser, type Page } from 'playwright-core';
import { captureLogs, startTestProxy, type LogCapture } from '../helpers/harness.js';
import { waitFor } from '../helpers/proxy-client.js';
import { createTestPki, writeTempFile } from '../helpers/https-support.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/** What the origin saw on one WebSocket stream. */
interface OriginStream {
  url: string;
  extensions: string | undefined;
  /** sha256 of each whole message's payload as sent (compressed if RSV1), in order. */
  messages: string[];
  rsv1Messages: number;
  pongs: number;
  closed: boolean;
}

/** A server frame (unmasked). */
function serverFrame(firstByte: number, payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([firstByte, n]) : n < 65536 ? Buffer.from([firstByte, 126, n >> 8, n & 0xff]) : Buffer.concat([Buffer.from([firstByte, 127]), (() => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(n)); return b; })()]);
  return Buffer.concat([head, payload]);
}

/** Serves one WebSocket stream: echoes every data frame as it came (fragmentation and RSV1 kept), pings once, answers close. */
function serveStream(socket: Duplex, seen: OriginStream): void {
  let buffered = Buffer.alloc(0);
  let message: Buffer[] = [];
  socket.write(serverFrame(0x89, Buffer.from('origin-ping')));
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (;;) {
      if (buffered.length < 2) return;
      const first = buffered[0] as number;
      const second = buffered[1] as number;
      let length = second & 0x7f;
      let at = 2;
      if (length === 126) {
        if (buffered.length < 4) return;
        length = buffered.readUInt16BE(2);
        at = 4;
      } else if (length === 127) {
        if (buffered.length < 10) return;
        length = Number(buffered.readBigUInt64BE(2));
        at = 10;
      }
      assert.ok(second & 0x80, 'client frames are masked');
      if (buffered.length < at + 4 + length) return;
      const mask = buffered.subarray(at, at + 4);
      const payload = Buffer.from(buffered.subarray(at + 4, at + 4 + length));
      for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] as number) ^ (mask[i % 4] as number);
      buffered = buffered.subarray(at + 4 + length);
      const opcode = first & 0x0f;
      if (opcode === 0x8) {
        seen.closed = true;
        socket.end(serverFrame(0x88, payload));
        return;
      }
      if (opcode === 0xa) {
        seen.pongs++;
        continue;
      }
      if (opcode === 0x9) {
        socket.write(serverFrame(0x8a, payload));
        continue;
      }
      if (opcode !== 0 && (first & 0x40) !== 0) seen.rsv1Messages++;
      message.push(payload);
      if (first & 0x80) {
        seen.messages.push(createHash('sha256').update(Buffer.concat(message)).digest('hex'));
        message = [];
      }
      socket.write(serverFrame(first, payload));
    }
  });
  socket.on('error', () => undefined);
}

/** The page's part, as plain JavaScript (tsx would add helpers the page lacks): sends each message, awaits its echo, closes. */
const PAGE_SCRIPT = `async (url) => {
        const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, '0')).join('');
        const sha = async (data) => hex(await crypto.subtle.digest('SHA-256', typeof data === 'string' ? new TextEncoder().encode(data) : data));
        const random = (n) => {
          const b = new Uint8Array(n);
          for (let i = 0; i < n; i += 65536) crypto.getRandomValues(b.subarray(i, Math.min(n, i + 65536)));
          return b.buffer;
        };
        const sent = ['hello', 'x'.repeat(125), 'y'.repeat(126), 'z'.repeat(65535), 'é'.repeat(40000), random(65536), random(1_500_000), 'a'.repeat(3_000_000), new ArrayBuffer(0), ''];
        for (let i = 0; i < 2000; i++) sent.push(i % 2 === 0 ? "m" + i : random(i % 300));
        const ws = new WebSocket(url);
        ws.binaryType = 'arraybuffer';
        const got = [];
        const closed = new Promise((resolve) => ws.addEventListener('close', (e) => resolve({ code: e.code, reason: e.reason, wasClean: e.wasClean })));
        await new Promise((resolve, reject) => {
          ws.addEventListener('open', () => resolve());
          ws.addEventListener('error', () => reject(new Error('websocket error')));
        });
        const allEchoed = new Promise((resolve) => ws.addEventListener('message', (e) => {
          got.push(e.data);
          if (got.length === sent.length) resolve();
        }));
        for (const m of sent) ws.send(m);
        await Promise.race([allEchoed, closed]);
        ws.close(1000, 'done');
        const close = await closed;
        const same = got.length === sent.length && (await Promise.all(sent.map(async (m, i) => (await sha(m)) === (await sha(got[i]))))).every(Boolean);
        return { same, sent: sent.length, got: got.length, close, extensions: ws.extensions };
}`;

describe('WebSocket from a real browser through the proxy', { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing` }, () => {
  let origin: http.Server;
  let originUrl: string;
  let tlsOrigin: https.Server;
  let tlsOriginUrl: string;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let browser: Browser;
  let page: Page;
  const streams: OriginStream[] = [];
  let logs: LogCapture;

  before(async () => {
    const pki = await createTestPki();
    const serve = (req: http.IncomingMessage, res: http.ServerResponse): void => {
      if (req.url === '/robots.txt') return void res.end('User-agent: *\nAllow: /\n');
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>ws</title>');
    };
    const upgrade = (req: http.IncomingMessage, socket: Duplex): void => {
      const key = req.headers['sec-websocket-key'] as string;
      const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      const offered = req.headers['sec-websocket-extensions'] ?? '';
      const deflate = req.url === '/deflate' && offered.includes('permessage-deflate');
      const seen: OriginStream = { url: req.url ?? '', extensions: deflate ? 'permessage-deflate' : undefined, messages: [], rsv1Messages: 0, pongs: 0, closed: false };
      streams.push(seen);
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n${deflate ? 'Sec-WebSocket-Extensions: permessage-deflate\r\n' : ''}\r\n`);
      serveStream(socket, seen);
    };
    origin = http.createServer(serve).on('upgrade', upgrade);
    tlsOrigin = https.createServer({ cert: pki.certPem, key: pki.keyPem }, serve).on('upgrade', upgrade);
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => tlsOrigin.listen(0, '127.0.0.1', resolve));
    originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
    tlsOriginUrl = `https://localhost:${(tlsOrigin.address() as AddressInfo).port}`;
    logs = captureLogs();
    proxy = await startTestProxy({ log: { level: 'info' }, upstream: { caFile: writeTempFile('upstream-ca.pem', pki.caPem) } }, { logger: logs.logger });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, `--proxy-server=${proxy.proxyUrl}`, '--proxy-bypass-list=<-loopback>'] });
    // The proxy's MITM CA is the browser's trust here (a crawler installs it; the test skips the install).
    page = await browser.newPage({ ignoreHTTPSErrors: true });
  });
  after(async () => {
    await browser?.close();
    await proxy?.close();
    await new Promise<void>((resolve) => origin?.close(() => resolve()));
    await new Promise<void>((resolve) => tlsOrigin?.close(() => resolve()));
  });

  for (const [scheme, path] of [['ws', '/plain'], ['ws', '/deflate'], ['wss', '/plain'], ['wss', '/deflate']] as const) {
    it(`${scheme}:// ${path}: text and binary, 16- and 64-bit lengths, many fast, pongs and close pass unchanged`, async () => {
      const base = scheme === 'ws' ? originUrl : tlsOriginUrl;
      await page.goto(`${base}/page`);
      const before = streams.length;
      const result = (await page.evaluate(`(${PAGE_SCRIPT})(${JSON.stringify(`${base.replace('http', 'ws')}${path}`)})`)) as { same: boolean; sent: number; got: number; close: unknown; extensions: string };
      assert.equal(result.got, result.sent, `every message echoed (${JSON.stringify(result.close)})`);
      assert.ok(result.same, 'each echo is the message sent');
      assert.deepEqual(result.close, { code: 1000, reason: 'done', wasClean: true });
      const seen = streams[before] as OriginStream;
      assert.equal(seen.url, path);
      assert.equal(seen.messages.length, result.sent);
      assert.equal(seen.pongs, 1, "the browser's pong to the origin's ping reached it");
      assert.ok(seen.closed, 'the close frame reached the origin');
      // Relayed by the proxy (the frame check's path), not a blind tunnel: its access line says 101 and how.
      const url = `${base}${path}`;
      await waitFor(() => logs.lines.some((l) => l['msg'] === 'request' && l['url'] === url), `an access line for ${url}`);
      const line = logs.lines.filter((l) => l['msg'] === 'request' && l['url'] === url).at(-1) as Record<string, unknown>;
      assert.equal(line['status'], 101);
      // Chromium opens ws:// through an HTTP proxy with CONNECT too (the plain-HTTP tunnel), wss:// with CONNECT and TLS.
      assert.equal(line['via'], scheme === 'ws' ? 'http-tunnelled' : 'https-intercepted');
      assert.ok(!logs.lines.some((l) => l['event'] === 'websocket-stream-refused'), 'no stream refused');
      if (path === '/deflate') {
        assert.equal(result.extensions, 'permessage-deflate');
        assert.ok(seen.rsv1Messages > 0, 'compressed messages (RSV1) passed');
      }
    });
  }
});
