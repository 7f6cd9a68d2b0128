/**
 * The hostile-robots battery (issue 7, item 1 and "Done when"): real origins on
 * loopback serve robots.txt files with out-of-range crawl-delays, every other
 * directive with absurd values, enormous lines, 100,000 user-agent lines,
 * deep wildcards, NUL bytes, invalid UTF-8, binary and HTML bodies and a 10 MB
 * body, to the real proxy. After each one: the verdict and the delay that
 * apply are the right ones, the warnings are visible (log line once per fetch,
 * /explain, /robots), and the proxy still answers /healthz and another origin.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { deflateRawSync, gzipSync } from 'node:zlib';
import { captureLogs, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest, type ProxyAnswer } from '../helpers/proxy-client.js';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

const UA = 'Mozilla/5.0 (compatible; HostileTestBot/1.0; +https://bot.example/)';
const DAY_S = 86_400;
const MAX_BYTES = 2 * 1024 * 1024;

/** `i` spelt in letters: product tokens are cut at the first digit, so digits would merge names. */
function letters(i: number): string {
  return i.toString(26).replace(/[0-9]/g, (d) => String.fromCharCode(0x71 + Number(d))).replace(/[a-p]/g, (c) => c.toUpperCase());
}

/** Deterministic pseudo-random bytes (a 32-bit LCG), so a failure can be replayed. */
function noise(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed >>> 0;
  for (let i = 0; i < length; i++) {
    x = (Math.imul(x, 1_664_525) + 1_013_904_223) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** A hostile robots.txt and what must follow from it. */
interface HostileCase {
  name: string;
  body: Buffer | string;
  headers?: http.OutgoingHttpHeaders;
  /** Paths and the status each must get (a disallowed one: 403 rule-disallow, never upstream). */
  verdicts: Record<string, 200 | 403>;
  /** The crawl-delay that must apply, seconds; null for none. */
  delaySeconds: number | null;
  /** Warning codes that must be among the snapshot's warnings. */
  warnings: string[];
}

const CRAWL_DELAYS: Array<[string, number | null, string[]]> = [
  // The inputs of issue 7: each honoured up to the 24 h ceiling, never dropped.
  ['2' + '0'.repeat(305), DAY_S, ['crawl-delay-clamped']],
  ['2147484', DAY_S, ['crawl-delay-clamped']],
  ['1000000000000000000000', DAY_S, ['crawl-delay-clamped']],
  ['1e300', DAY_S, ['crawl-delay-clamped']],
  ['Infinity', DAY_S, ['crawl-delay-clamped']],
  ['inf', DAY_S, ['crawl-delay-clamped']],
  ['1' + '9'.repeat(15_000), DAY_S, ['crawl-delay-clamped']],
  ['40', 40, []],
  // Unparsable: ignored with a warning (no crawler waits a negative time).
  ['-5', null, ['invalid-crawl-delay']],
  ['NaN', null, ['invalid-crawl-delay']],
  ['-inf', null, ['invalid-crawl-delay']],
  ['ten', null, ['invalid-crawl-delay']],
];

const crawlDelayCases: HostileCase[] = CRAWL_DELAYS.map(([value, delaySeconds, warnings]) => ({
  name: `Crawl-delay: ${value.length > 30 ? `${value.slice(0, 12)}… (${value.length} chars)` : value}`,
  body: `User-agent: *\nCrawl-delay: ${value}\nDisallow: /private\n`,
  verdicts: { '/page': 200, '/private/x': 403 },
  delaySeconds,
  warnings,
}));

/** Absurd values, each written after every directive below. */
const ABSURD_VALUES = [
  '',
  ' '.repeat(20_000),
  '\0',
  '\xff\xfe\xc0\x80',
  '*'.repeat(20_000),
  '$'.repeat(20_000),
  '%'.repeat(5_000),
  '%00%zz%%2',
  '9'.repeat(5_000),
  '-' + '9'.repeat(5_000),
  'NaN',
  'inf',
  '1e308',
  '1e-400',
  '0/0',
  '1/' + '9'.repeat(400),
  '<script>alert(1)</script>',
  '../../../../etc/passwd',
  '\u202e\u0000\ufffd',
  'a'.repeat(40_000),
];
const DIRECTIVES = ['Allow', 'Disallow', 'Sitemap', 'Crawl-delay', 'Request-rate', 'Host', 'Clean-param', 'Noindex', 'Visit-time'];

const directiveCases: HostileCase[] = DIRECTIVES.map((directive) => {
  const lines = ABSURD_VALUES.map((value) => `${directive}: ${value}`);
  // `Disallow: ****…` (cut at 16 KiB) matches every path; `Allow: ****…` does too, and being the longest
  // pattern it beats `Disallow: /private` (RFC 9309 §2.2.2).
  const verdicts: Record<string, 200 | 403> =
    directive === 'Disallow' ? { '/page': 403, '/private/x': 403 } : directive === 'Allow' ? { '/page': 200, '/private/x': 200 } : { '/page': 200, '/private/x': 403 };
  return {
    name: `every absurd value after ${directive}`,
    body: `User-agent: *\n${lines.join('\n')}\nDisallow: /private\n`,
    verdicts,
    // Crawl-delay's list holds inf and 1e308 (clamped) and negatives (ignored): the ceiling applies.
    delaySeconds: directive === 'Crawl-delay' ? DAY_S : null,
    warnings: directive === 'Crawl-delay' ? ['crawl-delay-clamped', 'invalid-crawl-delay', 'line-too-long'] : ['line-too-long'],
  };
});

const html = [
  '<!DOCTYPE html>',
  '<html><head><title>Page not found</title></head>',
  '<body><h1>404</h1><p>User-agent: *</p><p>Disallow: /</p>',
  '<script>var crawl = "Crawl-delay: inf";</script>',
  '</body></html>',
].join('\n');

const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]), noise(8_000, 7)]);

