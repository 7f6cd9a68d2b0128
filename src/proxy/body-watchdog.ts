/**
 * The request-body idle timeout: a client that starts a body and then sends
 * nothing (or a byte now and then, slower than the bound) must not hold a
 * connection, an upstream exchange and its origin's start slot. Extension,
 * not in RFC 9309.
 */
import type { IncomingMessage } from 'node:http';

/** Error code of an exchange abandoned because the request body stalled. */
export const CLIENT_BODY_TIMEOUT = 'CLIENT_BODY_TIMEOUT';

/**
 * Calls `onStall` once when `req`'s body has been silent for `timeoutMs` while the proxy was
 * ready to read it. Silence while the body is backpressured (the upstream is not taking it yet,
 * so the stream is paused or bytes wait in its buffer) is the upstream's, not the client's, and
 * does not count. Call it after `req` is piped (it must be flowing); stops by itself when the
 * body ends or the request closes.
 * @param timeoutMs the bound, ms; 0 or less: no bound.
 * @returns a function that stops the watch (idempotent). Never throws.
 */
export function watchRequestBody(req: IncomingMessage, timeoutMs: number, onStall: () => void): () => void {
  if (timeoutMs <= 0 || req.readableEnded) return () => undefined;
  let timer: NodeJS.Timeout | undefined;
  const refresh = (): void => {
    clearTimeout(timer);
    timer = setTimeout(check, timeoutMs);
    timer.unref();
  };
  const stop = (): void => {
    clearTimeout(timer);
    req.off('data', refresh);
    req.off('end', stop);
    req.off('close', stop);
  };
  const check = (): void => {
    if (req.readableFlowing === false || req.readableLength > 0) return refresh();
    stop();
    onStall();
  };
  req.on('data', refresh);
  req.once('end', stop);
  req.once('close', stop);
  refresh();
  return stop;
}
