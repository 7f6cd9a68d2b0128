/**
 * The Node floor (issue 11): the cheapest data paths Node's HTTP stack offers a forward proxy,
 * each a child process of bench/proxy-throughput.bench.ts. Plain JavaScript run by plain `node`
 * (no tsx loader, no build), so nothing but Node and the client library is on the measured path.
 *
 *   node bench/floor-roles.mjs VARIANT [OPTIONS_JSON]
 *
 * VARIANT:
 *   node-floor-server  Node's http server answering the 96-byte page itself: no upstream, no proxying.
 *                      What the server side alone costs (parser, IncomingMessage, ServerResponse, socket).
 *   bare-http          a forwarder on node:http's client: one keep-alive http.Agent (64 sockets per
 *                      origin, lifo), `http.request`, the response piped into `res`; header objects.
 *   bare-dispatch      a forwarder on undici `Pool.dispatch` with a handler writing each chunk straight
 *                      into `res` (robots-proxy's technique, src/proxy/forwarder.ts): header objects
 *                      both ways (undici parses the raw response headers into an object, as for
 *                      robots-proxy's `onResponseStart`).
 *   bare-dispatch-raw  the same with raw header arrays both ways: the request's `req.rawHeaders`
 *                      filtered into a flat array for undici, the response through undici's
 *                      `onHeaders(status, rawHeaders)` (no object built) into
 *                      `res.writeHead(status, flatArray)`.
 *   bare-request       the bench's `bare` target (in proxy-throughput.bench.ts, run under tsx) under
 *                      plain node: `Pool.request` (promise, body stream, AbortSignal), `stream.pipeline`.
 *   rp-forwarder       robots-proxy's own UpstreamForwarder and header copies (the tsc build,
 *                      dist/), nothing else of the pipeline (see rpForwarder below).
 *
 * OPTIONS_JSON (optional): `{"server": {...}, "pool": {...}, "cork": true, "cap": 4}`: merged into the
 * `http.createServer` options and the undici `Pool` options; `cork` corks the client socket from
 * the response head to the end of the body (one write for both); `cap` (rp-forwarder only) lets
 * at most that many requests per origin be in the upstream at once, the others waiting in a plain
 * FIFO semaphore (an array per origin, a closure per waiter, released when the origin's part ends,
 * as robots-proxy frees its pacer slot): what the per-origin cap costs on Node's stack with the
 * cheapest bookkeeping (`rp-forwarder-cap4` in the bench); `spinUs` (rp-forwarder only) adds that
 * many µs of busy work per request as it arrives, before the semaphore (a forwarder as slow as
 * robots-proxy's pipeline, with the same syscalls: does the cap's cost grow with the work per request?);
 * `stableAccept` (any variant) installs robots-proxy's accept (dist/proxy/socket-accept.js: the
 * accepted socket's options in one shape, no new V8 maps per connection) on the server.
 *
 * Every forwarder drops hop-by-hop fields and those named in Connection (RFC 9110 §7.6.1), sets
 * Host, answers 502 when the origin fails, and aborts the upstream exchange when the client
 * goes away. Nothing else: no robots.txt, pacing, logging, metrics, timeouts or guard.
 * It sends `{ port }` over IPC when listening; SIGTERM exits normally (so --cpu-prof writes).
 */
import http from 'node:http';
import { pipeline } from 'node:stream';
import { Pool } from 'undici';

const PAGE = Buffer.from('x'.repeat(95) + '\n');
const ROBOTS_TXT = 'User-agent: *\nAllow: /\n';
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

const variant = process.argv[2];
const options = JSON.parse(process.argv[3] || '{}');
const serverOptions = { keepAliveTimeout: 60_000, ...(options.server ?? {}) };
const poolOptions = { connections: 64, pipelining: 1, ...(options.pool ?? {}) };
const cork = options.cork === true;
const cap = Number.isInteger(options.cap) && options.cap > 0 ? options.cap : undefined;
const spinUs = typeof options.spinUs === 'number' && options.spinUs > 0 ? options.spinUs : 0;
/** Busy work of `spinUs` µs (option `spinUs`, rp-forwarder only): a forwarder as slow as a fuller pipeline, same syscalls. */
function spin() {
  const until = performance.now() + spinUs / 1000;
  while (performance.now() < until);
}

