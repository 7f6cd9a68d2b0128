/**
 * Writing the proxy's own response on a raw socket (CONNECT and Upgrade
 * requests have no ServerResponse).
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ProxyResponse } from './responses.js';

/** Writes `response` as an HTTP/1.1 message on `socket` and ends it. Never throws. */
export function writeRawResponse(socket: Duplex, response: ProxyResponse): void {
  if (socket.destroyed || !socket.writable) return;
  const head = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}`];
  for (const [name, value] of Object.entries(response.headers)) head.push(`${name}: ${value}`);
  head.push(`content-length: ${Buffer.byteLength(response.body)}`, 'connection: close');
  socket.end(head.join('\r\n') + '\r\n\r\n' + response.body);
}

/**
 * The status for a request Node's HTTP parser rejected (a server's
 * `clientError`): 431 for a head over the size limit, 408 for a head that
 * took too long, 400 for anything malformed.
 */
export function clientErrorStatus(code: string | undefined): number {
  if (code === 'HPE_HEADER_OVERFLOW') return 431;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  return 400;
}

/**
 * Answers a request the HTTP parser rejected (`clientError`) with
 * {@link clientErrorStatus} and a one-line explanation, then closes; a socket
 * that can no longer be written is destroyed. Never throws.
 */
export function writeClientErrorResponse(socket: Duplex, err: NodeJS.ErrnoException): void {
  if (socket.destroyed || !socket.writable) return void socket.destroy();
  const status = clientErrorStatus(err.code);
  const body = `malformed request: ${err.code ?? 'unparsable'}\n`;
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: text/plain\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
}
