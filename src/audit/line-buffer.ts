/**
 * A growable byte buffer that JSON log lines are encoded into directly, as
 * UTF-8, without building strings: the access line's serializer
 * (access-line.ts) writes its fields here, and the log's destination
 * (`LogWriter`, logger.ts) writes batches of lines from it with one write(2).
 * Strings are escaped exactly as `JSON.stringify` escapes them and encoded
 * exactly as `Buffer.from(text, 'utf8')` encodes the escaped text; numbers are
 * written as `JSON.stringify` writes them. Extension, not in RFC 9309.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** `\b \t \n \f \r` as JSON.stringify writes them (the letter after the backslash), by code; 0 for `\u00XX`. */
const SHORT_ESCAPE = new Uint8Array(0x20);
SHORT_ESCAPE[0x08] = 0x62;
SHORT_ESCAPE[0x09] = 0x74;
SHORT_ESCAPE[0x0a] = 0x6e;
SHORT_ESCAPE[0x0c] = 0x66;
SHORT_ESCAPE[0x0d] = 0x72;
/** Lowercase hex digits, as JSON.stringify writes `\u` escapes. */
const HEX = new Uint8Array([0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66]);
/** Up to this many bytes, {@link LineBuffer.bytes} copies by a loop; past it, by `set`. */
const SHORT_BYTES = 6;
/**
 * Up to this many bytes, {@link LineBuffer.constant} copies a {@link ConstantBytes} by 32-bit word stores; past it,
 * by one `TypedArray#set` (under callgrind: 40 bytes by words 356 instructions, by `set` 232; 140 bytes 1,055
 * against 236).
 */
export const LONG_CONSTANT_BYTES = 28;
/**
 * Buffer#write's native UTF-8 writer, called without Buffer#write's argument checks (a tenth of the
 * encoder's time): `utf8Write(text, offset, maxBytes)` → bytes written. Not in Node's typings, but on
 * Buffer.prototype in every Node the project supports (engines: >= 20.12).
 */
type NativeWrites = Buffer & { utf8Write(text: string, offset: number, maxBytes: number): number };
/**
 * That writer, taken once: through `buf.utf8Write`, optimised code looked the method up with a LoadIC call on
 * every string (~70 instructions; Buffer.prototype is not a stable prototype for V8).
 */
const utf8Write = (Buffer.prototype as NativeWrites).utf8Write;

/**
 * `TypedArray.prototype.set`, taken once and called as `setBytes.call(target, source, offset)`: through
 * `buf.set`, optimised code looked the method up with a LoadIC call on every copy (~70 instructions; Buffer's
 * prototype is not stable for V8).
 */
const setBytes = (Object.getPrototypeOf(Uint8Array.prototype) as Uint8Array).set as (this: Uint8Array, source: ArrayLike<number>, offset: number) => void;

/**
 * From this many UTF-16 units on, {@link LineBuffer.string} writes natively then checks the bytes (shorter: a JS
 * loop is cheaper than the call). Under callgrind, ASCII strings: the loop ~320 + 33 per unit, the native write
 * and check ~925 + 7 per unit, even at 24 (was 16: the proxy's request ids, 16 units, cost 1,043 instead of 843).
 */
const NATIVE_MIN_CHARS = 24;
/** 1 for each ASCII code JSON.stringify writes as it is (not a control character, `"` or `\\`), by code. */
const PLAIN = new Uint8Array(0x80);
for (let c = 0x20; c < 0x80; c++) PLAIN[c] = c === QUOTE || c === BACKSLASH ? 0 : 1;

/** UTF-8 bytes of a text known at startup (a logger's bindings): written with {@link LineBuffer.bytes}. */
export function utf8Bytes(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'utf8'));
}

/**
 * Bytes known at startup (a key with its punctuation, or a run of keys and
 * fixed values such as `,"clientAborted":false,"queueWaitMs":`), or a cached
 * stretch of a line ({@link LineBuffer.capture}): {@link LineBuffer.constant}
 * copies up to {@link LONG_CONSTANT_BYTES} of them as little-endian 32-bit
 * words, four bytes per store without a call (a `TypedArray#set` per key was a
 * quarter of the encoder's time, bench/PROFILE.md "The access line, session
 * 19"), and longer ones with one `TypedArray#set` (a word store costs ~30
 * instructions, a `set` ~230 whatever the length: bench/PROFILE.md "The access
 * line's encoder, cheaper").
 */
