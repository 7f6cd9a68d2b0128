/**
 * The `robots-proxy` command line as real child processes (issue #7, item 8):
 * every command answers `--help`, `--version` prints the package version, bad
 * usage says what is wrong in our words with exit 2, and `ca` without
 * `--config` reads the package's config (or `$ROBOTS_PROXY_CONFIG`), not the
 * working directory's.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../helpers/cli.js';
import { generateCa } from '../../src/proxy/tls/certificate-authority.js';

/** `text` as a literal inside a RegExp. */
function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const root = fileURLToPath(new URL('../../', import.meta.url));
const run = runCli;

describe('robots-proxy help and version', () => {
  it('prints each command\'s own help with --help and -h, exit 0', async () => {
    const expected: Record<string, RegExp[]> = {
      serve: [/^Usage: robots-proxy serve \[--config FILE\]/, /ROBOTS_PROXY_CONFIG/, /one line on stderr/],
      check: [/robots-proxy check --robots FILE/, /--jsonl/, /0 +every URL/, /1 +at least one URL is disallowed/, /2 +bad usage/],
      ca: [/^Usage: robots-proxy ca \[--config FILE\]/, /ca\.pem/],
    };
    // Each child costs a second or two of start-up: -h is tried on one command.
    for (const [command, patterns] of Object.entries(expected)) {
      for (const flag of command === 'check' ? ['--help', '-h'] : ['--help']) {
        const r = await run([command, flag]);
        assert.equal(r.code, 0, `${command} ${flag}: ${r.stderr}`);
        assert.equal(r.stderr, '');
        for (const pattern of patterns) assert.match(r.stdout, pattern, `${command} ${flag}`);
      }
    }
    const general = await run(['--help']);
    assert.equal(general.code, 0);
    assert.match(general.stdout, /robots-proxy COMMAND --help/);
    assert.match(general.stdout, /--version/);
  });

  it('prints the package version with --version and -v', async () => {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const r = await run([flag]);
      assert.equal(r.code, 0);
      assert.equal(r.stdout, `${version}\n`);
    }
  });

  it('explains bad usage in its own words with exit 2, never Node\'s raw argument error', async () => {
    const cases: Array<[string[], string]> = [
      [['serve', '--confg', 'x.yaml'], 'robots-proxy: serve: unknown option --confg; run "robots-proxy serve --help"\n'],
      [['ca', '--config'], 'robots-proxy: ca: option --config needs a value; run "robots-proxy ca --help"\n'],
      [['serve', 'extra'], 'robots-proxy: serve: unexpected argument "extra"; run "robots-proxy serve --help"\n'],
      [['frobnicate'], 'robots-proxy: unknown command "frobnicate"; run "robots-proxy --help"\n'],
      // A near miss names the command meant.
      [['serv'], 'robots-proxy: unknown command "serv" (did you mean "serve"?); run "robots-proxy --help"\n'],
      [['chekc'], 'robots-proxy: unknown command "chekc" (did you mean "check"?); run "robots-proxy --help"\n'],
    ];
    for (const [args, stderr] of cases) {
      const r = await run(args);
      assert.equal(r.code, 2, args.join(' '));
      assert.equal(r.stderr, stderr);
      assert.doesNotMatch(r.stderr, /ERR_PARSE_ARGS|To specify a positional argument/);
    }
  });
});

