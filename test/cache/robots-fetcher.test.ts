import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type * as http from 'node:http';
import { Readable, pipeline } from 'node:stream';
import { brotliCompressSync, constants as zlibConstants, createBrotliCompress, createDeflate, createDeflateRaw, createGzip, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { RobotsFetcher, type RobotsFetcherOptions } from '../../src/cache/robots-fetcher.js';
import { evaluate, type RobotsTxt } from '../../src/robots/index.js';
import { closedPort, createTestPki, manualClock, startOrigin, type TestOrigin, type TestPki } from './support.js';

const NOW_MS = 1_700_000_000_000;
const TTL_MS = 86_400_000;
const MIN_TTL_MS = 60_000;
const ERROR_RETRY_MS = 60_000;
const ERROR_RETRY_MAX_MS = 1_800_000;
const MAX_BYTES = 512_000;
const USER_AGENT = 'robots-proxy-test/1.0';
const ROBOTS = 'User-agent: *\nDisallow: /private/\n';

const origins: TestOrigin[] = [];
const fetchers: RobotsFetcher[] = [];

/** Starts an origin that is closed after the file's tests. */
async function origin(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void, tls?: { cert: string; key: string }): Promise<TestOrigin> {
  const started = await startOrigin(handler, tls);
  origins.push(started);
  return started;
}

/** A fetcher with the defaults of config/default.yaml, a fixed clock and a generous timeout. */
function fetcher(options: Partial<RobotsFetcherOptions> = {}): RobotsFetcher {
  const created = new RobotsFetcher({ userAgent: USER_AGENT, clock: manualClock(NOW_MS), timeoutMs: 10_000, ...options });
  fetchers.push(created);
  return created;
}

/** Answers every request with `status`, `body` and `headers`. */
function answer(status: number, body = '', headers: http.OutgoingHttpHeaders = {}) {
  return (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.writeHead(status, { 'content-type': 'text/plain', ...headers });
    res.end(body);
  };
}

/** What the robots file says about `path` for a bot with no group of its own. */
function outcomeOf(robots: RobotsTxt | null, path: string): string {
  assert.ok(robots, 'no parsed robots.txt');
  return evaluate(robots, ['bot'], path).outcome;
}

after(async () => {
  await Promise.all(fetchers.map((f) => f.close()));
  await Promise.all(origins.map((o) => o.close()));
});

describe('RobotsFetcher status mapping (RFC 9309 §2.3.1)', () => {
  it('200: parses the body, state ok, sends our User-Agent and Accept', async () => {
    const o = await origin(answer(200, ROBOTS));
    const snapshot = await fetcher().fetch(o.origin);
    assert.equal(snapshot.info.state, 'ok');
    assert.equal(snapshot.info.status, 200);
    assert.equal(snapshot.info.error, undefined);
    assert.equal(snapshot.info.url, `${o.origin}/robots.txt`);
    assert.equal(snapshot.info.bytes, Buffer.byteLength(ROBOTS));
    assert.equal(snapshot.info.truncated, false);
    assert.equal(snapshot.info.fetchedAtMs, NOW_MS);
    assert.equal(snapshot.info.expiresAtMs, NOW_MS + TTL_MS);
    assert.ok(snapshot.robots);
    assert.equal(outcomeOf(snapshot.robots, '/private/x'), 'rule-disallow');
    assert.deepEqual(o.hits, ['/robots.txt']);
    assert.equal(o.requestHeaders[0]?.['user-agent'], USER_AGENT);
    assert.equal(o.requestHeaders[0]?.accept, 'text/plain, */*');
  });

  it('204: state ok with no rules', async () => {
    const o = await origin(answer(204));
    const snapshot = await fetcher().fetch(o.origin);
    assert.equal(snapshot.info.state, 'ok');
    assert.equal(snapshot.info.bytes, 0);
    assert.equal(snapshot.robots?.groups.length, 0);
  });

  for (const status of [404, 403, 410]) {
    it(`${status}: unavailable (allow all), cached for the TTL`, async () => {
      const o = await origin(answer(status, 'Disallow: /'));
      const snapshot = await fetcher().fetch(o.origin);
      assert.equal(snapshot.info.state, 'unavailable');
      assert.equal(snapshot.info.status, status);
      assert.equal(snapshot.info.error, undefined);
      assert.equal(snapshot.robots, null);
      assert.equal(snapshot.info.expiresAtMs, NOW_MS + TTL_MS);
    });
  }

  for (const status of [429, 500, 503]) {
    it(`${status}: unreachable (disallow all), retried after errorRetry`, async () => {
      const o = await origin(answer(status, ROBOTS));
      const snapshot = await fetcher().fetch(o.origin);
      assert.equal(snapshot.info.state, 'unreachable');
      assert.equal(snapshot.info.status, status);
      assert.equal(snapshot.robots, null);
      assert.equal(snapshot.info.expiresAtMs, NOW_MS + ERROR_RETRY_MS);
    });
  }

  for (const status of [429, 503]) {
    it(`${status} with Retry-After: not fetched again before it (capped by retryAfterCapMs)`, async () => {
      const o = await origin(answer(status, '', { 'retry-after': '3600' }));
      const asked = await fetcher({ errorRetryMs: 2_000, retryAfterCapMs: 7_200_000 }).fetch(o.origin);
      assert.equal(asked.info.state, 'unreachable');
      assert.equal(asked.info.expiresAtMs, NOW_MS + 3_600_000);
      const capped = await fetcher({ errorRetryMs: 2_000 }).fetch(o.origin);
      assert.equal(capped.info.expiresAtMs, NOW_MS + 600_000, 'the default cap, pacing.maxRetryAfter 10m');
    });
  }

  it('503 with an HTTP-date Retry-After, reached through a redirect', async () => {
    const o = await origin((req, res) => {
      if (req.url === '/robots.txt') return answer(301, '', { location: '/moved.txt' })(req, res);
      answer(503, '', { 'retry-after': new Date(NOW_MS + 120_000).toUTCString() })(req, res);
    });
    const snapshot = await fetcher({ errorRetryMs: 2_000 }).fetch(o.origin);
    assert.equal(snapshot.info.status, 503);
    assert.equal(snapshot.info.expiresAtMs, NOW_MS + 120_000);
  });

  it('500 with Retry-After keeps the errorRetry backoff (Retry-After is read on 429 and 503)', async () => {
    const o = await origin(answer(500, '', { 'retry-after': '3600' }));
    const snapshot = await fetcher({ errorRetryMs: 2_000 }).fetch(o.origin);
    assert.equal(snapshot.info.expiresAtMs, NOW_MS + 2_000);
  });

  it('parses with the crawl-delay ceiling it is given', async () => {
    const o = await origin(answer(200, 'User-agent: *\nCrawl-delay: 1e300\n'));
    const snapshot = await fetcher({ maxCrawlDelayMs: 3_600_000 }).fetch(o.origin);
    assert.equal(snapshot.robots?.groupsByToken.get('*')?.crawlDelaySeconds, 3600);
    assert.deepEqual(snapshot.robots?.warnings.map((w) => w.code), ['crawl-delay-clamped']);
  });

  it('unreachable retries back off: doubling per earlier failure, capped', async () => {
    const o = await origin(answer(503));
    const f = fetcher();
    const delays: number[] = [];
    for (const consecutiveFailures of [0, 1, 3, 5, 40]) {
      const snapshot = await f.fetch(o.origin, { consecutiveFailures });
      delays.push(snapshot.info.expiresAtMs - snapshot.info.fetchedAtMs);
    }
    assert.deepEqual(delays, [60_000, 120_000, 480_000, ERROR_RETRY_MAX_MS, ERROR_RETRY_MAX_MS]);
  });

  it('timeout while the server never answers: unreachable, error timeout', async () => {
    const o = await origin(() => undefined);
    // 1 s, not less: the origin shares this process's event loop, and on a loaded machine a turn
    // that starts late runs the timer phase before the poll phase accepts the request (hits 0).
    const snapshot = await fetcher({ timeoutMs: 1000 }).fetch(o.origin);
    assert.equal(snapshot.info.state, 'unreachable');
    assert.equal(snapshot.info.error, 'timeout');
    assert.equal(snapshot.info.status, undefined);
    assert.equal(o.hits.length, 1);
  });

  it('the timeout covers the body: headers sent, body stalls -> unreachable timeout, nothing parsed', async () => {
    const o = await origin((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('User-agent: *\n');
    });
    const snapshot = await fetcher({ timeoutMs: 300 }).fetch(o.origin);
    assert.equal(snapshot.info.state, 'unreachable');
    assert.equal(snapshot.info.error, 'timeout');
    assert.equal(snapshot.robots, null);
  });

  it('connection refused: unreachable, error ECONNREFUSED', async () => {
    const port = await closedPort();
    const snapshot = await fetcher().fetch(`http://127.0.0.1:${port}`);
    assert.equal(snapshot.info.state, 'unreachable');
    assert.equal(snapshot.info.error, 'ECONNREFUSED');
    assert.equal(snapshot.info.status, undefined);
  });

  it('a body cut by a connection reset is unreachable, not a partial file', async () => {
    const o = await origin((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' });
      res.write('User-agent: *\nAllow: /\n', () => res.socket?.destroy());
    });
    const snapshot = await fetcher().fetch(o.origin);
    assert.equal(snapshot.info.state, 'unreachable');
    assert.equal(snapshot.robots, null);
    assert.ok(snapshot.info.error);
  });

  it('an origin that is not http(s) throws InvalidTargetError', async () => {
    await assert.rejects(fetcher().fetch('ftp://127.0.0.1'), { code: 'ERR_INVALID_TARGET' });
    await assert.rejects(fetcher().fetch('not a url'), { code: 'ERR_INVALID_TARGET' });
  });
});

/** An origin whose /robots.txt redirects through `/hop/1` .. `/hop/<hops-1>`, each with the next status of `statuses`, then answers 200. */
function redirectChain(hops: number) {
  const statuses = [301, 302, 303, 307, 308];
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    const n = req.url === '/robots.txt' ? 0 : Number(/^\/hop\/(\d+)$/.exec(req.url ?? '')?.[1] ?? NaN);
    if (n < hops) {
      // Relative, then absolute-path, Location values (RFC 9110 §10.2.2).
      res.writeHead(statuses[n % statuses.length] ?? 302, { location: n % 2 === 0 ? `/hop/${n + 1}` : `${n + 1}` });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`User-agent: *\nDisallow: /after-${hops}-redirects/\n`);
  };
}

