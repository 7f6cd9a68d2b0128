// run-tests: in-process
/** Splitting a byte stream into bounded lines, as readline (crlfDelay: Infinity) splits it. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { boundedLines } from '../src/bounded-lines.js';

async function linesOf(chunks: readonly (string | Buffer)[], maxChars: number): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const line of boundedLines(Readable.from(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))), maxChars)) out.push(line);
  return out;
}

describe('boundedLines', () => {
  it('splits on \\n, \\r\\n (across chunks too) and a lone \\r, keeps blank lines and a last line without an end', async () => {
    assert.deepEqual(await linesOf(['a\nb\r\nc\rd\n\n', 'e\r', '\nf'], 100), ['a', 'b', 'c', 'd', '', 'e', 'f']);
    assert.deepEqual(await linesOf(['a\r', '\r', 'b\n'], 100), ['a', '', 'b']);
    assert.deepEqual(await linesOf(['x\n'], 100), ['x']);
    assert.deepEqual(await linesOf(['\n'], 100), ['']);
    assert.deepEqual(await linesOf([], 100), []);
  });

  it('decodes UTF-8 split between chunks', async () => {
    const bytes = Buffer.from('café\n€');
    assert.deepEqual(await linesOf([bytes.subarray(0, 4), bytes.subarray(4, 8), bytes.subarray(8)], 100), ['café', '€']);
  });

  it('gives a line longer than maxChars as tooLong, and the lines after it', async () => {
    assert.deepEqual(await linesOf(['abc\nabcd', 'ef\nok\n', 'x'.repeat(10)], 4), ['abc', { tooLong: true }, 'ok', { tooLong: true }]);
    assert.deepEqual(await linesOf(['abcd\n'], 4), ['abcd']);
  });
});
