/**
 * The origin's response head as the client receives it, read as raw bytes (issue 11: the head is
 * relayed from undici's raw fields, with no header object in between). Hand-written heads from a
 * raw TCP origin (test/helpers/raw-origin.ts): every field keeps its spelling, order, value bytes
 * and repetitions (each Set-Cookie its own line); the hop-by-hop fields and those `Connection`
 * names are dropped (RFC 9110 §7.6.1), `Via` gets this proxy's hop (§7.6.3), the decision header
 * and the request id follow; framing, `Date`, 1xx, obs-fold, heads near and over the size bound,
 * and the origin's `Retry-After` behave as before (the same cases against the header-object path
 * of main 4614386 differ only in the spelling of names, lower-cased there, and in the order of
 * repeated fields, grouped by name there).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { captureLogs, startTestProxy, type LogCapture } from '../helpers/harness.js';
import { openRawClient, rawExchange, waitFor, type RawClient } from '../helpers/proxy-client.js';
import { parseRelayedResponse, startRawOrigin, type RawOrigin, type RelayedResponse } from '../helpers/raw-origin.js';

const UA = 'ExampleBot/1.0';

/** 120 fields of ~110 bytes: a 13 KB head, under undici's 16 KiB bound. */
const BIG_FIELDS = Array.from({ length: 120 }, (_, i) => `X-Field-${String(i).padStart(3, '0')}: ${String(i).repeat(100).slice(0, 100)}`);
/** 200 of them: 22 KB, over the bound. */
const HUGE_FIELDS = Array.from({ length: 200 }, (_, i) => `X-Field-${String(i).padStart(3, '0')}: ${'v'.repeat(100)}`);

/** A line Node adds, its keep-alive timeout (the proxy's setting) written N. */
const nodeLine = (line: string): string => line.replace(/^(Keep-Alive: timeout=)\d+$/, '$1N');

const head = (statusLine: string, fields: readonly string[], body = ''): string => `${statusLine}\r\n${fields.join('\r\n')}${fields.length ? '\r\n' : ''}\r\n${body}`;

