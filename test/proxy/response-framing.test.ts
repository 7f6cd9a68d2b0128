/**
 * How a relayed response is framed on the client's connection, read as raw bytes (issue 11, the
 * writes per request): an origin's `Content-Length` is kept, so the proxy answers with the same
 * length and no chunked encoding (no chunk-size lines, no terminating chunk: fewer bytes and
 * writes), whether the body is 96 bytes, 16 KiB or 1 MiB; the body is relayed byte for byte and
 * the message ends exactly where its length says (the next response on the same connection
 * starts right after it). A body of unknown length stays chunked. A GET without a body reaches
 * the origin without framing fields of its own.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { openRawClient, waitFor, type RawClient } from '../helpers/proxy-client.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';

/** Deterministic bytes of a given length (latin1-safe), so a reordered or cut body shows. */
function pageOf(size: number): Buffer {
  const page = Buffer.alloc(size);
  for (let i = 0; i < size; i++) page[i] = 0x61 + (i % 26);
  return page;
}

const SIZES = { small: 96, '16k': 16 * 1024, '1m': 1024 * 1024 };

/** One response parsed off the front of a raw byte string (latin1). */
interface RawResponse {
  statusLine: string;
  headers: Map<string, string[]>;
  body: Buffer;
  /** The bytes the message took on the wire, head and framing included. */
  wireLength: number;
}

/** Parses one complete response at the start of `raw`, or returns undefined when it has not all arrived. */
function parseResponse(raw: string): RawResponse | undefined {
  const headEnd = raw.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const [statusLine, ...lines] = raw.slice(0, headEnd).split('\r\n');
  const headers = new Map<string, string[]>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
  }
  let at = headEnd + 4;
  const length = headers.get('content-length');
  if (length !== undefined) {
    const end = at + Number(length[0]);
    if (raw.length < end) return undefined;
    return { statusLine: statusLine!, headers, body: Buffer.from(raw.slice(at, end), 'latin1'), wireLength: end };
  }
  // Chunked: size lines, data, CRLF; a zero-size chunk and an empty line end it.
  const chunks: Buffer[] = [];
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(raw.slice(at, lineEnd), 16);
    if (size === 0) {
      if (raw.length < lineEnd + 4) return undefined;
      return { statusLine: statusLine!, headers, body: Buffer.concat(chunks), wireLength: lineEnd + 4 };
    }
    if (raw.length < lineEnd + 2 + size + 2) return undefined;
    chunks.push(Buffer.from(raw.slice(lineEnd + 2, lineEnd + 2 + size), 'latin1'));
    at = lineEnd + 2 + size + 2;
  }
}

/** Sends a GET through the proxy on `client`'s connection and resolves with the response, once it has all arrived. */
async function getOn(client: RawClient, url: string, alreadyRead: number): Promise<RawResponse> {
  const { host } = new URL(url);
  client.socket.write(`GET ${url} HTTP/1.1\r\nhost: ${host}\r\nuser-agent: ${UA}\r\n\r\n`);
  let response: RawResponse | undefined;
  await waitFor(() => (response = parseResponse(client.received().slice(alreadyRead))) !== undefined, `the response to ${url}`);
  return response!;
}

/**
 * GETs `urls` one after another on one keep-alive connection to the proxy; resolves with the
 * responses once every one has arrived whole, after checking nothing follows the last one (a
 * stray terminating chunk, or a body longer than its length, would).
 */
async function getAllOnOneConnection(proxyPort: number, urls: string[]): Promise<RawResponse[]> {
  const client = await openRawClient(proxyPort);
  try {
    const responses: RawResponse[] = [];
    let read = 0;
    for (const url of urls) {
      const response = await getOn(client, url, read);
      responses.push(response);
      read += response.wireLength;
    }
    assert.equal(client.received().length, read, 'no bytes after the last message');
    return responses;
  } finally {
    client.socket.destroy();
  }
}

describe('response framing on the client connection (raw bytes)', () => {
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let origin: TestOrigin;
  before(async () => {
    proxy = await startTestProxy();
    origin = await startOrigin((req, res) => {
      if (req.url === '/robots.txt') {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '23' }).end('User-agent: *\nAllow: /\n');
        return;
      }
      const size = SIZES[(req.url ?? '').slice(1).replace(/^(length|unknown)\//, '') as keyof typeof SIZES];
      const page = pageOf(size ?? 10);
      if (req.url?.startsWith('/unknown/')) {
        // No Content-Length: Node sends it chunked, in three writes.
        res.writeHead(200, { 'content-type': 'text/plain' });
        const third = Math.ceil(page.length / 3);
        res.write(page.subarray(0, third));
        res.write(page.subarray(third, 2 * third));
        res.end(page.subarray(2 * third));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(page.length) }).end(page);
    });
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it("keeps the origin's Content-Length: no chunked encoding, the exact body, the next response right after it", async () => {
    // Twice over every size, on one keep-alive connection: each message must end where its length says.
    const names = ['small', '16k', '1m', 'small', '16k'] as const;
    const responses = await getAllOnOneConnection(proxy.proxyAddress.port, names.map((name) => `${origin.url}/length/${name}`));
    names.forEach((name, i) => {
      const response = responses[i]!;
      assert.equal(response.statusLine, 'HTTP/1.1 200 OK', name);
      assert.deepEqual(response.headers.get('content-length'), [String(SIZES[name])], `${name}: the origin's length, once`);
      assert.equal(response.headers.get('transfer-encoding'), undefined, `${name}: not chunked`);
      assert.ok(response.body.equals(pageOf(SIZES[name])), `${name}: the body byte for byte`);
      // Header rules still hold on this path.
      assert.match(response.headers.get('via')?.[0] ?? '', /^1\.1 robots-proxy-[a-z0-9]+$/, name);
      assert.ok(response.headers.has('x-robots-proxy-decision'), name);
    });
  });

  it('relays a body of unknown length chunked, and intact', async () => {
    const names = ['small', '16k', 'small'] as const;
    const responses = await getAllOnOneConnection(proxy.proxyAddress.port, names.map((name) => `${origin.url}/unknown/${name}`));
    names.forEach((name, i) => {
      const response = responses[i]!;
      assert.equal(response.headers.get('content-length'), undefined, name);
      assert.deepEqual(response.headers.get('transfer-encoding'), ['chunked'], name);
      assert.ok(response.body.equals(pageOf(SIZES[name])), `${name}: the body byte for byte`);
    });
  });

  it('sends a GET without a body upstream without Content-Length or Transfer-Encoding', async () => {
    await getAllOnOneConnection(proxy.proxyAddress.port, [`${origin.url}/length/small`]);
    const hit = origin.hits.findLast((h) => h.url === '/length/small');
    assert.ok(hit, 'the origin saw the request');
    assert.equal(hit.headers['content-length'], undefined);
    assert.equal(hit.headers['transfer-encoding'], undefined);
  });
});
