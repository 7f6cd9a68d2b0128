/**
 * `Upgrade` requests (WebSocket and the like): decided like any other request
 * (guard, robots.txt, pacing), then relayed by http-proxy, which handles the
 * protocol switch and the bidirectional stream.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { SecureContext } from 'node:tls';
import type { Duplex } from 'node:stream';
import type net from 'node:net';
import type { LookupFunction } from 'node:net';
import httpProxy from 'http-proxy';
import type { Clock } from '../clock.js';
import type { Decision } from '../policy/decision.js';
import type { AccessEntry } from '../audit/access-entry.js';
import type { RequestPipeline } from './pipeline.js';
import { renderProxyResponse } from './responses.js';
import { writeRawResponse } from './raw-response.js';

/** Collaborators of {@link UpgradeRelay}. */
export interface UpgradeDeps {
  clock: Clock;
  onFinished: (entry: AccessEntry) => void;
  lookup: LookupFunction;
  /** TLS trust for https upstreams (system CAs plus `upstream.caFile`), built once; undefined: Node's defaults. */
  secureContext?: SecureContext;
  /** Time to wait for the upstream's answer to the upgrade, ms. */
  timeoutMs: number;
}

/** Decides, paces and relays Upgrade requests through http-proxy (lifecycle: `close()`). */
export class UpgradeRelay {
  private pipeline: RequestPipeline | undefined;
  private readonly proxy = httpProxy.createProxyServer({ ws: true, xfwd: false, changeOrigin: true });
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(private readonly deps: UpgradeDeps) {
    this.httpAgent = new http.Agent({ lookup: deps.lookup } as http.AgentOptions);
    this.httpsAgent = new https.Agent({ lookup: deps.lookup, ...(deps.secureContext ? { secureContext: deps.secureContext } : {}) } as https.AgentOptions);
    // http-proxy reports socket errors here; without a listener it would throw.
    this.proxy.on('error', (_err, _req, target) => {
      const socket = target as Duplex | undefined;
      socket?.destroy?.();
    });
    // http-proxy pipes the two sockets, but both ends are half-open sockets (http servers allow
    // it) and pipe forwards only 'end': a side that leaves would leave the other open for ever.
    // An upgraded stream is over when either side ends or closes.
    this.proxy.on('proxyReqWs', (proxyReq: http.ClientRequest, _req: IncomingMessage, socket: Duplex) => {
      socket.once('close', () => proxyReq.destroy());
      proxyReq.once('upgrade', (_res: IncomingMessage, proxySocket: Duplex) => {
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

  /** Refuses an upgrade with the proxy's own response, and audits it. */
  refuse(req: IncomingMessage, socket: Duplex, decision: Decision, startedAtMs = this.deps.clock.nowMs()): void {
    const rendered = renderProxyResponse(decision, { accept: req.headers['accept'], nowMs: this.deps.clock.nowMs() });
    writeRawResponse(socket, rendered);
    this.audit(req, decision, startedAtMs, rendered.status, req.url ?? '');
  }

  private audit(req: IncomingMessage, decision: Decision, startedAtMs: number, status: number, url: string): void {
    this.deps.onFinished({
      startedAtMs,
      client: { address: req.socket.remoteAddress ?? '', port: req.socket.remotePort ?? 0 },
      request: { method: req.method ?? 'GET', url: url.slice(0, 2048), userAgent: req.headers['user-agent'] ?? null, via: 'http' },
      decision,
      productTokens: decision.agentTokens,
      timings: { queueWaitMs: decision.pacing?.waitedMs ?? null, upstreamMs: null, durationMs: this.deps.clock.nowMs() - startedAtMs },
      response: { status, upstreamStatus: null, bytesSent: 0, bytesReceived: 0, clientAborted: false },
      error: null,
    });
  }

  /** Decides, paces and relays one upgrade request to `target`. Never rejects. */
  async relay(req: IncomingMessage, socket: Duplex, head: Buffer, target: URL): Promise<void> {
    const startedAtMs = this.deps.clock.nowMs();
    socket.on('error', () => socket.destroy());
    const pipeline = this.pipeline;
    if (!pipeline) return void socket.destroy();
    const { decision: decided } = await pipeline.decideFor(target, req.headers['user-agent']);
    const decision = decided;
    if (decision.verdict === 'deny' || decision.reason === 'upstream-error') return this.refuse(req, socket, decision, startedAtMs);
    const abort = new AbortController();
    socket.once('close', () => abort.abort());
    const waited = await pipeline.waitForSlot(decision, abort.signal);
    if ('refusal' in waited) {
      if (waited.refusal === 'queue-full') return this.refuse(req, socket, decision, startedAtMs);
      return void socket.destroy();
    }
    // The upgrade is one request start; the long-lived stream after it is not paced.
    waited.slot.release();
    req.url = target.pathname + target.search;
    const isHttps = target.protocol === 'https:';
    this.proxy.ws(req, socket, head, {
      target: target.origin,
      agent: isHttps ? this.httpsAgent : this.httpAgent,
      secure: true,
      proxyTimeout: this.deps.timeoutMs,
    });
    this.audit(req, decision, startedAtMs, 101, target.href);
  }

  /** Closes the relay's agents and proxy. */
  close(): void {
    this.proxy.close();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
