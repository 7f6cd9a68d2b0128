/**
 * Redaction of secret header values from objects about to be logged.
 * Extension, not in RFC 9309.
 *
 * Why a walk and not pino's `redact` paths: path redaction is case-sensitive
 * (header names are not, RFC 9110 §5.1), needs one path per nesting level,
 * and its wildcards cost about 50 µs on every access log line (measured here
 * with @pinojs/redact), against a few µs for this walk.
 */
import { stdSerializers } from 'pino';

/**
 * Header names whose values are secrets: credentials (RFC 9110 §11.6.2,
 * §11.7.2) and session state (RFC 6265 §4.1, §4.2). Lower case; matching is
 * case-insensitive.
 */
export const SECRET_HEADER_NAMES: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie']);

/** What a secret value is replaced with. */
export const REDACTED_VALUE = '[Redacted]';

/** User information (`user:password@`) after `//` or at the start of a request target. */
const USER_INFO = /(^|\/\/)[^/?#@\s"]*@/;

/**
 * `target` (a request target as sent: `http://user:password@host/`, a CONNECT authority
 * `user:password@host:443`) with its user information replaced by {@link REDACTED_VALUE}, so the
 * password never reaches a log line or a message. Pure; never throws.
 */
export function redactUserInfo(target: string): string {
  return target.includes('@') ? target.replace(USER_INFO, `$1${REDACTED_VALUE}@`) : target;
}

/** Nesting levels searched below the top-level object; deeper values are logged as they are. */
export const REDACT_MAX_DEPTH = 6;

/** Name lengths of the secret headers, a cheap test before lower-casing a key. */
const SECRET_NAME_LENGTHS = new Set([...SECRET_HEADER_NAMES].map((n) => n.length));

function isSecretName(key: string): boolean {
  return SECRET_NAME_LENGTHS.has(key.length) && SECRET_HEADER_NAMES.has(key.toLowerCase());
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Returns `value` with the values of {@link SECRET_HEADER_NAMES} replaced by
 * {@link REDACTED_VALUE}, at any key of a plain object (any case), and after
 * a secret name in a `rawHeaders` array (`[name, value, name, value, ...]`
 * as Node's `IncomingMessage.rawHeaders`). Plain objects and arrays are
 * searched down to {@link REDACT_MAX_DEPTH} levels; an `Error` with a secret
 * among its properties or causes becomes pino's serialized form of it (a
 * plain object with `type`, `message`, `stack`), redacted.
 * Other objects (class instances, Maps, Buffers) are not searched.
 * Copy on write: the input is never modified, and it is returned as is
 * (same reference) when it holds no secret. Pure; never throws.
 */
export function redactSecrets<T>(value: T, depth = 0): T {
  if (typeof value !== 'object' || value === null || depth > REDACT_MAX_DEPTH) return value;
  if (Array.isArray(value)) return redactArray(value, depth) as T;
  if (value instanceof Error) return redactError(value, depth) as T;
  if (!isPlainObject(value)) return value;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const item = value[key];
    let next: unknown;
    if (item !== undefined && item !== null && isSecretName(key)) next = REDACTED_VALUE;
    else if (key === 'rawHeaders' && Array.isArray(item)) next = redactRawHeaders(item);
    else next = redactSecrets(item, depth + 1);
    if (next !== item) {
      copy ??= { ...value };
      copy[key] = next;
    }
  }
  return (copy ?? value) as T;
}

function redactArray(items: readonly unknown[], depth: number): readonly unknown[] {
  let copy: unknown[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const next = redactSecrets(items[i], depth + 1);
    if (next !== items[i]) {
      copy ??= [...items];
      copy[i] = next;
    }
  }
  return copy ?? items;
}

function redactRawHeaders(raw: readonly unknown[]): readonly unknown[] {
  let copy: unknown[] | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i];
    if (typeof name === 'string' && isSecretName(name)) {
      copy ??= [...raw];
      copy[i + 1] = REDACTED_VALUE;
    }
  }
  return copy ?? raw;
}

function redactError(err: Error, depth: number): unknown {
  // pino's plain form of the error (type, message, stack, own properties,
  // causes), made fully plain so the walk can search it. Errors are rare in
  // logs, so the round trip costs little.
  let plain: unknown;
  try {
    plain = JSON.parse(JSON.stringify(stdSerializers.err(err))) as unknown;
  } catch {
    return err; // a BigInt or a cycle among its properties: pino copes with the original
  }
  const redacted = redactSecrets(plain, depth);
  return redacted === plain ? err : redacted;
}
