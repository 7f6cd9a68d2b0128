/**
 * The request pipeline shared by plain HTTP proxy requests and the requests
 * inside an intercepted TLS tunnel: identify -> decide -> pace -> forward ->
 * audit (DESIGN.md "Request flow"). One {@link Decision} travels through it and
 * reaches the response, the log line and the metrics unchanged.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform, pipeline as streamPipeline, type Readable } from 'node:stream';
import type { Clock } from '../clock.js';
import type { Config } from '../config/index.js';
import { resolveHostOverride } from '../config/index.js';
import type { Pacer } from '../pacing/index.js';
import { decide, decideWithoutRobots } from '../policy/decide.js';
import type { Decision } from '../policy/decision.js';
import type { RobotsSnapshot } from '../policy/snapshot.js';
import { extractProductTokens } from '../robots/agent.js';
import type { AccessEntry } from '../audit/access-entry.js';
import { forwardableHeaders } from './headers.js';
import { isTimeoutCode, upstreamErrorCode, type UpstreamForwarder } from './forwarder.js';
import { decisionHeaderValue, DECISION_HEADER, renderProxyResponse } from './responses.js';
import type { TargetGuard } from './target-guard.js';
import { PRIVATE_TARGET_CODE } from './target-guard.js';

/** Where robots snapshots come from (the robots cache). */
export interface SnapshotSource {
  /** The origin's current robots snapshot; fetched at most once at a time per origin. Never rejects. */
  get(origin: string): Promise<RobotsSnapshot>;
}

/** Collaborators of the pipeline. */
export interface PipelineDeps {
  config: Config;
  robots: SnapshotSource;
  pacer: Pacer;
  forwarder: UpstreamForwarder;
  guard: TargetGuard;
  clock: Clock;
  /** `Via` pseudonym of this instance. */
  viaPseudonym: string;
  /** Called once per request, whatever the outcome (access log + metrics). */
  onFinished: (entry: AccessEntry) => void;
}

/** One request to handle. */
export interface ProxiedRequest {
  req: IncomingMessage;
  res: ServerResponse;
  /** The absolute target URL (http: or https:). */
  target: URL;
  via: 'http' | 'https-intercepted';
}

/** The path plus query of a target URL, as matched and forwarded. */
function pathAndQueryOf(url: URL): string {
  return (url.pathname || '/') + url.search;
}

/** Error codes of upstream TLS verification failures: an upstream fault (502), not an unreachable robots.txt. */
function isCertificateError(code: string | undefined): boolean {
  return code !== undefined && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME|_SSL_|TLS/.test(code);
}

/** Counts bytes passing through. */
class ByteCounter extends Transform {
  bytes = 0;
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null, data?: Buffer) => void): void {
    this.bytes += chunk.length;
    cb(null, chunk);
  }
}

export class RequestPipeline {
  constructor(private readonly deps: PipelineDeps) {}

  /**
   * Decides a request without forwarding it: the private-network guard, then
   * robots.txt. Used by the pipeline, by tunnel-mode CONNECT and by the admin
   * `explain` endpoint. Never rejects.
   */
  async decideFor(target: URL, userAgent: string | undefined): Promise<{ decision: Decision; productTokens: string[] }> {
    const productTokens = extractProductTokens(userAgent ?? '');
    const origin = target.origin;
    const path = pathAndQueryOf(target);
    const guarded = await this.deps.guard.check(target.hostname);
    if (!guarded.allowed) {
      const detail = 'address' in guarded ? `${target.hostname} is ${guarded.address}` : guarded.error;
      return { decision: decideWithoutRobots('target-private-network', { origin, path, detail, agentTokens: productTokens }), productTokens };
    }
    const snapshot = await this.deps.robots.get(origin);
    let decision = decide(snapshot, { origin, pathAndQuery: path, productTokens });
    if (decision.reason === 'robots-unreachable' && isCertificateError(snapshot.info.error)) {
      decision = { ...decision, reason: 'upstream-error', upstream: { error: snapshot.info.error }, detail: 'the upstream TLS certificate is not trusted' };
    } else if (decision.reason === 'robots-unreachable' && snapshot.info.error === PRIVATE_TARGET_CODE) {
      decision = { ...decision, reason: 'target-private-network', detail: `${target.hostname} resolves to a private address` };
    }
    return { decision, productTokens };
  }

  /** The delay before this request may start, ms: its group's crawl-delay raised to the operator minimums. */
  private delayFor(decision: Decision): { delayMs: number; maxConcurrency: number | undefined } {
    const { pacing } = this.deps.config;
    const override = resolveHostOverride(this.deps.config, decision.origin);
    const crawlDelayMs = decision.crawlDelaySeconds === null ? 0 : Math.round(decision.crawlDelaySeconds * 1000);
    const delayMs = Math.max(crawlDelayMs, override?.minDelayMs ?? pacing.minDelayMs);
    return { delayMs, maxConcurrency: override?.maxConcurrency };
  }

