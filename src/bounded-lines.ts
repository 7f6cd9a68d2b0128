/**
 * Lines of a text stream, each bounded in length.
 *
 * `readline` keeps a line in one string until its end comes: a line longer than V8's
 * string limit (about 512 Mi characters; `check --jsonl < /dev/zero`) ended the process
 * with `RangeError: Invalid string length` and a stack trace, after growing it past
 * 600 MB. Here a line is kept up to `maxChars`; the rest of it is skipped as it arrives.
 * Line ends as `readline` with `crlfDelay: Infinity` reads them: `\n`, `\r\n`, a lone `\r`.
 */
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';

/** A line longer than the bound: its length is not kept, only that it was too long. */
export interface TooLongLine {
  readonly tooLong: true;
}

/**
 * Yields each line of `input` (UTF-8) without its line end, or {@link TooLongLine} for a
 * line of more than `maxChars` UTF-16 code units (whose characters are dropped as read).
 * A last line without a line end is yielded too; an input that ends with a line end
 * yields no empty line after it.
 * @param input a byte stream (stdin, a file stream).
 * @param maxChars the longest line kept, in UTF-16 code units (a positive integer).
 */
export async function* boundedLines(input: Readable, maxChars: number): AsyncGenerator<string | TooLongLine> {
  const decoder = new StringDecoder('utf8');
  let parts: string[] = [];
  let length = 0;
  let tooLong = false;
  let afterCr = false;
  const take = (text: string): void => {
    if (tooLong || text.length === 0) return;
    if (length + text.length > maxChars) {
      tooLong = true;
      parts = [];
      length = 0;
      return;
    }
    parts.push(text);
    length += text.length;
  };
  const end = (): string | TooLongLine => {
    const line: string | TooLongLine = tooLong ? { tooLong: true } : parts.join('');
    parts = [];
    length = 0;
    tooLong = false;
    return line;
  };
  const split = function* (text: string): Generator<string | TooLongLine> {
    let start = 0;
    if (afterCr && text.startsWith('\n')) start = 1;
    afterCr = false;
    const ends = /[\r\n]/g;
    ends.lastIndex = start;
    for (let match = ends.exec(text); match !== null; match = ends.exec(text)) {
      const i = match.index;
      take(text.slice(start, i));
      yield end();
      start = i + 1;
      if (match[0] === '\r') {
        if (start === text.length) afterCr = true;
        else if (text.charCodeAt(start) === 10) start++;
      }
      ends.lastIndex = start;
    }
    take(text.slice(start));
  };
  for await (const chunk of input) {
    const text = typeof chunk === 'string' ? chunk : decoder.write(chunk as Buffer);
    yield* split(text);
  }
  yield* split(decoder.end());
  if (length > 0 || tooLong) yield end();
}
