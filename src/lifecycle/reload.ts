/**
 * Reloading the configuration of a running proxy (SIGHUP, `POST /reload` on
 * the admin listener): read and validate the file, keep what needs a restart,
 * apply the rest, log what happened. Extension, not in RFC 9309.
 */
import type { Logger } from 'pino';
import { checkRestartFiles, loadConfig, planReload, type Config } from '../config/index.js';
import type { CredentialsChange } from '../access/credentials-file.js';
import { ConfigError } from '../errors.js';

/** The outcome of one reload, as logged and as `POST /reload` answers it. */
export type ReloadReport =
  | {
      ok: true;
      /** The file read. */
      file: string;
      /** YAML keys whose new value is in force now. */
      applied: readonly string[];
      /** YAML keys that changed but need a restart; their running value was kept. */
      restartRequired: readonly string[];
      /**
       * When `access.credentialsFile` is set: the file re-read, against the one in force before
       * (counts only). A file whose users changed puts `access.credentialsFile` in `applied`
       * even when its path did not change.
       */
      credentials?: CredentialsChange;
    }
  | {
      ok: false;
      /** `config-invalid`: the file could not be read or validated; `shutting-down`: a drain is under way. */
      error: 'config-invalid' | 'shutting-down';
      file: string;
      /** Every problem found, one per line, each `file:line:column: message`. */
      message: string;
      /** The first offending key, its line and column, when known. */
      key?: string;
      line?: number;
      column?: number;
    };

/** The running proxy as a reload sees it. */
export interface Reloadable {
  /** The configuration in force. */
  readonly config: Config;
  /** True once a stop has begun: a reload is refused. */
  readonly isDraining: boolean;
  /**
   * Reads what `config` names besides itself (the credentials file) before anything is applied;
   * throwing (a {@link ConfigError}) fails the reload with nothing changed. Returns how the
   * credentials file differs from the one in force (undefined when none is configured). Optional.
   */
  prepare?(config: Config): CredentialsChange | undefined;
  /** Puts `config` in force in every component (it already keeps the restart-only keys). */
  apply(config: Config): void;
}

/**
 * Reads `file`, validates it (and what `target.prepare` reads, e.g. the credentials file, and
 * the files of changed restart-only keys a restart would read: {@link checkRestartFiles}) and
 * applies it to `target`. A file that cannot be read or does not validate changes nothing: the running configuration stays in force and the error is logged
 * (`event: config-reload-failed`, with file, key, line and column). Otherwise the keys that can
 * change live are applied (`event: config-reloaded`, level info, with the credentials file's
 * {@link CredentialsChange} when one is configured) and those that need a restart
 * are named in a warning (`event: config-restart-required`) and keep their running value.
 * Synchronous: nothing else runs between the read and the swap. Never throws.
 */
export function reloadConfigFile(file: string, target: Reloadable, logger: Logger): ReloadReport {
  if (target.isDraining) {
    logger.warn({ event: 'config-reload-refused', file }, 'configuration not reloaded: the proxy is shutting down');
    return { ok: false, error: 'shutting-down', file, message: 'the proxy is shutting down' };
  }
  let plan: ReturnType<typeof planReload>;
  let credentials: CredentialsChange | undefined;
  try {
    const next = loadConfig(file);
    plan = planReload(target.config, next);
    checkRestartFiles(next, plan.restartRequired);
    credentials = target.prepare?.(plan.config);
  } catch (err) {
    const where = err instanceof ConfigError ? { key: err.key, line: err.line, column: err.column } : {};
    const message = err instanceof Error ? err.message : String(err);
    logger.error(
      { event: 'config-reload-failed', file, ...where, error: message },
      'configuration not reloaded: the file is invalid; the running configuration stays in force',
    );
    return {
      ok: false,
      error: 'config-invalid',
      file,
      message,
      ...(where.key !== undefined ? { key: where.key } : {}),
      ...(where.line !== undefined ? { line: where.line } : {}),
      ...(where.column !== undefined ? { column: where.column } : {}),
    };
  }
  const contentsChanged = credentials !== undefined && credentials.added + credentials.removed + credentials.changed > 0;
  const applied = contentsChanged && !plan.applied.includes('access.credentialsFile') ? [...plan.applied, 'access.credentialsFile'] : plan.applied;
  const extra = credentials === undefined ? {} : { credentials };
  // Logged before the swap, so a reload that raises log.level still leaves its trace.
  if (plan.restartRequired.length > 0) {
    logger.warn(
      { event: 'config-restart-required', file, keys: plan.restartRequired },
      restartRequiredMessage(plan.restartRequired),
    );
  }
  logger.info({ event: 'config-reloaded', file, applied, restartRequired: plan.restartRequired, ...extra }, 'configuration reloaded');
  target.apply(plan.config);
  return { ok: true, file, applied, restartRequired: plan.restartRequired, ...extra };
}

/**
 * The `config-restart-required` warning's text, in the grammar of its key count.
 * @param keys the restart-only keys whose value changed (`ReloadPlan.restartRequired`), at least one.
 * @returns e.g. `configuration reloaded, but upstream.caFile changed and takes effect only after a
 *   restart: its running value is kept`.
 */
export function restartRequiredMessage(keys: readonly string[]): string {
  const one = keys.length === 1;
  return `configuration reloaded, but ${keys.join(', ')} changed and ${one ? 'takes' : 'take'} effect only after a restart: ${one ? 'its running value is' : 'their running values are'} kept`;
}
