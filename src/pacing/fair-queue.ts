/**
 * One origin's waiting requests, served round-robin between identities and
 * first-in first-out within an identity (issue 8, "Fairness between clients").
 * Extension, not in RFC 9309.
 *
 * Service order: the identities with waiting requests form a ring; the one at
 * the cursor is served next (its oldest entry), then the cursor moves to the
 * next identity. An identity that starts waiting joins at the end of the
 * current round (just before the cursor), so it is served after every identity
 * already waiting has had one turn: a light client waits for about one entry
 * per other waiting identity, not for the whole queue.
 *
 * Every operation but {@link FairQueue.entriesAheadDelayMs} is O(1): entries
 * and identities are intrusive doubly-linked lists (the entry object is the
 * list node), so removing an entry from the middle (an abort) costs no scan.
 * Pure: no clock, no timers, no I/O.
 */

/** What the queue needs of an entry; the link fields belong to the queue (set and cleared by it). */
export interface QueueEntry {
  /**
   * This entry's delay, ms (>= 0): the spacing it needs from the previous start. Changed while
   * queued only together with {@link FairQueue.recountDelays}.
   */
  readonly delayMs: number;
  /** @internal the identity list the entry is in, or undefined when not queued. */
  owner: IdentityLine | undefined;
  /** @internal */
  prev: QueueEntry | undefined;
  /** @internal */
  next: QueueEntry | undefined;
}

/** One identity's waiting entries at one origin (FIFO), and its place in the round-robin ring. */
interface IdentityLine {
  readonly identity: string;
  head: QueueEntry | undefined;
  tail: QueueEntry | undefined;
  size: number;
  /** Sum of the entries' delays, ms. */
  delaySumMs: number;
  /**
   * Smallest and largest delay of any entry queued since the identity last started waiting
   * (bounds on the current entries' delays, not exact after removals: see {@link prefixDelayLowerBoundMs}).
   */
  minDelayMs: number;
  maxDelayMs: number;
  ringPrev: IdentityLine;
  ringNext: IdentityLine;
}

/** The link fields of a fresh entry; spread them into a new entry object. */
export const UNLINKED = { owner: undefined, prev: undefined, next: undefined } as const;

export class FairQueue<T extends QueueEntry> {
  readonly #lines = new Map<string, IdentityLine>();
  /** The line last looked up by identity, while it is open: a crawler's requests repeat one identity (issue 11). */
  #lastLine: IdentityLine | undefined;
  /** The identity served next, or undefined when nothing waits. */
  #cursor: IdentityLine | undefined;
  #size = 0;
  #delaySumMs = 0;

  /** Entries waiting. */
  get size(): number {
    return this.#size;
  }

  /** Identities with at least one entry waiting. */
  get identities(): number {
    return this.#lines.size;
  }

  /** Sum of the delays of every waiting entry, ms. */
  get delaySumMs(): number {
    return this.#delaySumMs;
  }

  /** Entries of `identity` waiting. */
  sizeOf(identity: string): number {
    return this.#lineOf(identity)?.size ?? 0;
  }

