/**
 * The operator's policy end to end: a real proxy (in process) with policy rules, real origins on
 * loopback, real HTTP through the proxy. Each action (deny, allow, report, pace with a rate cap),
 * the order of the rules, `enforcement: report`, what report mode still refuses, and a reload.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, validateConfig } from '../../src/config/index.js';
import { monotonicToEpochMs } from '../../src/clock.js';
import { CancelSignal } from '../../src/pacing/index.js';
import { startProxy, type RunningProxy } from '../../src/main.js';
import type { Identity } from '../../src/policy/identity.js';
import { captureLogs, proxyGet, siteHandler, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { rawExchange, waitFor } from '../helpers/proxy-client.js';
import { assertStartSpacing, sentStarts } from '../helpers/spacing.js';
import { startProxyProcess, type ProxyProcess } from '../helpers/processes.js';

const BOT_UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const DISALLOW_PRIVATE = 'User-agent: *\nDisallow: /private/\n';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

function get(proxy: Proxy | RunningProxy, url: string, headers: Record<string, string> = {}) {
  return proxyGet(proxy.proxyAddress.port, url, { headers: { 'user-agent': BOT_UA, ...headers } });
}

/** The access log lines (msg `request`) for `url`. */
function accessLines(logs: LogCapture, url: string): Array<Record<string, unknown>> {
  return logs.lines.filter((l) => l['msg'] === 'request' && l['url'] === url);
}