describe('RobotsFetcher redirects (RFC 9309 §2.3.1.2)', () => {
  it('follows 5 redirects (301, 302, 303, 307, 308; relative Location)', async () => {
    const o = await origin(redirectChain(5));
    const snapshot = await fetcher().fetch(o.origin);
    assert.equal(snapshot.info.state, 'ok');
    assert.equal(snapshot.info.status, 200);
    assert.equal(snapshot.info.url, `${o.origin}/robots.txt`);
    assert.deepEqual(o.hits, ['/robots.txt', '/hop/1', '/hop/2', '/hop/3', '/hop/4', '/hop/5']);
    assert.equal(outcomeOf(snapshot.robots, '/after-5-redirects/x'), 'rule-disallow');
  });

  it('6 redirects: unavailable with error too-many-redirects, the 6th not followed', async () => {
    const o = await origin(redirectChain(6));
    const snapshot = await fetcher().fetch(o.origin);
    assert.equal(snapshot.info.state, 'unavailable');
    assert.equal(snapshot.info.error, 'too-many-redirects');
    assert.equal(snapshot.robots, null);
    assert.equal(o.hits.length, 6);
    assert.ok(!o.hits.includes('/hop/6'));
  });

  it('maxRedirects is configurable', async () => {
    const o = await origin(redirectChain(2));
    const snapshot = await fetcher({ maxRedirects: 1 }).fetch(o.origin);
    assert.equal(snapshot.info.error, 'too-many-redirects');
  });

  it('follows a redirect to another origin', async () => {
    const target = await origin(answer(200, 'User-agent: *\nDisallow: /from-b/\n'));
    const source = await origin(answer(301, '', { location: `${target.origin}/robots.txt` }));
    const snapshot = await fetcher().fetch(source.origin);
    assert.equal(snapshot.info.state, 'ok');
    assert.equal(snapshot.info.url, `${source.origin}/robots.txt`);
    assert.equal(outcomeOf(snapshot.robots, '/from-b/x'), 'rule-disallow');
    assert.deepEqual(source.hits, ['/robots.txt']);
    assert.deepEqual(target.hits, ['/robots.txt']);
  });

  it('a Location written in raw UTF-8 or latin1 octets reaches the path the server named, each octet percent-encoded once', async () => {
    // Node writes a header value's chars as latin1 octets: these are the octets of `/robots-café.txt` in UTF-8, then of `/r\xe9`.
    for (const [written, expected] of [
      [Buffer.from('/robots-café.txt', 'utf8').toString('latin1'), '/robots-caf%C3%A9.txt'],
      ['/r\xe9', '/r%E9'],
    ] as const) {
      const o = await origin((req, res) => {
        if (req.url === '/robots.txt') {
          res.writeHead(301, { location: written });
          res.end();
        } else {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end(req.url === expected ? ROBOTS : 'User-agent: *\nAllow: /\n');
        }
      });
      const snapshot = await fetcher().fetch(o.origin);
      assert.deepEqual(o.hits, ['/robots.txt', expected]);
      assert.equal(outcomeOf(snapshot.robots, '/private/'), 'rule-disallow');
    }
  });

  it('a Location repeated with the same value is followed (browsers do); repeated with two values is bad-redirect', async () => {
    const same = await origin((req, res) => {
      if (req.url === '/robots.txt') {
        res.writeHead(301, [['Location', '/moved'], ['Location', '/moved']]);
        res.end();
      } else {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(ROBOTS);
      }
    });
    const followed = await fetcher().fetch(same.origin);
    assert.deepEqual(same.hits, ['/robots.txt', '/moved']);
    assert.equal(outcomeOf(followed.robots, '/private/'), 'rule-disallow');

    const two = await origin((_req, res) => {
      res.writeHead(301, [['Location', '/a'], ['Location', '/b']]);
      res.end();
    });
    const refused = await fetcher().fetch(two.origin);
    assert.equal(refused.info.state, 'unreachable');
    assert.equal(refused.info.error, 'bad-redirect');
    assert.deepEqual(two.hits, ['/robots.txt']);
  });

  for (const [label, headers] of [
    ['no Location', {}],
    ['a non-http Location', { location: 'ftp://127.0.0.1/robots.txt' }],
  ] as const) {
    it(`a redirect with ${label}: unreachable, error bad-redirect`, async () => {
      const o = await origin(answer(302, '', headers));
      const snapshot = await fetcher().fetch(o.origin);
      assert.equal(snapshot.info.state, 'unreachable');
      assert.equal(snapshot.info.error, 'bad-redirect');
      assert.equal(snapshot.info.status, 302);
    });
  }
});

