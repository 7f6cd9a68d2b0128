/** Access log, logger and metrics, for the proxy pipeline and the composition root. */
export type { AccessEntry } from './access-entry.js';
export {
  ACCESS_LOG_FIELD,
  ACCESS_LOG_LIMITS,
  ACCESS_LOG_MESSAGE,
  toAccessLogRecord,
  writeAccessLog,
  type AccessLogRecord,
} from './access-log.js';
export { createLogger, type LoggerLevel, type LoggerOptions } from './logger.js';
export {
  METRIC_NAME,
  ProxyMetrics,
  type MetricsStatsSources,
  type ProxyMetricsOptions,
  type RobotsFetchState,
} from './metrics.js';
