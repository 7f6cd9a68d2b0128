// run-tests: in-process
/**
 * The top-N label bound with plain values: the N heaviest values keep their
 * label after a rebalance, newcomers replace values whose traffic faded, and
 * memory stays within the candidate capacity whatever the number of values.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OTHER_LABEL, TopLabels } from '../../src/audit/top-labels.js';

function send(labels: TopLabels, value: string, times: number): string {
  let label = '';
  for (let i = 0; i < times; i++) label = labels.labelOf(value);
  return label;
}

describe('TopLabels', () => {
  it('labels the first N values until the first rebalance, then the N heaviest', () => {
    const labels = new TopLabels(2);
    assert.equal(send(labels, 'light', 1), 'light');
    assert.equal(send(labels, 'medium', 5), 'medium');
    assert.equal(send(labels, 'heavy', 50), OTHER_LABEL, 'no room before a rebalance');
    const { removed, added } = labels.rebalance();
    assert.deepEqual(removed, ['light']);
    assert.deepEqual(added, ['heavy']);
    assert.equal(labels.labelOf('heavy'), 'heavy');
    assert.equal(labels.labelOf('medium'), 'medium');
    assert.equal(labels.labelOf('light'), OTHER_LABEL);
  });

  it('follows recent traffic: a value whose traffic stopped gives its label up to a new heavy one', () => {
    const labels = new TopLabels(1);
    send(labels, 'old', 100);
    labels.rebalance();
    assert.equal(labels.labelOf('old'), 'old');
    // Counts halve at each rebalance: a newcomer sending more than what is left wins.
    for (let round = 0; round < 3; round++) {
      send(labels, 'new', 60);
      labels.rebalance();
    }
    assert.equal(labels.labelOf('new'), 'new');
    assert.equal(labels.labelOf('old'), OTHER_LABEL);
  });

  it('never labels more than N values, and counts at most `capacity` candidates', () => {
    const labels = new TopLabels(3, 10);
    for (let i = 0; i < 10_000; i++) labels.labelOf(`random-${i}`);
    labels.rebalance();
    let labelled = 0;
    for (let i = 0; i < 10_000; i++) if (labels.isLabelled(`random-${i}`)) labelled++;
    assert.equal(labelled, 3);
  });
});

/** TopLabels as it was before it kept the last value's uses aside (issue 11): every use counted in the map at once. */
class ReferenceLabels {
  readonly #counts = new Map<string, number>();
  readonly #labelled = new Set<string>();
  constructor(
    readonly size: number,
    readonly capacity: number,
  ) {}

  labelOf(value: string): string {
    const count = this.#counts.get(value);
    if (count !== undefined) this.#counts.set(value, count + 1);
    else if (this.#counts.size < this.capacity) this.#counts.set(value, 1);
    if (this.#labelled.has(value)) return value;
    if (this.#labelled.size < this.size && value !== OTHER_LABEL) {
      this.#labelled.add(value);
      return value;
    }
    return OTHER_LABEL;
  }

  rebalance(): { removed: string[]; added: string[] } {
    const ranked = [...this.#counts].sort((a, b) => b[1] - a[1] || Number(this.#labelled.has(b[0])) - Number(this.#labelled.has(a[0])));
    const top = new Set(ranked.slice(0, this.size).map(([value]) => value));
    const removed = [...this.#labelled].filter((value) => !top.has(value) && this.#counts.has(value));
    for (const value of this.#labelled) if (!this.#counts.has(value) && !removed.includes(value)) removed.push(value);
    for (const value of removed) this.#labelled.delete(value);
    const added: string[] = [];
    for (const value of top) {
      if (this.#labelled.size >= this.size) break;
      if (!this.#labelled.has(value)) {
        this.#labelled.add(value);
        added.push(value);
      }
    }
    for (const [value, count] of this.#counts) {
      const halved = Math.floor(count / 2);
      if (halved === 0) this.#counts.delete(value);
      else this.#counts.set(value, halved);
    }
    return { removed, added };
  }
}

describe('TopLabels against every use counted at once', () => {
  it('gives the same labels and the same rebalances for runs of one value, values in turn, past capacity, and `other` itself', () => {
    let seed = 5;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return (seed >> 4) % n;
    };
    for (let round = 0; round < 60; round++) {
      const size = 1 + random(4);
      const capacity = size + random(6);
      const labels = new TopLabels(size, capacity);
      const reference = new ReferenceLabels(size, Math.max(size, capacity));
      const values = Array.from({ length: 2 + random(12) }, (_, i) => (i === 0 && round % 5 === 0 ? OTHER_LABEL : `v${i}`));
      for (let step = 0; step < 600; step++) {
        if (random(40) === 0) {
          assert.deepEqual(labels.rebalance(), reference.rebalance(), `round ${round}, step ${step}`);
          continue;
        }
        // Runs of one value (1 to 30 uses; heavier values more often), as a crawl sends them.
        const value = values[Math.min(random(values.length), random(values.length))] as string;
        for (let run = 1 + random(30); run > 0; run--) assert.equal(labels.labelOf(value), reference.labelOf(value), `round ${round}, step ${step}, ${value}`);
        const label = labels.labelOf(value);
        assert.equal(label, reference.labelOf(value));
        if (value !== OTHER_LABEL) assert.equal(labels.isLabelled(value), label === value);
      }
      assert.deepEqual(labels.rebalance(), reference.rebalance(), `round ${round}, end`);
    }
  });
});
