// run-tests: in-process
/**
 * CancelSignal: the abort flag the proxy hands the pacer instead of an
 * AbortSignal (issue 11: waiting should be nearly free). The pacer's abort
 * tests (pacer-limits.test.ts) run with both kinds of signal.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CancelSignal } from '../../src/pacing/cancel-signal.js';

function listener(calls: string[], name: string): { handleEvent(): void } {
  return { handleEvent: () => void calls.push(name) };
}

describe('CancelSignal', () => {
  it('calls each listener once, in the order added, on the first abort only', () => {
    const signal = new CancelSignal();
    const calls: string[] = [];
    const first = listener(calls, 'first');
    signal.addEventListener('abort', first);
    signal.addEventListener('abort', first); // added twice: called once
    signal.addEventListener('abort', listener(calls, 'second'));
    assert.equal(signal.aborted, false);
    signal.abort();
    signal.abort();
    assert.equal(signal.aborted, true);
    assert.deepEqual(calls, ['first', 'second']);
  });

  it('does not call a removed listener, nor one added after the abort', () => {
    const signal = new CancelSignal();
    const calls: string[] = [];
    const removed = listener(calls, 'removed');
    signal.addEventListener('abort', removed);
    signal.removeEventListener('abort', removed);
    signal.removeEventListener('abort', listener(calls, 'never added'));
    signal.abort();
    signal.addEventListener('abort', listener(calls, 'late'));
    assert.deepEqual(calls, []);
  });
});
