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
