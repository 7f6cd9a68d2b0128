/**
 * Command-line options of one `robots-proxy` command, with usage errors in our words
 * (exit code 2), for every command (serve, ca, check, passwd, report).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './errors.js';

/**
 * `parseArgs` with Node's messages turned into ours: "unknown option --x; run
 * robots-proxy COMMAND --help" rather than Node's advice about `--`.
 * @throws {UsageError}
 */
export function parseCommandArgs<O extends NonNullable<ParseArgsConfig['options']>>(command: string, args: string[], options: O, allowPositionals = false) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true });
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (!code.startsWith('ERR_PARSE_ARGS')) throw err;
    const quoted = /'([^']*)'/.exec((err as Error).message)?.[1] ?? '';
    const what =
      code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
        ? `unknown option ${quoted}`
        : code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL'
          ? `unexpected argument ${JSON.stringify(quoted)}`
          : code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE'
            ? `option ${/--[\w-]+/.exec(quoted)?.[0] ?? quoted} ${quoted.includes('<value>') ? 'needs a value' : 'takes no value'}`
            : (err as Error).message;
    throw new UsageError(`${command}: ${what}; run "robots-proxy ${command} --help"`, { cause: err });
  }
}
