/** Input with one line longer than V8's longest string, streamed (never held whole). */
import { Readable } from 'node:stream';

/** Characters in the long line: past V8's string limit (2^29 - 24 on 64-bit), so a reader that holds a line whole fails. */
export const LONGER_THAN_A_STRING = 2 ** 29 + 1_048_576;

/**
 * A stream of `LONGER_THAN_A_STRING` "a" bytes, then a line end and `after`, in 1 MiB chunks.
 * @param after the text after the long line (the lines a reader must still see).
 */
export function longLineThen(after: string): Readable {
  const chunk = Buffer.alloc(1_048_576, 'a');
  return Readable.from(
    (function* () {
      for (let sent = 0; sent < LONGER_THAN_A_STRING; sent += chunk.length) yield chunk;
      yield Buffer.from(`\n${after}`);
    })(),
  );
}
