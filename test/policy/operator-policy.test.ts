// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { validateConfig } from '../../src/config/index.js';
import { compilePolicy, HOST_KEYS_KEPT, type PolicyRequest } from '../../src/policy/operator-policy.js';

/** The rules as written in YAML (validated and normalised by the schema), compiled. */
function policyOf(rules: unknown[]) {
  return compilePolicy(validateConfig({ policy: { rules } }).policy.rules);
}

const request = (fields: Partial<PolicyRequest> = {}): PolicyRequest => ({
  identity: null,
  productTokens: ['ExampleBot'],
  origin: 'https://www.example.com',
  pathAndQuery: '/page',
  method: 'GET',
  ...fields,
});

describe('compilePolicy: first match wins', () => {
  it('answers the first rule in order that matches, not the most specific one', () => {
    const policy = policyOf([
      { name: 'all-example', origin: '*.example.com', action: 'report' },
      { name: 'admin', origin: 'https://www.example.com', path: '/admin', action: 'deny' },
    ]);
    assert.equal(policy.match(request({ pathAndQuery: '/admin' }))?.name, 'all-example');
    const reordered = policyOf([
      { name: 'admin', origin: 'https://www.example.com', path: '/admin', action: 'deny' },
      { name: 'all-example', origin: '*.example.com', action: 'report' },
    ]);
    assert.equal(reordered.match(request({ pathAndQuery: '/admin' }))?.name, 'admin');
    assert.equal(reordered.match(request({ pathAndQuery: '/page' }))?.name, 'all-example');
  });

  it('matches nothing when no rule matches, and every request with a rule without match fields', () => {
    assert.equal(policyOf([{ name: 'x', origin: 'example.org', action: 'deny' }]).match(request()), undefined);
    assert.equal(policyOf([]).match(request()), undefined);
    assert.equal(policyOf([{ name: 'catch-all', action: 'report' }]).match(request())?.action, 'report');
  });

  it('needs every field written to match, any value of a list', () => {
    const policy = policyOf([{ name: 'r', origin: ['example.org', 'www.example.com'], method: ['POST', 'put'], token: 'ExampleBot', action: 'deny' }]);
    assert.equal(policy.match(request({ method: 'GET' })), undefined);
    assert.equal(policy.match(request({ method: 'post' }))?.name, 'r');
    assert.equal(policy.match(request({ method: 'PUT', origin: 'http://example.org:8080' }))?.name, 'r');
    assert.equal(policy.match(request({ method: 'PUT', productTokens: ['OtherBot'] })), undefined);
  });
});

describe('compilePolicy: origins', () => {
  const policy = policyOf([
    { name: 'origin', origin: 'https://Example.COM:443', action: 'deny' },
    { name: 'host', origin: 'example.org', action: 'deny' },
    { name: 'glob', origin: '*.example.net', action: 'deny' },
    { name: 'ipv6', origin: '::1', action: 'deny' },
  ]);
  const nameFor = (origin: string) => policy.match(request({ origin }))?.name;

  it('matches an exact origin only on its scheme and port', () => {
    assert.equal(nameFor('https://example.com'), 'origin');
    assert.equal(nameFor('http://example.com'), undefined);
    assert.equal(nameFor('https://example.com:8443'), undefined);
  });

  it('matches a bare hostname on every scheme and port, not its subdomains', () => {
    assert.equal(nameFor('http://example.org'), 'host');
    assert.equal(nameFor('https://example.org:8443'), 'host');
    assert.equal(nameFor('https://www.example.org'), undefined);
  });

  it('matches a host glob on subdomains at any depth, not the apex (the hosts glob)', () => {
    assert.equal(nameFor('https://a.example.net'), 'glob');
    assert.equal(nameFor('http://a.b.example.net:81'), 'glob');
    assert.equal(nameFor('https://example.net'), undefined);
    assert.equal(nameFor('https://badexample.net'), undefined);
  });

  it('matches IPv6 literals as written in URLs', () => {
    assert.equal(nameFor('http://[::1]:8080'), 'ipv6');
  });
});

