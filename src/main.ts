/**
 * Composition root: the only place that wires real servers.
 */
import { UsageError } from './errors.js';

/** Options of {@link serve}. */
export interface ServeOptions {
  /** Path of the YAML configuration file. */
  configPath: string;
}

/** Runs the proxy. Not wired yet in this increment: throws {@link UsageError}. */
export async function serve(_options: ServeOptions): Promise<void> {
  throw new UsageError('serve is not available in this build yet (issue #3); use "robots-proxy check"');
}

/** Prints the interception CA. Not wired yet in this increment: throws {@link UsageError}. */
export async function printCa(_options: ServeOptions): Promise<void> {
  throw new UsageError('ca is not available in this build yet (issue #4)');
}