const shapeCases: HostileCase[] = [
  {
    name: 'Request-rate with absurd values (giant, negative, NaN, zero, clamped)',
    body: ['User-agent: *', 'Request-rate: 1/0', 'Request-rate: -1/5', 'Request-rate: NaN/NaN', `Request-rate: ${'9'.repeat(400)}/1`, `Request-rate: 1/${'9'.repeat(400)}`, 'Disallow: /private', ''].join('\n'),
    verdicts: { '/page': 200, '/private/x': 403 },
    delaySeconds: null,
    warnings: ['invalid-request-rate', 'request-rate-clamped'],
  },
  {
    name: 'a 100 KiB line and a 1 MiB line',
    body: `User-agent: *\nDisallow: /${'a'.repeat(100_000)}\nAllow: /${'b'.repeat(1_048_576)}\nDisallow: /private\n`,
    // The long rules keep their first 16 KiB: longer than any path a client can send, so they match none.
    verdicts: { '/page': 200, '/private/x': 403, [`/${'a'.repeat(2_000)}`]: 200 },
    delaySeconds: null,
    warnings: ['line-too-long'],
  },
  {
    name: '100,000 user-agent lines in one group',
    body: `User-agent: *\n${Array.from({ length: 100_000 }, (_, i) => `User-agent: b${letters(i)}\n`).join('')}Crawl-delay: 7\nDisallow: /private\n`,
    verdicts: { '/page': 200, '/private/x': 403 },
    delaySeconds: 7, // the crawl-delay applies to the whole run of user-agent lines before it, `*` included
    warnings: [],
  },
  {
    name: 'deeply repeated wildcards',
    body: `User-agent: *\nDisallow: /${'*'.repeat(5_000)}x$\nDisallow: /${'a*'.repeat(3_000)}b\nDisallow: /private\n`,
    verdicts: { '/page': 200, '/pagex': 403, [`/${'a'.repeat(3_000)}`]: 200, [`/${'a'.repeat(3_000)}b`]: 403, '/private/x': 403 },
    delaySeconds: null,
    warnings: [],
  },
  {
    name: '$ everywhere',
    body: 'User-agent: *\nDisallow: $\nDisallow: $$$$\nDisallow: /x$\nAllow: /$\nDisallow: /a$b$c$\nDisallow: /private$$\nDisallow: /private\n',
    verdicts: { '/page': 200, '/x': 403, '/xy': 200, '/private/x': 403 },
    delaySeconds: null,
    warnings: [],
  },
  {
    name: 'NUL bytes inside lines',
    body: 'User-agent: *\0ignored\nDisallow: /private\0/public\nCrawl-delay: 1\0e300\n\0\0\0\n',
    verdicts: { '/page': 200, '/private/x': 403, '/public': 200 },
    delaySeconds: 1,
    warnings: ['looks-binary'],
  },
  {
    name: 'invalid UTF-8',
    body: Buffer.concat([Buffer.from('User-agent: *\nDisallow: /caf'), Buffer.from([0xe9]), Buffer.from('\nDisallow: /'), Buffer.from([0xff, 0xfe, 0xc0, 0x80]), Buffer.from('\nUser-agent: '), Buffer.from([0xc3, 0x28]), Buffer.from('\nDisallow: /private\n')]),
    // The user-agent line with no product token opens a group that applies to nobody: /private is its rule.
    verdicts: { '/page': 200, '/caf%E9': 403, '/private/x': 200 },
    delaySeconds: null,
    warnings: ['invalid-user-agent'],
  },
  { name: '64 KiB of random bytes', body: noise(65_536, 42), verdicts: { '/page': 200, '/private/x': 200 }, delaySeconds: null, warnings: ['looks-binary'] },
  { name: 'a PNG image', body: png, verdicts: { '/page': 200 }, delaySeconds: null, warnings: ['looks-binary'] },
  {
    name: 'gzip bytes without Content-Encoding',
    body: gzipSync('User-agent: *\nDisallow: /\n'),
    verdicts: { '/page': 200 },
    delaySeconds: null,
    warnings: ['looks-binary'],
  },
  { name: 'an HTML page as robots.txt', body: html, verdicts: { '/page': 200, '/private/x': 200 }, delaySeconds: null, warnings: ['looks-like-html'] },
  {
    name: 'a 10 MB body: the rules past the limit are ignored',
    body: `User-agent: *\nDisallow: /private\n${'# filler line\n'.repeat(Math.ceil(10_000_000 / 14))}Disallow: /page\nCrawl-delay: 1e300\n`,
    verdicts: { '/page': 200, '/private/x': 403 },
    delaySeconds: null,
    warnings: ['truncated'],
  },
  {
    name: 'a gzip bomb (10 MB decoded)',
    body: gzipSync(Buffer.concat([Buffer.from('User-agent: *\nDisallow: /private\n'), Buffer.alloc(10_000_000, 0x0a), Buffer.from('Disallow: /page\n')])),
    headers: { 'content-encoding': 'gzip' },
    verdicts: { '/page': 200, '/private/x': 403 },
    delaySeconds: null,
    warnings: ['truncated'],
  },
  {
    // Old IIS and some frameworks send raw deflate (RFC 1951) for `deflate`; browsers, curl and undici's fetch decode it.
    name: 'raw deflate labelled Content-Encoding: deflate',
    body: deflateRawSync('User-agent: *\nDisallow: /private\n'),
    headers: { 'content-encoding': 'deflate' },
    verdicts: { '/page': 200, '/private/x': 403 },
    delaySeconds: null,
    warnings: [],
  },
  {
    // An empty robots.txt labelled gzip: no bytes to decode, an empty file (no rules), not a corrupt one (disallow all).
    name: 'an empty body labelled Content-Encoding: gzip',
    body: '',
    headers: { 'content-encoding': 'gzip' },
    verdicts: { '/page': 200, '/private/x': 200 },
    delaySeconds: null,
    warnings: [],
  },
  {
    name: '100,000 unknown directives and crawl-delays',
    body: `User-agent: *\n${'Foo: bar\nCrawl-delay: inf\n'.repeat(50_000)}Disallow: /private\n`,
    verdicts: { '/page': 200, '/private/x': 403 },
    delaySeconds: DAY_S,
    warnings: ['unknown-directive', 'crawl-delay-clamped', 'too-many-warnings'],
  },
  {
    name: 'a million lone CRs',
    body: `\r${'\r'.repeat(1_000_000)}User-agent: *\rDisallow: /private\r`,
    verdicts: { '/page': 200, '/private/x': 403 },
    delaySeconds: null,
    warnings: [],
  },
];

