/**
 * Error boundaries: no single request or connection can end the process
 * (DESIGN.md "Defaults that keep people safe"). Every event handler of the
 * listener, of the server inside tunnels, of CONNECT and of Upgrade runs its
 * work through one of these: a synchronous throw or a rejected promise is
 * logged (`event: internal-error`, with the stack), answered `500` with
 * reason `internal-error` when nothing was sent yet (else the connection is
 * closed), and audited; the proxy keeps serving everyone else.
 *
 * Expected failures (bad input, upstream errors) never get here: they are
 * answered where they happen (400, 421, 502, ...). This is the net under bugs.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { AccessEntry } from '../audit/access-entry.js';
import { decideWithoutRobots } from '../policy/decide.js';
import type { Decision } from '../policy/decision.js';
import { renderProxyResponse } from './responses.js';
import { writeRawResponse } from './raw-response.js';
import { ownAnswerEntry, type RequestVia } from './own-answer.js';
import { requestIdOf } from './request-id.js';

/** What a boundary needs: a clock, a logger and the audit sink. */
export interface BoundaryDeps {
  clock: Clock;
  logger: Pick<Logger, 'error'>;
  onFinished: (entry: AccessEntry) => void;
}

/** Where the failing work ran: the log's `where` (e.g. `proxy-request`) and the access line's `via`. */
export interface BoundaryScope {
  where: string;
  via: RequestVia;
}

/** The `code` of every internal error in access lines. */
export const INTERNAL_ERROR_CODE = 'INTERNAL_ERROR';

/** Runs `work`; calls `onError` with a synchronous throw or a rejection. Never throws. */
function run(work: () => unknown, onError: (err: unknown) => void): void {
  let pending: unknown;
  try {
    pending = work();
  } catch (err) {
    onError(err);
    return;
  }
  if (pending instanceof Promise) pending.then(undefined, onError);
}

/** Logs an internal error once, with its stack. Never throws. */
export function logInternalError(logger: Pick<Logger, 'error'>, where: string, err: unknown): void {
  try {
    const e = err instanceof Error ? err : new Error(String(err));
    logger.error(
      { event: 'internal-error', where, error: e.message.slice(0, 500), code: (e as NodeJS.ErrnoException).code ?? null, stack: e.stack ?? null },
      'internal error: the request was answered 500 (or closed) and the proxy keeps serving',
    );
  } catch {
    // A logger that throws must not turn a handled error into a crash.
  }
}

function internalErrorDecision(): Decision {
  return decideWithoutRobots('internal-error', { detail: 'the proxy failed while handling this request; the operator can find it in the log (event internal-error)' });
}

/**
 * The boundary of one listener's requests that have a `ServerResponse` (the listener, the server
 * inside tunnels): one object per listener and scope, made at start-up, so the common path
 * allocates nothing (issue 11: no closure and no promise per request). A handler that returns
 * a promise that may reject gets one rejection handler (a closure and the `then` promise); a
 * handler that reports its own failures through {@link RequestBoundary.fail} (the pipeline)
 * returns nothing and costs nothing here.
 *
 * On a throw or rejection: 500 if no head was sent, else the connection is closed; logged and
 * audited. Never throws.
 */
export class RequestBoundary {
  /**
   * @param deps clock, logger, audit sink.
   * @param scope the log's `where` and the access line's `via`.
   * @param handler the request handler; may return a promise (its rejection is caught).
   */
  constructor(
    readonly deps: BoundaryDeps,
    readonly scope: BoundaryScope,
    private readonly handler: (req: IncomingMessage, res: ServerResponse) => unknown,
  ) {}

  /** Runs the handler for one request. Never throws. */
  run(req: IncomingMessage, res: ServerResponse): void {
    let pending: unknown;
    try {
      pending = this.handler(req, res);
    } catch (err) {
      // Thrown before the handler returned: the request began now.
      this.fail(req, res, this.deps.clock.nowMs(), err);
      return;
    }
    if (pending instanceof Promise) {
      const startedAtMs = this.deps.clock.nowMs();
      pending.then(undefined, (err: unknown) => this.fail(req, res, startedAtMs, err));
    }
  }

  /**
   * Answers a request whose handling failed with `err`: logged (`event: internal-error`), 500
   * when no head was sent (else the connection is closed), audited with `startedAtMs` (ms, the
   * boundary's clock) as the request's start. Never throws.
   */
  fail(req: IncomingMessage, res: ServerResponse, startedAtMs: number, err: unknown): void {
    const { deps, scope } = this;
    logInternalError(deps.logger, scope.where, err);
    try {
      const decision = internalErrorDecision();
      let status = res.statusCode;
      let bytesSent = 0;
      if (!res.headersSent && !res.destroyed && !res.writableEnded) {
        const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: deps.clock.nowMs(), requestId: requestIdOf(req) });
        res.writeHead(rendered.status, { ...rendered.headers, 'content-length': String(Buffer.byteLength(rendered.body)), connection: 'close' });
        res.end(rendered.body);
        req.resume();
        status = rendered.status;
        bytesSent = Buffer.byteLength(rendered.body);
      } else {
        res.destroy();
      }
      deps.onFinished(ownAnswerEntry(req, decision, { startedAtMs, nowMs: deps.clock.nowMs(), status, via: scope.via, bytesSent, error: INTERNAL_ERROR_CODE }));
    } catch (secondary) {
      logInternalError(deps.logger, `${scope.where}/boundary`, secondary);
      try {
        res.destroy();
      } catch {
        // Never throws.
      }
    }
  }
}

/**
 * Runs the handler of a request that owns a raw socket (CONNECT, Upgrade).
 * On a throw or rejection: a 500 written on the socket when nothing was
 * written to it yet, else the socket is closed; logged and audited. Never throws.
 */
export function guardSocketRequest(deps: BoundaryDeps, scope: BoundaryScope, req: IncomingMessage, socket: Duplex, work: () => unknown): void {
  const startedAtMs = deps.clock.nowMs();
  const writtenBefore = bytesWrittenOf(socket);
  run(work, (err) => {
    logInternalError(deps.logger, scope.where, err);
    try {
      const decision = internalErrorDecision();
      let status = 0;
      if (bytesWrittenOf(socket) === writtenBefore && !socket.destroyed && socket.writable) {
        const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: deps.clock.nowMs(), requestId: requestIdOf(req) });
        writeRawResponse(socket, rendered);
        status = rendered.status;
      } else {
        socket.destroy();
      }
      deps.onFinished(ownAnswerEntry(req, decision, { startedAtMs, nowMs: deps.clock.nowMs(), status, via: scope.via, error: INTERNAL_ERROR_CODE }));
    } catch (secondary) {
      logInternalError(deps.logger, `${scope.where}/boundary`, secondary);
      socket.destroy();
    }
  });
}

/**
 * Runs connection-level work that has no request to answer (a TLS handshake
 * inside a tunnel, a relay being set up). On a throw or rejection: logged,
 * the socket closed. Never throws.
 */
export function guardConnection(logger: Pick<Logger, 'error'>, where: string, socket: Duplex, work: () => unknown): void {
  run(work, (err) => {
    logInternalError(logger, where, err);
    socket.destroy();
  });
}

/** Bytes written to a socket so far (net and TLS sockets count them); 0 for other streams. */
function bytesWrittenOf(socket: Duplex): number {
  const written = (socket as Duplex & { bytesWritten?: number }).bytesWritten;
  return typeof written === 'number' ? written : 0;
}
