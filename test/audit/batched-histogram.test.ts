// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { BatchedHistogram } from '../../src/audit/batched-histogram.js';

const BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120];

/** One step on both histograms: observe a value for a token, or drop a token's series. */
type Step = { kind: 'observe'; token: string; value: number } | { kind: 'remove'; token: string };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('observe' as const),
      token: fc.constantFrom('GPTBot', 'ccbot', 'other', 'none', 'a"b\\c\nd'),
      // Values on the bounds, between them, above the last one, zero, tiny fractions.
      value: fc.oneof(fc.constantFrom(0, ...BUCKETS, 121, 1e9), fc.double({ min: 0, max: 200, noNaN: true })),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), token: fc.constantFrom('GPTBot', 'ccbot', 'other') }) },
);

describe('BatchedHistogram', () => {
  it('renders the text prom-client\'s Histogram renders for the same observations, removals included', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { maxLength: 200 }), async (steps) => {
        const expectedRegistry = new Registry();
        const reference = new Histogram({ name: 'x_wait_seconds', help: 'Wait "by" token\\.', labelNames: ['token'], buckets: BUCKETS, registers: [expectedRegistry] });
        const plain = new Histogram({ name: 'x_plain_seconds', help: 'No labels.', buckets: BUCKETS, registers: [expectedRegistry] });
        const actualRegistry = new Registry();
        const batched = new BatchedHistogram<'token'>({ name: 'x_wait_seconds', help: 'Wait "by" token\\.', labelNames: ['token'], buckets: BUCKETS, registers: [actualRegistry] });
        const batchedPlain = new BatchedHistogram({ name: 'x_plain_seconds', help: 'No labels.', buckets: BUCKETS, registers: [actualRegistry] }).series({});
        for (const step of steps) {
          if (step.kind === 'remove') {
            reference.remove({ token: step.token });
            batched.remove({ token: step.token });
            continue;
          }
          reference.observe({ token: step.token }, step.value);
          batched.series({ token: step.token }).observe(step.value);
          plain.observe(step.value);
          batchedPlain.observe(step.value);
        }
        assert.equal(await actualRegistry.metrics(), await expectedRegistry.metrics());
      }),
      { numRuns: 300 },
    );
  });

  it('exposes a zeroed label set at once, and a histogram without labels from the start, as prom-client does', async () => {
    const expectedRegistry = new Registry();
    const reference = new Histogram({ name: 'x_duration_seconds', help: 'h', labelNames: ['verdict'], buckets: [0.5, 1], registers: [expectedRegistry] });
    reference.zero({ verdict: 'allow' });
    reference.zero({ verdict: 'deny' });
    new Histogram({ name: 'x_plain_seconds', help: 'h', buckets: [0.5, 1], registers: [expectedRegistry] });
    const actualRegistry = new Registry();
    const batched = new BatchedHistogram<'verdict'>({ name: 'x_duration_seconds', help: 'h', labelNames: ['verdict'], buckets: [0.5, 1], registers: [actualRegistry] });
    batched.series({ verdict: 'allow' });
    batched.series({ verdict: 'deny' });
    new BatchedHistogram({ name: 'x_plain_seconds', help: 'h', buckets: [0.5, 1], registers: [actualRegistry] });
    const text = await actualRegistry.metrics();
    assert.equal(text, await expectedRegistry.metrics());
    assert.match(text, /^x_duration_seconds_bucket\{le="\+Inf",verdict="deny"\} 0$/m);
    assert.match(text, /^x_plain_seconds_count 0$/m);
  });

  it('keeps a held series counting, and a removed one out of the text', async () => {
    const registry = new Registry();
    const batched = new BatchedHistogram<'token'>({ name: 'x_seconds', help: 'h', labelNames: ['token'], buckets: [1], registers: [registry] });
    const a = batched.series({ token: 'a' });
    a.observe(0.5);
    a.observe(2);
    a.observe(Number.NaN);
    assert.equal(batched.series({ token: 'a' }), a, 'one series per label set');
    let text = await registry.metrics();
    assert.match(text, /^x_seconds_bucket\{le="1",token="a"\} 1$/m);
    assert.match(text, /^x_seconds_count\{token="a"\} 2$/m, 'a non-finite value is not counted');
    assert.match(text, /^x_seconds_sum\{token="a"\} 2.5$/m);
    registry.resetMetrics();
    a.observe(0.25);
    text = await registry.metrics();
    assert.match(text, /^x_seconds_count\{token="a"\} 1$/m, 'a reset series is zeroed in place and keeps counting');
    batched.remove({ token: 'a' });
    text = await registry.metrics();
    assert.doesNotMatch(text, /token="a"/);
    assert.throws(() => new BatchedHistogram({ name: 'x_seconds', help: 'h', buckets: [1], registers: [registry] }), /already been registered/);
  });
});