/** Names listed in a Connection value, lower case; undefined when there is none. */
function listedIn(value) {
  if (value === undefined) return undefined;
  return new Set(String(value).toLowerCase().split(',').map((s) => s.trim()));
}

/** A header object without hop-by-hop fields. */
function stripHopByHop(headers) {
  const named = listedIn(headers['connection']);
  const out = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP.has(name) || named?.has(name)) continue;
    out[name] = value;
  }
  return out;
}

/** A flat raw header array (strings or latin1 Buffers) without hop-by-hop fields, as strings. */
function stripHopByHopRaw(raw) {
  let named;
  for (let i = 0; i < raw.length; i += 2) {
    const name = typeof raw[i] === 'string' ? raw[i] : raw[i].toString('latin1');
    if (name.length === 10 && name.toLowerCase() === 'connection') named = listedIn(typeof raw[i + 1] === 'string' ? raw[i + 1] : raw[i + 1].toString('latin1'));
  }
  const out = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = typeof raw[i] === 'string' ? raw[i] : raw[i].toString('latin1');
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || named?.has(lower)) continue;
    out.push(name, typeof raw[i + 1] === 'string' ? raw[i + 1] : raw[i + 1].toString('latin1'));
  }
  return out;
}

/** The request's target, or undefined when its URL is not absolute-form http. */
function targetOf(req) {
  try {
    const url = new URL(req.url ?? '');
    return url.protocol === 'http:' ? url : undefined;
  } catch {
    return undefined;
  }
}

const hasBody = (req) => (req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined);

function badGateway(res) {
  if (!res.headersSent) res.writeHead(502, { 'content-length': '0' }).end();
  else res.destroy();
}

/** node-floor-server: the page, from the server itself (the origins' own handler). */
function floorServer(req, res) {
  if (req.url === '/robots.txt') {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(ROBOTS_TXT.length) });
    res.end(ROBOTS_TXT);
    return;
  }
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(PAGE.length) });
  res.end(PAGE);
}

/** bare-http: node:http's client with a keep-alive Agent. */
function httpForwarder() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: poolOptions.connections, scheduling: 'lifo' });
  return (req, res) => {
    const target = targetOf(req);
    if (target === undefined) return void res.writeHead(400, { 'content-length': '0' }).end();
    const headers = stripHopByHop(req.headers);
    headers['host'] = target.host;
    const up = http.request({ host: target.hostname, port: target.port || 80, method: req.method, path: target.pathname + target.search, headers, agent });
    up.once('response', (response) => {
      if (cork) res.socket?.cork();
      res.writeHead(response.statusCode, stripHopByHop(response.headers));
      response.pipe(res);
      if (cork) response.once('end', () => res.socket?.uncork());
    });
    up.once('error', () => badGateway(res));
    res.once('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    if (hasBody(req)) req.pipe(up);
    else up.end();
  };
}

/** The pool of an origin (one per origin, created on first use). */
function poolsOf() {
  const pools = new Map();
  return (origin) => {
    let pool = pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, poolOptions);
      pools.set(origin, pool);
    }
    return pool;
  };
}

/** bare-dispatch: undici's new handler API (onResponseStart gets a header object), chunks straight into res. */
class ObjectRelay {
  constructor(res) {
    this.res = res;
    this.controller = undefined;
    this.onClose = () => {
      if (!res.writableFinished) this.controller?.abort(new Error('client closed'));
    };
    this.onDrain = () => this.controller?.resume();
    res.once('close', this.onClose);
  }
  onRequestStart(controller) {
    this.controller = controller;
  }
  onResponseStart(_controller, statusCode, headers) {
    if (statusCode < 200) return;
    if (cork) this.res.socket?.cork();
    this.res.writeHead(statusCode, stripHopByHop(headers));
  }
  onResponseData(controller, chunk) {
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once('drain', this.onDrain);
    }
  }
  onResponseEnd() {
    this.res.off('close', this.onClose);
    this.res.end();
    if (cork) this.res.socket?.uncork();
  }
  onResponseError(_controller, _error) {
    this.res.off('close', this.onClose);
    badGateway(this.res);
  }
}