export class ConstantBytes {
  /**
   * Up to {@link LONG_CONSTANT_BYTES}: the UTF-8 bytes, padded to a whole number of words (maybe more words than
   * that: only the first `ceil(byteLength / 4)` are written); byte `i` is bits `8 * (i % 4)` up of word `i >> 2`.
   * Longer: unused (maybe stale). Replaced only by {@link LineBuffer.capture}; read-only everywhere else.
   */
  words: Int32Array;
  /**
   * Longer than {@link LONG_CONSTANT_BYTES}: the UTF-8 bytes, exactly `byteLength` of them. Shorter: unused (maybe
   * stale). Replaced only by {@link LineBuffer.capture}; read-only everywhere else.
   */
  bytes: Uint8Array;
  /** The constant's length in bytes (the padding excluded); changed only by {@link LineBuffer.capture}. */
  byteLength: number;
  /** The text, for tests and debugging (empty for bytes captured from a line). */
  text: string;

  /** @param text the bytes' text, encoded as UTF-8. */
  constructor(text: string) {
    const bytes = Buffer.from(text, 'utf8');
    this.text = text;
    this.byteLength = bytes.length;
    this.bytes = new Uint8Array(bytes);
    this.words = new Int32Array(Math.ceil(bytes.length / 4));
    for (let i = 0; i < bytes.length; i++) this.words[i >> 2] = (this.words[i >> 2] as number) | ((bytes[i] as number) << (8 * (i & 3)));
  }
}

const NULL_BYTES = new ConstantBytes('null');
const TRUE_BYTES = new ConstantBytes('true');
const FALSE_BYTES = new ConstantBytes('false');

/**
 * The bytes of lines being built and waiting, `buf[0, length)`. Writers append
 * with the methods below, which grow the buffer as needed (doubling); nothing is
 * allocated per call otherwise. Not thread-safe; one per destination.
 */
export class LineBuffer {
  /** The storage; replaced when it grows, so read it after writing. */
  buf: Buffer;
  /** A view of {@link buf} for word stores ({@link constant}); replaced with it. */
  #view: DataView;
  /** Bytes used, from 0. */
  length = 0;