describe('RobotsFetcher size limit (RFC 9309 §2.5)', () => {
  /** `Disallow: /lineNNNNNNN/` lines, `totalBytes` long. */
  function longBody(totalBytes: number): Buffer {
    const lines: string[] = ['User-agent: *'];
    let size = 14;
    for (let i = 0; size < totalBytes; i++) {
      const line = `Disallow: /line${String(i).padStart(7, '0')}/`;
      lines.push(line);
      size += line.length + 1;
    }
    return Buffer.from(lines.join('\n') + '\n').subarray(0, totalBytes);
  }

  it('a 3 MB body: the first maxBytes are parsed, truncated=true, later rules ignored', async () => {
    const body = longBody(3 * 1024 * 1024);
    const o = await origin(answer(200, body.toString('latin1')));
    const snapshot = await fetcher().fetch(o.origin);
    assert.equal(snapshot.info.state, 'ok');
    assert.equal(snapshot.info.truncated, true);
    assert.equal(snapshot.info.bytes, MAX_BYTES);
    assert.equal(outcomeOf(snapshot.robots, '/line0000001/'), 'rule-disallow');
    assert.equal(outcomeOf(snapshot.robots, '/line0100000/'), 'no-matching-rule');
  });

  it('stops reading at the limit: an endless body is cut and the connection closed early', async () => {
    const capBytes = 64 * 1024 * 1024;
    const chunk = longBody(64 * 1024);
    let writtenBytes = 0;
    let closed!: Promise<boolean>;
    const o = await origin((_req, res) => {
      closed = once(res, 'close').then(() => res.writableFinished);
      res.writeHead(200, { 'content-type': 'text/plain' });
      const pump = (): void => {
        while (writtenBytes < capBytes && !res.destroyed) {
          writtenBytes += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    const snapshot = await fetcher().fetch(o.origin);
    assert.equal(snapshot.info.truncated, true);
    assert.equal(snapshot.info.bytes, MAX_BYTES);
    const isFinished = await closed;
    assert.equal(isFinished, false, 'the server finished writing the whole body');
    assert.ok(writtenBytes < capBytes, `server wrote ${writtenBytes} bytes`);
  });

  it('maxBytes is configurable', async () => {
    const o = await origin(answer(200, ROBOTS + 'Disallow: /late/\n'));
    const snapshot = await fetcher({ maxBytes: Buffer.byteLength(ROBOTS) }).fetch(o.origin);
    assert.equal(snapshot.info.truncated, true);
    assert.equal(snapshot.info.bytes, Buffer.byteLength(ROBOTS));
    assert.equal(outcomeOf(snapshot.robots, '/late/'), 'no-matching-rule');
  });
});

describe('RobotsFetcher Content-Encoding', () => {
  it('asks for gzip, deflate, br and decodes gzip', async () => {
    const gz = await origin((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
      res.end(gzipSync(ROBOTS));
    });
    const snapshot = await fetcher().fetch(gz.origin);
    assert.equal(gz.requestHeaders[0]?.['accept-encoding'], 'gzip, deflate, br');
    assert.equal(snapshot.info.state, 'ok');
    assert.equal(snapshot.info.bytes, Buffer.byteLength(ROBOTS));
    assert.equal(outcomeOf(snapshot.robots, '/private/'), 'rule-disallow');
  });

  for (const [coding, createEncoder] of [
    ['gzip', () => createGzip({ level: 1 })],
    ['br', () => createBrotliCompress({ params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 1 } })],
    ['deflate', () => createDeflate({ level: 1 })],
    ['deflate', () => createDeflateRaw({ level: 1 })],
  ] as const) {
    it(`a ${coding} bomb${createEncoder().constructor.name === 'DeflateRaw' ? ' (raw deflate)' : ''} is cut at maxBytes of decoded bytes and the connection closed early`, async () => {
      const capBytes = 256 * 1024 * 1024;
      const line = Buffer.alloc(64 * 1024, 'Disallow: /a\n');
      let producedBytes = 0;
      let closed!: Promise<boolean>;
      const o = await origin((_req, res) => {
        closed = once(res, 'close').then(() => res.writableFinished);
        res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': coding });
        const decoded = Readable.from(
          (function* () {
            yield Buffer.from('User-agent: *\n');
            for (; producedBytes < capBytes; producedBytes += line.length) yield line;
          })(),
        );
        pipeline(decoded, createEncoder(), res, () => undefined);
      });
      const snapshot = await fetcher().fetch(o.origin);
      assert.equal(snapshot.info.state, 'ok');
      assert.equal(snapshot.info.truncated, true);
      assert.equal(snapshot.info.bytes, MAX_BYTES);
      assert.equal(await closed, false, 'the server finished sending the whole bomb');
      assert.ok(producedBytes < capBytes, `server compressed ${producedBytes} bytes`);
    });
  }

  it('deflate is decoded zlib-wrapped (RFC 9110 §8.4.1.2) and raw (RFC 1951, as some servers send it)', async () => {
    for (const encoded of [deflateSync(ROBOTS), deflateRawSync(ROBOTS), deflateRawSync(ROBOTS, { level: 0 }), deflateRawSync(ROBOTS, { level: 9 })]) {
      const o = await origin((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'deflate' });
        res.end(encoded);
      });
      const snapshot = await fetcher().fetch(o.origin);
      assert.equal(snapshot.info.state, 'ok', `${encoded.subarray(0, 2).toString('hex')}: ${snapshot.info.error}`);
      assert.equal(snapshot.info.bytes, Buffer.byteLength(ROBOTS));
      assert.equal(outcomeOf(snapshot.robots, '/private/'), 'rule-disallow');
    }
  });

  for (const coding of ['gzip', 'br', 'deflate', 'gzip, br']) {
    for (const status of [200, 204]) {
      it(`${status} with no body bytes and Content-Encoding: ${coding}: an empty file (ok, no rules), not a corrupt one`, async () => {
        const o = await origin(answer(status, '', { 'content-encoding': coding }));
        const snapshot = await fetcher().fetch(o.origin);
        assert.equal(snapshot.info.state, 'ok', String(snapshot.info.error));
        assert.equal(snapshot.info.bytes, 0);
        assert.equal(outcomeOf(snapshot.robots, '/private/'), 'no-matching-rule');
      });
    }
  }

  it('a gzip body that ends before its trailer is still unreachable (a cut file is never parsed)', async () => {
    const gz = gzipSync(ROBOTS);
    const o = await origin((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip' });
      res.end(gz.subarray(0, gz.length - 8));
    });
    const snapshot = await fetcher().fetch(o.origin);
    assert.equal(snapshot.info.state, 'unreachable');
    assert.equal(snapshot.info.error, 'Z_BUF_ERROR');
  });

  it('a corrupt gzip body: unreachable with the zlib code', async () => {
    const o = await origin((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip' });
      res.end(Buffer.concat([gzipSync(ROBOTS).subarray(0, 10), Buffer.from('not gzip at all')]));
    });
    const snapshot = await fetcher().fetch(o.origin);
    assert.equal(snapshot.info.state, 'unreachable');
    assert.match(snapshot.info.error ?? '', /^Z_/);
  });

  for (const coding of ['compress', 'zstd', 'gzip, zstd', 'aes128gcm']) {
    it(`a registered coding it cannot undo (${coding}): unreachable, unsupported-content-encoding`, async () => {
      const o = await origin(answer(200, ROBOTS, { 'content-encoding': coding }));
      const snapshot = await fetcher().fetch(o.origin);
      assert.equal(snapshot.info.state, 'unreachable');
      assert.equal(snapshot.info.error, 'unsupported-content-encoding');
    });
  }

  for (const coding of ['UTF-8', 'utf8', 'none', 'text', 'binary', 'text/plain']) {
    it(`Content-Encoding: ${coding} names no coding: a mislabelled plain body, parsed as it is (as browsers read it)`, async () => {
      const o = await origin(answer(200, ROBOTS, { 'content-encoding': coding }));
      const snapshot = await fetcher().fetch(o.origin);
      assert.equal(snapshot.info.state, 'ok', String(snapshot.info.error));
      assert.equal(outcomeOf(snapshot.robots, '/private/'), 'rule-disallow');
    });
  }

  for (const [coding, encode] of [
    ['utf-8', gzipSync],
    ['x-deflate', deflateSync],
    ['x-br', (text: string) => brotliCompressSync(text)],
  ] as const) {
    it(`Content-Encoding: ${coding} over a compressed body: unreachable, unsupported-content-encoding (never read as garbage: allow all)`, async () => {
      const o = await origin((_req, res) => {
        res.writeHead(200, { 'content-encoding': coding });
        res.end(encode(ROBOTS.repeat(20)));
      });
      const snapshot = await fetcher().fetch(o.origin);
      assert.equal(snapshot.info.state, 'unreachable');
      assert.equal(snapshot.info.error, 'unsupported-content-encoding');
    });
  }

  it('a mislabel next to a real coding: the real one is decoded (gzip, utf-8)', async () => {
    const o = await origin((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip, utf-8' });
      res.end(gzipSync(ROBOTS));
    });
    const snapshot = await fetcher().fetch(o.origin);
    assert.equal(snapshot.info.state, 'ok', String(snapshot.info.error));
    assert.equal(outcomeOf(snapshot.robots, '/private/'), 'rule-disallow');
  });
});

describe('RobotsFetcher expiry from Cache-Control (RFC 9111 §5.2.2, capped by RFC 9309 §2.4)', () => {
  const cases: Array<[string, http.OutgoingHttpHeaders, number, number?]> = [
    ['max-age=120', { 'cache-control': 'max-age=120' }, 120_000],
    ['max-age below the floor', { 'cache-control': 'public, max-age=5' }, MIN_TTL_MS],
    ['max-age above 24 h', { 'cache-control': 'max-age=999999999' }, TTL_MS],
    ['s-maxage wins over max-age', { 'cache-control': 'max-age=30, s-maxage=300' }, 300_000],
    ['Age is subtracted', { 'cache-control': 'max-age=600', age: '100' }, 500_000],
    ['no-store', { 'cache-control': 'no-store' }, MIN_TTL_MS],
    ['no-cache', { 'cache-control': 'no-cache, max-age=3600' }, MIN_TTL_MS],
    ['an invalid max-age', { 'cache-control': 'max-age=soon' }, MIN_TTL_MS],
    ['404 with max-age=120', { 'cache-control': 'max-age=120' }, 120_000, 404],
  ];
  for (const [label, headers, lifetimeMs, status] of cases) {
    it(`${label} -> ${lifetimeMs} ms`, async () => {
      const o = await origin(answer(status ?? 200, ROBOTS, headers));
      const snapshot = await fetcher().fetch(o.origin);
      assert.equal(snapshot.info.expiresAtMs - snapshot.info.fetchedAtMs, lifetimeMs);
    });
  }

  it('a configured floor and ceiling apply', async () => {
    const o = await origin(answer(200, ROBOTS, { 'cache-control': 'max-age=1' }));
    const snapshot = await fetcher({ ttlMs: 10_000, minTtlMs: 5_000 }).fetch(o.origin);
    assert.equal(snapshot.info.expiresAtMs - snapshot.info.fetchedAtMs, 5_000);
  });
});

describe('RobotsFetcher over HTTPS', () => {
  let pki: TestPki;
  before(async () => {
    pki = await createTestPki();
  });

  it('an https origin with the test CA trusted via `ca`: state ok', async () => {
    const o = await origin(answer(200, ROBOTS), { cert: pki.certPem, key: pki.keyPem });
    const snapshot = await fetcher({ ca: [pki.caPem] }).fetch(o.origin);
    assert.equal(snapshot.info.state, 'ok', snapshot.info.error);
    assert.equal(snapshot.info.url, `${o.origin}/robots.txt`);
    assert.equal(outcomeOf(snapshot.robots, '/private/'), 'rule-disallow');
  });

  it('localhost is verified by name', async () => {
    const o = await origin(answer(200, ROBOTS), { cert: pki.certPem, key: pki.keyPem });
    const snapshot = await fetcher({ ca: [pki.caPem] }).fetch(`https://localhost:${o.port}`);
    assert.equal(snapshot.info.state, 'ok', snapshot.info.error);
  });

  it('an untrusted certificate: unreachable with the certificate error code, nothing requested', async () => {
    const o = await origin(answer(200, ROBOTS), { cert: pki.certPem, key: pki.keyPem });
    const snapshot = await fetcher().fetch(o.origin);
    assert.equal(snapshot.info.state, 'unreachable');
    assert.equal(snapshot.info.error, 'UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    assert.deepEqual(o.hits, []);
  });

  it('a redirect from http to https is followed, with the same rules', async () => {
    const secure = await origin(answer(200, ROBOTS), { cert: pki.certPem, key: pki.keyPem });
    const plain = await origin(answer(308, '', { location: `${secure.origin}/robots.txt` }));
    const snapshot = await fetcher({ ca: [pki.caPem] }).fetch(plain.origin);
    assert.equal(snapshot.info.state, 'ok', snapshot.info.error);
    assert.deepEqual(secure.hits, ['/robots.txt']);
  });

  it('https 503 is unreachable and 404 unavailable, as over http', async () => {
    const down = await origin(answer(503), { cert: pki.certPem, key: pki.keyPem });
    const missing = await origin(answer(404), { cert: pki.certPem, key: pki.keyPem });
    const f = fetcher({ ca: [pki.caPem] });
    assert.equal((await f.fetch(down.origin)).info.state, 'unreachable');
    assert.equal((await f.fetch(missing.origin)).info.state, 'unavailable');
  });
});
