/**
 * `Upgrade` requests (WebSocket and the like): decided like any other request
 * (guard, robots.txt, pacing), then relayed by http-proxy, which handles the
 * protocol switch and the bidirectional stream. The request sent upstream and the
 * upstream's answer relayed to the client both carry this proxy in `Via`, as on
 * the forwarding path (RFC 9110 §7.6.3).
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { SecureContext } from 'node:tls';
import type { Duplex } from 'node:stream';
import type net from 'node:net';
import httpProxy from 'http-proxy';
import type { Clock } from '../clock.js';
import type { Decision } from '../policy/decision.js';
import { decideWithoutRobots } from '../policy/decide.js';
import { framingRefusalOf } from './request-content.js';
import { outgoingUserAgent } from '../policy/identity.js';
import type { AdmittedClient } from '../access/access-control.js';
import { CancelSignal } from '../pacing/index.js';
import type { Slot } from '../pacing/types.js';
import type { AccessEntry } from '../audit/access-entry.js';
import { identityOf, type RequestPipeline } from './pipeline.js';
import type { TargetGuard } from './target-guard.js';
import { DECISION_HEADER, decisionHeaderValue, renderProxyResponse } from './responses.js';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id.js';
import { writeRawResponse } from './raw-response.js';
import { ownAnswerEntry, type RequestVia } from './own-answer.js';
import { appendedVia, upgradeRequestHeaders } from './headers.js';
import { frameRefusalForRelay } from './upgrade-refusal.js';
import { isTimeoutCode, upstreamErrorCode } from './forwarder.js';
import { startFinalHeadDeadline } from './final-head-deadline.js';
import type { TargetUrl } from './canonical-target.js';
import { pathAndQueryOf } from './target-origin.js';
import { ClientFrameReader } from './websocket-frames.js';
import { watchQueuedUpgrade } from './queued-upgrade.js';
import type { Logger } from 'pino';

/**
 * Why http-proxy would drop this upgrade without a byte (it relays only `GET` with `Upgrade:
 * websocket`, and destroys the socket of anything else: `Upgrade: h2c`, which curl --http2 sends
 * for http:// URLs, `TLS/1.0`, a POST), as the detail of a 400; undefined when it can be relayed.
 */
export function unrelayableUpgrade(req: IncomingMessage): string | undefined {
  const upgrade = req.headers.upgrade ?? '';
  if (req.method === 'GET' && upgrade.toLowerCase() === 'websocket') return undefined;
  return `only a GET with Upgrade: websocket is relayed, not ${(req.method ?? '').slice(0, 20)} with Upgrade: ${upgrade.slice(0, 100)}; send the request without Upgrade`;
}

/** An upgrade handed to http-proxy, until its access line is written. Times in ms. */
interface RelayedUpgrade {
  decision: Decision;
  startedAtMs: number;
  via: RequestVia;
  url: string;
}

/** Collaborators of {@link UpgradeRelay}. */
export interface UpgradeDeps {
  clock: Clock;
  onFinished: (entry: AccessEntry) => void;
  /** Builds the agents whose connections the target guard judges (address and port). */
  guard: Pick<TargetGuard, 'agentFor'>;
  /** TLS trust for https upstreams (system CAs plus `upstream.caFile`), built once; undefined: Node's defaults. */
  secureContext?: SecureContext;
  /** Time to wait for the upstream's answer to the upgrade, ms. */
  timeoutMs: number;
  /** `Via` pseudonym of this instance (see `makeViaPseudonym`), added to the upgrade and its answer. */
  viaPseudonym: string;
  /** Where a WebSocket stream closed for carrying no frames is logged (`websocket-stream-refused`). */
  logger?: Pick<Logger, 'warn'>;
}

