/**
 * Client-side helpers for end-to-end proxy tests: a request through the proxy
 * with any method, headers and body (answers as bytes), a raw exchange on a
 * socket (for request lines Node's client will not send), and polling.
 */
import http from 'node:http';
import net from 'node:net';
import type { Readable } from 'node:stream';

/** A response as read by {@link proxyRequest}. */
export interface ProxyAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** `x-robots-proxy-decision`, or '' when absent. */
  decision: string;
}

/**
 * Sends one absolute-form request to the proxy on 127.0.0.1:`proxyPort` and
 * reads the whole answer. `body` is written (Buffer) or piped (stream); a new
 * connection is used unless `agent` is given; `localAddress` is the client's
 * address (another loopback address, e.g. `127.0.0.2`).
 */
export function proxyRequest(
  proxyPort: number,
  url: string,
  options: { method?: string; headers?: http.OutgoingHttpHeaders; body?: Buffer | Readable; agent?: http.Agent | false; localAddress?: string } = {},
): Promise<ProxyAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: proxyPort,
        method: options.method ?? 'GET',
        path: url,
        headers: options.headers,
        agent: options.agent ?? false,
        ...(options.localAddress !== undefined ? { localAddress: options.localAddress } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), decision: String(res.headers['x-robots-proxy-decision'] ?? '') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.body === undefined) req.end();
    else if (Buffer.isBuffer(options.body)) req.end(options.body);
    else options.body.pipe(req);
  });
}

/** Sends `CONNECT authority` (with `headers`, raw lines such as `Proxy-Authorization: ...`) from `localAddress`; resolves with the head of the answer. */
export function connectFrom(port: number, authority: string, localAddress: string, headers: readonly string[] = []): Promise<string> {
  return new Promise((resolve, reject) => {
    const head = [`CONNECT ${authority} HTTP/1.1`, `Host: ${authority}`, ...headers, '', ''].join('\r\n');
    const socket = net.connect({ host: '127.0.0.1', port, localAddress }, () => socket.write(head));
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      text += d;
      if (text.includes('\r\n\r\n')) {
        socket.destroy();
        resolve(text.slice(0, text.indexOf('\r\n\r\n')));
      }
    });
    socket.on('error', reject);
  });
}

/** The value of field `name` (lower case) in a raw HTTP head `text` (as {@link rawExchange} gives it), or undefined. */
export function rawHeader(text: string, name: string): string | undefined {
  const head = text.split('\r\n\r\n')[0] ?? '';
  return head
    .split('\r\n')
    .find((line) => line.toLowerCase().startsWith(`${name}:`))
    ?.slice(name.length + 1)
    .trim();
}

/** Writes `text` on a new connection to 127.0.0.1:`port` and resolves with everything read until the server closes (or `timeoutMs`). */
export function rawExchange(port: number, text: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (received += d));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.write(text);
  });
}

/** A raw connection to 127.0.0.1 (see {@link openRawClient}): what it read, and when it closed. */
export interface RawClient {
  socket: net.Socket;
  /** Everything read so far, latin1. */
  received(): string;
  /** Resolves when the socket has closed (whoever closed it). */
  closed: Promise<void>;
  isClosed(): boolean;
}

/** Opens a connection to 127.0.0.1:`port` that collects what it reads; resolves once connected. */
export function openRawClient(port: number): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    let isClosed = false;
    const closed = new Promise<void>((r) =>
      socket.once('close', () => {
        isClosed = true;
        r();
      }),
    );
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (data += d));
    socket.on('error', () => undefined);
    socket.once('connect', () => resolve({ socket, received: () => data, closed, isClosed: () => isClosed }));
    socket.once('error', reject);
  });
}

/** Resolves once `condition()` holds; rejects after `timeoutMs` naming `what`. Polls every 10 ms. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Resolves after `ms` of real time. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}
