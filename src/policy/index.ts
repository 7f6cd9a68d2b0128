/** Pure policy: robots snapshot + request -> Decision. */
export { decide, decideWithoutRobots, type DecisionRequest } from './decide.js';
export { DECISION_REASONS, type Decision, type DecisionReason, type MatchedRule, type PacingFacts, type UpstreamFacts, type SnapshotInfo, type Verdict } from './decision.js';
export type { RobotsSnapshot } from './snapshot.js';