/** Decides, paces and relays Upgrade requests through http-proxy (lifecycle: `close()`). */
export class UpgradeRelay {
  private pipeline: RequestPipeline | undefined;
  /** `X-Robots-Proxy-Decision` of the upgrades being relayed, for the upstream's answer. */
  private readonly decisionHeaders = new WeakMap<IncomingMessage, string>();
  /** The upgrades handed to http-proxy whose access line waits for the origin's answer (101 or not) or failure. */
  private readonly relayed = new WeakMap<IncomingMessage, RelayedUpgrade>();
  /**
   * The start slot of each upgrade handed to http-proxy, held until the origin has answered: a 101
   * (the long-lived stream after it is not paced), the end of any other answer (an origin that does
   * not speak WebSocket there serves the page as a plain GET, RFC 9110 §7.8: a server may ignore
   * Upgrade), or a failure. Released at the start instead, an `Upgrade: websocket` field made any
   * page request escape `maxConcurrency` and, under a crawl-delay, the one request in flight
   * (DESIGN.md, Pacing semantics).
   */
  private readonly slots = new WeakMap<IncomingMessage, Slot>();
  private readonly proxy = httpProxy.createProxyServer({ ws: true, xfwd: false, changeOrigin: true });
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private timeoutMs: number;

  constructor(private readonly deps: UpgradeDeps) {
    this.timeoutMs = deps.timeoutMs;
    this.httpAgent = deps.guard.agentFor(false);
    this.httpsAgent = deps.guard.agentFor(true, deps.secureContext ? { secureContext: deps.secureContext } : {}) as https.Agent;
    // http-proxy reports socket errors here; without a listener it would throw. An upgrade the
    // origin failed before answering gets the proxy's 502 (504 on a timeout) while the client's
    // socket can still take it; its access line says so.
    this.proxy.on('error', (err, req, target) => {
      this.releaseSlot(req);
      const socket = target as Duplex | undefined;
      const relayed = this.relayed.get(req);
      if (relayed !== undefined && socket !== undefined && !socket.destroyed && socket.writable) {
        const code = upstreamErrorCode(err);
        const decision: Decision = { ...relayed.decision, reason: 'upstream-error', upstream: { error: code, timedOut: isTimeoutCode(code) } };
        const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: this.deps.clock.nowMs(), requestId: requestIdOf(req) });
        writeRawResponse(socket, rendered);
        this.finishRelayed(req, rendered.status, code, decision);
      } else {
        this.finishRelayed(req, 0, upstreamErrorCode(err));
      }
      socket?.destroy?.();
    });
    this.proxy.on('proxyReqWs', (proxyReq: http.ClientRequest, req: IncomingMessage, socket: Duplex) => {
      socket.once('close', () => proxyReq.destroy());
      // http-proxy's ws path reads no timeout (its proxyTimeout is for plain requests only), so an
      // origin that never answered the upgrade, or sent only 1xx heads, held the client for ever:
      // `upstream.timeout` bounds the wait for its answer here, as the forwarder's does (504).
      const nowMs = this.deps.clock.nowMs();
      const deadline = startFinalHeadDeadline(nowMs, nowMs, this.timeoutMs, (error) => proxyReq.destroy(error));
      proxyReq.once('close', () => deadline.cancel());
      // Registered before http-proxy's own listeners, so the upstream's answer (101, or a refusal
      // of the upgrade) is written to the client with the decision and the request id.
      const stamp = (res: IncomingMessage): void => {
        const decision = this.decisionHeaders.get(req);
        if (decision !== undefined) res.headers[DECISION_HEADER] = decision;
        res.headers[REQUEST_ID_HEADER] = requestIdOf(req);
      };
      proxyReq.once('response', (res: IncomingMessage) => {
        deadline.cancel();
        // The origin did not switch protocols: http-proxy relays its answer (framed to match its
        // head, with Connection: close: upgrade-refusal.ts), which the access line reports.
        stamp(res);
        frameRefusalForRelay(res, res.httpVersion, this.deps.viaPseudonym);
        this.finishRelayed(req, res.statusCode ?? 0, null);
        // The exchange is over once the answer has been read (or its connection closed).
        const release = (): void => this.releaseSlot(req, res.statusCode, res.headers['retry-after']);
        res.once('end', release);
        res.once('close', release);
      });
      proxyReq.once('upgrade', (res: IncomingMessage, proxySocket: Duplex) => {
        deadline.cancel();
        stamp(res);
        res.headers['via'] = appendedVia(res.headers['via'], res.httpVersion, this.deps.viaPseudonym);
        this.releaseSlot(req, 101);
        const url = this.relayed.get(req)?.url ?? '';
        this.finishRelayed(req, 101, null);
        this.readClientFrames(req, url, socket, proxySocket, res.headers['sec-websocket-extensions'] !== undefined);
        // http-proxy pipes the two sockets, but both ends are half-open sockets (http servers allow
        // it) and pipe forwards only 'end': a side that leaves would leave the other open for ever.
        // An upgraded stream is over when either side ends or closes.
        const finish = (): void => {
          for (const s of [socket, proxySocket] as net.Socket[]) {
            if (typeof s.destroySoon === 'function') s.destroySoon();
            else s.destroy();
          }
        };
        for (const s of [socket, proxySocket]) {
          s.once('end', finish);
          s.once('close', finish);
        }
      });
    });
  }

  /** Late binding: the pipeline and the relay need each other. */
  setPipeline(pipeline: RequestPipeline): void {
    this.pipeline = pipeline;
  }

  /**
   * Refuses an upgrade with the proxy's own response, and audits it.
   * @param url the target as understood, for the access line (default: the raw request target).
   */
  refuse(req: IncomingMessage, socket: Duplex, decision: Decision, facts: { via: RequestVia; startedAtMs?: number; url?: string }): void {
    const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: this.deps.clock.nowMs(), requestId: requestIdOf(req) });
    writeRawResponse(socket, rendered);
    const nowMs = this.deps.clock.nowMs();
    this.deps.onFinished(
      ownAnswerEntry(req, decision, { startedAtMs: facts.startedAtMs ?? nowMs, nowMs, status: rendered.status, via: facts.via, ...(facts.url !== undefined ? { url: facts.url } : {}) }),
    );
  }

  /**
   * Decides, paces and relays one upgrade request to `target` (already bound
   * and parsed by the caller). `via` says where it came from, for the access
   * line. Never rejects; a synchronous failure of http-proxy throws, for the
   * caller's error boundary.
   */
  async relay(req: IncomingMessage, socket: Duplex, head: Buffer, target: TargetUrl, via: RequestVia, tunnel?: AdmittedClient): Promise<void> {
    const startedAtMs = this.deps.clock.nowMs();
    socket.on('error', () => socket.destroy());
    const unrelayable = unrelayableUpgrade(req);
    if (unrelayable !== undefined) {
      return this.refuse(req, socket, decideWithoutRobots('bad-request', { origin: target.origin, detail: unrelayable }), { via, startedAtMs, url: target.href });
    }
    // An Upgrade is a request like any other until its 101 (and a GET): a transfer coding other than
    // chunked is 501, content is 400, as on a plain request (request-content.ts).
    const framing = framingRefusalOf(req, target);
    if (framing !== undefined) return this.refuse(req, socket, framing, { via, startedAtMs, url: target.href });
    const pipeline = this.pipeline;
    if (!pipeline) return void socket.destroy();
    const admitted = await pipeline.admit(req, { origin: target.origin, ...(tunnel ? { tunnel } : {}) });
    if (!admitted.isAdmitted) return this.refuse(req, socket, admitted.refusal, { via, startedAtMs, url: target.href });
    const { decision, policyRequest } = await pipeline.decideFor(target, req.headers['user-agent'], admitted.identity, req.method ?? 'GET');
    const refuse = (): void => this.refuse(req, socket, decision, { via, startedAtMs, url: target.href });
    if (decision.verdict === 'deny' || decision.reason === 'upstream-error') return refuse();
    const abort = new CancelSignal();
    socket.once('close', () => abort.abort());
    // A client that ends its side while queued leaves the queue too (queued-upgrade.ts).
    const stopWatching = watchQueuedUpgrade(socket, () => abort.abort());
    const waited = await pipeline.waitForSlot(decision, policyRequest, identityOf(req, decision), abort);
    stopWatching();
    if ('refusal' in waited) {
      // queue-full (429) or proxy-shutting-down (503); a client that left gets nothing.
      if (waited.refusal !== 'aborted') return refuse();
      return void socket.destroy();
    }
    // The upgrade is one request start, in flight until the origin answers (see `slots`); the
    // long-lived stream after a 101 is not paced.
    if (socket.destroyed) return waited.slot.release();
    req.url = pathAndQueryOf(target);
    const userAgent = outgoingUserAgent(admitted.identity, req.headers['user-agent'], decision.identity?.claimedTokens ?? decision.agentTokens);
    if (userAgent === undefined) delete req.headers['user-agent'];
    else req.headers['user-agent'] = userAgent;
    // http-proxy sends `req.headers` as they are: the hop-by-hop fields go (Proxy-Authorization,
    // whose value admission left undefined, would make Node's request throw), the upgrade stays.
    req.headers = upgradeRequestHeaders(req.headers, req.httpVersion, this.deps.viaPseudonym);
    this.decisionHeaders.set(req, decisionHeaderValue(decision));
    const isHttps = target.protocol === 'https:';
    this.relayed.set(req, { decision, startedAtMs, via, url: target.href });
    this.slots.set(req, waited.slot);
    // A client that leaves before the origin answers: its access line says so; the upstream request is destroyed.
    socket.once('close', () => {
      this.releaseSlot(req);
      this.finishRelayed(req, 0, 'CLIENT_ABORTED');
    });
    try {
      this.proxy.ws(req, socket, head, {
        target: target.origin,
        agent: isHttps ? this.httpsAgent : this.httpAgent,
        secure: true,
        proxyTimeout: this.timeoutMs,
      });
    } catch (err) {
      this.releaseSlot(req);
      throw err;
    }
  }

  /**
   * Reads the client's side of a switched stream as WebSocket frames (websocket-frames.ts) as it is
   * relayed: what is no frame (an HTTP request sent into the stream, say) closes both sides before
   * it is written upstream. Listens before http-proxy's pipe (this runs in the 'upgrade' event
   * ahead of http-proxy's listener), so each chunk is read before it is relayed.
   */
  private readClientFrames(req: IncomingMessage, url: string, socket: Duplex, proxySocket: Duplex, allowsReservedBits: boolean): void {
    const reader = new ClientFrameReader(allowsReservedBits);
    const onData = (chunk: Buffer): void => {
      const problem = reader.read(chunk);
      if (problem === undefined) return;
      socket.off('data', onData);
      proxySocket.destroy();
      socket.destroy();
      this.deps.logger?.warn(
        { event: 'websocket-stream-refused', requestId: requestIdOf(req), url, problem },
        'a relayed WebSocket stream carried no WebSocket frames from the client: both sides closed',
      );
    };
    socket.on('data', onData);
  }

  /** Releases the start slot of `req`'s upgrade once (see `slots`); `status` and `retryAfter`: the origin's answer, for its 429/503 pause. */
  private releaseSlot(req: IncomingMessage, status?: number, retryAfter?: string): void {
    const slot = this.slots.get(req);
    if (slot === undefined) return;
    this.slots.delete(req);
    slot.release(status === undefined ? {} : { status, retryAfter: retryAfter ?? null });
  }

  /** Writes the access line of a relayed upgrade once (`status`: what the client got, 0 for nothing). */
  private finishRelayed(req: IncomingMessage, status: number, error: string | null, decision?: Decision): void {
    const relayed = this.relayed.get(req);
    if (relayed === undefined) return;
    this.relayed.delete(req);
    const nowMs = this.deps.clock.nowMs();
    this.deps.onFinished(ownAnswerEntry(req, decision ?? relayed.decision, { startedAtMs: relayed.startedAtMs, nowMs, status, via: relayed.via, url: relayed.url, error }));
  }

  /** Applies a reloaded `upstream.timeout` (ms) to upgrades relayed from now on. */
  setTimeoutMs(timeoutMs: number): void {
    this.timeoutMs = timeoutMs;
  }

  /** Closes the relay's agents and proxy. */
  close(): void {
    this.proxy.close();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
