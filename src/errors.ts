/**
 * Every error class of robots-proxy. Each extends {@link ProxyError}, carries a
 * literal `code` that callers branch on (never on message text) and passes
 * `cause` through.
 *
 * Outcomes RFC 9309 defines (a 404 robots.txt, a 503, a malformed line) are
 * values, not exceptions: they never appear here.
 */
export class ProxyError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A configuration file could not be read, parsed or validated. The message names the file, key, line and column. */
export class ConfigError extends ProxyError {
  declare readonly code: 'ERR_CONFIG';
  /** 1-based line of the offending key, when known. */
  readonly line: number | undefined;
  /** 1-based column of the offending key, when known. */
  readonly column: number | undefined;
  /** Dotted key path, e.g. `pacing.maxWait`, when known. */
  readonly key: string | undefined;
  constructor(message: string, where: { line?: number; column?: number; key?: string } = {}, options?: { cause?: unknown }) {
    super('ERR_CONFIG', message, options);
    this.line = where.line;
    this.column = where.column;
    this.key = where.key;
  }
}

/** Command-line usage was wrong (unknown flag, missing argument). */
export class UsageError extends ProxyError {
  declare readonly code: 'ERR_USAGE';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_USAGE', message, options);
  }
}

/** A URL given to the proxy or the checker is not an absolute http(s) URL. */
export class InvalidTargetError extends ProxyError {
  declare readonly code: 'ERR_INVALID_TARGET';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_INVALID_TARGET', message, options);
  }
}

/** Certificate authority material could not be created, read or used. */
export class CertificateError extends ProxyError {
  declare readonly code: 'ERR_CERTIFICATE';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_CERTIFICATE', message, options);
  }
}

/** Codes of {@link LedgerError}. */
export type LedgerErrorCode = 'ERR_LEDGER_SCHEMA' | 'ERR_LEDGER_OPEN' | 'ERR_LEDGER_LOG_LINE';

/**
 * The compliance ledger could not be used: `ERR_LEDGER_SCHEMA` (a file from a newer version),
 * `ERR_LEDGER_OPEN` (the file cannot be opened or read, e.g. for a report),
 * `ERR_LEDGER_LOG_LINE` (an access-log line that cannot be read back).
 */
export class LedgerError extends ProxyError {
  declare readonly code: LedgerErrorCode;
  constructor(code: LedgerErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** An identity name (e.g. `/explain?identity=`) that the configuration does not know. */
export class UnknownIdentityError extends ProxyError {
  declare readonly code: 'ERR_UNKNOWN_IDENTITY';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_UNKNOWN_IDENTITY', message, options);
  }
}

/** The fleet's shared state (Redis) did not answer in time or refused a command; the caller falls back (`state.redis.onUnavailable`). */
export class StateUnavailableError extends ProxyError {
  declare readonly code: 'ERR_STATE_UNAVAILABLE';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_STATE_UNAVAILABLE', message, options);
  }
}