  /** @param capacity initial size in bytes. */
  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafe(capacity);
    this.#view = viewOf(this.buf);
  }

  /** Makes room for `bytes` more bytes after {@link length}. */
  ensure(bytes: number): void {
    const needed = this.length + bytes;
    if (needed <= this.buf.length) return;
    let capacity = this.buf.length * 2;
    while (capacity < needed) capacity *= 2;
    const next = Buffer.allocUnsafe(capacity);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
    this.#view = viewOf(next);
  }

  /** Drops the content and, when it grew past `capacity` bytes, goes back to that size. */
  reset(capacity: number): void {
    this.length = 0;
    if (this.buf.length > capacity) {
      this.buf = Buffer.allocUnsafe(capacity);
      this.#view = viewOf(this.buf);
    }
  }

  /**
   * Appends a {@link ConstantBytes}: up to {@link LONG_CONSTANT_BYTES}, one 32-bit store per four bytes (the last
   * word's padding lands past {@link length}, inside the capacity, and is overwritten by what follows); longer,
   * one `TypedArray#set` of its bytes.
   */
  constant(value: ConstantBytes): void {
    const byteLength = value.byteLength;
    if (byteLength > LONG_CONSTANT_BYTES) return this.#longConstant(value);
    const words = value.words;
    const n = (byteLength + 3) >> 2;
    this.ensure(n * 4);
    const view = this.#view;
    let p = this.length;
    for (let i = 0; i < n; i++) {
      view.setInt32(p, words[i] as number, true);
      p += 4;
    }
    this.length += byteLength;
  }

  /** Appends the first `count` words of `words` as little-endian bytes, `4 * count` of them (a prefix cached as words, iso-time.ts). */
  words(words: Int32Array, count: number): void {
    this.ensure(count * 4);
    const view = this.#view;
    let p = this.length;
    for (let i = 0; i < count; i++) {
      view.setInt32(p, words[i] as number, true);
      p += 4;
    }
    this.length = p;
  }

  /** Appends the low `byteLength` (1 to 4) bytes of a little-endian word: one store (the bytes past them land past {@link length}). */
  word(value: number, byteLength: number): void {
    this.ensure(4);
    this.#view.setInt32(this.length, value, true);
    this.length += byteLength;
  }

  /** {@link constant} past {@link LONG_CONSTANT_BYTES}: one `set` (out of line, so that `constant` stays small enough to inline). */
  #longConstant(value: ConstantBytes): void {
    const byteLength = value.byteLength;
    this.ensure(byteLength);
    setBytes.call(this.buf, value.bytes, this.length);
    this.length += byteLength;
  }

  /**
   * Copies the bytes written since `start`, `buf[start, length)`, into `target` (its words or its bytes, by
   * length, as {@link constant} reads them, grown or replaced when they do not fit; its byteLength; its text
   * emptied), so that `constant(target)` appends them again later (a stretch of a line that the next line
   * repeats, access-line.ts). Nothing is appended.
   * @param start a position in `[0, length]`.
   */
  capture(target: ConstantBytes, start: number): void {
    const n = this.length - start;
    target.byteLength = n;
    target.text = '';
    if (n > LONG_CONSTANT_BYTES) {
      let bytes = target.bytes;
      if (bytes.length !== n) bytes = target.bytes = new Uint8Array(n);
      bytes.set(this.buf.subarray(start, this.length));
      return;
    }
    const count = (n + 3) >> 2;
    this.ensure(3); // the last word is read whole, up to 3 bytes past length
    let words = target.words;
    if (words.length < count) words = target.words = new Int32Array(Math.max(count, words.length * 2));
    const view = this.#view;
    for (let i = 0, p = start; i < count; i++, p += 4) words[i] = view.getInt32(p, true);
  }

  /**
   * Appends bytes as they are: a keyword or a few bytes by a loop, anything longer
   * (a key, a cached fragment) by `TypedArray#set`, a memmove that costs about what a
   * loop over 6 bytes does (bench/PROFILE.md, "The access line in the proxy").
   */
  bytes(bytes: Uint8Array): void {
    const n = bytes.length;
    this.ensure(n);
    const buf = this.buf;
    let p = this.length;
    if (n > SHORT_BYTES) {
      setBytes.call(buf, bytes, p);
      this.length = p + n;
      return;
    }
    for (let i = 0; i < n; i++) buf[p++] = bytes[i] as number;
    this.length = p;
  }

  /** Appends one byte (ASCII punctuation). */
  byte(value: number): void {
    this.ensure(1);
    this.buf[this.length++] = value;
  }

  /** Appends a text's UTF-8 bytes, unescaped (a line pino made, bindings already JSON). */
  utf8(text: string): void {
    this.ensure(text.length * 3);
    this.length += this.buf.write(text, this.length, 'utf8');
  }

  /** Appends `true` or `false` (`String(value)` for any other value, as a template literal writes it). */
  boolean(value: boolean): void {
    if (value === true) this.constant(TRUE_BYTES);
    else if (value === false) this.constant(FALSE_BYTES);
    else this.utf8(`${value as unknown as string}`);
  }

  /** Appends `null`. */
  null(): void {
    this.constant(NULL_BYTES);
  }

  /** Appends a number as JSON.stringify writes it: `null` for NaN and ±Infinity, `0` for -0. */
  number(value: number): void {
    if (value >= 0 && value <= Number.MAX_SAFE_INTEGER && Math.floor(value) === value) {
      this.#digits(value);
      return;
    }
    if (!Number.isFinite(value)) this.null();
    else this.utf8(`${value}`);
  }

  /** Appends a number or `null`. */
  numberOrNull(value: number | null): void {
    if (value === null) this.null();
    else this.number(value);
  }

  /** A non-negative safe integer's decimal digits: int32 arithmetic, the high part first above 2^31 (timestamps in ms). */
  #digits(value: number): void {
    this.ensure(16);
    if (value < 1_000_000) {
      // One or two word stores from the tables (status, sizes, durations, ports): no division per digit.
      const view = this.#view;
      let p = this.length;
      if (value < 1000) {
        view.setInt32(p, DIGIT_WORDS[value] as number, true);
        this.length = p + (value < 10 ? 1 : value < 100 ? 2 : 3);
        return;
      }
      const high = Math.floor(value / 1000);
      view.setInt32(p, DIGIT_WORDS[high] as number, true);
      p += high < 10 ? 1 : high < 100 ? 2 : 3;
      view.setInt32(p, PADDED_DIGIT_WORDS[value - high * 1000] as number, true);
      this.length = p + 3;
      return;
    }
    if (value < 0x80000000) {
      this.length = smallDigits(this.buf, this.length, value);
      return;
    }
    const high = Math.floor(value / 1e9); // < 2^31 for any safe integer
    const low = value - high * 1e9;
    const buf = this.buf;
    let p = smallDigits(buf, this.length, high) + 9;
    this.length = p;
    let rest = low | 0;
    for (let i = 0; i < 9; i++) {
      const next = (rest / 10) | 0;
      buf[--p] = 0x30 + rest - next * 10;
      rest = next;
    }
  }

  /**
   * Appends `JSON.stringify(text.slice(0, end))` as UTF-8, where `end` is the
   * whole text, or `maxChars` UTF-16 units cut back by one when that would split
   * a surrogate pair (see access-log.ts `cap`). Lone surrogates are written as
   * `\udXXX` escapes, as JSON.stringify writes them.
   * @returns true when the text was cut.
   */
  string(text: string, maxChars = Infinity): boolean {
    let end = text.length;
    let isCut = false;
    if (end > maxChars) {
      isCut = true;
      const last = text.charCodeAt(maxChars - 1);
      end = last >= 0xd800 && last <= 0xdbff ? maxChars - 1 : maxChars;
    }
    this.ensure(end * 6 + 2);
    const buf = this.buf;
    let p = this.length;
    buf[p++] = QUOTE;
    if (end >= NATIVE_MIN_CHARS && end === text.length && this.#wrotePlain(text, p)) {
      buf[p + end] = QUOTE;
      this.length = p + end + 1;
      return isCut;
    }
    // One table look-up per character while it is ASCII that needs no escape.
    let i = 0;
    for (; i < end; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0x80 || PLAIN[c] === 0) break;
      buf[p++] = c;
    }
    if (i < end) p = escapedRest(buf, p, text, i, end);
    buf[p++] = QUOTE;
    this.length = p;
    return isCut;
  }

  /**
   * Writes `text` at `at` with Buffer#write's native UTF-8 writer (any string representation), then checks the
   * bytes, four at a time: true when they are all ASCII that JSON.stringify writes as it is (then they
   * are the string's JSON body); false otherwise (the caller writes it again, escaping, over them).
   */
  #wrotePlain(text: string, at: number): boolean {
    // Room for all of it (never text.length: a cut after a 2-byte character would pass the check below).
    const n = utf8Write.call(this.buf, text, at, this.buf.length - at);
    if (n !== text.length) return false; // a non-ASCII character took more than a byte
    const view = this.#view;
    let i = 0;
    let bad = 0;
    for (; i + 4 <= n; i += 4) {
      // Per byte, a high bit left when it is < 0x20, '"' or '\\' (and, harmlessly, in some bytes above one that is).
      const w = view.getInt32(at + i, true);
      const quote = w ^ 0x22222222;
      const backslash = w ^ 0x5c5c5c5c;
      bad |= ((w - 0x20202020) | (quote - 0x01010101) | (backslash - 0x01010101)) & ~(w & quote & backslash) & 0x80808080;
    }
    const buf = this.buf;
    for (; i < n; i++) bad |= 1 - (PLAIN[buf[at + i] as number] as number);
    return bad === 0;
  }

  /** Appends a string (see {@link string}) or `null`. @returns true when the text was cut. */
  stringOrNull(text: string | null, maxChars = Infinity): boolean {
    if (text === null) {
      this.null();
      return false;
    }
    return this.string(text, maxChars);
  }

  /** Appends `[` strings `]` as JSON. */
  strings(values: readonly string[]): void {
    this.byte(0x5b);
    for (let i = 0; i < values.length; i++) {
      if (i > 0) this.byte(0x2c);
      this.string(values[i] as string);
    }
    this.byte(0x5d);
  }
}