  /** Handles one proxied request end to end. Never rejects. */
  async handle(p: ProxiedRequest): Promise<void> {
    const { req, res, target } = p;
    const startedAtMs = this.deps.clock.nowMs();
    const abort = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) abort.abort();
    };
    res.once('close', onClose);

    const userAgent = req.headers['user-agent'];
    const { decision: initial, productTokens } = await this.decideFor(target, userAgent);
    let decision = initial;
    const entry = {
      startedAtMs,
      client: { address: req.socket.remoteAddress ?? '', port: req.socket.remotePort ?? 0 },
      request: { method: req.method ?? 'GET', url: target.href, userAgent: userAgent ?? null, via: p.via },
      productTokens,
    };
    const timings = { queueWaitMs: null as number | null, upstreamMs: null as number | null, upstreamStartedAtMs: null as number | null };
    const response = { status: 0, upstreamStatus: null as number | null, bytesSent: 0, bytesReceived: 0, clientAborted: false };
    let error: string | null = null;

    const finish = (): void => {
      res.off('close', onClose);
      response.clientAborted = abort.signal.aborted;
      this.deps.onFinished({
        ...entry,
        decision,
        timings: { ...timings, durationMs: this.deps.clock.nowMs() - startedAtMs },
        response,
        error,
      });
    };

    if (decision.verdict === 'deny' || decision.reason === 'upstream-error') {
      response.status = this.respond(res, req, decision);
      return finish();
    }

    const { delayMs, maxConcurrency } = this.delayFor(decision);
    const outcome = await this.deps.pacer.acquire(decision.origin, delayMs, {
      signal: abort.signal,
      ...(maxConcurrency !== undefined ? { maxConcurrency } : {}),
    });
    if (!outcome.granted) {
      const refusal = outcome.refusal;
      if (refusal.reason === 'queue-full') {
        decision = {
          ...decision,
          verdict: 'deny',
          reason: 'queue-full',
          pacing: { delayMs, waitedMs: 0, queueLength: refusal.queueLength, retryAfterSeconds: refusal.retryAfterSeconds },
        };
        response.status = this.respond(res, req, decision);
      } else {
        // The client left while queued (or the proxy is closing): nothing goes upstream.
        error = refusal.reason === 'aborted' ? 'CLIENT_ABORTED' : 'PROXY_CLOSING';
        if (refusal.reason === 'closed' && !res.headersSent) {
          decision = { ...decision, verdict: 'deny', reason: 'upstream-error', upstream: { error }, detail: 'the proxy is shutting down' };
          response.status = this.respond(res, req, decision);
        }
      }
      return finish();
    }

    const slot = outcome.slot;
    timings.queueWaitMs = slot.waitedMs;
    decision = { ...decision, pacing: { delayMs, waitedMs: slot.waitedMs } };
    const upstreamStarted = this.deps.clock.nowMs();
    let released = false;
    const release = (status?: number, retryAfter?: string | null): void => {
      if (released) return;
      released = true;
      slot.release(status === undefined ? {} : { status, retryAfter: retryAfter ?? null });
    };

    try {
      const requestCounter = new ByteCounter();
      const hasBody = req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined;
      const body: Readable | null = hasBody ? req.pipe(requestCounter) : null;
      const headers = forwardableHeaders(req.headers, req.httpVersion, this.deps.viaPseudonym);
      delete headers['expect'];
      headers['host'] = target.host;
      const upstream = await this.deps.forwarder.forward({
        origin: decision.origin,
        method: req.method ?? 'GET',
        path: pathAndQueryOf(target),
        headers,
        body,
        signal: abort.signal,
        onSent: () => {
          timings.upstreamStartedAtMs = this.deps.clock.nowMs();
          slot.markSent();
        },
      });
      response.upstreamStatus = upstream.status;
      decision = { ...decision, upstream: { status: upstream.status } };
      const retryAfter = upstream.headers['retry-after'];
      const responseHeaders = forwardableHeaders(upstream.headers, '1.1', this.deps.viaPseudonym);
      responseHeaders[DECISION_HEADER] = decisionHeaderValue(decision);
      res.writeHead(upstream.status, responseHeaders);
      response.status = upstream.status;
      const counter = new ByteCounter();
      await new Promise<void>((resolve) => {
        streamPipeline(upstream.body, counter, res, (err) => {
          if (err && !abort.signal.aborted) error = upstreamErrorCode(err);
          resolve();
        });
      });
      response.bytesSent = counter.bytes;
      response.bytesReceived = requestCounter.bytes;
      release(upstream.status, Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
    } catch (err) {
      release();
      const code = upstreamErrorCode(err);
      error = code;
      if (!abort.signal.aborted) {
        const reason = code === PRIVATE_TARGET_CODE ? 'target-private-network' : 'upstream-error';
        decision = { ...decision, verdict: reason === 'upstream-error' ? decision.verdict : 'deny', reason, upstream: { error: code, timedOut: isTimeoutCode(code) } };
        if (!res.headersSent) response.status = this.respond(res, req, decision);
        else res.destroy();
      }
    } finally {
      timings.upstreamMs = this.deps.clock.nowMs() - upstreamStarted;
    }
    finish();
  }

  /** Writes the proxy's own response for `decision`; returns its status. */
  private respond(res: ServerResponse, req: IncomingMessage, decision: Decision): number {
    const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: this.deps.clock.nowMs() });
    if (res.headersSent || res.destroyed) return rendered.status;
    res.writeHead(rendered.status, { ...rendered.headers, 'content-length': String(Buffer.byteLength(rendered.body)) });
    res.end(req.method === 'HEAD' ? undefined : rendered.body);
    // A request body we will not read must not keep the connection busy.
    if (!req.complete) req.resume();
    return rendered.status;
  }
}
