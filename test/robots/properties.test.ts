// run-tests: in-process
/** Property tests: arbitrary bytes and paths never make the engine throw. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { evaluate, normalisePath, parseRobotsTxt, extractPathAndQuery } from '../../src/robots/index.js';

const robotsLine = fc.oneof(
  fc.constantFrom('User-agent: *', 'User-agent: bot', 'user agent bot', 'Disallow: /', 'Allow: /a', 'Crawl-delay: 0.5', 'Sitemap: x', '#c', ''),
  fc.tuple(fc.constantFrom('allow', 'disallow', 'disalow', 'crawl-delay', 'user-agent', 'request-rate'), fc.string()).map(([k, v]) => `${k}: ${v}`),
  fc.string(),
);
const robotsText = fc.array(robotsLine, { maxLength: 40 }).map((lines) => lines.join('\n'));

describe('engine properties', () => {
  it('parsing arbitrary bytes never throws and respects the limit', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4096 }), fc.integer({ min: 1, max: 5000 }), (bytes, maxBytes) => {
        const robots = parseRobotsTxt(bytes, { maxBytes });
        assert.ok(robots.bytesParsed <= maxBytes);
        assert.equal(robots.truncated, bytes.length > maxBytes);
      }),
      { numRuns: 500 },
    );
  });

  it('matching arbitrary paths against arbitrary files never throws and is consistent', () => {
    fc.assert(
      fc.property(robotsText, fc.string(), fc.string(), (body, path, token) => {
        const robots = parseRobotsTxt(body);
        const r = evaluate(robots, [token], path);
        assert.equal(typeof r.allowed, 'boolean');
        if (r.rule) assert.equal(r.allowed, r.rule.kind === 'allow');
        assert.equal(r.allowed, r.outcome !== 'rule-disallow');
      }),
      { numRuns: 1000 },
    );
  });

  it('a winning rule is never shorter than another matching rule (longest match, §2.2.2)', () => {
    const segment = fc.constantFrom('a', 'b', '/', '*', 'ab', '$');
    const pattern = fc.array(segment, { maxLength: 6 }).map((parts) => '/' + parts.join(''));
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), pattern), { minLength: 1, maxLength: 8 }), fc.stringMatching(/^\/[ab/]{0,10}$/), (rules, path) => {
        const body = 'User-agent: *\n' + rules.map(([allow, p]) => `${allow ? 'Allow' : 'Disallow'}: ${p}`).join('\n');
        const robots = parseRobotsTxt(body);
        const r = evaluate(robots, ['x'], path);
        for (const other of robots.groupsByToken.get('*')!.rules) {
          const alone = evaluate(parseRobotsTxt(`User-agent: *\n${other.kind}: ${other.pattern}`), ['x'], path);
          if (alone.rule && other.pattern.length > 0) {
            assert.ok(r.rule !== undefined && r.rule.priority >= other.priority, `${other.pattern} matched but ${r.rule?.pattern} won`);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('a path gets one verdict however its unsafe octets, $ and * are spelt (RFC 9309 §2.2.2, §2.2.3)', () => {
    const piece = fc.constantFrom('a', 'b', '/', '|', '^', '{', '}', '"', '<', '>', '`', '$', '*', '?', '=', ' ');
    const pattern = fc.array(piece, { maxLength: 6 }).map((parts) => '/' + parts.join(''));
    const hexOf = (c: string): string => '%' + c.charCodeAt(0).toString(16).toUpperCase();
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), pattern), { minLength: 1, maxLength: 6 }), fc.array(piece, { maxLength: 10 }), fc.array(fc.boolean(), { maxLength: 10 }), (rules, parts, respell) => {
        const body = 'User-agent: *\n' + rules.map(([allow, p]) => `${allow ? 'Allow' : 'Disallow'}: ${p}`).join('\n');
        const robots = parseRobotsTxt(body);
        const raw = '/' + parts.join('');
        const respelt = '/' + parts.map((c, i) => (respell[i] && /[|^{}"<>`$* ]/.test(c) ? hexOf(c) : c)).join('');
        assert.equal(evaluate(robots, ['x'], respelt).allowed, evaluate(robots, ['x'], raw).allowed, `${raw} vs ${respelt}`);
      }),
      { numRuns: 1000 },
    );
  });

  it('path helpers never throw on arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const p = normalisePath(extractPathAndQuery(s));
        assert.ok(p.startsWith('/'));
        assert.ok(/^[\x21-\x7e]*$/.test(p), 'normalised paths are printable ASCII');
      }),
      { numRuns: 1000 },
    );
  });
});
