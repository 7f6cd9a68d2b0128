/**
 * Runs `robots-proxy` as a real child process, the way a user runs it, and
 * collects its exit code and output: the build (dist/cli.js) when
 * scripts/run-tests.mjs has just brought it up to date from src/, else
 * src/cli.ts under tsx.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The environment variable scripts/run-tests.mjs sets once `tsc -b` has built src/ into dist/
 * without an error, for the run's test files: the CLI's children then start from the build,
 * which spares each one tsx's start-up (~0.4-0.8 s of a proxy's start, under load).
 */
export const BUILT_CLI_ENV = 'ROBOTS_PROXY_TEST_BUILT_CLI';

/**
 * The `node` arguments that run `robots-proxy` (the command's own arguments follow): dist/cli.js
 * when {@link BUILT_CLI_ENV} is `1`, else `--import tsx src/cli.ts` (a test file run on its own).
 * @param tsx how `--import` names tsx. @default its absolute URL, so the CLI also runs from a
 *   working directory outside the repository (resolved here, on call: a module that tsx loads as
 *   CommonJS, from a test tree outside the repository, has no `import.meta.resolve`).
 */
export function cliNodeArgs(tsx?: string): string[] {
  if (process.env[BUILT_CLI_ENV] === '1') return [join(root, 'dist/cli.js')];
  return ['--import', tsx ?? import.meta.resolve('tsx'), join(root, 'src/cli.ts')];
}

/** What a finished run printed and how it exited (-1: killed by a signal). */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `robots-proxy ...args` to its end.
 * @param options.stdin written to its standard input (a string as UTF-8, a Buffer as its bytes, a stream piped; default: nothing, closed).
 * @param options.cwd working directory (default: the repository root).
 * @param options.env extra environment; `ROBOTS_PROXY_CONFIG` is cleared unless given here.
 */
export function runCli(args: string[], options: { stdin?: string | Buffer | Readable; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliRun> {
  const env: NodeJS.ProcessEnv = { ...process.env, ROBOTS_PROXY_CONFIG: undefined, ...options.env };
  if (env['ROBOTS_PROXY_CONFIG'] === undefined) delete env['ROBOTS_PROXY_CONFIG'];
  return runNode([...cliNodeArgs(), ...args], { ...options, env });
}

/**
 * Runs `node ...nodeArgs` (this Node's executable) to its end.
 * @param options.stdin written to its standard input (a string as UTF-8, a Buffer as its bytes, a stream piped; default: nothing, closed).
 * @param options.cwd working directory (default: the repository root).
 * @param options.env its whole environment (default: this process's).
 */
export function runNode(nodeArgs: string[], options: { stdin?: string | Buffer | Readable; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, nodeArgs, { cwd: options.cwd ?? root, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    const stdin = options.stdin ?? '';
    if (typeof stdin === 'string' || Buffer.isBuffer(stdin)) child.stdin.end(stdin);
    else {
      // A child that stops reading (exits early) must not fail the writer.
      child.stdin.on('error', () => undefined);
      stdin.pipe(child.stdin);
    }
  });
}
