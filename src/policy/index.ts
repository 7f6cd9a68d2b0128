/** Pure policy: robots snapshot + request -> Decision. */
export { applyPolicy, decide, decidePolicyDenial, decideWithoutRobots, type DecisionRequest } from './decide.js';
export { compilePolicy, EMPTY_POLICY, type CompiledPolicy, type PolicyMatch, type PolicyRequest, type RulePacing } from './operator-policy.js';
export { DECISION_REASONS, type Decision, type DecisionReason, type MatchedRule, type PacingFacts, type PolicyFacts, type UpstreamFacts, type SnapshotInfo, type Verdict } from './decision.js';
export type { RobotsSnapshot } from './snapshot.js';