describe('compilePolicy: paths, tokens, identities', () => {
  it('reads paths as robots.txt patterns: prefix, "*", final "$", percent-encoding normalised', () => {
    const policy = policyOf([
      { name: 'pdf', path: '/*.pdf$', action: 'deny' },
      { name: 'admin', path: '/admin', action: 'deny' },
      { name: 'tilde', path: '/%7Euser', action: 'deny' },
    ]);
    const nameFor = (pathAndQuery: string) => policy.match(request({ pathAndQuery }))?.name;
    assert.equal(nameFor('/docs/a.pdf'), 'pdf');
    assert.equal(nameFor('/docs/a.pdf?x=1'), undefined, '"$" anchors at the end of path plus query');
    assert.equal(nameFor('/admin/users'), 'admin');
    assert.equal(nameFor('/administrator'), 'admin', 'a path is a prefix, as in robots.txt');
    assert.equal(nameFor('/Admin'), undefined, 'case-sensitive, as in robots.txt');
    assert.equal(nameFor('/~user/x'), 'tilde');
    assert.equal(nameFor(''), undefined);
  });

  it('matches product tokens by whole name, any case, among every candidate', () => {
    const policy = policyOf([{ name: 'gpt', token: 'GPTBot', action: 'deny' }]);
    assert.equal(policy.match(request({ productTokens: ['python-requests', 'gptbot'] }))?.name, 'gpt');
    assert.equal(policy.match(request({ productTokens: ['GPTBot2'] })), undefined);
    assert.equal(policy.match(request({ productTokens: ['GPT'] })), undefined);
    assert.equal(policy.match(request({ productTokens: [] })), undefined);
  });

  it('matches identities exactly; a request without an identity matches no identity rule', () => {
    const policy = policyOf([{ name: 'partner', identity: ['partner-a', 'partner-b'], action: 'allow' }]);
    assert.equal(policy.match(request({ identity: 'partner-b' }))?.name, 'partner');
    assert.equal(policy.match(request({ identity: 'Partner-B' })), undefined);
    assert.equal(policy.match(request({ identity: null })), undefined);
  });

  it('carries a rule\'s pacing, the rate as a minimum delay', () => {
    const policy = policyOf([{ name: 'slow', origin: '*.example.com', rate: '30/m', maxConcurrency: 2, minDelay: '1s' }]);
    assert.deepEqual(policy.match(request()), { name: 'slow', action: 'pace', pacing: { minDelayMs: 1_000, maxConcurrency: 2, rateDelayMs: 2_000 }, facts: { rule: 'slow', action: 'pace' } });
    assert.equal(policyOf([{ name: 's', rate: '4/s' }]).match(request())?.pacing.rateDelayMs, 250);
    assert.equal(policyOf([{ name: 'h', rate: '3600/h' }]).match(request())?.pacing.rateDelayMs, 1_000);
  });
});