/** bare-dispatch-raw: undici's raw handler API (onConnect/onHeaders/onData/onComplete/onError): no header objects. */
class RawRelay {
  constructor(res) {
    this.res = res;
    this.abort = undefined;
    this.resume = undefined;
    this.onClose = () => {
      if (!res.writableFinished) this.abort?.(new Error('client closed'));
    };
    this.onDrain = () => this.resume?.();
    res.once('close', this.onClose);
  }
  onConnect(abort) {
    this.abort = abort;
  }
  onHeaders(statusCode, rawHeaders, resume) {
    if (statusCode < 200) return true;
    this.resume = resume;
    if (cork) this.res.socket?.cork();
    this.res.writeHead(statusCode, stripHopByHopRaw(rawHeaders));
    return true;
  }
  onData(chunk) {
    if (this.res.write(chunk)) return true;
    this.res.once('drain', this.onDrain);
    return false;
  }
  onComplete() {
    this.res.off('close', this.onClose);
    this.res.end();
    if (cork) this.res.socket?.uncork();
  }
  onError() {
    this.res.off('close', this.onClose);
    badGateway(this.res);
  }
}

function dispatchForwarder(raw) {
  const poolFor = poolsOf();
  return (req, res) => {
    const target = targetOf(req);
    if (target === undefined) return void res.writeHead(400, { 'content-length': '0' }).end();
    let headers;
    if (raw) {
      headers = stripHopByHopRaw(req.rawHeaders);
      let host = -1;
      for (let i = 0; i < headers.length; i += 2) if (headers[i].length === 4 && headers[i].toLowerCase() === 'host') host = i;
      if (host >= 0) headers[host + 1] = target.host;
      else headers.push('host', target.host);
    } else {
      headers = stripHopByHop(req.headers);
      headers['host'] = target.host;
    }
    const handler = raw ? new RawRelay(res) : new ObjectRelay(res);
    try {
      poolFor(target.origin).dispatch({ method: req.method, path: target.pathname + target.search, headers, body: hasBody(req) ? req : null }, handler);
    } catch {
      badGateway(res);
    }
  };
}

/**
 * rp-forwarder: robots-proxy's own forwarder (dist/proxy/forwarder.js, the tsc build) and header
 * handling (upstreamRequestFields upstream, forwardableResponseFields back, the target guard's connector, the write bound of the
 * default config), with nothing of the pipeline around it: no admission, robots.txt, pacing, log or
 * metrics. The difference to bare-dispatch is the forwarder's own; to rp, the rest of the pipeline.
 */
