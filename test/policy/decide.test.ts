// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { applyPolicy, decide, decidePolicyDenial, decideWithoutRobots } from '../../src/policy/decide.js';
import type { PolicyMatch } from '../../src/policy/operator-policy.js';
import type { RobotsSnapshot } from '../../src/policy/snapshot.js';
import type { SnapshotInfo } from '../../src/policy/decision.js';
import { extractProductTokens, parseRobotsTxt } from '../../src/robots/index.js';

function snapshot(state: SnapshotInfo['state'], body?: string, extra: Partial<SnapshotInfo> = {}): RobotsSnapshot {
  return {
    info: { url: 'http://a.example/robots.txt', state, status: state === 'ok' ? 200 : 503, error: undefined, fetchedAtMs: 1000, expiresAtMs: 61_000, bytes: body?.length ?? 0, truncated: false, ...extra },
    robots: state === 'ok' ? parseRobotsTxt(body ?? '') : null,
  };
}

const request = (pathAndQuery: string, productTokens: string[] = ['GPTBot']) => ({ origin: 'http://a.example', pathAndQuery, productTokens });

describe('decide: which candidate decided', () => {
  it('names the candidate whose group applied and keeps every candidate, best first', () => {
    const productTokens = extractProductTokens('Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) python-requests/2.31 (compatible; ExampleBot/1.0)');
    assert.deepEqual(productTokens, ['ExampleBot', 'python-requests', 'Nexus', '5X']);
    const both = snapshot('ok', 'User-agent: python-requests\nDisallow: /\n\nUser-agent: ExampleBot\nDisallow: /private/\n');
    const d = decide(both, request('/page', productTokens));
    assert.equal(d.verdict, 'allow');
    assert.equal(d.productToken, 'ExampleBot');
    assert.equal(d.group, 'ExampleBot');
    assert.deepEqual(d.agentTokens, productTokens);
    const library = decide(snapshot('ok', 'User-agent: python-requests\nDisallow: /\n'), request('/page', productTokens));
    assert.equal(library.verdict, 'deny');
    assert.equal(library.productToken, 'python-requests');
    const none = decide(snapshot('ok', 'User-agent: *\nDisallow: /page\n'), request('/page', productTokens));
    assert.equal(none.productToken, null);
    assert.equal(none.group, '*');
    assert.deepEqual(none.agentTokens, productTokens);
  });
});

