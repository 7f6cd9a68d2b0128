/**
 * One proxied request's record in the {@link RequestPipeline} (pipeline.ts): the facts its access
 * entry is built from, its node in the in-flight list, its abort flag, the relay's hooks; and the
 * pacing facts a pacer's answer writes into its Decision. Split from pipeline.ts, which decides and
 * orders the steps; this file holds what one request carries between them (issue 11: one record
 * per request instead of a closure per callback).
 */
import { Transform } from 'node:stream';
import type { Clock } from '../clock.js';
import { CancelSignal, type AcquireOutcome, type Slot, type SlotTaker } from '../pacing/index.js';
import { decideWithoutRobots } from '../policy/decide.js';
import type { Decision } from '../policy/decision.js';
import type { Identity } from '../policy/identity.js';
import type { AccessEntry } from '../audit/access-entry.js';
import { clientPeerOf } from '../access/client-peer.js';
import type { SlotHoldWaitingOn } from '../audit/limit-events.js';
import { forwardableResponseFields } from './headers.js';
import { CLIENT_WRITE_TIMEOUT, type RelayControl, type RelayHooks, type RelayOutcome } from './forwarder.js';
import { CLIENT_BODY_TIMEOUT } from './body-watchdog.js';
import { decisionHeaderValue, DECISION_HEADER } from './responses.js';
import { InFlightRequest, type InFlightList } from './in-flight-list.js';
import { clientRequestIdOf, REQUEST_ID_HEADER, requestIdOf } from './request-id.js';
import { originOf, pathAndQueryOf } from './target-origin.js';
import type { PipelineDeps, ProxiedRequest } from './pipeline.js';

/** Counts the bytes of a request body on their way upstream. */
export class ByteCounter extends Transform {
  bytes = 0;
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null, data?: Buffer) => void): void {
    this.bytes += chunk.length;
    callback(null, chunk);
  }
}

/** The `detail` of a `proxy-shutting-down` decision. */
export const SHUTTING_DOWN_DETAIL = 'the proxy is shutting down: it answers no new requests and sends nothing more upstream';

/**
 * Records the pacer's answer on `decision`: a granted slot's delay and wait; or the refusal the
 * decision becomes (`queue-full` with the queue's figures, `fleet-unavailable`, or
 * `proxy-shutting-down` when the drain closed the queue; `aborted` changes nothing).
 * @param startedAtMs when the request began to wait, ms (the pacer's clock).
 */
export function recordPacing(decision: Decision, outcome: AcquireOutcome, delayMs: number, startedAtMs: number, clock: Clock): void {
  if (outcome.granted) {
    decision.pacing = { delayMs: outcome.slot.delayMs, waitedMs: outcome.slot.waitedMs };
    return;
  }
  const refusal = outcome.refusal;
  if (refusal.reason === 'queue-full') {
    decision.verdict = 'deny';
    decision.reason = 'queue-full';
    decision.pacing = {
      delayMs,
      waitedMs: 0,
      queueLength: refusal.queueLength,
      identityQueueLength: refusal.identityQueueLength,
      limit: refusal.limit,
      retryAfterSeconds: refusal.retryAfterSeconds,
    };
  } else if (refusal.reason === 'fleet-unavailable') {
    decision.verdict = 'deny';
    decision.reason = 'fleet-unavailable';
    decision.pacing = { delayMs, waitedMs: 0, retryAfterSeconds: refusal.retryAfterSeconds };
  } else if (refusal.reason === 'closed') {
    // The proxy began to drain while this request waited (or before it got here).
    decision.verdict = 'deny';
    decision.reason = 'proxy-shutting-down';
    decision.detail = SHUTTING_DOWN_DETAIL;
    decision.pacing = { delayMs, waitedMs: Math.max(0, clock.nowMs() - startedAtMs) };
  }
}

/**
 * One request on its way through {@link RequestPipeline.handle}: its facts for the access entry,
 * its node in the in-flight list, its abort flag, the relay's hooks as methods, and the pacer's
 * {@link SlotTaker} (a request waiting for its slot is told it through {@link ProxiedExchange.takeSlot}). One record and
 * two closures per request (the response's `close` listener, the slot-hold callback) instead of a
 * closure per callback and an object per group of facts (issue 11).
 */