async function rpForwarder() {
  const dist = new URL('../dist/proxy/', import.meta.url);
  const { UpstreamForwarder } = await import(new URL('forwarder.js', dist).href);
  const { upstreamRequestFields, forwardableResponseFields, makeViaPseudonym } = await import(new URL('headers.js', dist).href);
  const { TargetGuard } = await import(new URL('target-guard.js', dist).href);
  const guard = new TargetGuard({ allowPrivate: true });
  // config/default.yaml: upstream.connectTimeout 10 s, upstream.timeout 30 s, clients.responseWriteTimeout 30 s.
  const forwarder = new UpstreamForwarder({ connectTimeoutMs: 10_000, timeoutMs: 30_000, responseWriteTimeoutMs: 30_000, createConnector: (o) => guard.connector(o) });
  const via = makeViaPseudonym();
  const forward = (req, res, target, release) => {
    const headers = upstreamRequestFields(req.headers, req.httpVersion, via, target.host, undefined, req.headers['user-agent']);
    forwarder.relay({ origin: target.origin, method: req.method, path: target.pathname + target.search, headers, body: hasBody(req) ? req : null }, res, {
      onSent: () => undefined,
      onResponseHead: (status, rawHeaders) => res.writeHead(status, forwardableResponseFields(rawHeaders, '1.1', via)),
      onUpstreamEnd: release,
      onSettled: (outcome) => {
        release?.();
        if (outcome.error !== undefined && !outcome.clientAborted) badGateway(res);
      },
    });
  };
  if (cap === undefined) {
    return (req, res) => {
      const target = targetOf(req);
      if (target === undefined) return void res.writeHead(400, { 'content-length': '0' }).end();
      if (spinUs > 0) spin();
      forward(req, res, target, undefined);
    };
  }
  const semaphoreFor = semaphoresOf(cap);
  return (req, res) => {
    const target = targetOf(req);
    if (target === undefined) return void res.writeHead(400, { 'content-length': '0' }).end();
    if (spinUs > 0) spin();
    semaphoreFor(target.origin).acquire(res, (release) => forward(req, res, target, release));
  };
}

/**
 * A FIFO counting semaphore per origin (`cap`): at most `cap` holders; the others wait in arrival
 * order in an array (a head index, compacted when half is spent). A waiter whose client left is
 * skipped. `release` is the holder's (once: later calls do nothing).
 */
function semaphoresOf(cap) {
  const semaphores = new Map();
  const create = () => {
    let inFlight = 0;
    let waiting = [];
    let head = 0;
    const grant = (res, start) => {
      inFlight += 1;
      let isReleased = false;
      start(() => {
        if (isReleased) return;
        isReleased = true;
        inFlight -= 1;
        next();
      });
    };
    const next = () => {
      while (inFlight < cap && head < waiting.length) {
        const [res, start] = waiting[head];
        waiting[head] = undefined;
        head += 1;
        if (head > 1024 && head * 2 > waiting.length) {
          waiting = waiting.slice(head);
          head = 0;
        }
        if (!res.destroyed) grant(res, start);
      }
    };
    return {
      acquire(res, start) {
        if (inFlight < cap && head === waiting.length) return grant(res, start);
        waiting.push([res, start]);
      },
    };
  };
  return (origin) => {
    let semaphore = semaphores.get(origin);
    if (semaphore === undefined) {
      semaphore = create();
      semaphores.set(origin, semaphore);
    }
    return semaphore;
  };
}

/** bare-request: the bench's `bare` target's technique under plain node: `pool.request` (a promise, a body stream, an AbortSignal) and `stream.pipeline` into res. */
function requestForwarder() {
  const poolFor = poolsOf();
  return (req, res) => {
    const target = targetOf(req);
    if (target === undefined) return void res.writeHead(400, { 'content-length': '0' }).end();
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const headers = stripHopByHop(req.headers);
    headers['host'] = target.host;
    poolFor(target.origin)
      .request({ method: req.method, path: target.pathname + target.search, headers, body: hasBody(req) ? req : null, signal: abort.signal })
      .then(
        (up) => {
          res.writeHead(up.statusCode, stripHopByHop(up.headers));
          pipeline(up.body, res, () => undefined);
        },
        () => badGateway(res),
      );
  };
}

const handlers = {
  'bare-request': requestForwarder,
  'rp-forwarder': rpForwarder,
  'node-floor-server': () => floorServer,
  'bare-http': httpForwarder,
  'bare-dispatch': () => dispatchForwarder(false),
  'bare-dispatch-raw': () => dispatchForwarder(true),
};
if (!(variant in handlers)) throw new Error(`floor-roles: unknown variant ${variant}; one of ${Object.keys(handlers).join(', ')}`);
const server = http.createServer(serverOptions, await handlers[variant]());
if (options.stableAccept === true) (await import(new URL('../dist/proxy/socket-accept.js', import.meta.url))).acceptWithStableSocketOptions(server);
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
