/**
 * The robots snapshot of one origin: its parsed robots.txt (when there is
 * one) and how it was obtained (RFC 9309 §2.3, §2.4). Produced by the robots
 * cache, read by {@link decide}. Plain data.
 */
import type { RobotsTxt } from '../robots/types.js';
import type { SnapshotInfo } from './decision.js';

/** A robots snapshot: `info` always, `robots` when the file was fetched and parsed. */
export interface RobotsSnapshot {
  /** How the snapshot was obtained: state, status, fetch time, expiry, bytes. */
  info: SnapshotInfo;
  /** The parsed file when `info.state === 'ok'`; null otherwise. */
  robots: RobotsTxt | null;
}
