/**
 * The requests in flight in a {@link RequestPipeline}, as an intrusive doubly-linked
 * list: each request's own record is the list node, and removing it clears its links.
 *
 * Not a `Set` (issue 11, bench/PROFILE.md "One origin: queued requests and the
 * scavenger"): V8 stores a `Set` in a hash table that it replaces by a new one every
 * few dozen additions when entries churn, and the replaced table keeps its entries and
 * a pointer to its successor. Once one replaced table has reached the old generation
 * (a mark-compact, or a table that outlived two scavenges), every later table, and
 * every request listed in any of them, is kept by its dead predecessor through every
 * scavenge and promoted: the young generation then copies about a hundred finished
 * requests per scavenge, for as long as the process runs. A list whose removed nodes
 * point nowhere cannot chain.
 */

/** A request's record in the list; the link fields belong to the list. */
export class InFlightRequest {
  /**
   * Ends the request now with `error` (writes its access line). The pipeline's request record
   * overrides it (a method, not a closure per request); here it does nothing.
   */
  end(_error: string): void {}
  /** @internal */
  prev: InFlightRequest | undefined = undefined;
  /** @internal */
  next: InFlightRequest | undefined = undefined;
  /** @internal true while listed */
  isListed = false;
}

export class InFlightList {
  #head: InFlightRequest | undefined;
  #tail: InFlightRequest | undefined;
  #size = 0;

  /** Requests listed. */
  get size(): number {
    return this.#size;
  }

  /** Lists `request` (at the end); one already listed is left where it is. O(1). */
  add(request: InFlightRequest): void {
    if (request.isListed) return;
    request.isListed = true;
    request.prev = this.#tail;
    request.next = undefined;
    if (this.#tail) this.#tail.next = request;
    else this.#head = request;
    this.#tail = request;
    this.#size += 1;
  }

  /** Unlists `request` and clears its links; one not listed is ignored. O(1). */
  delete(request: InFlightRequest): void {
    if (!request.isListed) return;
    request.isListed = false;
    if (request.prev) request.prev.next = request.next;
    else this.#head = request.next;
    if (request.next) request.next.prev = request.prev;
    else this.#tail = request.prev;
    request.prev = undefined;
    request.next = undefined;
    this.#size -= 1;
  }

  /** The requests listed now, oldest first (a copy: ending one may unlist it). */
  toArray(): InFlightRequest[] {
    const requests: InFlightRequest[] = [];
    for (let request = this.#head; request; request = request.next) requests.push(request);
    return requests;
  }
}
