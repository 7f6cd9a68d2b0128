/** Access log, logger and metrics, for the proxy pipeline and the composition root. */
export type { AccessEntry } from './access-entry.js';
export {
  ACCESS_LOG_FIELD,
  ACCESS_LOG_LIMITS,
  ACCESS_LOG_MESSAGE,
  toAccessLogRecord,
  type AccessLogRecord,
} from './access-log.js';
export { encodeAccessLine, writeAccessLog } from './access-line.js';
export { createLogger, droppedLogLinesOf, type LoggerLevel, type LoggerOptions } from './logger.js';
export {
  CONNECTION_LIMIT_NAMES,
  LimitReporter,
  SLOT_HOLD_WAITING_ON,
  type ConnectionLimitName,
  type LimitEvent,
  type LimitReporterOptions,
  type SlotHoldWaitingOn,
} from './limit-events.js';
export {
  METRIC_NAME,
  ProxyMetrics,
  type MetricsStatsSources,
  type ProxyMetricsOptions,
  type RobotsFetchState,
} from './metrics.js';
export { BotMetrics, NONE_LABEL } from './bot-metrics.js';
export { OTHER_LABEL, TopLabels } from './top-labels.js';
export { ROBOTS_FETCH_OUTCOMES, robotsFetchOutcomeOf, type RobotsFetchOutcome } from './scrape-metrics.js';