export class ProxiedExchange extends InFlightRequest implements RelayHooks, SlotTaker {
  readonly startedAtMs: number;
  readonly requestId: string;
  readonly origin: string;
  /** Path plus query, as matched and forwarded. */
  readonly path: string;
  readonly client: AccessEntry['client'];
  readonly request: AccessEntry['request'];
  /** Aborted when the client leaves; the queue drops the request if it still waits (cheaper than an AbortController). */
  readonly abort = new CancelSignal();
  /** Set once decided (or refused at admission). */
  decision: Decision | undefined = undefined;
  error: string | null = null;
  isFinished = false;
  queueWaitMs: number | null = null;
  upstreamMs: number | null = null;
  upstreamStartedAtMs: number | null = null;
  status = 0;
  upstreamStatus: number | null = null;
  bytesSent = 0;
  bytesReceived = 0;
  /** The start slot, once granted. */
  slot: Slot | undefined = undefined;
  /** When the upstream exchange began, ms. */
  upstreamStarted = 0;
  /** The origin's `Retry-After`, for the pacer's pause on 429/503. */
  retryAfter: string | undefined = undefined;
  /** The relay to the origin while it runs (told the client's `close` by {@link ProxiedExchange.onClose}); undefined before and once settled. */
  relay: RelayControl | undefined = undefined;
  /** True once the relay settled ({@link ProxiedExchange.onSettled}), which may happen within `forwarder.relay` itself (its dispatch threw). */
  isRelaySettled = false;
  /** The request body's counting stage, when it has a body. */
  body: ByteCounter | null = null;
  stopBodyWatch: (() => void) | undefined = undefined;
  isBodyTimedOut = false;
  /** `clients.requestBodyTimeout` when the body stalled, ms. */
  bodyTimeoutMs = 0;
  /** Who admission established the client is (null: no identity), once admitted. */
  identity: Identity | null = null;
  /** The delay the request was paced with, ms (its refusal's pacing facts name it). */
  delayMs = 0;
  /** When the request began to wait for its start slot, ms (the pipeline's clock). */
  waitStartedAtMs = 0;
  /** The pipeline's pacing step, told the pacer's answer when the request waited for its slot ({@link ProxiedExchange.takeSlot}). */
  onPaced: ((x: ProxiedExchange, outcome: AcquireOutcome) => void) | undefined = undefined;
  /**
   * True while {@link RequestPipeline.handle}'s first synchronous run lasts (the pipeline clears
   * it when `handle` returns): the steps it takes at once share `startedAtMs` as their reading of
   * the clock ({@link ProxiedExchange.nowMs}).
   */
  isArrivalTurn = true;

  constructor(
    readonly p: ProxiedRequest,
    private readonly deps: Pick<PipelineDeps, 'clock' | 'viaPseudonym' | 'onFinished' | 'onLimit'>,
    private readonly inFlight: InFlightList,
    readonly userAgent: string | undefined,
    readonly productTokens: string[],
    /** The pipeline's last step, told when the relay ends ({@link ProxiedExchange.onSettled}). */
    private readonly onRelayed: (x: ProxiedExchange, outcome: RelayOutcome) => void,
  ) {
    super();
    const { req, res, target } = p;
    this.startedAtMs = deps.clock.nowMs();
    this.requestId = requestIdOf(req);
    this.origin = originOf(target);
    this.path = pathAndQueryOf(target);
    // The connection's peer, read once per connection (client-peer.ts) and shared by its requests' entries.
    this.client = clientPeerOf(req.socket);
    this.request = { method: req.method ?? 'GET', url: target.href, userAgent: userAgent ?? null, via: p.via, clientRequestId: clientRequestIdOf(req) };
    // `close` is emitted once: `on`, not `once` (no wrapper and bound function per request).
    res.on('close', this.onClose);
    inFlight.add(this);
  }

  /**
   * The clock for a step of the pipeline, ms: `startedAtMs` while the request's arrival is still
   * being handled synchronously (nothing has waited since; the steps are microseconds apart, and
   * the access line's timings are whole milliseconds), else a fresh reading. Spares two clock reads
   * per request that waits for nothing (issue 11).
   */
  nowMs(): number {
    return this.isArrivalTurn ? this.startedAtMs : this.deps.clock.nowMs();
  }

  /**
   * The response's one `close` listener of the pipeline's (the relay adds none: `forwarder.relay`'s
   * `callerWatchesClose`): a client that leaves before its response finished aborts the request
   * (the queue drops it if it still waits) and, while one runs, its relay (issue 11).
   */
  readonly onClose = (): void => {
    if (this.p.res.writableFinished) return;
    this.abort.abort();
    this.relay?.clientClosed();
  };

