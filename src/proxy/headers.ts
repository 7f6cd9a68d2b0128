/**
 * Header handling for forwarding (RFC 9110 §7.6). Pure.
 */
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { flatJoin } from './flat-string.js';

/** Hop-by-hop fields, never forwarded (RFC 9110 §7.6.1), plus the legacy `proxy-connection`. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** A `Via` pseudonym for one proxy instance (RFC 9110 §7.6.3): unique, so a loop back into the same instance is recognised. */
export function makeViaPseudonym(): string {
  return `robots-proxy-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * The sets of names of the `Connection` values seen most (`keep-alive`, `close`: nearly every
 * response an origin sends carries one), so they are parsed once, not per message. Bounded;
 * the sets are never changed once made.
 */
const listedByValue = new Map<string, ReadonlySet<string>>();
const MAX_CACHED_CONNECTION_VALUES = 64;
/** Longest `Connection` value whose names are cached. */
const MAX_CACHED_CONNECTION_CHARS = 64;

/** The names in a `Connection` value, lower case. */
function parseConnectionValue(value: string): Set<string> {
  const listed = new Set<string>();
  for (const item of value.split(',')) {
    const name = item.trim().toLowerCase();
    if (name) listed.add(name);
  }
  return listed;
}

/** Names listed in `Connection` (lower case): they are hop-by-hop too (RFC 9110 §7.6.1). Undefined when there is no `Connection` field. */
function connectionListed(headers: IncomingHttpHeaders | OutgoingHttpHeaders): ReadonlySet<string> | undefined {
  const value = headers['connection'];
  if (value === undefined) return undefined;
  return namesListedIn(String(Array.isArray(value) ? value.join(',') : value));
}

/** The names in a `Connection` value `text`, lower case; cached per value ({@link listedByValue}). */
function namesListedIn(text: string): ReadonlySet<string> {
  if (text.length > MAX_CACHED_CONNECTION_CHARS) return parseConnectionValue(text);
  let listed = listedByValue.get(text);
  if (listed === undefined) {
    listed = parseConnectionValue(text);
    if (listedByValue.size < MAX_CACHED_CONNECTION_VALUES) listedByValue.set(text, listed);
  }
  return listed;
}

/** The `Connection` values whose names are all hop-by-hop already (`keep-alive`, `close`, ...): nothing more to drop. Bounded like {@link listedByValue}. */
const listsOnlyHopByHop = new Set<string>();

/**
 * The names in a `Connection` value `text` (lower case) that are not hop-by-hop by themselves,
 * or undefined when there are none (`keep-alive`, `close`: the value nearly every origin sends,
 * answered by one set lookup).
 */
function extraNamesListedIn(text: string): ReadonlySet<string> | undefined {
  if (listsOnlyHopByHop.has(text)) return undefined;
  const listed = namesListedIn(text);
  for (const name of listed) if (!HOP_BY_HOP.has(name)) return listed;
  if (text.length <= MAX_CACHED_CONNECTION_CHARS && listsOnlyHopByHop.size < MAX_CACHED_CONNECTION_VALUES) listsOnlyHopByHop.add(text);
  return undefined;
}

/**
 * Copies `headers` without hop-by-hop fields (RFC 9110 §7.6.1) and with this
 * proxy appended to `Via` (§7.6.3) as `pseudonym`. `protocolVersion` is the
 * version of the hop the message arrived on, e.g. `1.1`. Names come out lower case. Pure.
 * The object form: the proxy's own forwarding builds flat field arrays instead
 * ({@link upstreamRequestFields}, {@link forwardableResponseFields}); this one serves the
 * benches' bare forwarders and the tests that compare against it.
 * @param namesLowerCase true when every name of `headers` is lower case already, as in Node's
 *   `IncomingMessage.headers` and undici's parsed response headers: then no name is lower-cased
 *   again (one `toLowerCase` per field and message, issue 11). A name that is not lower case is
 *   then copied as it is, so pass true only for such sources.
 */
export function forwardableHeaders(
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
  protocolVersion: string,
  pseudonym: string,
  namesLowerCase = false,
): Record<string, string | string[]> {
  const listed = connectionListed(headers);
  const out: Record<string, string | string[]> = {};
  // Per request, twice (request and response): no entries array, no Set when nothing is listed.
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || !Object.hasOwn(headers, name)) continue;
    const lower = namesLowerCase ? name : name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || listed?.has(lower)) continue;
    out[lower] = value;
  }
  out['via'] = appendedVia(out['via'], protocolVersion, pseudonym);
  return out;
}

/**
 * The request head of an Upgrade (WebSocket) relayed upstream, as an object by lower-case name:
 * {@link forwardableHeaders} of `headers` (no hop-by-hop field: `Proxy-Authorization`,
 * `Proxy-Connection`, `Keep-Alive`, those named in `Connection`; an undefined value, as admission
 * leaves the credentials, is skipped; this proxy's hop appended to `Via`), with the upgrade itself
 * put back: `Upgrade` as the client sent it and `Connection: upgrade` (RFC 9110 §7.8: a sender of
 * `Upgrade` lists it in `Connection`). Pure.
 */
export function upgradeRequestHeaders(headers: IncomingHttpHeaders, protocolVersion: string, pseudonym: string): Record<string, string | string[]> {
  const out = forwardableHeaders(headers, protocolVersion, pseudonym, true);
  const upgrade = headers['upgrade'];
  if (upgrade !== undefined) {
    out['upgrade'] = upgrade;
    out['connection'] = 'upgrade';
  }
  return out;
}

/** What {@link forwardableResponseFields} does with a response field, by its name. */
const enum FieldKind {
  Relayed = 0,
  HopByHop = 1,
  Connection = 2,
  Via = 3,
  RetryAfter = 4,
}

/** The kind of a response field by its lower-case name. */
function fieldKindOf(lower: string): FieldKind {
  if (lower === 'connection') return FieldKind.Connection;
  if (HOP_BY_HOP.has(lower)) return FieldKind.HopByHop;
  if (lower === 'via') return FieldKind.Via;
  if (lower === 'retry-after') return FieldKind.RetryAfter;
  return FieldKind.Relayed;
}

/**
 * A response field name met before, as the origin spelled it (byte for byte), with its kind and
 * the last value it came with: the same bytes again give back the same strings, with no string
 * made and no lower-casing (issue 11: the few names and values an origin sends on every response,
 * `Content-Type: text/html`, `Content-Length: 96`, `Connection: keep-alive`, a `Date` that changes
 * once a second). Name and value are compared as 32-bit words ({@link wordsHold}), not character
 * by character.
 */
interface KnownName {
  readonly name: string;
  /** The name's bytes as little-endian 32-bit words, the last one padded with zero bytes ({@link fillWords}). */
  readonly words: Int32Array;
  readonly kind: FieldKind;
  /** The last value of this name turned into a string (at most {@link MAX_REUSED_VALUE_BYTES}), or ''. */
  lastValue: string;
  /** {@link lastValue}'s bytes as words, like {@link words}; refilled in place when the value changes. */
  readonly valueWords: Int32Array;
}

/** Longest name kept in {@link knownNames}, bytes. */
const MAX_KNOWN_NAME_BYTES = 40;
/** Names kept per length: past it, a new name takes the place of an older one in turn. */
const MAX_KNOWN_NAMES_PER_LENGTH = 8;
/** Longest value reused from {@link KnownName.lastValue}, bytes (a `Date` is 29); a multiple of 4. */
const MAX_REUSED_VALUE_BYTES = 64;
/** The names met, by byte length; bounded (at most 8 × 40 names of at most 40 bytes, each with one value of at most 64). */
const knownNames: KnownName[][] = Array.from({ length: MAX_KNOWN_NAME_BYTES + 1 }, () => []);
let nextEvicted = 0;

/** The word of `bytes[from, to)` (1 to 4 bytes), little-endian, the missing high bytes zero. */
function tailWord(bytes: Uint8Array, from: number, to: number): number {
  let word = 0;
  for (let shift = 0; from < to; from++, shift += 8) word |= (bytes[from] as number) << shift;
  return word;
}

/**
 * True when `bytes` are the bytes whose words {@link fillWords} wrote into `words`, for a `words`
 * made from exactly `bytes.length` bytes (the length is the caller's check). Four bytes a step:
 * a string's `charCodeAt` costs V8 several times a typed array's load (issue 11).
 */
function wordsHold(bytes: Uint8Array, words: Int32Array): boolean {
  const length = bytes.length;
  const whole = length & ~3;
  let w = 0;
  let i = 0;
  for (; i < whole; i += 4, w++) {
    const word = (bytes[i] as number) | ((bytes[i + 1] as number) << 8) | ((bytes[i + 2] as number) << 16) | ((bytes[i + 3] as number) << 24);
    if (word !== words[w]) return false;
  }
  return i === length || tailWord(bytes, i, length) === words[w];
}

/** Writes the words of `bytes` (all of them) into `words`, which has room for `(bytes.length + 3) >> 2`. */
function fillWords(bytes: Uint8Array, words: Int32Array): void {
  const length = bytes.length;
  let w = 0;
  for (let i = 0; i < length; i += 4, w++) words[w] = tailWord(bytes, i, Math.min(i + 4, length));
}

/** A name kept with its words and no value yet. */
function knownName(name: string, bytes: Uint8Array): KnownName {
  const words = new Int32Array((bytes.length + 3) >> 2);
  fillWords(bytes, words);
  return { name, words, kind: fieldKindOf(name.toLowerCase()), lastValue: '', valueWords: new Int32Array(MAX_REUSED_VALUE_BYTES >> 2) };
}

/** The {@link KnownName} of a raw name (a `Buffer` as received, or a string): found by its bytes, else made and kept. */
function knownNameOf(field: Buffer | string): KnownName {
  if (typeof field === 'string') return knownName(field, Buffer.from(field, 'latin1'));
  const length = field.length;
  const sameLength = length <= MAX_KNOWN_NAME_BYTES ? knownNames[length] : undefined;
  if (sameLength !== undefined) {
    for (let i = 0; i < sameLength.length; i++) {
      const known = sameLength[i] as KnownName;
      if (wordsHold(field, known.words)) return known;
    }
  }
  const known = knownName(field.toString('latin1'), field);
  if (sameLength !== undefined) {
    if (sameLength.length < MAX_KNOWN_NAMES_PER_LENGTH) sameLength.push(known);
    else sameLength[nextEvicted++ % MAX_KNOWN_NAMES_PER_LENGTH] = known;
  }
  return known;
}

/** A raw value as a string (latin1: one character per byte, as Node writes a head back): the name's last value when the bytes are the same. */
function valueOf(known: KnownName, field: Buffer | string): string {
  if (typeof field === 'string') return field;
  const length = field.length;
  if (length === known.lastValue.length && wordsHold(field, known.valueWords)) return known.lastValue;
  const value = field.toString('latin1');
  if (length <= MAX_REUSED_VALUE_BYTES) {
    known.lastValue = value;
    fillWords(field, known.valueWords);
  }
  return value;
}

/** Where {@link forwardableResponseFields} leaves the head's first `Retry-After` value (undefined: none). */
export interface RetryAfterSink {
  retryAfter: string | undefined;
}

/**
 * The fields of an upstream response head to relay to the client, for
 * `res.writeHead(status, fields)`: a flat array `[name, value, name, value, ...]` of latin1
 * strings, from undici's raw head (`raw`: the same shape, `Buffer`s as the origin wrote them; a
 * name or value may already be a string). Every field keeps the origin's spelling, order and
 * repetitions (each `Set-Cookie` its own line), except the hop-by-hop fields and those named in
 * `Connection` (RFC 9110 §7.6.1), which are dropped; the `Via` fields become one, at the first
 * one's place, with this proxy's hop `protocolVersion pseudonym` appended, or a `via` field at the
 * end when the origin sent none (§7.6.3). No header object is built, and names and short values
 * met before are reused rather than made again (issue 11). The first `Retry-After` value
 * (hop-by-hop or not) is left in `sink.retryAfter` when `sink` is given. Never throws.
 */
export function forwardableResponseFields(raw: readonly (Buffer | string)[], protocolVersion: string, pseudonym: string, sink?: RetryAfterSink): string[] {
  const fields: string[] = [];
  let connection: string | undefined;
  let hasVia = false;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const known = knownNameOf(raw[i] as Buffer | string);
    const kind = known.kind;
    if (kind === FieldKind.HopByHop) continue;
    const value = valueOf(known, raw[i + 1] as Buffer | string);
    if (kind !== FieldKind.Relayed) {
      if (kind === FieldKind.Connection) {
        connection = connection === undefined ? value : flatJoin([connection, value], ',');
        continue;
      }
      if (kind === FieldKind.Via) hasVia = true;
      else if (sink !== undefined && sink.retryAfter === undefined) sink.retryAfter = value;
    }
    fields.push(known.name, value);
  }
  const listed = connection === undefined ? undefined : extraNamesListedIn(connection);
  if (listed === undefined && !hasVia) {
    fields.push('via', hopOf(protocolVersion, pseudonym));
    return fields;
  }
  return withListedDroppedAndVia(fields, listed, protocolVersion, pseudonym);
}

/**
 * `fields` (flat, names as received) without the fields named in `listed` (lower case), and with
 * the `Via` fields made one, at the first one's place, this proxy's hop appended (or added at the
 * end). Compacts `fields` in place and returns it. The rare path of {@link forwardableResponseFields}.
 */
function withListedDroppedAndVia(fields: string[], listed: ReadonlySet<string> | undefined, protocolVersion: string, pseudonym: string): string[] {
  let kept = 0;
  let viaAt = -1;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i] as string;
    const value = fields[i + 1] as string;
    const lower = name.toLowerCase();
    if (listed?.has(lower)) continue;
    if (lower === 'via') {
      if (viaAt >= 0) {
        fields[viaAt] = flatJoin([fields[viaAt] as string, value], ', ');
        continue;
      }
      viaAt = kept + 1;
    }
    fields[kept] = name;
    fields[kept + 1] = value;
    kept += 2;
  }
  fields.length = kept;
  if (viaAt < 0) fields.push('via', hopOf(protocolVersion, pseudonym));
  else fields[viaAt] = appendedVia(fields[viaAt], protocolVersion, pseudonym);
  return fields;
}

/**
 * The request head to send upstream, for undici's dispatch: a flat array `[name, value, ...]`
 * (a field Node keeps as an array, `set-cookie`, one pair per value) made from `headers` (Node's parsed request head:
 * lower-case names, repeated fields already merged) in their order, without the hop-by-hop fields
 * and those named in `Connection` (RFC 9110 §7.6.1) and without `Expect` (answered by this
 * proxy), with `Via` appended to (§7.6.3), `Host` set to `host`, `Max-Forwards` to `maxForwards`
 * when given (RFC 9110 §7.6.2; else as received), and `User-Agent` to `userAgent` (left out when
 * undefined). A field the client did not send comes after the others, in the order `via`, `host`,
 * `max-forwards`, `user-agent`; one it sent keeps its place. No header object is built and none is
 * edited by name afterwards (issue 11: `delete` turned the copy into a dictionary that undici read
 * field by field through V8's megamorphic loads). Pure.
 */
export function upstreamRequestFields(
  headers: IncomingHttpHeaders,
  protocolVersion: string,
  pseudonym: string,
  host: string,
  maxForwards: string | undefined,
  userAgent: string | undefined,
): string[] {
  const listed = connectionListed(headers);
  const fields: string[] = [];
  let hasVia = false;
  let hasHost = false;
  let hasMaxForwards = false;
  let hasUserAgent = false;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || !Object.hasOwn(headers, name)) continue;
    if (HOP_BY_HOP.has(name) || listed?.has(name)) continue;
    switch (name) {
      case 'expect':
        continue;
      case 'host':
        hasHost = true;
        fields.push(name, host);
        continue;
      case 'user-agent':
        hasUserAgent = true;
        if (userAgent !== undefined) fields.push(name, userAgent);
        continue;
      case 'via':
        hasVia = true;
        fields.push(name, appendedVia(value, protocolVersion, pseudonym));
        continue;
      case 'max-forwards':
        if (maxForwards === undefined) break;
        hasMaxForwards = true;
        fields.push(name, maxForwards);
        continue;
    }
    if (typeof value === 'string') fields.push(name, value);
    else for (const one of value) fields.push(name, one);
  }
  if (!hasVia) fields.push('via', hopOf(protocolVersion, pseudonym));
  if (!hasHost) fields.push('host', host);
  if (maxForwards !== undefined && !hasMaxForwards) fields.push('max-forwards', maxForwards);
  if (userAgent !== undefined && !hasUserAgent) fields.push('user-agent', userAgent);
  return fields;
}

/**
 * A `Via` value with this proxy's hop (`protocolVersion pseudonym`, e.g. `1.1 robots-proxy-x1y2z3`)
 * appended to `existing` (absent, or the field as received: one value or several), as every
 * message a proxy forwards must carry (RFC 9110 §7.6.3). Pure.
 */
export function appendedVia(existing: string | string[] | undefined, protocolVersion: string, pseudonym: string): string {
  const via = hopOf(protocolVersion, pseudonym);
  return existing === undefined ? via : flatJoin([Array.isArray(existing) ? existing.join(', ') : existing, via], ', ');
}

/** The last hop value made ({@link hopOf}): one proxy, one pseudonym, nearly always HTTP/1.1 both ways. */
let lastHop = { protocolVersion: '', pseudonym: '', value: '' };

/**
 * This proxy's `Via` hop, `protocolVersion pseudonym`, as a flat string ({@link flatJoin}), made
 * once and reused while the version and the pseudonym are the last ones (no string built per
 * message, issue 11). Pure.
 */
function hopOf(protocolVersion: string, pseudonym: string): string {
  const hop = lastHop;
  if (hop.protocolVersion === protocolVersion && hop.pseudonym === pseudonym) return hop.value;
  const value = flatJoin([protocolVersion, pseudonym], ' ');
  lastHop = { protocolVersion, pseudonym, value };
  return value;
}

/** True when a `Via` value shows the message already passed through this proxy (a forwarding loop). */
export function hasVisitedProxy(headers: IncomingHttpHeaders, pseudonym: string): boolean {
  const via = headers['via'];
  if (via === undefined) return false;
  return via.split(',').some((hop) => hop.trim().split(/\s+/)[1] === pseudonym);
}

/**
 * True when `req` asked for `Expect: 100-continue` (any case, RFC 9110 §10.1.1) and its body has not
 * all arrived: the client waits for a 100 Continue, or a final answer, before sending it. The
 * listeners hold back Node's automatic 100 (`checkContinue`), so that only an allowed request gets it.
 */
export function awaitsContinue(req: IncomingMessage): boolean {
  const expect = req.headers['expect'];
  return !req.complete && expect !== undefined && expect.trim().toLowerCase() === '100-continue';
}
