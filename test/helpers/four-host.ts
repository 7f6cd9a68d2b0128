/**
 * The outcome assertions of the four-host scenario (issue #3), shared by its
 * HTTP and HTTPS runs: origins A-D, 60 pages each, 27 URLs under /private/ on
 * A-C, D's robots.txt answering 404.
 */
import assert from 'node:assert/strict';

/** One client request and what came back. */
export interface FourHostResult {
  host: string;
  path: string;
  status: number;
  body: string;
  /** The `x-robots-proxy-decision` header. */
  decision: string;
}

/** Requests an origin received, by origin name. */
export type HitsByOrigin = Record<string, ReadonlyArray<{ url: string }>>;

/** Each origin's robots.txt was fetched exactly once. */
export function assertRobotsFetchedOnce(hits: HitsByOrigin): void {
  for (const [name, list] of Object.entries(hits)) assert.equal(list.filter((h) => h.url === '/robots.txt').length, 1, `robots.txt hits at ${name}`);
}

/** No request under /private/ reached any origin. */
export function assertNothingPrivateUpstream(hits: HitsByOrigin): void {
  for (const [name, list] of Object.entries(hits)) assert.deepEqual(list.filter((h) => h.url.startsWith('/private/')), [], `private hits at ${name}`);
}

/** All 27 private URLs got 403 naming the rule and its line. */
export function assertPrivateDenied(results: readonly FourHostResult[]): void {
  const denied = results.filter((r) => r.path.startsWith('/private/'));
  assert.equal(denied.length, 27);
  for (const r of denied) {
    assert.equal(r.status, 403);
    assert.equal(r.decision, 'deny; reason=rule-disallow');
    assert.match(r.body, /disallow: \/private\/ +\(line 2\)/);
  }
}

/** Every page got 200 with the origin's body, each origin saw its 60 pages, and D's were allowed as robots-unavailable. */
export function assertPagesServed(results: readonly FourHostResult[], hits: HitsByOrigin): void {
  const pages = results.filter((r) => r.path.startsWith('/page/'));
  assert.equal(pages.length, 240);
  for (const r of pages) {
    assert.equal(r.status, 200, `${r.host}${r.path}: ${r.body}`);
    assert.equal(r.body, `page ${r.path}\n`);
  }
  for (const [name, list] of Object.entries(hits)) assert.equal(list.filter((h) => h.url.startsWith('/page/')).length, 60, `pages at ${name}`);
  assert.ok(pages.filter((r) => r.host === 'D').every((r) => r.decision === 'allow; reason=robots-unavailable'));
}
