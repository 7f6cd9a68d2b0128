/**
 * YAML text -> validated {@link Config}. A configuration error stops the start:
 * every problem found is reported at once, each as `file:line:column: message`,
 * and the first one (in document order) fills `ConfigError.key/line/column`.
 * Extension, not in RFC 9309.
 */
import { LineCounter, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';
import { ConfigError } from '../errors.js';
import { readErrorReason, readFileBounded } from '../read-bounded.js';
import { suggestKey } from '../suggest.js';
import { configSchema, knownKeysAt } from './schema.js';
import type { Config } from './types.js';
import { describeValue } from './units.js';
import { findKeyNear, findKeyOffset, positionAt, type Position } from './yaml-positions.js';

/** A configuration file larger than this is refused before parsing (bounded everything). */
const MAX_CONFIG_BYTES = 1_048_576;
/** YAML aliases expanded at most this many times (blocks "billion laughs" documents). */
const MAX_ALIAS_COUNT = 100;

/** One problem, before it is placed in the file. */
interface Problem {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

/** One problem, placed. */
interface PlacedProblem {
  readonly key: string | undefined;
  readonly position: Position | undefined;
  readonly text: string;
}

/**
 * Reads and validates a configuration file (synchronously: it runs once, at start).
 * @param path the YAML file; it is named as given in error messages.
 * @throws ConfigError (`code: 'ERR_CONFIG'`) when the file cannot be read, is
 *   larger than 1 MiB, is not valid YAML, or does not satisfy the schema.
 */
export function loadConfig(path: string): Config {
  let text: string;
  try {
    const { bytes, tooLarge } = readFileBounded(path, MAX_CONFIG_BYTES);
    if (tooLarge) throw new ConfigError(`${path}: configuration file is larger than 1 MiB`);
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`${path}: cannot read the configuration file (${readErrorReason(error)})`, {}, { cause: error });
  }
  return parseConfig(text, path);
}

/**
 * Parses and validates configuration text. An empty document (or only
 * comments) gives the defaults, as does `{}`.
 * @param text YAML 1.2 text.
 * @param fileName used in error messages only.
 * @throws ConfigError (`code: 'ERR_CONFIG'`) naming the file, the dotted key
 *   and its line and column: YAML syntax errors (bad indentation, duplicate
 *   keys, tabs), unknown keys (with a "did you mean" hint), bad values.
 */
export function parseConfig(text: string, fileName: string): Config {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const syntax = [...doc.errors, ...doc.warnings];
  if (syntax.length > 0) {
    const placed = syntax.map((error): PlacedProblem => {
      const offset = error.pos[0];
      const path = findKeyNear(doc, lineCounter, offset);
      const key = path === undefined ? undefined : formatKeyPath(path);
      const near = key === undefined ? '' : ` near key "${key}"`;
      return { key, position: positionAt(lineCounter, offset), text: `YAML syntax error${near}: ${error.message} (${error.code})` };
    });
    throw toConfigError(fileName, placed);
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    throw new ConfigError(`${fileName}: ${(error as Error).message}`, {}, { cause: error });
  }
  return validate(data ?? {}, fileName, (path) => locate(doc, lineCounter, path));
}

/**
 * Validates a plain value shaped like the YAML file (for tests and tools that
 * build configuration in code), e.g. `validateConfig({ pacing: { maxWait: '5s' } })`.
 * @throws ConfigError naming the dotted key (no line: there is no file).
 */
export function validateConfig(input: unknown, fileName = '<config>'): Config {
  return validate(input ?? {}, fileName, () => undefined);
}

/**
 * The configuration with every default, the same as an empty file (and as
 * `config/default.yaml`). A fresh object on each call. Never throws.
 */
export function defaultConfig(): Config {
  return validateConfig({});
}

function validate(data: unknown, fileName: string, locate: (path: readonly PropertyKey[]) => Position | undefined): Config {
  const result = configSchema.safeParse(data);
  if (result.success) return result.data;
  const problems = result.error.issues.flatMap((issue) => describeIssue(issue, data));
  const placed = problems.map((p): PlacedProblem => {
    const key = p.path.length === 0 ? undefined : formatKeyPath(p.path);
    return { key, position: locate(p.path), text: p.message };
  });
  throw toConfigError(fileName, placed);
}

function locate(doc: Document, lineCounter: LineCounter, path: readonly PropertyKey[]): Position | undefined {
  const offset = findKeyOffset(doc, path) ?? (path.length === 0 ? doc.contents?.range?.[0] : undefined);
  return offset === undefined ? undefined : positionAt(lineCounter, offset);
}

function toConfigError(fileName: string, problems: readonly PlacedProblem[]): ConfigError {
  const sorted = [...problems].sort(
    (a, b) =>
      (a.position?.line ?? Infinity) - (b.position?.line ?? Infinity) ||
      (a.position?.column ?? Infinity) - (b.position?.column ?? Infinity),
  );
  const lines = sorted.map((p) => {
    const where = p.position === undefined ? fileName : `${fileName}:${p.position.line}:${p.position.column}`;
    return `${where}: ${p.text}`;
  });
  const first = sorted[0];
  return new ConfigError(lines.join('\n'), {
    ...(first?.key === undefined ? {} : { key: first.key }),
    ...(first?.position === undefined ? {} : { line: first.position.line, column: first.position.column }),
  });
}

/** Keys whose values are secrets: an error about one names the value's type, never the value (it reaches stderr, the log, the reload's answer). */
const SECRET_KEYS: ReadonlySet<string> = new Set(['admin.token']);

/** The type of a secret's value, for an error message ("a number"). Pure. */
function describeSecretValue(value: unknown): string {
  if (typeof value === 'number') return 'a number';
  if (typeof value === 'boolean') return 'true or false';
  if (typeof value === 'string') return 'a string';
  return describeValue(value);
}

function describeIssue(issue: z.core.$ZodIssue, data: unknown): Problem[] {
  if (issue.code === 'unrecognized_keys') {
    const where = issue.path.length === 0 ? '' : ` in ${formatKeyPath(issue.path)}`;
    return issue.keys.map((key) => {
      const suggestion = suggestKey(key, knownKeysAt(issue.path));
      const hint = suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`;
      return { path: [...issue.path, key], message: `unknown key "${key}"${where}${hint}` };
    });
  }
  const value = valueAt(data, issue.path);
  const got = SECRET_KEYS.has(formatKeyPath(issue.path)) ? describeSecretValue(value) : describeValue(value);
  const subject = issue.path.length === 0 ? 'the configuration' : formatKeyPath(issue.path);
  let text: string;
  switch (issue.code) {
    case 'invalid_type':
      text = `expected ${describeType(issue.expected)}, got ${got}`;
      break;
    case 'too_small':
      text =
        issue.origin === 'string'
          ? 'must not be empty'
          : issue.origin === 'array'
            ? `${hasOwnMessage(issue) ? issue.message : `must list at least ${String(issue.minimum)} ${issue.minimum === 1 ? 'entry' : 'entries'}`}; got ${describeListLength(value)}`
            : `must be at least ${String(issue.minimum)}, got ${got}`;
      break;
    case 'too_big':
      text =
        issue.origin === 'array'
          ? `must list at most ${String(issue.maximum)} entries; got ${describeListLength(value)}`
          : issue.origin === 'string'
            ? `must be at most ${String(issue.maximum)} characters; got ${typeof value === 'string' ? value.length : got}`
            : `must be at most ${String(issue.maximum)}, got ${got}`;
      break;
    case 'invalid_value':
      text = `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}; got ${got}`;
      break;
    default:
      text = issue.message;
  }
  return [{ path: issue.path, message: `${subject}: ${text}` }];
}

/**
 * True when a size issue carries the schema's own message (`.min(1, { message })`), not zod's
 * default ("Too small: expected array to have >=1 items"). Pure.
 */
function hasOwnMessage(issue: z.core.$ZodIssue): boolean {
  return !/^Too (?:small|big)\b/.test(issue.message);
}

/** How many entries a list holds, for a size error ("an empty list", "1001 entries"); a list's value is never echoed. Pure. */
function describeListLength(value: unknown): string {
  if (!Array.isArray(value)) return describeValue(value);
  return value.length === 0 ? 'an empty list' : `${value.length} ${value.length === 1 ? 'entry' : 'entries'}`;
}

function describeType(expected: string): string {
  const names: Record<string, string> = {
    object: 'a mapping of keys',
    record: 'a mapping of keys',
    number: 'a number',
    int: 'an integer',
    string: 'a string',
    boolean: 'true or false',
    array: 'a list (e.g. [a, b], or one "- item" per line)',
  };
  return names[expected] ?? expected;
}

function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let value = data;
  for (const segment of path) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}

/**
 * Writes a key path the way the file reads: `pacing.maxWait`, brackets for
 * keys that are not plain names: `hosts["example.com"].minDelay`, and array
 * indices (numbers in `path`) without quotes: `policy.rules[0].action`. A
 * mapping key spelled with digits is a string and stays quoted (`hosts["8080"]`). Pure.
 */
export function formatKeyPath(path: readonly PropertyKey[]): string {
  return path
    .map((segment, index) => {
      if (typeof segment === 'number') return `[${segment}]`;
      const text = String(segment);
      if (/^[A-Za-z_$][\w$-]*$/.test(text)) return index === 0 ? text : `.${text}`;
      return `[${JSON.stringify(text)}]`;
    })
    .join('');
}

