/**
 * Identity names that name nobody: an `identities` entry or a policy rule's `identity` written for
 * a name no `access.clients` range and no credentials user carries (a case slip, `Lab` for the
 * range's `lab`; a removed user) applied to no request, silently: the bound bot crawled unbound, the
 * `deny` rule never denied. Now a `config-warning` at start and at each reload (`robots-proxy serve`
 * as a child process, SIGHUP), and none once the names are right. Unit cases for the credentials
 * file's identities.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { unknownIdentityWarnings } from '../../src/access/identity-names.js';
import type { CredentialEntry } from '../../src/access/credentials-file.js';
import { parseConfig } from '../../src/config/index.js';
import { startProxyProcess, type ProxyProcess } from '../helpers/processes.js';
import { waitFor } from '../helpers/proxy-client.js';

const yaml = (extra: string) => `listen: { host: 127.0.0.1, port: 0 }\nadmin: { enabled: false }\nlog: { level: info }\nstateDir: $STATE\n${extra}`;
const MISNAMED = [
  'access:',
  '  clients: [{ range: 127.0.0.1/32, identity: lab }, 127.0.0.0/8]',
  'identities:',
  '  Lab: { tokens: [ExampleBot], onMismatch: deny }',
  'policy:',
  '  rules:',
  '    - { name: no-admin, identity: nobody, path: /admin, action: deny }',
  '    - { name: lab-only, identity: [lab, LAB], path: /lab, action: deny }',
  '',
].join('\n');

describe('identity names that name nobody are warned about', () => {
  let proxy: ProxyProcess;
  before(async () => {
    proxy = await startProxyProcess(yaml(MISNAMED));
  });
  after(async () => {
    await proxy?.close();
  });

  const identityWarnings = () => proxy.logs.filter((l) => l['event'] === 'config-warning' && typeof l['identity'] === 'string');

  it('at start: each name, its key, and the known name it differs from only in case', async () => {
    await waitFor(() => identityWarnings().length >= 3, 'three identity warnings');
    assert.deepEqual(
      identityWarnings().map((l) => [l['key'], l['identity'], l['msg']]),
      [
        ['identities.Lab', 'Lab', 'identities.Lab: no access.clients range carries identity "Lab", so what it binds applies to no request (did you mean "lab"? identity names are compared exactly)'],
        ['policy.rules[0].identity', 'nobody', 'policy.rules[0].identity (rule "no-admin"): no access.clients range carries identity "nobody", so the rule never matches on it'],
        ['policy.rules[1].identity', 'LAB', 'policy.rules[1].identity (rule "lab-only"): no access.clients range carries identity "LAB", so the rule never matches on it (did you mean "lab"? identity names are compared exactly)'],
      ],
    );
  });

  it('at a reload: again for what is still wrong, and not for what was mended', async () => {
    const before = identityWarnings().length;
    writeFileSync(proxy.configPath, yaml(MISNAMED.replace('  Lab:', '  lab:').replace('identity: [lab, LAB]', 'identity: lab')).replaceAll('$STATE', join(proxy.configPath, '..', 'state')));
    proxy.kill('SIGHUP');
    await proxy.waitForEvent('config-reloaded');
    await waitFor(() => identityWarnings().length >= before + 1, 'the reload\'s warning');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(identityWarnings().slice(before).map((l) => l['key']), ['policy.rules[0].identity']);
  });
});

describe('unknownIdentityWarnings', () => {
  const entry = (user: string, identity: string): [string, CredentialEntry] => [user, { user, hash: '$2b$04$x', identity, line: 1 }];
  it('counts the credentials file\'s identities (a user is its own identity unless its line names one)', () => {
    const config = parseConfig('access:\n  credentialsFile: /nonexistent/users\nidentities:\n  alice: {}\n  vendor-x: {}\n  Vendor-X: {}\n  bob: {}\n', 'x.yaml');
    const warnings = unknownIdentityWarnings(config, new Map([entry('alice', 'alice'), entry('vx', 'vendor-x')]));
    assert.deepEqual(
      warnings.map((w) => w.message),
      [
        'identities.Vendor-X: no access.clients range and no user of access.credentialsFile carries identity "Vendor-X", so what it binds applies to no request (did you mean "vendor-x"? identity names are compared exactly)',
        'identities.bob: no access.clients range and no user of access.credentialsFile carries identity "bob", so what it binds applies to no request',
      ],
    );
    assert.deepEqual(unknownIdentityWarnings(parseConfig('', 'x.yaml'), undefined), [], 'the defaults name no identity');
  });
});
