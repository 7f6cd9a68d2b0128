/**
 * Identity names the configuration writes that name nobody. An identity comes from an
 * `access.clients` range (`identity:`) or a user of the credentials file (its third field, else the
 * user name), and names are compared exactly; so an `identities` entry or a policy rule's
 * `identity` written for a name no range and no user carries (`Lab` for the range's `lab`, a typo,
 * a user since removed) applies to no request, silently: the bot it was meant to bind crawls
 * unbound, the `deny` rule never denies. Not an error (the credentials file may gain the user at
 * the next reload), a warning at start and at each reload. Pure. Extension, not in RFC 9309.
 */
import type { Config } from '../config/index.js';
import type { Credentials } from './credentials-file.js';

/** One identity name that names nobody, where it is written, and the message to log. */
export interface UnknownIdentityWarning {
  /** The key that writes it: `identities.<name>`, `policy.rules[i].identity`. */
  readonly key: string;
  /** The name as written. */
  readonly identity: string;
  readonly message: string;
}

/**
 * The identity names of `config`'s `identities` entries and policy rules that no range of
 * `access.clients` and no user of `credentials` carries, each with a message (and the known
 * name it differs from only in case, when there is one). Never throws.
 * @param credentials the credentials file in force with `config` (undefined without one).
 */
export function unknownIdentityWarnings(config: Config, credentials: Credentials | undefined): UnknownIdentityWarning[] {
  const known = new Set<string>();
  for (const range of config.access.clients) if (range.identity !== undefined) known.add(range.identity);
  for (const entry of credentials?.values() ?? []) known.add(entry.identity);
  const byLowerCase = new Map<string, string>();
  for (const name of known) byLowerCase.set(name.toLowerCase(), name);
  const hint = (name: string): string => {
    const near = byLowerCase.get(name.toLowerCase());
    return near === undefined ? '' : ` (did you mean "${near}"? identity names are compared exactly)`;
  };
  const sources = config.access.credentialsFile === undefined ? 'no access.clients range' : 'no access.clients range and no user of access.credentialsFile';
  const warnings: UnknownIdentityWarning[] = [];
  for (const name of Object.keys(config.identities)) {
    if (known.has(name)) continue;
    warnings.push({ key: `identities.${name}`, identity: name, message: `identities.${name}: ${sources} carries identity "${name}", so what it binds applies to no request${hint(name)}` });
  }
  config.policy.rules.forEach((rule, i) => {
    for (const name of rule.identities ?? []) {
      if (known.has(name)) continue;
      warnings.push({ key: `policy.rules[${i}].identity`, identity: name, message: `policy.rules[${i}].identity (rule "${rule.name}"): ${sources} carries identity "${name}", so the rule never matches on it${hint(name)}` });
    }
  });
  return warnings;
}
