/**
 * The access entry of an answer the proxy writes outside the request pipeline:
 * refusals at the listener, CONNECT, Upgrade, and the error boundary's 500.
 * Every such answer is audited like a pipeline request (DESIGN.md: one access
 * line per request, whatever the outcome).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AccessEntry } from '../audit/access-entry.js';
import { redactUserInfo } from '../audit/redact.js';
import type { Clock } from '../clock.js';
import type { Decision } from '../policy/decision.js';
import type { Duplex } from 'node:stream';
import { decideWithoutRobots } from '../policy/decide.js';
import { renderProxyResponse } from './responses.js';
import { awaitsContinue } from './headers.js';
import { clientErrorStatus, writeRawResponse } from './raw-response.js';
import { clientRequestIdOf, nextRequestId, requestIdOf } from './request-id.js';

/** How a request reached the proxy (the access line's `via`). */
export type RequestVia = AccessEntry['request']['via'];

/** Facts of an answer the proxy gave itself. Times in ms since the epoch. */
export interface OwnAnswerFacts {
  startedAtMs: number;
  nowMs: number;
  status: number;
  via: RequestVia;
  /** The target as understood (absolute URL, or `host:port` for CONNECT); default: the raw request target. */
  url?: string;
  /** Response body bytes written. @default 0 */
  bytesSent?: number;
  /** Error code, when the answer reports a failure. @default null */
  error?: string | null;
}

/** Builds the {@link AccessEntry} of an answer the proxy gave itself for `req` (with `req`'s request id). Never throws. */
export function ownAnswerEntry(req: IncomingMessage, decision: Decision, facts: OwnAnswerFacts): AccessEntry {
  return {
    requestId: requestIdOf(req),
    startedAtMs: facts.startedAtMs,
    client: { address: req.socket?.remoteAddress ?? '', port: req.socket?.remotePort ?? 0 },
    request: {
      method: req.method ?? '',
      url: redactUserInfo((facts.url ?? req.url ?? '').slice(0, 2048)),
      userAgent: req.headers['user-agent'] ?? null,
      via: facts.via,
      clientRequestId: clientRequestIdOf(req),
    },
    identity: decision.identity?.name ?? null,
    decision,
    productTokens: decision.agentTokens,
    timings: { queueWaitMs: decision.pacing?.waitedMs ?? null, upstreamMs: null, durationMs: Math.max(0, facts.nowMs - facts.startedAtMs) },
    response: { status: facts.status, upstreamStatus: null, bytesSent: facts.bytesSent ?? 0, bytesReceived: 0, clientAborted: false },
    error: facts.error ?? null,
  };
}

/**
 * Answers a request the pipeline never saw (400, 421, 501, a loop) with the
 * proxy's own response for `decision`, and audits it. After a `bad-request` or a
 * `transfer-coding-not-implemented` the connection is closed: its framing is not to be trusted. Throws only what
 * `res` throws (for the caller's error boundary).
 */
export function refuseRequest(
  deps: { clock: Clock; onFinished: (entry: AccessEntry) => void },
  req: IncomingMessage,
  res: ServerResponse,
  decision: Decision,
  via: RequestVia,
): void {
  const startedAtMs = deps.clock.nowMs();
  const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: startedAtMs, requestId: requestIdOf(req) });
  const bytesSent = req.method === 'HEAD' ? 0 : Buffer.byteLength(rendered.body);
  // After bad-request or an unimplemented transfer coding (a body not to be read as framed), or a
  // refusal of a request whose client waits for 100 Continue before sending its body.
  const close = decision.reason === 'bad-request' || decision.reason === 'transfer-coding-not-implemented' || awaitsContinue(req) ? { connection: 'close' } : {};
  res.writeHead(rendered.status, { ...rendered.headers, ...close, 'content-length': String(Buffer.byteLength(rendered.body)) });
  res.end(req.method === 'HEAD' ? undefined : rendered.body);
  req.resume();
  deps.onFinished(ownAnswerEntry(req, decision, { startedAtMs, nowMs: deps.clock.nowMs(), status: rendered.status, via, bytesSent }));
}

/**
 * Answers a request Node's HTTP parser rejected (a server's `clientError`:
 * malformed, head too large, too slow) with {@link clientErrorStatus}, through
 * the shared renderer and with a request id, audits it, and closes. Nothing of
 * the request is known but the peer's address. A socket that can no longer be
 * written is destroyed. Never throws.
 */
export function answerClientError(deps: { clock: Clock; onFinished: (entry: AccessEntry) => void }, socket: Duplex, err: NodeJS.ErrnoException, via: RequestVia): void {
  if (socket.destroyed || !socket.writable) return void socket.destroy();
  const nowMs = deps.clock.nowMs();
  const requestId = nextRequestId();
  const decision = decideWithoutRobots('bad-request', { detail: `malformed request: ${err.code ?? 'unparsable'}` });
  const rendered = renderProxyResponse(decision, { accept: undefined, nowMs, requestId, status: clientErrorStatus(err.code) });
  writeRawResponse(socket, rendered);
  const peer = socket as Duplex & { remoteAddress?: string; remotePort?: number };
  deps.onFinished({
    requestId,
    startedAtMs: nowMs,
    client: { address: peer.remoteAddress ?? '', port: peer.remotePort ?? 0 },
    request: { method: '', url: '', userAgent: null, via },
    identity: null,
    decision,
    productTokens: [],
    timings: { queueWaitMs: null, upstreamMs: null, durationMs: 0 },
    response: { status: rendered.status, upstreamStatus: null, bytesSent: Buffer.byteLength(rendered.body), bytesReceived: 0, clientAborted: false },
    error: err.code ?? null,
  });
}
