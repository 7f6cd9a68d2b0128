/**
 * An origin that writes hand-made response heads over a raw TCP socket on 127.0.0.1 (issue 11):
 * what Node's `http.createServer` would never send (a field's odd spelling, duplicates, obs-fold,
 * a `Connection` that names other fields, a 1xx before the final answer, a head of many KiB), so a
 * test can read what the proxy relays of it byte by byte.
 */
import net, { type AddressInfo } from 'node:net';

/** What the origin writes for one request: the bytes (latin1 when a string), and whether it closes the connection after them. */
export interface RawAnswer {
  bytes: string | Buffer;
  /** Close the connection once written. @default false (keep-alive: the next request may follow) */
  close?: boolean;
}

/** A running {@link startRawOrigin}. */
export interface RawOrigin {
  /** `http://127.0.0.1:PORT`. */
  base: string;
  /** `127.0.0.1:PORT`. */
  host: string;
  /** The request heads received, in order (latin1, up to the blank line). */
  requests: string[];
  close(): Promise<void>;
}

/** robots.txt is a 404 (RFC 9309 §2.3.1.3: allow all) unless the answers name it. */
const ROBOTS_404: RawAnswer = { bytes: 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n' };

/** The 404 for a path the answers do not name. */
const NOT_FOUND: RawAnswer = { bytes: 'HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found' };

/**
 * Starts a raw origin on 127.0.0.1:0 that answers each request (its path, query included) with
 * `answers[path]` written as it is; requests on one connection are answered in turn (keep-alive).
 * Request bodies are not expected (GET and HEAD only). `/robots.txt` answers 404 (allow all)
 * unless named.
 */
export async function startRawOrigin(answers: Record<string, RawAnswer>): Promise<RawOrigin> {
  const requests: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let pending = '';
    socket.on('data', (d: Buffer) => {
      pending += d.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
        const head = pending.slice(0, end);
        pending = pending.slice(end + 4);
        requests.push(head);
        const path = head.split(' ')[1] ?? '';
        const answer = answers[path] ?? (path === '/robots.txt' ? ROBOTS_404 : NOT_FOUND);
        socket.write(typeof answer.bytes === 'string' ? Buffer.from(answer.bytes, 'latin1') : answer.bytes);
        if (answer.close) return void socket.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base: `http://${host}`,
    host,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** One response read off the front of a raw latin1 string: its head's lines as sent, and its body (Content-Length or chunked, de-chunked). */
export interface RelayedResponse {
  statusLine: string;
  /** The head's field lines, exactly as written (name spelling, order, repetitions). */
  lines: string[];
  body: string;
  /** Characters the message took on the wire. */
  wireLength: number;
}

/**
 * Parses one response at the start of `raw` (latin1), or undefined when it has not all arrived.
 * `isHead`: the answer to a HEAD (no body, whatever its Content-Length says).
 */
export function parseRelayedResponse(raw: string, isHead = false): RelayedResponse | undefined {
  const headEnd = raw.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const [statusLine = '', ...lines] = raw.slice(0, headEnd).split('\r\n');
  const at = headEnd + 4;
  const valueOf = (name: string): string | undefined => {
    const line = lines.find((l) => l.slice(0, l.indexOf(':')).toLowerCase() === name);
    return line === undefined ? undefined : line.slice(line.indexOf(':') + 1).trim();
  };
  if (isHead || /^HTTP\/1\.1 (1\d\d|204|304) /.test(statusLine)) return { statusLine, lines, body: '', wireLength: at };
  const length = valueOf('content-length');
  if (length !== undefined) {
    const end = at + Number(length);
    return raw.length < end ? undefined : { statusLine, lines, body: raw.slice(at, end), wireLength: end };
  }
  if (valueOf('transfer-encoding')?.toLowerCase() !== 'chunked') return undefined;
  let body = '';
  for (let pos = at; ; ) {
    const lineEnd = raw.indexOf('\r\n', pos);
    if (lineEnd < 0) return undefined;
    const size = parseInt(raw.slice(pos, lineEnd), 16);
    if (size === 0) return raw.length < lineEnd + 4 ? undefined : { statusLine, lines, body, wireLength: lineEnd + 4 };
    if (raw.length < lineEnd + 2 + size + 2) return undefined;
    body += raw.slice(lineEnd + 2, lineEnd + 2 + size);
    pos = lineEnd + 2 + size + 2;
  }
}
