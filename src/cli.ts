#!/usr/bin/env node
/**
 * `robots-proxy` command line: `serve`, `check`, `ca`, `report`, `help`, `--version`.
 * Every command answers `--help`. Exit codes: 0 success (for `check`: every URL
 * allowed), 1 runtime error (for `check`: some URL disallowed), 2 usage or
 * configuration error.
 */
// First: V8 flags that must hold before any other module allocates (see the module).
import './v8-flags.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ParseArgsConfig } from 'node:util';
import { runCheckFiles, runJsonl } from './check.js';
import { parseCommandArgs } from './cli-args.js';
import { ProxyError, UsageError } from './errors.js';
import { suggestKey } from './suggest.js';

/** The commands `robots-proxy` runs, for the hint after an unknown one. */
const COMMANDS = ['serve', 'check', 'ca', 'report', 'passwd', 'help'] as const;

/** Environment variable naming the config file used when `--config` is not given. */
const CONFIG_ENV = 'ROBOTS_PROXY_CONFIG';

/** The package's own `config/default.yaml`, wherever the package is installed (the same from `src/` and `dist/`). */
const PACKAGE_DEFAULT_CONFIG = fileURLToPath(new URL('../config/default.yaml', import.meta.url));

/** `--config`, else `$ROBOTS_PROXY_CONFIG`, else the package's `config/default.yaml` (not the working directory's). */
function configPathFrom(given: string | undefined): string {
  if (given !== undefined) return given;
  const fromEnv = process.env[CONFIG_ENV];
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : PACKAGE_DEFAULT_CONFIG;
}