describe('decide', () => {
  const ok = snapshot('ok', 'User-agent: *\nDisallow: /x\n\nUser-agent: GPTBot\nDisallow: /private/\nAllow: /private/ok\nCrawl-delay: 0.5\n');

  it('carries the rule, group, token and crawl-delay of a disallow (RFC 9309 §2.2.2)', () => {
    const d = decide(ok, request('/private/a?b=1'));
    assert.equal(d.verdict, 'deny');
    assert.equal(d.reason, 'rule-disallow');
    assert.equal(d.productToken, 'GPTBot');
    assert.equal(d.group, 'GPTBot');
    assert.deepEqual(d.rule, { kind: 'disallow', pattern: '/private/', line: 5 });
    assert.equal(d.crawlDelaySeconds, 0.5);
    assert.equal(d.path, '/private/a?b=1');
    assert.deepEqual(d.agentTokens, ['GPTBot']);
    assert.equal(d.snapshot, ok.info);
  });

  it('uses the * group when no group names the token', () => {
    const d = decide(ok, request('/x/1', ['OtherBot']));
    assert.equal(d.reason, 'rule-disallow');
    assert.equal(d.group, '*');
    assert.equal(d.productToken, null);
    assert.equal(d.crawlDelaySeconds, null);
  });

  it('allows all when robots.txt is unavailable (4xx, §2.3.1.3)', () => {
    const d = decide(snapshot('unavailable', undefined, { status: 404 }), request('/anything'));
    assert.equal(d.verdict, 'allow');
    assert.equal(d.reason, 'robots-unavailable');
  });

  it('disallows all when robots.txt is unreachable (§2.3.1.4), except /robots.txt itself', () => {
    const unreachable = snapshot('unreachable', undefined, { status: 503 });
    assert.equal(decide(unreachable, request('/anything')).reason, 'robots-unreachable');
    assert.equal(decide(unreachable, request('/anything')).verdict, 'deny');
    assert.equal(decide(unreachable, request('/robots.txt')).verdict, 'allow');
    assert.equal(decide(unreachable, request('/robots.txt')).reason, 'robots-txt-itself');
  });

  it('normalises the tested path (§2.2.2)', () => {
    assert.equal(decide(ok, request('/%7Efoo/caf\u00e9')).path, '/~foo/caf%C3%A9');
  });

  it('cannot be bypassed by encodings an origin resolves to a disallowed path', () => {
    const robots = snapshot('ok', 'User-agent: *\nDisallow: /private/\n');
    for (const path of ['/private%2Fx', '/private%2fx', '/%2Fprivate/x', '//private/x', '/.%2fprivate/x', '/foo/..%2fprivate/x', '/%70rivate/x', '/x/%5C../private/y', '/private;jsessionid=1/x', '/a/..;/private/x']) {
      const d = decide(robots, request(path, ['AnyBot']));
      assert.equal(d.verdict, 'deny', path);
      assert.equal(d.reason, 'rule-disallow', path);
      assert.ok(d.path.startsWith('/private/'), `${path} tested as ${d.path}`);
    }
    for (const path of ['/public//x', '/a/../public', '/q?next=/private/x', '/privatex', '/private;x', '/q?a=1;/private/x']) {
      assert.equal(decide(robots, request(path, ['AnyBot'])).verdict, 'allow', path);
    }
  });

  it('cannot be bypassed by escaping a reserved character an origin decodes (%3A, %40, ...)', () => {
    const robots = snapshot('ok', 'User-agent: *\nDisallow: /wiki/Special:\nDisallow: /a/@b\n');
    for (const path of ['/wiki/Special%3ASearch', '/wiki/Special%3aSearch', '/a/%40b', '/x/..%2Fwiki/Special%3AX']) {
      const d = decide(robots, request(path, ['AnyBot']));
      assert.equal(d.verdict, 'deny', path);
      assert.equal(d.reason, 'rule-disallow', path);
    }
    assert.equal(decide(robots, request('/wiki/Special%3ASearch', ['AnyBot'])).path, '/wiki/Special:Search');
    for (const path of ['/wiki/Other%3AX', '/q?p=/wiki/Special%3AX', '/wiki/Special%253A']) {
      assert.equal(decide(robots, request(path, ['AnyBot'])).verdict, 'allow', path);
    }
  });

  it('an allow written with the escaped spelling keeps it allowed when at least as specific as the decoded spelling\'s disallow', () => {
    // Before: `/wiki/Special%3ARandom` was refused by `Disallow: /wiki/Special:` though the site allowed that spelling
    // explicitly (RFC 9309 and the reference allow it).
    const robots = snapshot('ok', 'User-agent: *\nAllow: /wiki/Special%3ARandom\nDisallow: /wiki/Special:\nAllow: /a%40\nDisallow: /a@b/secret\nAllow: /\nDisallow: /p:q\nAllow: /x%28y\nDisallow: /x(y\nAllow: /m%\nDisallow: /m\nAllow: /t%3A\nDisallow: /t:xy\n');
    // `/t%3Axy`: `Allow: /t%3A` and `Disallow: /t:xy` are both 5 octets long, and allow wins a tie (§2.2.2).
    for (const path of ['/wiki/Special%3ARandom', '/wiki/Special%3aRandom/x', '/a%40b', '/x%28y', '/t%3Axy']) {
      const d = decide(robots, request(path, ['AnyBot']));
      assert.equal(d.verdict, 'allow', path);
      assert.equal(d.reason, 'rule-allow', path);
    }
    // A longer disallow of the decoded spelling still refuses; so does one the allow names no escape for.
    for (const [path, pattern] of [['/wiki/Special%3ASearch', '/wiki/Special:'], ['/wiki/Special:Random', '/wiki/Special:'], ['/a%40b/secret', '/a@b/secret'], ['/p%3Aq', '/p:q'], ['/m%3Ax', '/m']]) {
      const d = decide(robots, request(path as string, ['AnyBot']));
      assert.equal(d.verdict, 'deny', path);
      assert.equal(d.rule?.pattern, pattern, path);
    }
  });

  it('builds robots-less decisions with a reason and detail', () => {
    const d = decideWithoutRobots('target-private-network', { origin: 'http://10.0.0.1', detail: 'private' });
    assert.equal(d.verdict, 'deny');
    assert.equal(d.snapshot, null);
    assert.equal(d.detail, 'private');
  });
});