const ANSWERS = {
  '/dups': head(
    'HTTP/1.1 200 OK',
    ['Set-Cookie: a=1; Path=/; Expires=Wed, 09 Jun 2027 10:18:14 GMT', 'X-Dup: one', 'Set-Cookie: b=2; HttpOnly', 'X-Dup: two', 'Cache-Control: no-store', 'Content-Length: 5'],
    'hello',
  ),
  '/spelling': head(
    'HTTP/1.1 200 OK',
    ['CoNtEnT-TyPe: text/plain; charset=ISO-8859-1', 'X-MiXeD-CaSe: Value  with two  spaces', 'x-empty:', 'X-Latin1: caf\xe9 na\xefve \xff', 'X-Tab: a\tb', 'Content-Length: 2'],
    'ok',
  ),
  '/hop': head(
    'HTTP/1.1 200 OK',
    [
      'Connection: keep-alive, X-Hop-Secret, Transfer-Encoding',
      'X-Hop-Secret: s3cret',
      'Keep-Alive: timeout=5, max=100',
      'Proxy-Authenticate: Basic realm="x"',
      'Proxy-Connection: keep-alive',
      'X-Before: kept',
      'Trailer: X-Checksum',
      'TE: trailers',
      'Upgrade: h2c',
      'X-After: kept',
      'Transfer-Encoding: chunked',
    ],
    '5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n',
  ),
  '/connection-two-fields': head('HTTP/1.1 200 OK', ['Connection: X-One', 'X-One: gone', 'X-Two: gone too', 'connection: x-two', 'X-Three: kept', 'Content-Length: 0']),
  '/via': head('HTTP/1.1 200 OK', ['Via: 1.0 cache-a', 'X-Between: 1', 'via: 1.1 cache-b (Squid/5.7)', 'Content-Length: 0']),
  '/date': head('HTTP/1.1 200 OK', ['Date: Tue, 01 Dec 2026 00:00:00 GMT', 'Content-Length: 0']),
  '/early-hints': `${head('HTTP/1.1 103 Early Hints', ['Link: </a.css>; rel=preload'])}${head('HTTP/1.1 200 OK', ['X-Final: yes', 'Content-Length: 2'], 'ok')}`,
  '/continue': `${head('HTTP/1.1 100 Continue', [])}${head('HTTP/1.1 200 OK', ['X-Final: yes', 'Content-Length: 2'], 'ok')}`,
  '/continue-twice': `${head('HTTP/1.1 100 Continue', [])}${head('HTTP/1.1 100', ['X-Interim: 2'])}${head('HTTP/1.1 200 OK', ['X-Final: yes', 'Content-Length: 2'], 'ok')}`,
  '/continue-then-hints': `${head('HTTP/1.1 100 Continue', [])}${head('HTTP/1.1 103 Early Hints', ['Link: </b.js>; rel=preload; as=script'])}${head('HTTP/1.1 200 OK', ['X-Final: yes', 'Content-Length: 2'], 'ok')}`,
  '/fold': head('HTTP/1.1 200 OK', ['X-Folded: first', '  second', 'X-Next: n', 'Content-Length: 2'], 'ok'),
  '/big': head('HTTP/1.1 200 OK', [...BIG_FIELDS, 'Content-Length: 3'], 'big'),
  '/huge': head('HTTP/1.1 200 OK', [...HUGE_FIELDS, 'Content-Length: 4'], 'huge'),
  '/head-only': head('HTTP/1.1 200 OK', ['Content-Length: 1000', 'Content-Type: text/html']),
  '/no-content': head('HTTP/1.1 204 No Content', ['X-Nothing: here']),
  '/not-modified': head('HTTP/1.1 304 Not Modified', ['ETag: "abc"', 'Cache-Control: max-age=60']),
  '/overloaded': head('HTTP/1.1 503 Service Unavailable', ['RETRY-AFTER: 60', 'Retry-After: 5', 'Content-Length: 0']),
  '/origin-closes': head('HTTP/1.1 200 OK', ['Connection: close', 'Content-Length: 3'], 'bye'),
};