/** One metric sample's value from Prometheus text, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('operator policy, enforced', () => {
  let site: TestOrigin;
  let unreachable: TestOrigin;
  let untouched: TestOrigin;
  let paced: TestOrigin;
  let slow: TestOrigin;
  let proxy: Proxy;
  const logs = captureLogs();

  before(async () => {
    [site, unreachable, untouched, paced, slow] = await Promise.all([
      startOrigin(siteHandler({ robots: DISALLOW_PRIVATE })),
      startOrigin(siteHandler({ robotsStatus: 500, robots: 'down' })),
      startOrigin(siteHandler({ robots: '' })),
      startOrigin(siteHandler({ robots: '' })),
      startOrigin(siteHandler({ robots: 'User-agent: *\nCrawl-delay: 0.2\n' })),
    ]);
    proxy = await startTestProxy(
      {
        pacing: { maxConcurrency: 16, maxWait: '30s' },
        policy: {
          rules: [
            { name: 'block-admin', origin: site.url, path: '/admin', action: 'deny' },
            { name: 'consented', origin: site.url, path: '/private/consented/', action: 'allow' },
            { name: 'try-out', origin: site.url, path: '/private/report/', action: 'report' },
            { name: 'no-evilbot', token: 'evilbot', action: 'deny' },
            { name: 'consent-down', origin: unreachable.url, action: 'allow' },
            { name: 'off-limits', origin: untouched.url, action: 'deny' },
            { name: 'posts', origin: site.url, method: 'POST', action: 'deny' },
            { name: 'cap', origin: paced.url, rate: '10/s' },
            { name: 'cap-below-delay', origin: slow.url, rate: '100/s' },
          ],
        },
        log: { level: 'info' },
      },
      { logger: logs.logger },
    );
  });

  after(async () => {
    await proxy?.close();
    await Promise.all([site, unreachable, untouched, paced, slow].map((o) => o?.close()));
  });

  it('deny: 403 operator-policy naming the rule in the header, the body and the log; nothing upstream, robots.txt not fetched', async () => {
    const r = await get(proxy, `${untouched.url}/page`);
    assert.equal(r.status, 403);
    assert.equal(r.headers['x-robots-proxy-decision'], 'deny; reason=operator-policy; rule=off-limits');
    assert.match(r.body, /Refused by the proxy operator's policy \(rule "off-limits"\)/);
    assert.match(r.body, /policy rule: +off-limits \(action deny\)/);
    assert.deepEqual(untouched.hits, [], 'the origin was never contacted, not even for robots.txt');
    const json = await get(proxy, `${site.url}/admin/users`, { accept: 'application/json' });
    assert.equal(json.status, 403);
    const body = JSON.parse(json.body);
    assert.equal(body.decision.reason, 'operator-policy');
    assert.deepEqual(body.decision.policy, { rule: 'block-admin', action: 'deny' });
    assert.ok(!site.hits.some((h) => h.url.startsWith('/admin')));
    await waitFor(() => accessLines(logs, `${untouched.url}/page`).length === 1, 'access line');
    const line = accessLines(logs, `${untouched.url}/page`)[0]!;
    assert.deepEqual((line['decision'] as Record<string, unknown>)['policy'], { rule: 'off-limits', action: 'deny' });
    assert.equal(line['status'], 403);
  });

  it('deny by method and by product token (any candidate, any case)', async () => {
    const post = await proxyGet(proxy.proxyAddress.port, `${site.url}/form`, { method: 'POST', headers: { 'user-agent': BOT_UA, 'content-length': '0' } });
    assert.equal(post.headers['x-robots-proxy-decision'], 'deny; reason=operator-policy; rule=posts');
    const evil = await get(proxy, `${site.url}/page`, { 'user-agent': 'python-requests/2.31 (compatible; EVILBOT/1.0)' });
    assert.equal(evil.headers['x-robots-proxy-decision'], 'deny; reason=operator-policy; rule=no-evilbot');
  });

  it('first match wins: an allow listed before a deny decides the requests both match', async () => {
    const r = await get(proxy, `${site.url}/private/consented/1`, { 'user-agent': 'EvilBot/1.0' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-robots-proxy-decision'], 'allow; reason=operator-allow; rule=consented');
  });

  it('allow: a disallowed path is forwarded (operator-allow), and an unreachable robots.txt refuses nothing', async () => {
    const r = await get(proxy, `${site.url}/private/consented/2`);
    assert.equal(r.status, 200);
    assert.equal(r.body, 'page /private/consented/2\n');
    assert.equal(r.headers['x-robots-proxy-decision'], 'allow; reason=operator-allow; rule=consented');
    const other = await get(proxy, `${site.url}/private/other`);
    assert.equal(other.status, 403, 'robots.txt still decides what no rule matches');
    assert.equal(other.headers['x-robots-proxy-decision'], 'deny; reason=rule-disallow');
    const down = await get(proxy, `${unreachable.url}/page`);
    assert.equal(down.status, 200);
    assert.equal(down.headers['x-robots-proxy-decision'], 'allow; reason=operator-allow; rule=consent-down');
  });

  it('report: decided by robots.txt, forwarded anyway, with would-deny in the header and wouldDeny in the log', async () => {
    const r = await get(proxy, `${site.url}/private/report/1`);
    assert.equal(r.status, 200);
    assert.equal(r.body, 'page /private/report/1\n');
    assert.equal(r.headers['x-robots-proxy-decision'], 'allow; reason=report-only; rule=try-out; would-deny=rule-disallow');
    await waitFor(() => accessLines(logs, `${site.url}/private/report/1`).length === 1, 'access line');
    const decision = accessLines(logs, `${site.url}/private/report/1`)[0]!['decision'] as Record<string, unknown>;
    assert.equal(decision['wouldDeny'], 'rule-disallow');
    assert.deepEqual(decision['rule'], { kind: 'disallow', pattern: '/private/', line: 2 });
  });

  it('shows the rule in /explain, counts the reasons in /metrics, and keeps policy refusals and report-only rows in the ledger', async () => {
    const explained = (await (await fetch(`${proxy.adminUrl}/explain?url=${encodeURIComponent(`${site.url}/admin`)}&ua=ExampleBot`)).json()) as Record<string, unknown>;
    assert.equal(explained['reason'], 'operator-policy');
    assert.deepEqual(explained['policy'], { rule: 'block-admin', action: 'deny' });
    await get(proxy, `${site.url}/private/report/2`);
    const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    assert.ok((sample(metrics, 'robots_proxy_requests_total{verdict="deny",reason="operator-policy"}') ?? 0) >= 2);
    assert.ok((sample(metrics, 'robots_proxy_requests_total{verdict="allow",reason="operator-allow"}') ?? 0) >= 1);
    assert.ok((sample(metrics, 'robots_proxy_requests_total{verdict="allow",reason="report-only"}') ?? 0) >= 2);
    assert.ok((sample(metrics, 'robots_proxy_would_deny_total{reason="rule-disallow"}') ?? 0) >= 2);
    assert.equal(sample(metrics, 'robots_proxy_would_deny_total{reason="operator-policy"}'), 0);
    const refusals = (await (await fetch(`${proxy.adminUrl}/report/data/refusals.json?range=1h&limit=100`)).json()) as { rows: Array<Record<string, unknown>> };
    const rows = refusals.rows;
    const offLimits = rows.find((r) => r['url'] === `${untouched.url}/page`);
    assert.equal(offLimits?.['reason'], 'operator-policy');
    assert.equal(offLimits?.['policyRule'], 'off-limits');
    assert.equal(offLimits?.['status'], 403);
    const reported = rows.find((r) => r['url'] === `${site.url}/private/report/1`);
    assert.equal(reported?.['reason'], 'report-only');
    assert.equal(reported?.['wouldDeny'], 'rule-disallow');
    assert.equal(reported?.['policyRule'], 'try-out');
    assert.equal(reported?.['status'], 200);
  });

  it('rate: 10/s spaces request starts to the origin by at least 100 ms', async () => {
    const paths = Array.from({ length: 8 }, (_, i) => `/page/${i}`);
    const answers = await Promise.all(paths.map((p) => get(proxy, paced.url + p)));
    assert.ok(answers.every((a) => a.status === 200 && a.headers['x-robots-proxy-decision'] === 'allow; reason=no-matching-rule; rule=cap'));
    await waitFor(() => sentStarts(logs.lines, paced.url, '/page/').length === 8, 'access lines');
    const seen = paced.hits.filter((h) => h.url.startsWith('/page/')).map((h) => ({ path: h.url, atMs: monotonicToEpochMs(h.atMs) }));
    assertStartSpacing(sentStarts(logs.lines, paced.url, '/page/'), seen, 100);
    const delays = accessLines(logs, `${paced.url}/page/0`).map((l) => ((l['decision'] as Record<string, unknown>)['pacing'] as Record<string, unknown>)['delayMs']);
    assert.deepEqual(delays, [100]);
  });

  it('a rate never lowers the site\'s own Crawl-delay', async () => {
    const paths = Array.from({ length: 5 }, (_, i) => `/page/${i}`);
    await Promise.all(paths.map((p) => get(proxy, slow.url + p)));
    await waitFor(() => sentStarts(logs.lines, slow.url, '/page/').length === 5, 'access lines');
    const seen = slow.hits.filter((h) => h.url.startsWith('/page/')).map((h) => ({ path: h.url, atMs: monotonicToEpochMs(h.atMs) }));
    assertStartSpacing(sentStarts(logs.lines, slow.url, '/page/'), seen, 200);
  });
});

describe('operator policy and identities', () => {
  let site: TestOrigin;
  let proxy: Proxy;

  before(async () => {
    site = await startOrigin(siteHandler({ robots: '' }));
    proxy = await startTestProxy({
      policy: {
        rules: [
          { name: 'scraper-a-off', identity: 'scraper-a', path: '/off', action: 'deny' },
          { name: 'examplebot-off', token: 'ExampleBot', path: '/bot-off', action: 'deny' },
        ],
      },
    });
  });

  after(async () => {
    await proxy?.close();
    await site?.close();
  });

  const identity = (name: string, boundTokens: string[] = []): Identity => ({ name, source: 'credentials', boundTokens, onMismatch: 'flag', userAgent: { mode: 'keep' } });
  const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';

  it('matches identity rules on the identity\'s name, and token rules on a bound identity\'s tokens whatever its User-Agent says', async () => {
    const byName = await proxy.pipeline.decideFor(new URL(`${site.url}/off`), CHROME, identity('scraper-a'));
    assert.equal(byName.decision.reason, 'operator-policy');
    assert.deepEqual(byName.decision.policy, { rule: 'scraper-a-off', action: 'deny' });
    assert.equal(byName.decision.identity?.name, 'scraper-a');
    assert.equal((await proxy.pipeline.decideFor(new URL(`${site.url}/off`), CHROME, identity('scraper-b'))).decision.reason, 'no-matching-rule');
    assert.equal((await proxy.pipeline.decideFor(new URL(`${site.url}/off`), CHROME)).decision.reason, 'no-matching-rule', 'no identity, no identity rule');
    const bound = await proxy.pipeline.decideFor(new URL(`${site.url}/bot-off`), CHROME, identity('scraper-c', ['ExampleBot']));
    assert.equal(bound.decision.reason, 'operator-policy', 'a Chrome User-Agent does not escape the rules for the bound token');
    assert.equal(bound.decision.policy?.rule, 'examplebot-off');
    assert.equal(bound.decision.identity?.isMismatch, true);
    assert.equal((await proxy.pipeline.decideFor(new URL(`${site.url}/bot-off`), CHROME)).decision.reason, 'no-matching-rule');
  });
});

describe('pacing by the rule decideFor matched', () => {
  let sites: TestOrigin[];
  let proxy: Proxy;
  const rules = (minDelay: string) => [{ name: 'loopback-slow', origin: '127.0.0.1', minDelay }];

  before(async () => {
    sites = [await startOrigin(siteHandler({ robots: '' })), await startOrigin(siteHandler({ robots: '' }))];
    proxy = await startTestProxy({ policy: { rules: rules('300ms') } });
  });

  after(async () => {
    await proxy?.close();
    for (const site of sites ?? []) await site.close();
  });

  /** decideFor, then (after `between`) waitForSlot with what decideFor matched; the delay the request was paced by, ms. */
  const pacedDelayMs = async (url: string, between: () => void = () => undefined): Promise<number | undefined> => {
    const decided = await proxy.pipeline.decideFor(new URL(url), BOT_UA);
    assert.equal(decided.matched?.rule?.name, 'loopback-slow');
    between();
    const waited = await proxy.pipeline.waitForSlot(decided.decision, decided.policyRequest, 'test', new CancelSignal(), undefined, decided.matched);
    assert.ok('slot' in waited);
    waited.slot.release({});
    return decided.decision.pacing?.delayMs;
  };

  it('paces by the matched rule, or by the rule of the policy in force when a reload came in between', async () => {
    assert.equal(await pacedDelayMs(`${sites[0]!.url}/a`), 300);
    const reloaded = validateConfig({ upstream: { allowPrivateNetworks: true }, policy: { rules: rules('700ms') } });
    assert.equal(await pacedDelayMs(`${sites[1]!.url}/a`, () => proxy.pipeline.setConfig(reloaded)), 700);
  });
});

