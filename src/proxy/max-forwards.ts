/**
 * Max-Forwards on TRACE and OPTIONS (RFC 9110 §7.6.2): a proxy that receives
 * one of them with `Max-Forwards: 0` must not forward it but answer as its
 * final recipient; with a larger value it forwards the request with the value
 * decremented. Other methods ignore the field. Pure but for
 * {@link answerAsFinalRecipient}, which writes the answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The methods Max-Forwards applies to (RFC 9110 §7.6.2). */
function isCountedMethod(method: string | undefined): boolean {
  return method === 'TRACE' || method === 'OPTIONS';
}

/**
 * The request's Max-Forwards value when it applies (a TRACE or OPTIONS with
 * a field of decimal digits), else undefined. A malformed value is ignored
 * (the request is forwarded as it is). Values beyond 2^31 are capped.
 */
export function maxForwardsOf(req: IncomingMessage): number | undefined {
  if (!isCountedMethod(req.method)) return undefined;
  const raw = req.headers['max-forwards'];
  if (typeof raw !== 'string') return undefined;
  const text = raw.trim();
  if (!/^\d{1,32}$/.test(text)) return undefined;
  return Math.min(Number(text), 2 ** 31);
}

/** What the proxy says it accepts, as the final recipient of an OPTIONS. */
export const PROXY_ALLOW = 'GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS, TRACE, CONNECT';

/** Fields a TRACE echo leaves out: credentials and cookies (RFC 9110 §9.3.8: "SHOULD exclude"). */
const NOT_ECHOED = new Set(['authorization', 'proxy-authorization', 'cookie']);

/**
 * The body of a TRACE echo: the request line and fields as received, less
 * {@link NOT_ECHOED} (RFC 9110 §9.3.8, `message/http`). Bounded by Node's
 * header size limit.
 */
export function traceEcho(req: IncomingMessage): string {
  const lines = [`${req.method ?? 'TRACE'} ${pathOfTarget(req.url ?? '/')} HTTP/${req.httpVersion}`];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] as string;
    if (!NOT_ECHOED.has(name.toLowerCase())) lines.push(`${name}: ${req.rawHeaders[i + 1] as string}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** The origin-form of an absolute-form target (what the final recipient would have seen); other forms as they are. */
function pathOfTarget(target: string): string {
  const match = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*(.*)$/i.exec(target);
  if (match === null) return target;
  return match[1] === '' || match[1]!.startsWith('?') ? `/${match[1]}` : match[1]!;
}

/**
 * Answers a TRACE or OPTIONS whose Max-Forwards is 0 as its final recipient:
 * OPTIONS gets 200 with `Allow` and no body, TRACE gets 200 with the echo.
 * `headers` are the proxy's own (request id, decision). Returns the status and
 * the body bytes written. Throws only what `res` throws.
 */
export function answerAsFinalRecipient(req: IncomingMessage, res: ServerResponse, headers: Record<string, string>): { status: number; bytesSent: number } {
  const body = req.method === 'TRACE' ? traceEcho(req) : '';
  const own: Record<string, string> = { ...headers, 'content-length': String(Buffer.byteLength(body)) };
  delete own['content-type'];
  if (req.method === 'TRACE') own['content-type'] = 'message/http';
  else own['allow'] = PROXY_ALLOW;
  res.writeHead(200, own);
  res.end(body);
  if (!req.complete) req.resume();
  return { status: 200, bytesSent: Buffer.byteLength(body) };
}