describe('the response head relayed from raw fields', () => {
  let origin: RawOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let logs: LogCapture;
  let client: RawClient;
  let read = 0;

  before(async () => {
    const answers: Record<string, { bytes: string; close?: boolean }> = {};
    for (const [path, bytes] of Object.entries(ANSWERS)) answers[path] = { bytes, close: path === '/origin-closes' };
    origin = await startRawOrigin(answers);
    logs = captureLogs();
    proxy = await startTestProxy({ pacing: { maxWait: '3s' } }, { logger: logs.logger });
    client = await openRawClient(proxy.proxyAddress.port);
  });

  after(async () => {
    client?.socket.destroy();
    await proxy?.close();
    await origin?.close();
  });

  /** Sends `method path` on the one keep-alive client connection; resolves with the response once whole. */
  async function send(path: string, method = 'GET', extra = ''): Promise<RelayedResponse> {
    client.socket.write(`${method} ${origin.base}${path} HTTP/1.1\r\nHost: ${origin.host}\r\nUser-Agent: ${UA}\r\n${extra}\r\n`);
    let response: RelayedResponse | undefined;
    await waitFor(() => (response = parseRelayedResponse(client.received().slice(read), method === 'HEAD')) !== undefined, `the answer to ${method} ${path}`);
    read += response!.wireLength;
    return response!;
  }

  /** The next response on the client connection, for a request already sent (`path` names it in failures). */
  async function sendNothing(path: string): Promise<RelayedResponse> {
    let response: RelayedResponse | undefined;
    await waitFor(() => (response = parseRelayedResponse(client.received().slice(read))) !== undefined, `the next answer to ${path}`);
    read += response!.wireLength;
    return response!;
  }

  /** The access line of the request `r` answered (by its request id). */
  async function accessLineOf(r: RelayedResponse): Promise<Record<string, unknown>> {
    const id = r.lines.find((l) => l.startsWith('x-robots-proxy-request-id: '))?.slice(27);
    const find = (): Record<string, unknown> | undefined => logs.lines.find((l) => l['msg'] === 'request' && l['requestId'] === id);
    await waitFor(() => find() !== undefined, 'the access line');
    return find()!;
  }

  /** The lines the proxy adds after the origin's fields: Via (when the origin sent none), the decision, the request id, then Node's own. */
  function assertOwnLines(lines: readonly string[], from: number, options: { via?: boolean; date?: boolean } = {}): void {
    let at = from;
    if (options.via !== false) assert.match(lines[at++] ?? '', /^via: 1\.1 robots-proxy-[a-z0-9]+$/);
    assert.equal(lines[at++], 'x-robots-proxy-decision: allow; reason=robots-unavailable');
    assert.match(lines[at++] ?? '', /^x-robots-proxy-request-id: [0-9a-f]+-[0-9a-z]+$/);
    const node = lines.slice(at);
    if (options.date !== false) assert.match(node.shift() ?? '', /^Date: /);
    assert.deepEqual(node.map(nodeLine), ['Connection: keep-alive', 'Keep-Alive: timeout=N']);
  }

  it('relays repeated fields as separate lines in their order, each Set-Cookie whole', async () => {
    const r = await send('/dups');
    assert.equal(r.statusLine, 'HTTP/1.1 200 OK');
    assert.deepEqual(r.lines.slice(0, 6), ANSWERS['/dups'].split('\r\n').slice(1, 7));
    assertOwnLines(r.lines, 6);
    assert.equal(r.body, 'hello');
  });

  it("keeps the origin's spelling of names and the bytes of values (latin1, tabs, inner spaces, empty)", async () => {
    const r = await send('/spelling');
    assert.deepEqual(r.lines.slice(0, 6), [
      'CoNtEnT-TyPe: text/plain; charset=ISO-8859-1',
      'X-MiXeD-CaSe: Value  with two  spaces',
      'x-empty: ',
      'X-Latin1: caf\xe9 na\xefve \xff',
      'X-Tab: a\tb',
      'Content-Length: 2',
    ]);
    assertOwnLines(r.lines, 6);
  });

  it('drops the hop-by-hop fields and those Connection names, and re-frames the chunked body', async () => {
    const r = await send('/hop');
    assert.deepEqual(r.lines.slice(0, 2), ['X-Before: kept', 'X-After: kept']);
    assert.match(r.lines[2] ?? '', /^via: /);
    // Node frames the relayed body itself (no length known): chunked, its own Transfer-Encoding line.
    const node = r.lines.slice(5);
    assert.deepEqual(node.filter((l) => !l.startsWith('Date: ')).map(nodeLine), ['Connection: keep-alive', 'Keep-Alive: timeout=N', 'Transfer-Encoding: chunked']);
    assert.equal(r.body, 'hello world');
    for (const gone of ['X-Hop-Secret', 'Proxy-Authenticate', 'Proxy-Connection', 'Trailer', 'TE', 'Upgrade', 'max=100']) {
      assert.ok(!r.lines.some((l) => l.includes(gone)), `${gone} relayed: ${r.lines.join(' | ')}`);
    }
  });

  it('drops what every Connection field names, whichever comes first', async () => {
    const r = await send('/connection-two-fields');
    assert.deepEqual(r.lines.slice(0, 2), ['X-Three: kept', 'Content-Length: 0']);
    assertOwnLines(r.lines, 2);
  });

  it("makes the origin's Via fields one, at the first one's place, with this proxy's hop", async () => {
    const r = await send('/via');
    assert.match(r.lines[0] ?? '', /^Via: 1\.0 cache-a, 1\.1 cache-b \(Squid\/5\.7\), 1\.1 robots-proxy-[a-z0-9]+$/);
    assert.deepEqual(r.lines.slice(1, 3), ['X-Between: 1', 'Content-Length: 0']);
    assertOwnLines(r.lines, 3, { via: false });
  });

  it("keeps the origin's Date and adds none", async () => {
    const r = await send('/date');
    assert.deepEqual(r.lines.slice(0, 2), ['Date: Tue, 01 Dec 2026 00:00:00 GMT', 'Content-Length: 0']);
    assertOwnLines(r.lines, 2, { date: false });
  });

  it('relays a 103 Early Hints (its Link) to an HTTP/1.1 client before the final response (RFC 9110 §15.2)', async () => {
    const hints = await send('/early-hints');
    assert.equal(hints.statusLine, 'HTTP/1.1 103 Early Hints');
    assert.deepEqual(hints.lines, ['Link: </a.css>; rel=preload']);
    const r = await sendNothing('/early-hints');
    assert.equal(r.statusLine, 'HTTP/1.1 200 OK');
    assert.deepEqual(r.lines.slice(0, 2), ['X-Final: yes', 'Content-Length: 2']);
    assertOwnLines(r.lines, 2);
    assert.equal(r.body, 'ok');
  });

  it('relays no 1xx to an HTTP/1.0 client, only the final response', async () => {
    const text = await rawExchange(proxy.proxyAddress.port, `GET ${origin.base}/early-hints HTTP/1.0\r\nUser-Agent: ${UA}\r\n\r\n`, 5000);
    assert.match(text, /^HTTP\/1\.1 200 OK\r\nX-Final: yes\r\n/, text.slice(0, 200));
    assert.doesNotMatch(text, /103|Link:/);
  });

  for (const path of ['/continue', '/continue-twice']) {
    it(`reads past an unsolicited 100 Continue from the origin and relays the final response (${path})`, async () => {
      const r = await send(path);
      assert.equal(r.statusLine, 'HTTP/1.1 200 OK');
      assert.deepEqual(r.lines.slice(0, 2), ['X-Final: yes', 'Content-Length: 2']);
      assertOwnLines(r.lines, 2);
      assert.equal(r.body, 'ok');
      const line = await accessLineOf(r);
      assert.equal(line['status'], 200);
      assert.equal(line['upstreamStatus'], 200);
    });
  }

  it('reads past a 100, then relays the 103 that follows it and the final response', async () => {
    const hints = await send('/continue-then-hints');
    assert.equal(hints.statusLine, 'HTTP/1.1 103 Early Hints');
    assert.deepEqual(hints.lines, ['Link: </b.js>; rel=preload; as=script']);
    const r = await sendNothing('/continue-then-hints');
    assert.equal(r.statusLine, 'HTTP/1.1 200 OK');
    assert.equal(r.body, 'ok');
  });

  it('answers 502 upstream-error to a head with a folded field (obs-fold; RFC 9112 §5.2 allows a proxy that), and logs it', async () => {
    const r = await send('/fold');
    assert.match(r.statusLine, /^HTTP\/1\.1 502 /);
    assert.ok(r.lines.includes('x-robots-proxy-decision: allow; reason=upstream-error'), r.lines.join(' | '));
    assert.ok(!r.lines.some((l) => /^X-(Folded|Next):/.test(l)));
    const line = await accessLineOf(r);
    assert.equal(line['status'], 502);
    // undici's parser refuses the head: nothing of it was handed on.
    assert.equal(line['upstreamStatus'], null);
    assert.equal(line['error'], 'UPSTREAM_ERROR');
  });

  it('relays a 13 KB head whole, field by field', async () => {
    const r = await send('/big');
    assert.deepEqual(r.lines.slice(0, 121), [...BIG_FIELDS, 'Content-Length: 3']);
    assertOwnLines(r.lines, 121);
    assert.equal(r.body, 'big');
  });

  it("answers 502 upstream-error to a head over undici's bound, and logs it", async () => {
    const r = await send('/huge');
    assert.match(r.statusLine, /^HTTP\/1\.1 502 /);
    assert.ok(r.lines.includes('x-robots-proxy-decision: allow; reason=upstream-error'), r.lines.join(' | '));
    assert.ok(!r.lines.some((l) => l.startsWith('X-Field-')));
    const line = await accessLineOf(r);
    assert.equal(line['status'], 502);
    assert.equal(line['error'], 'UND_ERR_HEADERS_OVERFLOW');
  });

  it("relays a HEAD answer's Content-Length with no body", async () => {
    const r = await send('/head-only', 'HEAD');
    assert.deepEqual(r.lines.slice(0, 2), ['Content-Length: 1000', 'Content-Type: text/html']);
    assertOwnLines(r.lines, 2);
    // The next answer on the connection starts right after this head.
    assert.equal((await send('/dups')).body, 'hello');
  });

  it('relays 204 and 304 heads without a body or framing of their own', async () => {
    const noContent = await send('/no-content');
    assert.equal(noContent.statusLine, 'HTTP/1.1 204 No Content');
    assert.deepEqual(noContent.lines.slice(0, 1), ['X-Nothing: here']);
    assertOwnLines(noContent.lines, 1);
    const notModified = await send('/not-modified', 'GET', 'If-None-Match: "abc"\r\n');
    assert.equal(notModified.statusLine, 'HTTP/1.1 304 Not Modified');
    assert.deepEqual(notModified.lines.slice(0, 2), ['ETag: "abc"', 'Cache-Control: max-age=60']);
    assertOwnLines(notModified.lines, 2);
    assert.equal((await send('/dups')).body, 'hello');
  });

  it('keeps the client connection when the origin closes its own (its Connection: close is not relayed)', async () => {
    const r = await send('/origin-closes');
    assert.deepEqual(r.lines.slice(0, 1), ['Content-Length: 3']);
    assertOwnLines(r.lines, 1);
    assert.equal(r.body, 'bye');
    assert.equal((await send('/dups')).body, 'hello');
  });

  it('sends the request head upstream without hop-by-hop fields, with Host and Via set', async () => {
    const before = origin.requests.length;
    const r = await send('/dups', 'GET', 'Connection: keep-alive, X-Trace\r\nX-Trace: 1\r\nTE: trailers\r\nMax-Forwards: 5\r\nAccept: */*\r\nVia: 1.0 client-side\r\n');
    assert.equal(r.body, 'hello');
    const sent = origin.requests.slice(before).find((h) => h.startsWith('GET /dups '));
    assert.ok(sent !== undefined);
    const lines = sent.split('\r\n').slice(1).map((l) => l.toLowerCase());
    assert.ok(lines.includes(`host: ${origin.host}`), sent);
    assert.ok(lines.includes(`user-agent: ${UA.toLowerCase()}`), sent);
    // Max-Forwards counts for TRACE and OPTIONS only (RFC 9110 §7.6.2): a GET's goes on as sent.
    assert.ok(lines.includes('max-forwards: 5'), sent);
    assert.ok(lines.includes('accept: */*'), sent);
    assert.ok(lines.some((l) => /^via: 1\.0 client-side, 1\.1 robots-proxy-[a-z0-9]+$/.test(l)), sent);
    assert.ok(!lines.some((l) => /^(x-trace|te|expect):/.test(l)), sent);
  });

  it("pauses the origin for its first Retry-After, whatever the name's spelling", async () => {
    const r = await send('/overloaded');
    assert.equal(r.statusLine, 'HTTP/1.1 503 Service Unavailable');
    assert.deepEqual(r.lines.slice(0, 3), ['RETRY-AFTER: 60', 'Retry-After: 5', 'Content-Length: 0']);
    // Paused for 60 s (not 5): past pacing.maxWait (3 s), so the next request is refused at once.
    const next = await send('/dups');
    assert.match(next.statusLine, /^HTTP\/1\.1 429 /);
    assert.ok(next.lines.includes('x-robots-proxy-decision: deny; reason=queue-full'), next.lines.join(' | '));
    const retryAfter = Number(next.lines.find((l) => /^retry-after: /i.test(l))?.slice(13));
    assert.ok(retryAfter > 50 && retryAfter <= 60, String(retryAfter));
  });
});
