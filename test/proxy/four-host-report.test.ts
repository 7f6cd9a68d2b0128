/**
 * The four-host scenario (issue #3, test/proxy/four-host.test.ts) with `enforcement: report`
 * (issue 8): nothing is refused, every request is forwarded, and the 27 requests under
 * /private/ that robots.txt disallows are logged with `wouldDeny: rule-disallow` and answered
 * with `would-deny=rule-disallow` in the decision header. Pacing stays on: B's Crawl-delay still
 * spaces its request starts.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertStartSpacing, seenStarts, sentStarts } from '../helpers/spacing.js';
import { assertRobotsFetchedOnce, crawlFourHosts, FOUR_HOST_NAMES, FOUR_HOST_ORIGINS, fourHostProxyYaml, fourHostWork, type FourHostResult } from '../helpers/four-host.js';
import { startOriginsProcess, startProxyProcess, type OriginsProcess, type ProxyProcess, type RemoteHit } from '../helpers/processes.js';

describe('four-host scenario in report mode', () => {
  let origins: OriginsProcess;
  let proxy: ProxyProcess;
  let results: FourHostResult[] = [];
  const hits: Record<string, RemoteHit[]> = {};
  const requestCount = fourHostWork().length;

  before(async () => {
    [origins, proxy] = await Promise.all([startOriginsProcess(FOUR_HOST_ORIGINS), startProxyProcess(fourHostProxyYaml('enforcement: report\n'))]);
    results = await crawlFourHosts(proxy.proxyPort, origins.urlOf);
    for (const name of FOUR_HOST_NAMES) hits[name] = await origins.hits(name);
    await proxy.waitForAccessLines(requestCount);
  });

  after(async () => {
    await proxy?.close();
    await origins?.close();
  });

  it('forwards every request, private ones included, each exactly once', () => {
    assert.equal(results.length, 267);
    for (const r of results) {
      assert.equal(r.status, 200, `${r.host}${r.path}: ${r.body}`);
      assert.equal(r.body, `page ${r.path}\n`);
    }
    const forwarded = Object.values(hits).flat().filter((h) => h.url !== '/robots.txt');
    assert.equal(forwarded.length, 267);
    assert.equal(forwarded.filter((h) => h.url.startsWith('/private/')).length, 27);
    assertRobotsFetchedOnce(hits);
  });

  it('logs 27 wouldDeny, all rule-disallow, for exactly the private URLs, and says so in the header', () => {
    const lines = proxy.logs.filter((l) => l['msg'] === 'request');
    assert.equal(lines.length, requestCount);
    const wouldDeny = lines.filter((l) => (l['decision'] as Record<string, unknown>)['wouldDeny'] !== undefined);
    assert.equal(wouldDeny.length, 27);
    for (const l of wouldDeny) {
      const d = l['decision'] as Record<string, unknown>;
      assert.equal(d['wouldDeny'], 'rule-disallow');
      assert.equal(d['reason'], 'report-only');
      assert.equal(d['verdict'], 'allow');
      assert.deepEqual(d['rule'], { kind: 'disallow', pattern: '/private/', line: 2 });
      assert.match(String(l['url']), /\/private\/\d+$/);
    }
    for (const r of results) {
      const expected = r.path.startsWith('/private/') ? 'allow; reason=report-only; would-deny=rule-disallow' : r.host === 'D' ? 'allow; reason=robots-unavailable' : 'allow; reason=no-matching-rule';
      assert.equal(r.decision, expected, `${r.host}${r.path}`);
    }
  });

  it('keeps pacing on: starts at B are spaced by its Crawl-delay of 50 ms, private requests included', () => {
    const sent = [...sentStarts(proxy.logs, origins.urlOf('B'), '/page/'), ...sentStarts(proxy.logs, origins.urlOf('B'), '/private/')];
    const seen = [...seenStarts(hits['B']!, '/page/'), ...seenStarts(hits['B']!, '/private/')];
    assert.equal(sent.length, 69);
    assertStartSpacing(sent, seen, 50);
  });
});