/**
 * Writes `text[from, end)` as JSON.stringify escapes it, as UTF-8, at `at` (room for 6 bytes a unit
 * assumed): escapes, non-ASCII, surrogate pairs, lone surrogates as `\udXXX`. @returns the position after it.
 */
function escapedRest(buf: Buffer, at: number, text: string, from: number, end: number): number {
  let p = at;
  for (let i = from; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      if (c >= 0x20 && c !== QUOTE && c !== BACKSLASH) {
        buf[p++] = c;
      } else {
        buf[p++] = BACKSLASH;
        if (c >= 0x20) buf[p++] = c;
        else if (SHORT_ESCAPE[c] !== 0) buf[p++] = SHORT_ESCAPE[c] as number;
        else p = unicodeEscape(buf, p, c);
      }
    } else if (c < 0x800) {
      buf[p++] = 0xc0 | (c >> 6);
      buf[p++] = 0x80 | (c & 0x3f);
    } else if (c < 0xd800 || c > 0xdfff) {
      buf[p++] = 0xe0 | (c >> 12);
      buf[p++] = 0x80 | ((c >> 6) & 0x3f);
      buf[p++] = 0x80 | (c & 0x3f);
    } else {
      const next = i + 1 < end ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        const point = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        buf[p++] = 0xf0 | (point >> 18);
        buf[p++] = 0x80 | ((point >> 12) & 0x3f);
        buf[p++] = 0x80 | ((point >> 6) & 0x3f);
        buf[p++] = 0x80 | (point & 0x3f);
        i++;
      } else {
        buf[p++] = BACKSLASH;
        p = unicodeEscape(buf, p, c);
      }
    }
  }
  return p;
}

