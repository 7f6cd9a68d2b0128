/**
 * A one-shot abort flag for a request waiting in the pacer: what `acquire`
 * needs of an `AbortSignal`, at a fraction of its cost. On Node 20 creating an
 * `AbortController` and adding and removing one abort listener cost several µs
 * of CPU (event-target machinery, listener records); a queued request pays the
 * listener, every request the controller (issue 11: waiting should be nearly
 * free). This is a flag and one listener slot. Not an `EventTarget`: no event
 * object, no `onabort`, listeners called with no argument.
 */
import type { AbortListener, AbortSignalLike } from './types.js';

export class CancelSignal implements AbortSignalLike {
  #isAborted = false;
  /** One listener (the common case: the pacer's waiter), or several. */
  #listeners: AbortListener | AbortListener[] | undefined;

  /** True once {@link CancelSignal.abort} was called. */
  get aborted(): boolean {
    return this.#isAborted;
  }

  /** Sets the flag and calls every listener once, in the order added; later calls do nothing. Listeners must not throw. */
  abort(): void {
    if (this.#isAborted) return;
    this.#isAborted = true;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners === undefined) return;
    if (!Array.isArray(listeners)) return listeners.handleEvent();
    for (const listener of listeners) listener.handleEvent();
  }

  /** Adds `listener` (once: adding it again does nothing); ignored after the abort, as for an `AbortSignal`. */
  addEventListener(_type: 'abort', listener: AbortListener): void {
    if (this.#isAborted) return;
    const listeners = this.#listeners;
    if (listeners === undefined) this.#listeners = listener;
    else if (!Array.isArray(listeners)) {
      if (listeners !== listener) this.#listeners = [listeners, listener];
    } else if (!listeners.includes(listener)) listeners.push(listener);
  }

  /** Removes `listener`; one not added is ignored. */
  removeEventListener(_type: 'abort', listener: AbortListener): void {
    const listeners = this.#listeners;
    if (listeners === listener) this.#listeners = undefined;
    else if (Array.isArray(listeners)) {
      const at = listeners.indexOf(listener);
      if (at >= 0) listeners.splice(at, 1);
    }
  }
}
