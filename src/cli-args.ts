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
            ? invalidValueMessage(/--[\w-]+/.exec(quoted)?.[0] ?? quoted, options, quoted.includes('<value>'))
            : (err as Error).message;
    throw new UsageError(`${command}: ${what}; run "robots-proxy ${command} --help"`, { cause: err });
  }
}

/**
 * What is wrong with an option's value, told by the option's type (not by Node's wording):
 * a boolean option given a value (`--json=yes`) "takes no value"; a string option with none, or
 * followed by something that starts with `-` (`--limit -1`, `--limit --json`: Node calls that
 * ambiguous), "needs a value", with how to write one that starts with a dash. Pure.
 * @param option the option as written, `--name`.
 * @param options the command's options, as given to `parseArgs`.
 * @param isMissing true when nothing followed the option (Node's "argument missing").
 */
function invalidValueMessage(option: string, options: NonNullable<ParseArgsConfig['options']>, isMissing: boolean): string {
  const type = Object.hasOwn(options, option.slice(2)) ? options[option.slice(2)]?.type : undefined;
  if (type === 'boolean') return `option ${option} takes no value`;
  if (isMissing) return `option ${option} needs a value`;
  return `option ${option} needs a value (one starting with "-" is written ${option}=-VALUE)`;
}