  /** `identity`'s open line, or undefined. */
  #lineOf(identity: string): IdentityLine | undefined {
    const last = this.#lastLine;
    if (last !== undefined && last.identity === identity) return last;
    const line = this.#lines.get(identity);
    if (line !== undefined) this.#lastLine = line;
    return line;
  }

  /** The entry served next (the cursor identity's oldest), or undefined when empty. */
  peek(): T | undefined {
    return this.#cursor?.head as T | undefined;
  }

  /** Appends `entry` to `identity`'s line (a new identity joins at the end of the round). */
  push(identity: string, entry: T): void {
    const line = this.#lineOf(identity) ?? this.#openLine(identity);
    entry.owner = line;
    entry.prev = line.tail;
    entry.next = undefined;
    if (line.tail) line.tail.next = entry;
    else line.head = entry;
    line.tail = entry;
    line.size += 1;
    line.delaySumMs += entry.delayMs;
    if (entry.delayMs < line.minDelayMs) line.minDelayMs = entry.delayMs;
    if (entry.delayMs > line.maxDelayMs) line.maxDelayMs = entry.delayMs;
    this.#size += 1;
    this.#delaySumMs += entry.delayMs;
  }

  /** Removes and returns the entry served next, and passes the turn to the next identity. */
  shift(): T | undefined {
    const line = this.#cursor;
    const entry = line?.head;
    if (!line || !entry) return undefined;
    const next = line.ringNext;
    this.#unlink(entry);
    // #unlink closed the line if it emptied (moving the cursor on); otherwise the turn passes.
    if (line.size > 0) this.#cursor = next;
    return entry as T;
  }

  /**
   * Removes `entry` wherever it is (an abort). O(1).
   * @returns false when it was not queued here (already served or removed).
   */
  remove(entry: T): boolean {
    const line = entry.owner;
    if (!line || this.#lines.get(line.identity) !== line) return false;
    this.#unlink(entry);
    return true;
  }

  /** Calls `fn` for every waiting entry: each identity's in order, identities in round-robin order. */
  forEach(fn: (entry: T) => void): void {
    const cursor = this.#cursor;
    if (!cursor) return;
    let line = cursor;
    do {
      for (let entry = line.head; entry; entry = entry.next) fn(entry as T);
      line = line.ringNext;
    } while (line !== cursor);
  }

  /** Recomputes the delay sums and bounds after entries' delays changed in place (a reconfiguration). */
  recountDelays(): void {
    let totalMs = 0;
    for (const line of this.#lines.values()) {
      line.delaySumMs = 0;
      line.minDelayMs = Infinity;
      line.maxDelayMs = 0;
      for (let entry = line.head; entry; entry = entry.next) {
        line.delaySumMs += entry.delayMs;
        if (entry.delayMs < line.minDelayMs) line.minDelayMs = entry.delayMs;
        if (entry.delayMs > line.maxDelayMs) line.maxDelayMs = entry.delayMs;
      }
      totalMs += line.delaySumMs;
    }
    this.#delaySumMs = totalMs;
  }

  /** Removes and returns every entry (for close), in no particular order. */
  drain(): T[] {
    const entries: T[] = [];
    for (const line of this.#lines.values()) {
      for (let entry = line.head; entry; entry = entry.next) entries.push(entry as T);
    }
    for (const entry of entries) {
      entry.owner = undefined;
      entry.prev = undefined;
      entry.next = undefined;
    }
    this.#lines.clear();
    this.#lastLine = undefined;
    this.#cursor = undefined;
    this.#size = 0;
    this.#delaySumMs = 0;
    return entries;
  }

  /**
   * A lower bound on the sum of the delays of the entries that will be served before a new
   * entry of `identity` pushed now, ms, assuming no entry leaves and no identity joins meanwhile:
   * the identity's own waiting entries, and for every other identity as many of its oldest
   * entries as it gets turns first (one more than `identity` has waiting when its turn comes
   * earlier in the round, as many otherwise; one each for a new identity). Exact when every
   * identity's waiting entries share one delay; otherwise each identity's share is bounded below
   * from its smallest and largest delays. O(identities waiting).
   */
  entriesAheadDelayMs(identity: string): number {
    const mine = this.#lineOf(identity);
    const cursor = this.#cursor;
    if (!cursor) return 0;
    const rounds = mine?.size ?? 0;
    let sumMs = 0;
    // Identities from the cursor up to (not including) `mine` have their turn before it in each round.
    let isBeforeMine = true;
    let line = cursor;
    do {
      if (line === mine) {
        isBeforeMine = false;
        sumMs += line.delaySumMs;
      } else {
        // A new identity joins at the end of the round: every waiting identity is before it.
        sumMs += prefixDelayLowerBoundMs(line, rounds + (isBeforeMine ? 1 : 0));
      }
      line = line.ringNext;
    } while (line !== cursor);
    return sumMs;
  }

  #openLine(identity: string): IdentityLine {
    const line = {
      identity,
      head: undefined,
      tail: undefined,
      size: 0,
      delaySumMs: 0,
      minDelayMs: Infinity,
      maxDelayMs: 0,
    } as Omit<IdentityLine, 'ringPrev' | 'ringNext'> as IdentityLine;
    const cursor = this.#cursor;
    if (!cursor) {
      line.ringPrev = line;
      line.ringNext = line;
      this.#cursor = line;
    } else {
      // The end of the round: just before the cursor.
      line.ringPrev = cursor.ringPrev;
      line.ringNext = cursor;
      cursor.ringPrev.ringNext = line;
      cursor.ringPrev = line;
    }
    this.#lines.set(identity, line);
    this.#lastLine = line;
    return line;
  }

  #unlink(entry: QueueEntry): void {
    const line = entry.owner as IdentityLine;
    if (entry.prev) entry.prev.next = entry.next;
    else line.head = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    else line.tail = entry.prev;
    entry.owner = undefined;
    entry.prev = undefined;
    entry.next = undefined;
    line.size -= 1;
    line.delaySumMs = line.size === 0 ? 0 : line.delaySumMs - entry.delayMs;
    this.#size -= 1;
    this.#delaySumMs = this.#size === 0 ? 0 : this.#delaySumMs - entry.delayMs;
    if (line.size === 0) this.#closeLine(line);
  }

  #closeLine(line: IdentityLine): void {
    this.#lines.delete(line.identity);
    if (this.#lastLine === line) this.#lastLine = undefined;
    if (line.ringNext === line) {
      this.#cursor = undefined;
      return;
    }
    line.ringPrev.ringNext = line.ringNext;
    line.ringNext.ringPrev = line.ringPrev;
    if (this.#cursor === line) this.#cursor = line.ringNext;
  }
}

/**
 * A lower bound on the sum of the delays of the oldest `count` entries of `line`, ms: exact when
 * `count` covers the line or its entries share one delay. Each entry's delay lies between the
 * line's min and max (they bound every delay queued since it opened, so also the current ones).
 */
function prefixDelayLowerBoundMs(line: IdentityLine, count: number): number {
  if (count >= line.size) return line.delaySumMs;
  if (count <= 0) return 0;
  const headDelayMs = line.head?.delayMs ?? 0;
  const fromBelow = headDelayMs + (count - 1) * line.minDelayMs;
  const fromAbove = line.delaySumMs - (line.size - count) * line.maxDelayMs;
  return Math.max(fromBelow, fromAbove);
}