describe('applyPolicy: the operator\'s rule and enforcement on top of robots.txt', () => {
  const rule = (action: PolicyMatch['action']): PolicyMatch => ({ name: `r-${action}`, action, pacing: {}, facts: Object.freeze({ rule: `r-${action}`, action }) });
  const disallowed = () => decide(snapshot('ok', 'User-agent: *\nDisallow: /private\nCrawl-delay: 2\n'), request('/private/x'));
  const allowed = () => decide(snapshot('ok', 'User-agent: *\nDisallow: /private\n'), request('/page'));

  it('leaves the robots.txt decision alone without a rule in enforce mode', () => {
    assert.deepEqual(applyPolicy(disallowed(), undefined, 'enforce'), disallowed());
  });

  it('allow: allowed whatever robots.txt said, reason operator-allow, crawl-delay kept for pacing', () => {
    const d = applyPolicy(disallowed(), rule('allow'), 'enforce');
    assert.equal(d.verdict, 'allow');
    assert.equal(d.reason, 'operator-allow');
    assert.equal(d.crawlDelaySeconds, 2);
    assert.deepEqual(d.policy, { rule: 'r-allow', action: 'allow' });
    assert.equal(d.wouldDeny, undefined);
    assert.equal(applyPolicy(decide(snapshot('unreachable'), request('/x')), rule('allow'), 'enforce').reason, 'operator-allow');
  });

  it('report (rule or enforcement): a refusal becomes report-only with wouldDeny, the robots.txt rule kept', () => {
    for (const [r, mode] of [[rule('report'), 'enforce'], [undefined, 'report'], [rule('pace'), 'report']] as const) {
      const d = applyPolicy(disallowed(), r, mode);
      assert.equal(d.verdict, 'allow');
      assert.equal(d.reason, 'report-only');
      assert.equal(d.wouldDeny, 'rule-disallow');
      assert.deepEqual(d.rule, { kind: 'disallow', pattern: '/private', line: 2 });
    }
    const unreachable = applyPolicy(decide(snapshot('unreachable'), request('/x')), undefined, 'report');
    assert.equal(unreachable.wouldDeny, 'robots-unreachable');
    const fine = applyPolicy(allowed(), rule('report'), 'enforce');
    assert.equal(fine.reason, 'no-matching-rule');
    assert.equal(fine.wouldDeny, undefined);
    assert.deepEqual(fine.policy, { rule: 'r-report', action: 'report' });
  });

  it('deny in report mode: forwarded, wouldDeny operator-policy; enforced, decided before robots.txt', () => {
    const d = applyPolicy(allowed(), rule('deny'), 'report');
    assert.equal(d.verdict, 'allow');
    assert.equal(d.reason, 'report-only');
    assert.equal(d.wouldDeny, 'operator-policy');
    const denial = decidePolicyDenial(rule('deny'), { origin: 'http://a.example', path: '/a b', agentTokens: ['GPTBot'] });
    assert.equal(denial.verdict, 'deny');
    assert.equal(denial.reason, 'operator-policy');
    assert.equal(denial.snapshot, null);
    assert.equal(denial.path, '/a%20b');
    assert.deepEqual(denial.policy, { rule: 'r-deny', action: 'deny' });
  });

  it('never overrides what protects the proxy (a private network, an untrusted certificate)', () => {
    const privateNet = decideWithoutRobots('target-private-network', { origin: 'http://a.example' });
    assert.equal(applyPolicy(privateNet, rule('allow'), 'report').verdict, 'deny');
    assert.equal(applyPolicy(privateNet, undefined, 'report').reason, 'target-private-network');
    assert.equal(applyPolicy(privateNet, rule('allow'), 'report').policy?.rule, 'r-allow');
  });
});
