/**
 * The timing facts of one origin and the pure rules that turn them into the
 * earliest start of the next request (DESIGN.md "Pacing semantics";
 * crawl-delay is an extension, RFC 9309 §2.2.4). No clock, no timers: time
 * comes in as `nowMs`. Concurrency (who may overlap whom) is the pacer's job.
 */
import { MAX_WINDOW_STARTS, windowLimitFor, type PacingModel } from './pacing-options.js';

/** What the timing models need to remember about one origin. Times in ms since the epoch. */
export interface OriginTiming {
  /** Start of the latest request, or undefined before the first. */
  lastStartMs: number | undefined;
  /** Latest release of a request, or undefined before the first. */
  lastEndMs: number | undefined;
  /**
   * `window` model only: recent start times, oldest first. Starts older than
   * `windowMs` are pruned (they cannot count in any window longer than one
   * start, see {@link windowLimitFor}), and at most {@link MAX_WINDOW_STARTS} are kept.
   */
  recentStartsMs: number[];
  /** No request starts before this (an upstream 429/503 pause); 0 when never paused. */
  pausedUntilMs: number;
}

/** The model settings the timing rules read. */
export interface TimingModel {
  model: PacingModel;
  /** Window of the `window` model, ms. */
  windowMs: number;
}

/** A fresh origin: nothing started, not paused. */
export function createOriginTiming(): OriginTiming {
  return { lastStartMs: undefined, lastEndMs: undefined, recentStartsMs: [], pausedUntilMs: 0 };
}

/**
 * The earliest time a request with delay `delayMs` may start, by timing alone
 * (the pause and the model's spacing; the caller checks concurrency).
 * The spacing is the request's own delay, whatever the delays of earlier requests.
 * - `start-to-start`: previous start + delay.
 * - `end-to-start`: the later of previous end and previous start, + delay.
 * - `window`: with `{starts, lengthMs}` from {@link windowLimitFor}, the `starts`-th
 *   most recent start + `lengthMs` (or at once when fewer starts are remembered).
 * A delay of 0 is never spaced. Pure; never throws.
 * @returns ms since the epoch; may lie in the past (meaning: now).
 */
export function earliestStartMs(timing: OriginTiming, delayMs: number, model: TimingModel): number {
  let readyMs = timing.pausedUntilMs;
  if (delayMs <= 0) return readyMs;
  const lastStart = timing.lastStartMs ?? -Infinity;
  switch (model.model) {
    case 'start-to-start':
      return Math.max(readyMs, lastStart + delayMs);
    case 'end-to-start':
      return Math.max(readyMs, Math.max(lastStart, timing.lastEndMs ?? -Infinity) + delayMs);
    case 'window': {
      const limit = windowLimitFor(delayMs, model.windowMs);
      if (limit.starts === 1) return Math.max(readyMs, lastStart + limit.lengthMs);
      const starts = timing.recentStartsMs;
      const reference = starts[starts.length - limit.starts];
      if (reference !== undefined) readyMs = Math.max(readyMs, reference + limit.lengthMs);
      return readyMs;
    }
  }
}

/** Records a request start at `nowMs` (mutates `timing`). Pure otherwise; never throws. */
export function recordStart(timing: OriginTiming, nowMs: number, model: TimingModel): void {
  timing.lastStartMs = nowMs;
  if (model.model !== 'window') return;
  const starts = timing.recentStartsMs;
  starts.push(nowMs);
  // Only a one-start window (delay >= windowMs) looks further back, and it reads lastStartMs.
  let drop = 0;
  while (drop < starts.length && (starts[drop] ?? nowMs) <= nowMs - model.windowMs) drop += 1;
  drop = Math.max(drop, starts.length - MAX_WINDOW_STARTS);
  if (drop > 0) starts.splice(0, drop);
}

/** Records a request end (release) at `nowMs` (mutates `timing`). Never throws. */
export function recordEnd(timing: OriginTiming, nowMs: number): void {
  timing.lastEndMs = Math.max(timing.lastEndMs ?? nowMs, nowMs);
}

/**
 * When this timing stops constraining any request whose delay is at most
 * `maxDelayMs` (e.g. the largest delay seen at the origin): from then on, a fresh
 * {@link OriginTiming} gives the same earliest start. Pure; never throws.
 * @returns ms since the epoch.
 */
export function timingEndMs(timing: OriginTiming, maxDelayMs: number, model: TimingModel): number {
  const last = Math.max(timing.lastStartMs ?? -Infinity, timing.lastEndMs ?? -Infinity);
  let holdMs = 0;
  if (maxDelayMs > 0) holdMs = model.model === 'window' ? Math.max(model.windowMs, maxDelayMs) : maxDelayMs;
  return Math.max(timing.pausedUntilMs, last + holdMs);
}
