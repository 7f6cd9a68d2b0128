/**
 * Writing the proxy's own response on a raw socket (CONNECT and Upgrade
 * requests have no ServerResponse).
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ProxyResponse } from './responses.js';

/** Writes `response` as an HTTP/1.1 message on `socket` (with a `Date` header, as Node's own responses have) and ends it. Never throws. */
export function writeRawResponse(socket: Duplex, response: ProxyResponse): void {
  if (socket.destroyed || !socket.writable) return;
  const head = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}`];
  for (const [name, value] of Object.entries(response.headers)) head.push(`${name}: ${value}`);
  head.push(`date: ${new Date().toUTCString()}`, `content-length: ${Buffer.byteLength(response.body)}`, 'connection: close');
  socket.end(head.join('\r\n') + '\r\n\r\n' + response.body);
}

/**
 * The status for a request Node's HTTP parser rejected (a server's
 * `clientError`): 431 for a head over the size limit, 408 for a head that
 * took too long, 400 for anything malformed.
 */
export function clientErrorStatus(code: string | undefined): number {
  if (code === 'HPE_HEADER_OVERFLOW') return 431;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_HTTP_REQUEST_HEADERS_TIMEOUT') return 408;
  return 400;
}
