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
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals, strict: true, tokens: true });
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
  refuseRepeatedOptions(command, parsed.tokens, options);
  const { values, positionals } = parsed;
  return { values, positionals };
}

/**
 * Refuses an option that takes one value but was given twice: Node keeps the last one silently,
 * so `report --ledger a.sqlite --ledger b.sqlite` reported b alone and `serve --config a --config b`
 * served b. Options declared `multiple`, and flags (a repeated `--json` loses nothing), may repeat. Pure.
 * @throws {UsageError} "option --ledger given twice ("a.sqlite", "b.sqlite"); it takes one value".
 */
function refuseRepeatedOptions(command: string, tokens: ReadonlyArray<{ kind: string; name?: string; value?: string | undefined }>, options: NonNullable<ParseArgsConfig['options']>): void {
  const seen = new Map<string, string | undefined>();
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name === undefined) continue;
    const option = options[token.name];
    if (option?.type !== 'string' || option.multiple === true) continue;
    if (seen.has(token.name)) {
      throw new UsageError(
        `${command}: option --${token.name} given twice (${JSON.stringify(seen.get(token.name))}, ${JSON.stringify(token.value)}); it takes one value; run "robots-proxy ${command} --help"`,
      );
    }
    seen.set(token.name, token.value);
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
