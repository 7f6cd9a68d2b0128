/**
 * A cardinality bound for metric label values that clients control (product
 * tokens, identities): the top N values by traffic keep a label value of their
 * own, the rest are `other`. Counting is O(1) per request in bounded memory:
 * at most `capacity` candidates are counted; at each {@link TopLabels.rebalance}
 * the N largest become the labelled set and every count is halved (so the set
 * follows recent traffic and room is made for newcomers). Until the first
 * rebalance the first N values seen are labelled. Extension, not in RFC 9309.
 */

/** The label value of everything outside the top N. */
export const OTHER_LABEL = 'other';

/** What a {@link TopLabels.rebalance} changed. */
export interface Rebalance {
  /** Values that lost their own label (their series fold into `other`). */
  removed: string[];
  /** Values that got one. */
  added: string[];
}

export class TopLabels {
  readonly #size: number;
  readonly #capacity: number;
  readonly #counts = new Map<string, number>();
  readonly #labelled = new Set<string>();
  /**
   * The value {@link labelOf} was last asked about, its label then, and its uses since that are not
   * in {@link #counts} yet (a run of one bot's requests costs a comparison each, not three
   * look-ups: issue 11). The label holds until the next {@link rebalance}: between two, the
   * labelled set only grows, and only while it has room, which an unlabelled value's answer
   * already saw it had not. `undefined`: nothing kept (at start and after each rebalance).
   */
  #lastValue: string | undefined = undefined;
  #lastLabel = OTHER_LABEL;
  /** Uses of {@link #lastValue} not yet added to its count; stays 0 when the value is not counted (past capacity). */
  #lastUses = 0;
  #isLastCounted = false;

  /**
   * @param size N, the values with a label of their own (>= 1).
   * @param capacity candidates counted at once; past it, new values wait for the next rebalance. @default 8 * size
   */
  constructor(size: number, capacity: number = 8 * size) {
    this.#size = size;
    this.#capacity = Math.max(size, capacity);
  }

  /** The label for `value` (itself, or {@link OTHER_LABEL}), counting one use. O(1). */
  labelOf(value: string): string {
    if (value === this.#lastValue) {
      if (this.#isLastCounted) this.#lastUses++;
      return this.#lastLabel;
    }
    this.#addLastUses();
    const count = this.#counts.get(value);
    let isCounted = true;
    if (count !== undefined) this.#counts.set(value, count + 1);
    else if (this.#counts.size < this.#capacity) this.#counts.set(value, 1);
    else isCounted = false;
    let label: string = OTHER_LABEL;
    if (this.#labelled.has(value)) label = value;
    else if (this.#labelled.size < this.#size && value !== OTHER_LABEL) {
      this.#labelled.add(value);
      label = value;
    }
    this.#lastValue = value;
    this.#lastLabel = label;
    this.#isLastCounted = isCounted;
    return label;
  }

  /** Adds the last value's uses not yet counted to its count. */
  #addLastUses(): void {
    const uses = this.#lastUses;
    if (uses === 0) return;
    this.#lastUses = 0;
    const value = this.#lastValue as string;
    this.#counts.set(value, (this.#counts.get(value) ?? 0) + uses);
  }

  /** True when `value` has a label of its own now. */
  isLabelled(value: string): boolean {
    return this.#labelled.has(value);
  }

  /**
   * Makes the N most counted values the labelled set (a labelled value keeps its place on a
   * tie), then halves every count and forgets those that reach 0. O(capacity log capacity).
   */
  rebalance(): Rebalance {
    this.#addLastUses();
    this.#lastValue = undefined;
    const ranked = [...this.#counts].sort((a, b) => b[1] - a[1] || Number(this.#labelled.has(b[0])) - Number(this.#labelled.has(a[0])));
    const top = new Set(ranked.slice(0, this.#size).map(([value]) => value));
    const removed = [...this.#labelled].filter((value) => !top.has(value) && this.#counts.has(value));
    // A labelled value that no longer has a count at all saw no traffic for many rebalances: it goes too.
    for (const value of this.#labelled) if (!this.#counts.has(value) && !removed.includes(value)) removed.push(value);
    for (const value of removed) this.#labelled.delete(value);
    const added: string[] = [];
    for (const value of top) {
      if (this.#labelled.size >= this.#size) break;
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