  /** Told by the pacer when the slot was held past `pacing.maxSlotHold`: counted and logged with what the exchange waits for. */
  readonly onHoldExceeded = (heldMs: number): void => {
    const { req, res } = this.p;
    // What the exchange waits for when its slot hold runs out: the client's body, the client's reading, or the origin.
    const waitingOn: SlotHoldWaitingOn = !req.complete ? 'client-body' : res.writableNeedDrain ? 'client-read' : 'upstream';
    this.deps.onLimit?.({ kind: 'slot-hold-exceeded', origin: (this.decision as Decision).origin, client: this.client, heldMs, waitingOn });
  };

  /** While draining nothing is decided (no robots.txt fetch for a request that will not be forwarded); a request cut before its decision is audited the same way. */
  shuttingDown(): Decision {
    return decideWithoutRobots('proxy-shutting-down', { origin: this.origin, path: this.path, detail: SHUTTING_DOWN_DETAIL, agentTokens: this.productTokens });
  }

  /** Ends the request now with `error` (`abandonInFlight`): its access line is written; its own ending later writes nothing more. */
  override end(error: string): void {
    this.error = error;
    this.finish();
  }

  /** Writes the request's access entry (once): the Decision, the timings and the response as they are now. */
  finish(): void {
    if (this.isFinished) return;
    this.isFinished = true;
    this.inFlight.delete(this);
    // A relay still running (the request ended early by abandonInFlight) keeps the listener: it is
    // the relay's too, and a client that leaves must still abort the upstream exchange.
    if (this.relay === undefined) this.p.res.off('close', this.onClose);
    const error = this.error;
    const decided = this.decision ?? this.shuttingDown();
    // One literal with every field (no entry completed in place, no spread: issue 11).
    const entry: AccessEntry = {
      requestId: this.requestId,
      startedAtMs: this.startedAtMs,
      client: this.client,
      request: this.request,
      productTokens: this.productTokens,
      identity: decided.identity?.name ?? null,
      decision: decided,
      timings: {
        queueWaitMs: this.queueWaitMs,
        upstreamMs: this.upstreamMs,
        upstreamStartedAtMs: this.upstreamStartedAtMs,
        durationMs: this.deps.clock.nowMs() - this.startedAtMs,
      },
      response: {
        status: this.status,
        upstreamStatus: this.upstreamStatus,
        bytesSent: this.bytesSent,
        bytesReceived: this.bytesReceived,
        // A connection the proxy closed for a client timeout was not the client's abort.
        clientAborted: this.abort.aborted && error !== CLIENT_WRITE_TIMEOUT && error !== CLIENT_BODY_TIMEOUT,
      },
      error,
    };
    this.deps.onFinished(entry);
  }

  /** The relay handed the request to a connection: the upstream start, and the pacer's start moved to it. */
  onSent(): void {
    this.upstreamStartedAtMs = this.deps.clock.nowMs();
    this.slot?.markSent();
  }

  /**
   * The origin's response head (undici's raw fields): relayed field by field as the origin wrote
   * them, less the hop-by-hop ones, with `Via`, the decision header and the request id; no header
   * object is built (issue 11). Its first `Retry-After` is kept for the pacer.
   */
  onResponseHead(status: number, rawHeaders: readonly Buffer[]): void {
    const decision = this.decision as Decision;
    decision.upstream = { status };
    const fields = forwardableResponseFields(rawHeaders, '1.1', this.deps.viaPseudonym, this);
    fields.push(DECISION_HEADER, decisionHeaderValue(decision), REQUEST_ID_HEADER, this.requestId);
    this.p.res.writeHead(status, fields);
  }

  /** The pacer's answer for a request that waited in its origin's queue (the exchange is the pacer's {@link SlotTaker}): handed to the pipeline. */
  takeSlot(outcome: AcquireOutcome): void {
    const onPaced = this.onPaced;
    if (onPaced !== undefined) return onPaced(this, outcome);
    // Not waiting through the pipeline (cannot happen): a slot nobody holds is given back.
    if (outcome.granted) outcome.slot.release();
  }

  /** The relay ended: handed to the pipeline, which records the outcome and writes the access entry. */
  onSettled(outcome: RelayOutcome): void {
    this.relay = undefined;
    this.isRelaySettled = true;
    this.onRelayed(this, outcome);
  }

  /** The origin's part is over (the client may not have every byte yet): frees the slot with the origin's answer. Idempotent for the pacer. */
  onUpstreamEnd(): void {
    if (this.upstreamMs === null) this.upstreamMs = this.deps.clock.nowMs() - this.upstreamStarted;
    const status = this.decision?.upstream?.status;
    this.slot?.release(status === undefined ? {} : { status, retryAfter: this.retryAfter ?? null });
  }
}