/** A DataView of a buffer's bytes. */
function viewOf(buf: Buffer): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.length);
}

/** The decimal digits of 0-999 as little-endian words (`"7"` is 0x37, `"42"` 0x3234; the bytes past them are 0, overwritten). */
const DIGIT_WORDS = new Int32Array(1000);
/** The same, three digits with leading zeros (`"007"`), for the low thousands of a larger number. */
const PADDED_DIGIT_WORDS = new Int32Array(1000);
for (let n = 0; n < 1000; n++) {
  const wordOf = (text: string): number => {
    let word = 0;
    for (let i = 0; i < text.length; i++) word |= text.charCodeAt(i) << (8 * i);
    return word;
  };
  DIGIT_WORDS[n] = wordOf(String(n));
  PADDED_DIGIT_WORDS[n] = wordOf(String(n).padStart(3, '0'));
}

/** Writes the decimal digits of an integer in [0, 2^31) at `at`. @returns the position after them. */
function smallDigits(buf: Buffer, at: number, value: number): number {
  let rest = value | 0;
  const count = rest < 10 ? 1 : rest < 100 ? 2 : rest < 1000 ? 3 : rest < 10000 ? 4 : rest < 100000 ? 5 : rest < 1000000 ? 6 : rest < 10000000 ? 7 : rest < 100000000 ? 8 : rest < 1000000000 ? 9 : 10;
  let p = at + count;
  const end = p;
  do {
    const next = (rest / 10) | 0;
    buf[--p] = 0x30 + rest - next * 10;
    rest = next;
  } while (rest > 0);
  return end;
}

/** Writes `uXXXX` (after a backslash already written) for a code unit, lowercase hex. @returns the position after it. */
function unicodeEscape(buf: Buffer, at: number, c: number): number {
  let p = at;
  buf[p++] = 0x75;
  buf[p++] = HEX[(c >> 12) & 0xf] as number;
  buf[p++] = HEX[(c >> 8) & 0xf] as number;
  buf[p++] = HEX[(c >> 4) & 0xf] as number;
  buf[p++] = HEX[c & 0xf] as number;
  return p;
}