describe('robots-proxy ca', () => {
  let cwd: string;
  before(() => {
    cwd = mkdtempSync(join(tmpdir(), 'robots-proxy-ca-cwd-'));
  });
  after(() => rmSync(cwd, { recursive: true, force: true }));

  it('without --config reads the package\'s config/default.yaml, from any working directory', async () => {
    // The working directory has no config/default.yaml: the package's is used, and its
    // relative stateDir (./state) is resolved against the working directory, as documented.
    const r = await run(['ca'], { cwd });
    assert.equal(r.code, 0, r.stderr);
    const certPath = join(cwd, 'state', 'ca', 'ca.pem');
    assert.ok(r.stdout.startsWith(`# ${certPath}\n-----BEGIN CERTIFICATE-----`), r.stdout.slice(0, 200));
    assert.ok(existsSync(certPath));
    // stderr says it was made now, where, and where its key is; a second run finds it.
    assert.match(r.stderr, new RegExp(`^robots-proxy ca: ${escapeRegExp(certPath)} \\(generated just now; key ${escapeRegExp(join(cwd, 'state', 'ca'))}/\\S+; SHA-256 [0-9A-F:]{95}; expires \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\); clients must trust it\n$`));
    const again = await run(['ca'], { cwd });
    assert.equal(again.stdout, r.stdout, 'the same CA');
    assert.match(again.stderr, new RegExp(`^robots-proxy ca: ${escapeRegExp(certPath)} \\(already in stateDir; key `));
  });

  it('without --config reads $ROBOTS_PROXY_CONFIG when set (the container sets it)', async () => {
    const stateDir = join(cwd, 'env-state');
    const configPath = join(cwd, 'env.yaml');
    writeFileSync(configPath, `stateDir: ${stateDir}\n`);
    const r = await run(['ca'], { cwd, env: { ROBOTS_PROXY_CONFIG: configPath } });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.startsWith(`# ${join(stateDir, 'ca', 'ca.pem')}\n`), r.stdout.slice(0, 200));
    // --config wins over the environment.
    const explicit = join(cwd, 'explicit.yaml');
    writeFileSync(explicit, `stateDir: ${join(cwd, 'explicit-state')}\n`);
    const r2 = await run(['ca', '--config', explicit], { cwd, env: { ROBOTS_PROXY_CONFIG: configPath } });
    assert.ok(r2.stdout.startsWith(`# ${join(cwd, 'explicit-state', 'ca', 'ca.pem')}\n`), r2.stdout.slice(0, 200));
  });

  it('a stateDir that cannot be created fails at once, naming stateDir and its line (exit 2)', { skip: !existsSync('/proc/self'), timeout: 30_000 }, async () => {
    const configPath = join(cwd, 'proc.yaml');
    writeFileSync(configPath, '# state in /proc\nstateDir: /proc/robots-proxy-nope\n');
    const r = await run(['ca', '--config', configPath], { cwd });
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, new RegExp(`^robots-proxy: ${configPath.replaceAll('.', '\\.')}:2:1: stateDir: cannot create the directory "/proc/robots-proxy-nope"`));
  });

  it('says when the CA expires, and warns on a second line when that is within 30 days', async () => {
    const DAY_MS = 86_400_000;
    const cases: Array<[string, number, RegExp | undefined]> = [
      ['long', 400 * DAY_MS, undefined],
      ['soon', 9.5 * DAY_MS, /expires \S+ \(9 days left\): after that every CONNECT to intercept is refused 500; replace it/],
    ];
    for (const [name, leftMs, warning] of cases) {
      const notAfter = new Date(Date.now() + leftMs);
      const { certPem, keyPem } = await generateCa(Date.now() - 2 * DAY_MS, notAfter.getTime());
      const certPath = join(cwd, `${name}-ca.pem`);
      const keyPath = join(cwd, `${name}-ca-key.pem`);
      writeFileSync(certPath, certPem);
      writeFileSync(keyPath, keyPem, { mode: 0o600 });
      const configPath = join(cwd, `${name}.yaml`);
      writeFileSync(configPath, `stateDir: ${join(cwd, `${name}-state`)}\nhttps:\n  caCert: ${certPath}\n  caKey: ${keyPath}\n`);
      const r = await run(['ca', '--config', configPath], { cwd });
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stderr.trimEnd().split('\n');
      // notAfter is written to the second in the certificate.
      assert.match(lines[0]!, new RegExp(`\\(from https\\.caCert; .*; expires ${escapeRegExp(notAfter.toISOString().slice(0, 19))}\\.000Z\\); clients must trust it$`), name);
      if (warning === undefined) {
        assert.equal(lines.length, 1, `${name}: ${r.stderr}`);
      } else {
        assert.equal(lines.length, 2, `${name}: ${r.stderr}`);
        assert.ok(lines[1]!.startsWith(`robots-proxy ca: warning: TLS interception CA ${certPath} `), lines[1]);
        assert.match(lines[1]!, warning, name);
      }
    }
    // An expired one is refused, as `serve` refuses it, naming its dates.
    const { certPem, keyPem } = await generateCa(Date.now() - 3 * DAY_MS, Date.now() - DAY_MS);
    writeFileSync(join(cwd, 'past-ca.pem'), certPem);
    writeFileSync(join(cwd, 'past-ca-key.pem'), keyPem, { mode: 0o600 });
    writeFileSync(join(cwd, 'past.yaml'), `https:\n  caCert: ${join(cwd, 'past-ca.pem')}\n  caKey: ${join(cwd, 'past-ca-key.pem')}\n`);
    const r = await run(['ca', '--config', join(cwd, 'past.yaml')], { cwd });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /:2:3: https\.caCert: CA certificate \S+past-ca\.pem is valid only from \S+ to \S+; replace it/);
  });
});
