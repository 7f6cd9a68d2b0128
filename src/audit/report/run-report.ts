/**
 * `robots-proxy report` as the CLI runs it: the report command with the ledger path its config
 * names, without loading the proxy itself (src/main.ts and its graph: undici, the pipeline, TLS),
 * which `report` never uses.
 */
import { join, resolve } from 'node:path';
import { loadConfig, type Config } from '../../config/index.js';

/** The ledger's file: `ledger.path`, else `<stateDir>/ledger.sqlite`, as an absolute path. */
export function ledgerPathOf(config: Config): string {
  return resolve(config.ledger.path ?? join(config.stateDir, 'ledger.sqlite'));
}

/**
 * Runs `robots-proxy report ARGS...`.
 * @param configPathFrom the config file for a `--config` value (or its absence), as the CLI resolves it.
 * @returns the exit code the report command gives.
 * @throws {UsageError} for bad arguments, `ConfigError` for a bad config, `LedgerError` for an unreadable ledger.
 */
export async function runReport(args: string[], configPathFrom: (given: string | undefined) => string): Promise<number> {
  const { runReportCommand } = await import('./report-cli.js');
  const { readerFromLogs } = await import('./log-import.js');
  return runReportCommand(args, {
    ledgerPathFromConfig: (configPath) => ledgerPathOf(loadConfig(configPathFrom(configPath))),
    readerFromLogs,
    stderr: (text) => process.stderr.write(text),
    stdout: (text) => process.stdout.write(text),
    nowMs: () => Date.now(),
  });
}