describe('compilePolicy: the index keeps first-match-wins', () => {
  // Rules filed under each key the index uses (origin, hostname, glob, token, identity, method) and
  // none (paths only, nothing), several matching the same requests.
  const pool: Array<Record<string, unknown>> = [
    { name: 'paths', path: ['/admin', '/*.pdf$'], action: 'deny' },
    { name: 'catch-all', action: 'report' },
    { name: 'writes', method: ['POST', 'DELETE'], action: 'deny' },
    { name: 'head-www', method: 'HEAD', origin: 'www.example.com', action: 'allow' },
    { name: 'gpt', token: 'GPTBot', action: 'report' },
    { name: 'gpt-admin', token: ['GPTBot', 'CCBot'], path: '/admin', action: 'deny' },
    { name: 'partner', identity: 'partner-a', action: 'allow' },
    { name: 'partner-get', identity: ['partner-a', 'partner-b'], method: 'GET', minDelay: '1s' },
    { name: 'exact', origin: 'https://www.example.com', action: 'deny' },
    { name: 'bare', origin: ['www.example.com', 'api.example.org'], maxConcurrency: 2 },
    { name: 'glob', origin: '*.example.com', rate: '10/s' },
    { name: 'glob-pdf', origin: ['*.example.com', 'example.net'], path: '/*.pdf$', action: 'deny' },
  ];
  const requests: PolicyRequest[] = [
    request(),
    request({ pathAndQuery: '/admin/x' }),
    request({ pathAndQuery: '/doc.pdf', origin: 'http://example.net' }),
    request({ method: 'post' }),
    request({ method: 'HEAD' }),
    request({ method: 'HEAD', origin: 'http://api.example.org:8080' }),
    request({ productTokens: ['python-requests', 'gptbot'] }),
    request({ productTokens: ['CCBot'], pathAndQuery: '/admin', origin: 'https://other.example' }),
    request({ identity: 'partner-a', origin: 'https://other.example' }),
    request({ identity: 'partner-b', method: 'get', origin: 'https://other.example' }),
    request({ origin: 'https://a.b.example.com', productTokens: [] }),
    request({ origin: 'http://www.example.com' }),
    request({ origin: 'https://nowhere.example', productTokens: [] }),
  ];
  /** The first rule in order that matches on its own: what a linear scan answers. */
  const linear = (rules: Array<Record<string, unknown>>, req: PolicyRequest): string | undefined => rules.find((r) => policyOf([r]).match(req) !== undefined)?.['name'] as string | undefined;

  it('answers what a scan in order answers, whatever the order and mix of rules', () => {
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let trial = 0; trial < 200; trial++) {
      const rules = [...pool];
      for (let i = rules.length - 1; i > 0; i--) {
        const j = random(i + 1);
        [rules[i], rules[j]] = [rules[j]!, rules[i]!];
      }
      const chosen = rules.slice(0, 1 + random(rules.length));
      const policy = policyOf(chosen);
      for (const req of requests) assert.equal(policy.match(req)?.name, linear(chosen, req), `${chosen.map((r) => r['name']).join(', ')} for ${JSON.stringify(req)}`);
    }
  });

  it('a rule filed under one key still loses to an earlier rule filed under another, or under none', () => {
    const policy = policyOf([pool[2]!, pool[6]!, pool[4]!, pool[10]!, pool[0]!, pool[1]!]);
    assert.equal(policy.match(request({ method: 'DELETE', identity: 'partner-a', productTokens: ['GPTBot'] }))?.name, 'writes');
    assert.equal(policy.match(request({ identity: 'partner-a', productTokens: ['GPTBot'] }))?.name, 'partner');
    assert.equal(policy.match(request({ productTokens: ['GPTBot'] }))?.name, 'gpt');
    assert.equal(policy.match(request({ pathAndQuery: '/admin' }))?.name, 'glob');
    assert.equal(policy.match(request({ origin: 'https://example.org', pathAndQuery: '/admin' }))?.name, 'paths');
    assert.equal(policy.match(request({ origin: 'https://example.org' }))?.name, 'catch-all');
  });
});

describe('policy.rules validation', () => {
  const refused = (rules: unknown[]): string => {
    try {
      validateConfig({ policy: { rules } });
    } catch (err) {
      return (err as Error).message;
    }
    return 'accepted';
  };

  it('refuses what cannot be meant, naming the key', () => {
    assert.match(refused([{ name: 'a', action: 'deny' }, { name: 'a', action: 'allow' }]), /policy\.rules\[1\]\.name: "a" names an earlier rule too/);
    assert.match(refused([{ name: 'a' }]), /policy\.rules\[0\]\.action: is required/);
    assert.match(refused([{ name: 'a', action: 'deny', minDelay: '1s' }]), /deny sends nothing upstream/);
    assert.match(refused([{ name: 'a', action: 'pace' }]), /pace needs minDelay, maxConcurrency or rate/);
    assert.match(refused([{ name: 'a', rate: '30/min' }]), /must be "<requests>\/<s\|m\|h>"/);
    assert.match(refused([{ name: 'a', rate: '0/s' }]), /at least 1 request/);
    assert.match(refused([{ name: 'a', origin: 'example.*', action: 'deny' }]), /policy\.rules\[0\]\.origin: a "\*" is allowed only as the whole first label/);
    assert.match(refused([{ name: 'a', path: 'admin', action: 'deny' }]), /must be a path pattern starting with "\/"/);
    assert.match(refused([{ name: 'has space', action: 'deny' }]), /no spaces/);
    assert.match(refused([{ name: 'a', token: 'Example Bot', action: 'deny' }]), /must be a product token/);
    assert.match(refused([{ name: 'a', action: 'deny', idenity: 'x' }]), /idenity/);
    assert.equal(refused([{ name: 'ok', token: ['A-bot', 'b_bot'], path: ['/a', '*.gif$'], rate: ' 10 / h ' }]), 'accepted');
  });
});

