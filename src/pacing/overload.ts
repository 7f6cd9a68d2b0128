/**
 * What an origin's overload answers (429 Too Many Requests, RFC 6585 §4; 503
 * Service Unavailable, RFC 9110 §15.6.4) do to its pacing: a pause, then a
 * gradual recovery. Pure: time comes in as `nowMs`, randomness as `random`.
 *
 * - A 429/503 with a valid `Retry-After` (RFC 9110 §10.2.3) pauses the origin
 *   until then, capped at `retryAfterCapMs`. Without one, the pause is
 *   exponential backoff with full jitter (see `computeBackoffMs`), the attempt
 *   counting consecutive overload episodes.
 * - One episode: answers from requests that started before the pause was set
 *   were sent before the origin could see us slow down, so they do not raise
 *   the backoff attempt again; a later `Retry-After` among them can still extend
 *   the pause.
 * - Recovery (extension): the pause sets the origin's concurrency cap to 1;
 *   each later success (any other status, from a request started after the
 *   pause was set) raises it by one until it reaches the largest
 *   `maxConcurrency` asked for at the origin, and resets the backoff attempt.
 *   Requests with a delay already run alone, so for them recovery is the pause
 *   plus their own spacing.
 * - A release without a status (the request failed or was abandoned) changes nothing.
 * - The origin's robots.txt answered 429/503 ({@link applyOverloadAnswer}): the same pause, as if
 *   from a request started after every page request so far (a new episode), and the same recovery;
 *   its other statuses change nothing (RFC 9309 §2.3.1.4 asks for no more than the disallow).
 */
import type { OriginTiming } from './origin-timing.js';
import { computeBackoffMs, parseRetryAfter } from './retry-after.js';
import type { ReleaseOutcome } from './types.js';

/** One origin's overload memory. */
export interface OverloadState {
  /** Consecutive overload episodes that had no valid `Retry-After` (the backoff exponent). */
  attempt: number;
  /** Start sequence number when the current episode's pause was set: slots numbered up to it belong to it. */
  episodeSeq: number;
  /** Concurrency cap while recovering (>= 1), or undefined when fully recovered. */
  recoveryCap: number | undefined;
  /** ms since the epoch until which the recovery state is worth keeping for an idle origin. */
  holdUntilMs: number;
}

/** Settings {@link applyRelease} reads; durations in ms. */
export interface OverloadSettings {
  retryAfterCapMs: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  random: () => number;
}

/** A state that has never seen an overload answer. */
export function createOverloadState(): OverloadState {
  return { attempt: 0, episodeSeq: 0, recoveryCap: undefined, holdUntilMs: 0 };
}

/**
 * Applies the outcome of one released request (mutates `overload` and `timing.pausedUntilMs`).
 * @param slotSeq the start sequence number of the released request.
 * @param latestSeq the sequence number of the latest start at the origin.
 * @param fullConcurrency the cap at which recovery is complete (>= 1).
 * @param nowMs the release time, ms since the epoch. Never throws.
 */
export function applyRelease(
  overload: OverloadState,
  timing: OriginTiming,
  slotSeq: number,
  latestSeq: number,
  outcome: ReleaseOutcome | undefined,
  nowMs: number,
  fullConcurrency: number,
  settings: OverloadSettings,
): void {
  const status = outcome?.status;
  const isSameEpisode = slotSeq <= overload.episodeSeq;
  if (status === 429 || status === 503) {
    const retryAfterMs = parseRetryAfter(outcome?.retryAfter, nowMs);
    let pauseMs: number;
    if (retryAfterMs !== undefined) {
      pauseMs = Math.min(retryAfterMs, settings.retryAfterCapMs);
    } else if (isSameEpisode) {
      return;
    } else {
      overload.attempt += 1;
      pauseMs = computeBackoffMs(overload.attempt, { baseMs: settings.backoffBaseMs, capMs: settings.backoffCapMs }, settings.random);
    }
    if (!isSameEpisode) overload.episodeSeq = latestSeq;
    timing.pausedUntilMs = Math.max(timing.pausedUntilMs, nowMs + pauseMs);
    overload.recoveryCap = 1;
    overload.holdUntilMs = Math.max(overload.holdUntilMs, timing.pausedUntilMs + (timing.pausedUntilMs - nowMs));
    return;
  }
  if (status === undefined || isSameEpisode) return;
  overload.attempt = 0;
  if (overload.recoveryCap !== undefined) {
    overload.recoveryCap += 1;
    if (overload.recoveryCap >= fullConcurrency) overload.recoveryCap = undefined;
  }
}

/**
 * Applies an overload answer the origin gave outside a paced request (its robots.txt fetch
 * answered 429 or 503; mutates `overload` and `timing.pausedUntilMs`): exactly what a page's
 * 429/503 released now does (Retry-After capped, else backoff; recovery from concurrency 1),
 * counted as a new episode, since the robots.txt request was not among the pages in flight.
 * Any other status (or none) changes nothing: a robots.txt 200 is no proof the pages recovered.
 * @param latestSeq the sequence number of the latest page start at the origin.
 * @param nowMs when the answer arrived, ms since the epoch. Never throws.
 * @returns true when the answer was an overload answer (429/503), whatever pause it set (possibly none left: `Retry-After: 0`).
 */
export function applyOverloadAnswer(overload: OverloadState, timing: OriginTiming, latestSeq: number, answer: ReleaseOutcome, nowMs: number, settings: OverloadSettings): boolean {
  if (answer.status !== 429 && answer.status !== 503) return false;
  // A sequence number after every start so far: not the episode of the pages already sent.
  applyRelease(overload, timing, latestSeq + 1, latestSeq, answer, nowMs, 1, settings);
  return true;
}

/**
 * Until when an idle origin's state must be kept for its overload memory:
 * while it recovers or backs off, for as long again as its last pause lasted
 * after the pause ends; otherwise never (returns 0).
 * @returns ms since the epoch. Pure; never throws.
 */
export function overloadHoldUntilMs(overload: OverloadState): number {
  return overload.attempt > 0 || overload.recoveryCap !== undefined ? overload.holdUntilMs : 0;
}
