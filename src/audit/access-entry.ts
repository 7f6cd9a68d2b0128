/**
 * What is known about one request when it ends: the {@link Decision} and the
 * facts around it. One entry feeds the access log line and the metrics; both
 * read the decision's reason from here and never re-derive it.
 */
import type { Decision } from '../policy/decision.js';

/** One finished request (or CONNECT), whatever its outcome. */
export interface AccessEntry {
  /** The proxy's id of this request (`<process prefix>-<counter>`), also sent to the client in a response header and in the body of the proxy's own answers. */
  requestId: string;
  /** When the request arrived, ms since the epoch. */
  startedAtMs: number;
  client: {
    /** Remote address of the client connection. */
    address: string;
    port: number;
  };
  request: {
    /** HTTP method (`CONNECT` for a tunnel). */
    method: string;
    /** Absolute target URL as the proxy understood it (`https://host:port/...` inside a tunnel; `host:port` for CONNECT). */
    url: string;
    /** The client's User-Agent header, or null when absent (a value the client controls). */
    userAgent: string | null;
    /**
     * `http` (absolute-form), `https-intercepted` (inside an intercepted TLS tunnel),
     * `http-tunnelled` (plain HTTP inside a CONNECT tunnel) or `connect` (the CONNECT itself).
     */
    via: 'http' | 'https-intercepted' | 'http-tunnelled' | 'connect';
    /** The client's own `X-Request-Id` header, or null/absent (a value the client controls; never used as `requestId`). */
    clientRequestId?: string | null;
  };
  /**
   * Who the client is to the operator (a name from proxy credentials or a client range), or
   * null (or absent) when no identity applies. Absent until admission sets it (issue 8).
   */
  identity?: string | null;
  decision: Decision;
  /** Candidate product tokens extracted from the User-Agent, in preference order. */
  productTokens: readonly string[];
  timings: {
    /** Time spent waiting for a start slot, ms; null when not queued. */
    queueWaitMs: number | null;
    /** When the request was written upstream, ms since the epoch (fractional); null when not forwarded. */
    upstreamStartedAtMs?: number | null;
    /** Time from the upstream request start to the end of the upstream response, ms; null when not forwarded. */
    upstreamMs: number | null;
    /** Whole request, arrival to last byte sent, ms. */
    durationMs: number;
  };
  response: {
    /** Status sent to the client (the proxy's own or the upstream's). */
    status: number;
    /** Upstream status, or null when nothing was forwarded or no response arrived. */
    upstreamStatus: number | null;
    /** Response body bytes sent to the client. */
    bytesSent: number;
    /** Request body bytes received from the client and forwarded. */
    bytesReceived: number;
    /** True when the client went away before the response was complete. */
    clientAborted: boolean;
  };
  /** Error code when the exchange failed (e.g. `UND_ERR_HEADERS_TIMEOUT`, `ECONNREFUSED`); null otherwise. */
  error: string | null;
}