describe('compilePolicy: what it keeps across requests', () => {
  it('shares one frozen facts object per rule across the requests it matches', () => {
    const policy = policyOf([{ name: 'bench', origin: '127.0.0.1', maxConcurrency: 4 }]);
    const first = policy.match(request({ origin: 'http://127.0.0.1:8080' }));
    const second = policy.match(request({ origin: 'http://127.0.0.1:9090', pathAndQuery: '/other' }));
    assert.deepEqual(first?.facts, { rule: 'bench', action: 'pace' });
    assert.equal(second?.facts, first?.facts);
    assert.ok(Object.isFrozen(first?.facts));
  });

  it('matches by origin, hostname and glob alike past the bound of origins whose keys it keeps', () => {
    const policy = policyOf([
      { name: 'exact', origin: 'https://a.example.com:8443', action: 'deny' },
      { name: 'glob', origin: '*.example.com', action: 'report' },
      { name: 'host', origin: 'example.net', action: 'allow' },
    ]);
    const expected = (i: number): [string, string | undefined] => {
      if (i % 4 === 0) return [`https://h${i}.example.com`, 'glob'];
      if (i % 4 === 1) return [`http://example.net:${1000 + (i % 60000)}`, 'host'];
      if (i % 4 === 2) return [`https://h${i}.example.org`, undefined];
      return ['https://a.example.com:8443', 'exact'];
    };
    // Twice round more origins than are kept: the first pass fills and drops the kept keys, the second reads them back.
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < HOST_KEYS_KEPT * 2 + 7; i++) {
        const [origin, name] = expected(i);
        assert.equal(policy.match(request({ origin }))?.name, name, `${origin} (pass ${pass})`);
      }
    }
  });

  it('derives the matching forms of each request\'s own tokens and method, whatever came before', () => {
    const policy = policyOf([
      { name: 'writes', method: ['POST'], action: 'deny' },
      { name: 'ccbot', token: 'CCBot', action: 'deny' },
    ]);
    const tokens = ['ExampleBot'];
    assert.equal(policy.match(request({ productTokens: tokens })), undefined);
    assert.equal(policy.match(request({ productTokens: ['ccbot'] }))?.name, 'ccbot');
    assert.equal(policy.match(request({ productTokens: tokens })), undefined);
    assert.equal(policy.match(request({ productTokens: ['Other', 'CCBOT'] }))?.name, 'ccbot');
    assert.equal(policy.match(request({ method: 'post' }))?.name, 'writes');
    assert.equal(policy.match(request({ method: 'GET' })), undefined);
    assert.equal(policy.match(request({ method: 'Post' }))?.name, 'writes');
  });
});

describe('compilePolicy: one request view per policy', () => {
  it('derives nothing of one request for the next (path, resolved path, method, tokens, origin)', () => {
    const policy = policyOf([
      { name: 'admin', path: '/admin', action: 'deny' },
      { name: 'posts', method: 'POST', action: 'deny' },
      { name: 'gpt', token: 'GPTBot', action: 'deny' },
      { name: 'other-site', origin: 'https://other.example', action: 'pace', minDelay: '1s' },
    ]);
    const sequence: [Partial<PolicyRequest>, string | undefined][] = [
      [{ pathAndQuery: '/admin/x' }, 'admin'],
      [{ pathAndQuery: '/page' }, undefined],
      [{ pathAndQuery: '/%2Fadmin/x' }, 'admin'],
      [{ method: 'post' }, 'posts'],
      [{ method: 'GET' }, undefined],
      [{ productTokens: ['gptbot'] }, 'gpt'],
      [{}, undefined],
      [{ origin: 'https://other.example' }, 'other-site'],
      [{}, undefined],
    ];
    for (let round = 0; round < 2; round++) for (const [fields, name] of sequence) assert.equal(policy.match(request(fields))?.name, name, JSON.stringify(fields));
  });
});