describe('enforcement: report', () => {
  let site: TestOrigin;
  let unreachable: TestOrigin;
  let proxy: Proxy;
  let guarded: Proxy;
  const logs = captureLogs();

  before(async () => {
    [site, unreachable] = await Promise.all([startOrigin(siteHandler({ robots: DISALLOW_PRIVATE })), startOrigin(siteHandler({ robotsStatus: 503, robots: 'down' }))]);
    const config = { enforcement: 'report', policy: { rules: [{ name: 'block-admin', path: '/admin', action: 'deny' }] }, log: { level: 'info' } };
    proxy = await startTestProxy(config, { logger: logs.logger });
    guarded = await startTestProxy({ ...config, upstream: { allowPrivateNetworks: false } });
  });

  after(async () => {
    await proxy?.close();
    await guarded?.close();
    await Promise.all([site, unreachable].map((o) => o?.close()));
  });

  it('forwards what robots.txt disallows, what a deny rule matches, and an unreachable robots.txt, saying what would have happened', async () => {
    const cases = [
      [`${site.url}/private/a`, 'allow; reason=report-only; would-deny=rule-disallow'],
      [`${site.url}/admin`, 'allow; reason=report-only; rule=block-admin; would-deny=operator-policy'],
      [`${unreachable.url}/page`, 'allow; reason=report-only; would-deny=robots-unreachable'],
      [`${site.url}/page`, 'allow; reason=no-matching-rule'],
    ] as const;
    for (const [url, header] of cases) {
      const r = await get(proxy, url);
      assert.equal(r.status, 200, url);
      assert.equal(r.body, `page ${new URL(url).pathname}\n`);
      assert.equal(r.headers['x-robots-proxy-decision'], header, url);
    }
    assert.ok(site.hits.some((h) => h.url === '/private/a') && site.hits.some((h) => h.url === '/admin'));
    await waitFor(() => logs.lines.filter((l) => l['msg'] === 'request').length >= 4, 'access lines');
    const wouldDeny = logs.lines.filter((l) => l['msg'] === 'request').map((l) => (l['decision'] as Record<string, unknown>)['wouldDeny'] ?? null);
    assert.deepEqual(wouldDeny, ['rule-disallow', 'operator-policy', 'robots-unreachable', null]);
  });

  it('still refuses private-network targets and malformed requests: they protect the proxy', async () => {
    const r = await get(guarded, `${site.url}/page`);
    assert.equal(r.status, 403);
    assert.equal(r.headers['x-robots-proxy-decision'], 'deny; reason=target-private-network');
    const raw = await rawExchange(proxy.proxyAddress.port, 'GET /relative HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.match(raw, /^HTTP\/1\.1 400 /);
    assert.match(raw, /x-robots-proxy-decision: deny; reason=bad-request/i);
  });
});

describe('pacing.enabled: false', () => {
  let site: TestOrigin;
  let proxy: Proxy;
  const logs = captureLogs();

  before(async () => {
    site = await startOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private/\nCrawl-delay: 30\n' }));
    proxy = await startTestProxy({ enforcement: 'report', pacing: { enabled: false, minDelay: '10s' }, log: { level: 'info' } }, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
    await site?.close();
  });

  it('starts requests with no delay, whatever Crawl-delay and minDelay say (report mode can run without slowing anyone)', async () => {
    const answers = await Promise.all(['/a', '/b', '/private/c'].map((p) => get(proxy, site.url + p)));
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200]);
    await waitFor(() => logs.lines.filter((l) => l['msg'] === 'request').length === 3, 'access lines');
    const decisions = logs.lines.filter((l) => l['msg'] === 'request').map((l) => l['decision'] as Record<string, unknown>);
    assert.deepEqual(decisions.map((d) => (d['pacing'] as Record<string, unknown>)['delayMs']), [0, 0, 0]);
    assert.deepEqual(decisions.map((d) => d['crawlDelaySeconds']), [30, 30, 30], 'the Crawl-delay was read, and not applied');
  });
});

