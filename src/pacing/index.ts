/**
 * Per-origin pacing: the queue every request waits in for its start slot
 * (DESIGN.md "Pacing semantics"). What other folders need, nothing more.
 */
export { Pacer } from './pacer.js';
export { CancelSignal } from './cancel-signal.js';
export type { PacingModel, PacingOptions } from './pacing-options.js';
export type { AbortSignalLike, AcquireOptions, AcquireOutcome, OriginPacingStats, PacingStats, Refusal, ReleaseOutcome, RequestLimits, RequestPacer, Slot, SlotTaker } from './types.js';
export { FleetPacer, type FleetPacerOptions } from './fleet-pacer.js';
export { parseRetryAfter } from './retry-after.js';
export { crawlDelayMsOf } from './crawl-delay.js';
