/** The robots.txt engine (RFC 9309): parse once, match many times. Pure. */
export { parseRobotsTxt, productTokenOf, DEFAULT_MAX_ROBOTS_BYTES, DEFAULT_MAX_CRAWL_DELAY_SECONDS, type ParseOptions } from './parse.js';
export { evaluate, matchRule, selectGroup, type GroupSelection, type RobotsEvaluation, type RobotsOutcome } from './match.js';
export { normalisePath, normaliseOctets, normalisePattern, patternPriority, extractPathAndQuery, originDecodedPath, originResolvedPath } from './encoding.js';
export type { Rule, RuleKind, Group, MergedGroup, RobotsTxt, ParseWarning, RequestRate } from './types.js';
export {
  extractProductTokens,
  extractProductTokenCandidates,
  isValidProductToken,
  MAX_PRODUCT_TOKEN_CANDIDATES,
  USER_AGENT_SCAN_LIMIT_CHARS,
  type CandidateKind,
  type ProductTokenCandidate,
} from './agent.js';
