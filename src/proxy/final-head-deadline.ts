/**
 * The bound on the wait for an origin's final response head across interim (1xx) responses.
 *
 * `upstream.timeout` is the longest wait for response headers (README, config/default.yaml),
 * enforced by undici's `headersTimeout`. undici restarts that timer at every 1xx head it reads
 * (client-h1.js `onHeadersComplete`: `this.timeout.refresh()` while the status is below 200), so
 * an origin that sends `103 Early Hints` (RFC 8297) or `102 Processing` (RFC 2518) more often than
 * the timeout, and never a final response, held the client, the upstream connection and the
 * origin's pacing slot for ever: the proxy relayed 130,000 hints in 20 s at `timeout: 3s` and
 * never answered (found in session 30's fuzzing hunt; scripts/fuzz-proxy.ts now sends it). RFC 9110 §15.2 lets any number of
 * 1xx precede the final response, so nothing bounds them but this deadline.
 *
 * Armed at the first 1xx only (an ordinary response costs nothing here); it fires at the time
 * undici's own timer would have, had the 1xx not restarted it, and fails the exchange with
 * undici's own code, so the client gets the same 504 as for an origin that sends nothing.
 *
 * Upgrades (upgrade.ts) go through http-proxy's ws path, which reads no timeout at all (its
 * `proxyTimeout` is for plain requests), so an origin that never answered an upgrade request held
 * the client for ever too: there the same deadline runs from the request's start to the origin's
 * answer (101 or a refusal).
 */

/** The code of a timed-out wait for response headers: undici's, which the proxy answers with 504. */
export const HEADERS_TIMEOUT_CODE = 'UND_ERR_HEADERS_TIMEOUT';

/** A running deadline; `cancel` it once the final head (or the end of the exchange) came. */
export interface FinalHeadDeadline {
  /** Stops the timer. Idempotent. */
  cancel(): void;
}

/**
 * Starts the deadline for the final head of an exchange that has just received its first 1xx.
 * @param sentAtMs when the request went to the origin, ms on the same clock as `nowMs`.
 * @param nowMs the time now, ms.
 * @param timeoutMs `upstream.timeout`, ms; 0 or less: no bound (nothing is armed).
 * @param onExpired called once when the final head has not come by `sentAtMs + timeoutMs`, with
 *   an `Error` whose `code` is {@link HEADERS_TIMEOUT_CODE}: at once (next turn of the loop) when
 *   that time has already passed.
 * @returns the deadline, to cancel.
 */
export function startFinalHeadDeadline(sentAtMs: number, nowMs: number, timeoutMs: number, onExpired: (error: Error) => void): FinalHeadDeadline {
  if (!(timeoutMs > 0)) return { cancel: () => undefined };
  const remainingMs = Math.max(0, sentAtMs + timeoutMs - nowMs);
  const timer = setTimeout(() => {
    const error = new Error(`no final response head within ${timeoutMs} ms (interim 1xx responses do not extend the wait)`);
    onExpired(Object.assign(error, { code: HEADERS_TIMEOUT_CODE }));
  }, remainingMs);
  return { cancel: () => clearTimeout(timer) };
}
