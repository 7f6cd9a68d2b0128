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
