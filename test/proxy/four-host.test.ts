/**
 * The four-host scenario (issue #3): four origins answering pages in 10 ms;
 * A and C disallow /private/, B the same plus Crawl-delay 0.05, D answers 404
 * for robots.txt. A client with 32 concurrent connections and a bot
 * User-Agent fetches 60 pages from each and 27 URLs under /private/.
 *
 * The proxy runs as `robots-proxy serve` and the origins in a process of
 * their own, so the start times the origins record are not skewed by the
 * client load in this process.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertStartSpacing, seenStarts, sentStarts } from '../helpers/spacing.js';
import { assertNothingPrivateUpstream, assertPagesServed, assertPrivateDenied, assertRobotsFetchedOnce, crawlFourHosts, FOUR_HOST_NAMES, FOUR_HOST_ORIGINS, fourHostProxyYaml, fourHostWork } from '../helpers/four-host.js';
import { startOriginsProcess, startProxyProcess, type OriginsProcess, type ProxyProcess, type RemoteHit } from '../helpers/processes.js';

const NAMES = FOUR_HOST_NAMES;

describe('four-host scenario over HTTP', () => {
  let origins: OriginsProcess;
  let proxy: ProxyProcess;
  const results: Array<{ host: string; path: string; status: number; body: string; decision: string }> = [];
  const hits: Record<string, RemoteHit[]> = {};

  before(async () => {
    [origins, proxy] = await Promise.all([startOriginsProcess(FOUR_HOST_ORIGINS), startProxyProcess(fourHostProxyYaml())]);

    results.push(...(await crawlFourHosts(proxy.proxyPort, origins.urlOf)));
    for (const name of NAMES) hits[name] = await origins.hits(name);
    await proxy.waitForAccessLines(fourHostWork().length);
  });

  after(async () => {
    await proxy?.close();
    await origins?.close();
  });

  it('fetches each origin\'s robots.txt exactly once', () => {
    assertRobotsFetchedOnce(hits);
  });

  it('sends nothing under /private/ to any origin', () => {
    assertNothingPrivateUpstream(hits);
  });

  it('answers all 27 private URLs with 403 naming the rule', () => {
    assertPrivateDenied(results);
  });

  it('answers every page with 200 and the origin\'s body', () => {
    assertPagesServed(results, hits);
  });

  it('spaces request starts at B by at least 50 ms as sent, and B saw none before it was sent', () => {
    const sent = sentStarts(proxy.logs, origins.urlOf('B'), '/page/');
    assert.equal(sent.length, 60);
    const seen = seenStarts(hits['B']!, '/page/');
    assert.equal(seen.length, 60);
    assertStartSpacing(sent, seen, 50);
  });
});
