#!/usr/bin/env node
/**
 * `robots-proxy` command line: `serve`, `check`, `ca`, `help`.
 * Exit codes: 0 success, 1 runtime error, 2 usage or configuration error.
 */
import { parseArgs } from 'node:util';
import { runCheckFiles, runJsonl } from './check.js';
import { ProxyError, UsageError } from './errors.js';

const HELP = `robots-proxy: a forward HTTP(S) proxy that makes bots obey robots.txt (RFC 9309)

Usage:
  robots-proxy serve --config FILE        run the proxy (npm start uses config/default.yaml)
  robots-proxy check --robots FILE (--user-agent UA | --token TOKEN) [--json] URL...
                                          decide URLs offline against one robots.txt file;
                                          candidates= lists the product tokens read from UA,
                                          best first, and token= the one that decided
  robots-proxy check --jsonl              read JSON lines {"robots","url","userAgent"|"token"}
                                          on stdin, write one JSON decision per line
  robots-proxy ca [--config FILE]         print the interception CA certificate path and PEM
  robots-proxy help                       this text
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(HELP);
      return 0;
    case 'check':
      return runCheck(rest);
    case 'serve': {
      const { values } = parseArgs({ args: rest, options: { config: { type: 'string', short: 'c' } }, strict: true });
      const { serve } = await import('./main.js');
      await serve({ configPath: values.config ?? 'config/default.yaml' });
      return 0;
    }
    case 'ca': {
      const { values } = parseArgs({ args: rest, options: { config: { type: 'string', short: 'c' } }, strict: true });
      const { printCa } = await import('./main.js');
      await printCa({ configPath: values.config ?? 'config/default.yaml' });
      return 0;
    }
    default:
      throw new UsageError(`unknown command "${command}"; run "robots-proxy help"`);
  }
}

async function runCheck(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      robots: { type: 'string', short: 'r' },
      'user-agent': { type: 'string', short: 'A' },
      token: { type: 'string', short: 't' },
      jsonl: { type: 'boolean' },
      json: { type: 'boolean' },
    },
  });
  if (values.jsonl) {
    const { errors } = await runJsonl(process.stdin, process.stdout);
    if (errors > 0) process.stderr.write(`robots-proxy check: ${errors} malformed input line(s) answered with {"error"}\n`);
    return 0;
  }
  if (values.robots === undefined) throw new UsageError('check needs --robots FILE (or --jsonl)');
  const lines = runCheckFiles({
    robotsFile: values.robots,
    userAgent: values['user-agent'],
    token: values.token,
    urls: positionals,
    json: values.json ?? false,
  });
  process.stdout.write(lines.join('\n') + '\n');
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code;
  },
  (err: unknown) => {
    const isUsage = err instanceof ProxyError && (err.code === 'ERR_USAGE' || err.code === 'ERR_CONFIG');
    const isArgs = (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ?? false;
    process.stderr.write(`robots-proxy: ${(err as Error).message}\n`);
    if (!isUsage && !isArgs && process.env.DEBUG) process.stderr.write(`${(err as Error).stack}\n`);
    process.exitCode = isUsage || isArgs ? 2 : 1;
  },
);