describe('policy reload', () => {
  let site: TestOrigin;
  let proxy: RunningProxy;
  let path: string;
  let adminUrl: string;
  const yaml = (policy: string) =>
    `listen: { host: 127.0.0.1, port: 0 }\nadmin: { host: 127.0.0.1, port: 0 }\nupstream: { allowPrivateNetworks: true }\nlog: { level: silent }\nstateDir: ${join(path, '..', 'state')}\n${policy}`;

  before(async () => {
    site = await startOrigin(siteHandler({ robots: '' }));
    path = join(mkdtempSync(join(tmpdir(), 'robots-proxy-policy-')), 'config.yaml');
    writeFileSync(path, yaml(''));
    proxy = await startProxy(loadConfig(path), { configPath: path, logger: captureLogs().logger });
    adminUrl = `http://127.0.0.1:${proxy.adminAddress!.port}`;
  });

  after(async () => {
    await proxy?.close();
    await site?.close();
  });

  const reload = async () => {
    const r = await fetch(`${adminUrl}/reload`, { method: 'POST' });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  it('applies a new policy on POST /reload, and keeps it when the next file is invalid', async () => {
    assert.equal((await get(proxy, `${site.url}/admin`)).status, 200);
    writeFileSync(path, yaml('policy:\n  rules:\n    - { name: block-admin, path: /admin, action: deny }\n'));
    const applied = await reload();
    assert.equal(applied.status, 200);
    assert.deepEqual(applied.body['applied'], ['policy.rules']);
    assert.equal((await get(proxy, `${site.url}/admin`)).headers['x-robots-proxy-decision'], 'deny; reason=operator-policy; rule=block-admin');

    writeFileSync(path, yaml('enforcement: report\npolicy:\n  rules:\n    - { name: block-admin, path: /admin, action: deny }\n    - { name: broken, path: /x, action: deny, rate: 5/m }\n'));
    const refused = await reload();
    assert.equal(refused.status, 422);
    assert.match(String(refused.body['message']), /policy\.rules\[1\]\.action: deny sends nothing upstream/);
    const still = await get(proxy, `${site.url}/admin`);
    assert.equal(still.status, 403, 'the old policy, and enforce, stay in force');
    assert.equal(still.headers['x-robots-proxy-decision'], 'deny; reason=operator-policy; rule=block-admin');

    writeFileSync(path, yaml('enforcement: report\npolicy:\n  rules:\n    - { name: block-admin, path: /admin, action: deny }\n'));
    assert.deepEqual((await reload()).body['applied'], ['enforcement']);
    assert.equal((await get(proxy, `${site.url}/admin`)).headers['x-robots-proxy-decision'], 'allow; reason=report-only; rule=block-admin; would-deny=operator-policy');
  });
});

describe('policy reload by SIGHUP (robots-proxy serve), and the hosts deprecation', () => {
  let site: TestOrigin;
  let proxy: ProxyProcess;
  const yaml = (extra: string) => `listen: { host: 127.0.0.1, port: 0 }\nadmin: { enabled: false }\nupstream: { allowPrivateNetworks: true }\nlog: { level: info }\nstateDir: $STATE\n${extra}`;
  const rewrite = (extra: string) => writeFileSync(proxy.configPath, yaml(extra).replaceAll('$STATE', join(proxy.configPath, '..', 'state')));

  before(async () => {
    site = await startOrigin(siteHandler({ robots: '' }));
    proxy = await startProxyProcess(yaml('hosts:\n  "127.0.0.1": { minDelay: 10ms }\n  "*.example.com": { maxConcurrency: 2 }\n'));
  });

  after(async () => {
    await proxy?.close();
    await site?.close();
  });

  it('warns at start that hosts is deprecated, with the policy rules to write instead, and keeps it working', async () => {
    const warning = await proxy.waitForEvent('config-deprecated');
    assert.equal(warning['key'], 'hosts');
    assert.equal(
      warning['replacement'],
      'policy:\n  rules:\n    - { name: "hosts:127.0.0.1", origin: "127.0.0.1", action: pace, minDelay: 10ms }\n    - { name: "hosts:*.example.com", origin: "*.example.com", action: pace, maxConcurrency: 2 }',
    );
    const r = await proxyGet(proxy.proxyPort, `${site.url}/page`);
    assert.equal(r.headers['x-robots-proxy-decision'], 'allow; reason=no-matching-rule; rule=hosts:127.0.0.1');
  });

  it('applies a new policy on SIGHUP, and keeps it when the next file is invalid', async () => {
    rewrite('policy:\n  rules:\n    - { name: no-page, path: /page, action: deny }\n');
    proxy.kill('SIGHUP');
    const reloaded = await proxy.waitForEvent('config-reloaded');
    assert.deepEqual(reloaded['applied'], ['hosts["127.0.0.1"]', 'hosts["*.example.com"]', 'policy.rules']);
    assert.equal((await proxyGet(proxy.proxyPort, `${site.url}/page`)).headers['x-robots-proxy-decision'], 'deny; reason=operator-policy; rule=no-page');

    rewrite('policy:\n  rules:\n    - { name: no-page, path: /page, action: forbid }\n');
    proxy.kill('SIGHUP');
    const failed = await proxy.waitForEvent('config-reload-failed');
    assert.match(String(failed['error']), /policy\.rules\[0\]\.action/);
    const still = await proxyGet(proxy.proxyPort, `${site.url}/page`);
    assert.equal(still.status, 403);
    assert.equal(still.headers['x-robots-proxy-decision'], 'deny; reason=operator-policy; rule=no-page');
  });
});