function packageVersion(): string {
  const text = readFileSync(new URL('../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

const CONFIG_HELP = `  -c, --config FILE   the YAML config (default: $${CONFIG_ENV} if set, else the
                      package's config/default.yaml)`;

const HELP = `robots-proxy: a forward HTTP(S) proxy that makes bots obey robots.txt (RFC 9309)

Usage:
  robots-proxy serve [--config FILE]      run the proxy (what npm start runs)
  robots-proxy check --robots FILE (--user-agent UA | --token TOKEN) [--json] URL...
                                          decide URLs offline against one robots.txt file;
                                          candidates= lists the product tokens read from UA,
                                          best first, and token= the one that decided
  robots-proxy check --jsonl              read JSON lines {"robots","url","userAgent"|"token"}
                                          on stdin, write one JSON decision per line
  robots-proxy ca [--config FILE]         print the interception CA certificate path and PEM
  robots-proxy report [--config FILE] [--since 7d] [--out report.html]
                                          the compliance report as one HTML file, from the
                                          ledger (or --from-logs FILE...)
  robots-proxy passwd FILE USER [--identity NAME] [--cost N] [--delete]
                                          write USER's entry in a proxy credentials file
                                          (bcrypt of the password read from stdin)
  robots-proxy help | --help              this text
  robots-proxy --version                  the version

"robots-proxy COMMAND --help" describes one command.
Exit codes: 0 success, 1 runtime error, 2 usage or configuration error;
check: 0 every URL allowed, 1 some URL disallowed, 2 bad usage or input.
`;

const SERVE_HELP = `Usage: robots-proxy serve [--config FILE]

Runs the proxy and its admin API until SIGINT or SIGTERM. Once both listen it
prints one line on stderr (proxy and admin addresses, CA path); logs are JSON
lines on stdout.

Signals: SIGHUP re-reads FILE and applies it (a bad file changes nothing and
is logged with its key and line); SIGTERM or SIGINT drains (queued requests
get 503, requests in flight get shutdown.drainTimeout to finish) and exits 0;
a second SIGTERM or SIGINT, a second or more after the first, ends the drain
at once. Under npm start, send SIGHUP to this process (the pid of its log
lines), not to npm, which exits on it (the proxy then stops too), or use
POST /reload on the admin API; service managers should run
"node dist/cli.js serve" directly.

Options:
${CONFIG_HELP}
  -h, --help          this text

Exit codes: 0 stopped by a signal, 1 runtime error (an internal error is logged
at fatal first), 2 configuration error (the message names the file, key and
line, e.g. a port already in use).
`;

const CHECK_HELP = `Usage:
  robots-proxy check --robots FILE (--user-agent UA | --token TOKEN) [--json] URL...
  robots-proxy check --jsonl < cases.jsonl

Decides URLs offline with the proxy's own engine, against one robots.txt file.

Options:
  -r, --robots FILE       the robots.txt file
  -A, --user-agent UA     a User-Agent header; its product tokens choose the group
  -t, --token TOKEN       a bare product token instead of a User-Agent (letters,
                          digits, "_" and "-": GPTBot, not GPTBot/1.1)
      --json              one JSON object per URL instead of a text line
      --jsonl             read JSON lines {"robots", "url", "userAgent" | "token"}
                          on stdin; write one JSON decision per line, in order
  -h, --help              this text

Exit codes:
  0  every URL (every JSON line) is allowed
  1  at least one URL is disallowed
  2  bad usage: unknown option, missing file or agent, a URL that is not an
     absolute http(s) URL; with --jsonl, a malformed input line (it is answered
     with {"error"} and the run goes on)
`;

const CA_HELP = `Usage: robots-proxy ca [--config FILE]

Prints the path and the PEM of the CA certificate the proxy signs intercepted
HTTPS with (https.caCert, or the CA generated under stateDir, created on first
use) on stdout, and on stderr where it is, whether it was generated just now
or already there, its key's path and its SHA-256 fingerprint. Clients must
trust it (curl --cacert, NODE_EXTRA_CA_CERTS, the system trust store). A
running proxy also serves it at http://ADMIN/ca.pem.

Options:
${CONFIG_HELP}
  -h, --help          this text
`;

const PASSWD_HELP = `Usage: robots-proxy passwd FILE USER [--identity NAME] [--cost N] [--delete]

Adds or replaces USER's entry in the proxy credentials file FILE
(access.credentialsFile), created with mode 0600 when missing: the bcrypt hash
of the password read from the first line of stdin (from a terminal it is
prompted for, without echo). The password itself is never written. Other lines
are kept; a running proxy reads the file again on SIGHUP or POST /reload.

  printf '%s\\n' "$PASSWORD" | robots-proxy passwd /etc/robots-proxy/users alice

Options:
      --identity NAME     the identity USER authenticates as (default: USER);
                          bind it to product tokens under identities: in the config
      --cost N            bcrypt cost, 4..15 (default 10: a few hundred ms per
                          check; the proxy remembers verified credentials)
      --delete            remove USER's entry instead (reads no password)
  -h, --help              this text

Exit codes: 0 written, 2 bad usage (bad user, empty or over-72-byte password,
an existing FILE the proxy could not read).
`;

const configOptions = {
  config: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];


/**
 * A reader of stdout that left (`robots-proxy report --json | head -1`) makes the next write fail with
 * EPIPE: nothing is left to print to, so it ends no command with an unhandled-error stack trace.
 * Not for `serve`, whose log (stdout) has its own handling of a reader that falls behind or leaves.
 */
function ignoreClosedStdout(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== 'serve') ignoreClosedStdout();
  switch (command) {
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(HELP);
      return 0;
    case 'version':
    case '--version':
    case '-v':
    case '-V':
      process.stdout.write(`${packageVersion()}\n`);
      return 0;
    case 'check':
      return runCheck(rest);
    case 'serve': {
      const { values } = parseCommandArgs('serve', rest, configOptions);
      if (values.help) return printHelp(SERVE_HELP);
      const configPath = configPathFrom(values.config);
      const { serve } = await import('./main.js');
      await serve({ configPath }).catch(rethrowPlaced(configPath));
      return 0;
    }
    case 'report': {
      if (rest.includes('--help') || rest.includes('-h')) {
        const { REPORT_USAGE } = await import('./audit/report/report-cli.js');
        process.stdout.write(`${REPORT_USAGE}\n`);
        return 0;
      }
      const { runReport } = await import('./audit/report/run-report.js');
      return runReport(rest, configPathFrom);
    }
    case 'passwd':
      return runPasswd(rest);
    case 'ca': {
      const { values } = parseCommandArgs('ca', rest, configOptions);
      if (values.help) return printHelp(CA_HELP);
      const configPath = configPathFrom(values.config);
      const { printCa } = await import('./main.js');
      await printCa({ configPath }).catch(rethrowPlaced(configPath));
      return 0;
    }
    default: {
      const near = suggestKey(command, COMMANDS);
      throw new UsageError(`unknown command "${command}"${near === undefined ? '' : ` (did you mean "${near}"?)`}; run "robots-proxy --help"`);
    }
  }
}

/** A config error raised after loading (a port in use, an unreadable file) gets the file, line and column of its key. */
function rethrowPlaced(configPath: string): (err: unknown) => Promise<never> {
  return async (err) => {
    const { placeConfigError } = await import('./config/runtime-errors.js');
    throw placeConfigError(err, configPath);
  };
}

function printHelp(text: string): number {
  process.stdout.write(text);
  return 0;
}

/** `passwd FILE USER`: writes one credentials entry; 0 when written, 2 (thrown UsageError) for bad usage. */
async function runPasswd(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    'passwd',
    args,
    { identity: { type: 'string' }, cost: { type: 'string' }, delete: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    true,
  );
  if (values.help) return printHelp(PASSWD_HELP);
  const [file, user, ...extra] = positionals;
  if (file === undefined || user === undefined || extra.length > 0) throw new UsageError('passwd needs FILE and USER; run "robots-proxy passwd --help"');
  const { readPassword, writeCredential } = await import('./access/passwd.js');
  const password = values.delete ? null : await readPassword(process.stdin, process.stderr, `Password for ${user}: `);
  const cost = values.cost === undefined ? undefined : Number(values.cost);
  const outcome = await writeCredential(file, user, password, {
    ...(values.identity !== undefined ? { identity: values.identity } : {}),
    ...(cost !== undefined ? { cost } : {}),
  });
  process.stderr.write(`robots-proxy passwd: ${outcome} ${user} in ${file}\n`);
  return 0;
}

/** `check`: 0 when every URL is allowed, 1 when one is disallowed, 2 (thrown UsageError) for bad usage. */
async function runCheck(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    'check',
    args,
    {
      robots: { type: 'string', short: 'r' },
      'user-agent': { type: 'string', short: 'A' },
      token: { type: 'string', short: 't' },
      jsonl: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    true,
  );
  if (values.help) return printHelp(CHECK_HELP);
  if (values.jsonl) {
    const { errors, disallowed } = await runJsonl(process.stdin, process.stdout);
    if (errors > 0) {
      process.stderr.write(`robots-proxy check: ${errors} malformed input line(s) answered with {"error"}\n`);
      return 2;
    }
    return disallowed > 0 ? 1 : 0;
  }
  if (values.robots === undefined) throw new UsageError('check needs --robots FILE (or --jsonl); run "robots-proxy check --help"');
  const { lines, disallowed } = runCheckFiles({
    robotsFile: values.robots,
    userAgent: values['user-agent'],
    token: values.token,
    urls: positionals,
    json: values.json ?? false,
  });
  process.stdout.write(lines.join('\n') + '\n');
  return disallowed > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code;
  },
  (err: unknown) => {
    const isUsage = err instanceof ProxyError && (err.code === 'ERR_USAGE' || err.code === 'ERR_CONFIG');
    process.stderr.write(`robots-proxy: ${(err as Error).message}\n`);
    if (!isUsage && process.env.DEBUG) process.stderr.write(`${(err as Error).stack}\n`);
    process.exitCode = isUsage ? 2 : 1;
  },
);
