// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { InFlightList, InFlightRequest } from '../../src/proxy/in-flight-list.js';

function requests(n: number): InFlightRequest[] {
  return Array.from({ length: n }, () => new InFlightRequest());
}

describe('InFlightList', () => {
  it('lists requests in arrival order and counts them; adding one twice lists it once', () => {
    const list = new InFlightList();
    const [a, b, c] = requests(3) as [InFlightRequest, InFlightRequest, InFlightRequest];
    list.add(a);
    list.add(b);
    list.add(c);
    list.add(b);
    assert.equal(list.size, 3);
    assert.deepEqual(list.toArray(), [a, b, c]);
  });

  it('removes from the head, the middle and the tail; removing twice or an unlisted one is ignored', () => {
    const list = new InFlightList();
    const [a, b, c, d] = requests(4) as [InFlightRequest, InFlightRequest, InFlightRequest, InFlightRequest];
    for (const r of [a, b, c]) list.add(r);
    list.delete(b);
    assert.deepEqual(list.toArray(), [a, c]);
    list.delete(b);
    list.delete(d);
    assert.equal(list.size, 2);
    list.delete(a);
    assert.deepEqual(list.toArray(), [c]);
    list.delete(c);
    assert.equal(list.size, 0);
    assert.deepEqual(list.toArray(), []);
    list.add(a);
    assert.deepEqual(list.toArray(), [a], 'a removed request can be listed again');
  });

  it('a removed request points to no other request (nothing a dead record could keep alive)', () => {
    const list = new InFlightList();
    const all = requests(5);
    for (const r of all) list.add(r);
    for (const r of all) {
      list.delete(r);
      assert.equal(r.prev, undefined);
      assert.equal(r.next, undefined);
    }
  });

  it('toArray is a copy: ending a request while iterating over it unlists it without skipping others', () => {
    const list = new InFlightList();
    const all = requests(4);
    const ended: InFlightRequest[] = [];
    for (const r of all) {
      r.end = () => {
        ended.push(r);
        list.delete(r);
      };
      list.add(r);
    }
    for (const r of list.toArray()) r.end?.('TEST');
    assert.deepEqual(ended, all);
    assert.equal(list.size, 0);
  });
});