const CASES: HostileCase[] = [...crawlDelayCases, ...directiveCases, ...shapeCases];

/** Sends a GET through the proxy with the battery's User-Agent. */
function get(proxy: Proxy, url: string): Promise<ProxyAnswer> {
  return proxyRequest(proxy.proxyAddress.port, url, { headers: { 'user-agent': UA } });
}

/** A GET on the admin listener, answered as JSON. */
async function admin(proxy: Proxy, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await proxyRequestDirect(proxy.adminAddress!.port, path);
  return { status: r.status, body: JSON.parse(r.body) as Record<string, unknown> };
}

function proxyRequestDirect(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

/** Serves `robots` (with `headers`) at /robots.txt and `page <path>` anywhere else. */
function startHostileOrigin(robots: Buffer | string, headers: http.OutgoingHttpHeaders = {}): Promise<TestOrigin> {
  return startOrigin((req, res) => {
    if (req.url === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain', ...headers });
      res.end(robots);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`page ${req.url}`);
  });
}

/** The proxy still serves: /healthz, a normal origin's allowed page and its disallowed one. */
async function assertStillServing(proxy: Proxy, control: TestOrigin): Promise<void> {
  const health = await admin(proxy, '/healthz');
  assert.equal(health.status, 200, 'healthz');
  const page = await get(proxy, `${control.url}/hello`);
  assert.equal(page.status, 200, 'control origin page');
  assert.equal(page.body.toString(), 'page /hello');
  const denied = await get(proxy, `${control.url}/private/x`);
  assert.equal(denied.status, 403, 'control origin disallowed path');
}

describe('hostile robots.txt battery: the proxy keeps serving and applies the right verdict and delay', () => {
  let proxy: Proxy;
  let control: TestOrigin;
  let logs: LogCapture;
  const origins: TestOrigin[] = [];

  before(async () => {
    logs = captureLogs();
    proxy = await startTestProxy({ https: { mode: 'tunnel' }, robots: { maxBytes: `${MAX_BYTES}B` }, pacing: { maxWait: '5s' } }, { logger: logs.logger });
    control = await startHostileOrigin('User-agent: *\nDisallow: /private\n');
  });
  after(async () => {
    await proxy?.close();
    await Promise.all([control?.close(), ...origins.map((o) => o.close())]);
  });

  for (const c of CASES) {
    it(c.name, { timeout: 60_000 }, async () => {
      const origin = await startHostileOrigin(c.body, c.headers);
      origins.push(origin);
      for (const [path, status] of Object.entries(c.verdicts)) {
        const r = await get(proxy, `${origin.url}${path}`);
        assert.equal(r.status, status, `${path.slice(0, 40)}: ${r.decision} ${r.body.toString().slice(0, 300)}`);
        if (status === 403) assert.equal(r.decision, 'deny; reason=rule-disallow');
      }
      assert.equal(origin.robotsHits(), 1, 'robots.txt fetched once');
      const pagesUpstream = origin.hits.filter((h) => h.url !== '/robots.txt').map((h) => h.url);
      assert.deepEqual(pagesUpstream, Object.keys(c.verdicts).filter((p) => c.verdicts[p] === 200), 'only allowed paths went upstream');

      // The delay: the explain answer, and for a delay beyond maxWait the 429's Retry-After.
      const explained = await admin(proxy, `/explain?url=${encodeURIComponent(`${origin.url}/page`)}&ua=${encodeURIComponent(UA)}`);
      assert.equal(explained.status, 200);
      assert.equal(explained.body['crawlDelaySeconds'], c.delaySeconds);
      const explainedCodes = (explained.body['robotsWarnings'] as Array<{ code: string }>).map((w) => w.code);
      for (const code of c.warnings) assert.ok(explainedCodes.includes(code), `/explain warns ${code}: ${explainedCodes.join(', ')}`);
      if (c.delaySeconds !== null && c.delaySeconds > 5) {
        const second = await get(proxy, `${origin.url}/page`);
        assert.equal(second.status, 429);
        assert.equal(second.headers['retry-after'], String(Math.ceil(c.delaySeconds)), 'Retry-After is the crawl-delay as delay-seconds');
      }

      // Logged once per fetch, with the warnings; the admin view has them too.
      const fetchLines = logs.lines.filter((l) => l['event'] === 'robots-fetch' && l['origin'] === origin.url);
      assert.equal(fetchLines.length, 1);
      const loggedCodes = (fetchLines[0]!['warnings'] as Array<{ code: string }>).map((w) => w.code);
      assert.deepEqual(loggedCodes, explainedCodes);
      assert.ok(JSON.stringify(fetchLines[0]).length < 64 * 1024, 'the log line stays small');
      const view = await admin(proxy, `/robots?origin=${encodeURIComponent(origin.url)}`);
      assert.equal(view.status, 200);
      assert.deepEqual((view.body['warnings'] as Array<{ code: string }>).map((w) => w.code), explainedCodes);
      if (c.delaySeconds !== null) assert.equal((view.body['crawlDelays'] as Record<string, number>)['*'], c.delaySeconds);

      await assertStillServing(proxy, control);
    });
  }
});

describe('a crawl-delay past Node\'s 32-bit timer limit, honoured (pacing.maxCrawlDelay 720h)', () => {
  let proxy: Proxy;
  let control: TestOrigin;
  let origin: TestOrigin;

  before(async () => {
    proxy = await startTestProxy({ https: { mode: 'tunnel' }, pacing: { maxCrawlDelay: '720h', maxWait: '5s' } });
    control = await startHostileOrigin('User-agent: *\nDisallow: /private\n');
    origin = await startHostileOrigin('User-agent: *\nCrawl-delay: 2147484\n');
  });
  after(async () => {
    await proxy?.close();
    await Promise.all([control?.close(), origin?.close()]);
  });

  it('Crawl-delay: 2147484 applies in full, the idle proxy does not spin, and it keeps serving', async () => {
    const first = await get(proxy, `${origin.url}/a`);
    assert.equal(first.status, 200);
    // The pacer now holds a timer of 2,147,484,000 ms for this origin: chained, not fired after 1 ms.
    const cpuBefore = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const cpu = process.cpuUsage(cpuBefore);
    assert.ok(cpu.user + cpu.system < 150_000, `${(cpu.user + cpu.system) / 1000} ms of CPU in 300 ms idle`);
    const second = await get(proxy, `${origin.url}/b`);
    assert.equal(second.status, 429);
    assert.equal(second.headers['retry-after'], '2147484');
    assert.deepEqual(origin.hits.map((h) => h.url), ['/robots.txt', '/a']);
    await assertStillServing(proxy, control);
  });
});

describe('pacing.maxCrawlDelay lowers the ceiling', () => {
  let proxy: Proxy;
  let origin: TestOrigin;

  before(async () => {
    proxy = await startTestProxy({ https: { mode: 'tunnel' }, pacing: { maxCrawlDelay: '1h', maxWait: '5s' } });
    origin = await startHostileOrigin('User-agent: *\nCrawl-delay: 1e300\n');
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('Crawl-delay: 1e300 with a 1h ceiling: 3600 s, Retry-After 3600', async () => {
    assert.equal((await get(proxy, `${origin.url}/a`)).status, 200);
    const second = await get(proxy, `${origin.url}/b`);
    assert.equal(second.status, 429);
    assert.equal(second.headers['retry-after'], '3600');
  });
});
