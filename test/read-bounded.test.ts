// run-tests: in-process
/** Reading operator-named files with a bound: regular files, devices and pipes alike. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileBounded } from '../src/read-bounded.js';

describe('readFileBounded', () => {
  it('reads a file of up to maxBytes whole, and says when it holds more', () => {
    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-read-bounded-'));
    try {
      const path = join(dir, 'f');
      writeFileSync(path, 'x'.repeat(100_000));
      assert.deepEqual(readFileBounded(path, 100_000), { bytes: Buffer.from('x'.repeat(100_000)), tooLarge: false });
      const cut = readFileBounded(path, 99_999);
      assert.equal(cut.tooLarge, true);
      assert.equal(cut.bytes.length, 99_999);
      assert.deepEqual(readFileBounded(path, 0), { bytes: Buffer.alloc(0), tooLarge: true });
      writeFileSync(path, '');
      assert.deepEqual(readFileBounded(path, 0), { bytes: Buffer.alloc(0), tooLarge: false });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops at maxBytes + 1 on an endless device whose size reads 0 (/dev/zero)', () => {
    const read = readFileBounded('/dev/zero', 1_048_576);
    assert.equal(read.tooLarge, true);
    assert.equal(read.bytes.length, 1_048_576);
  });

  it('throws the fs error of a missing file or a directory', () => {
    assert.throws(() => readFileBounded('/nonexistent/robots-proxy', 10), { code: 'ENOENT' });
    assert.throws(() => readFileBounded(tmpdir(), 10), { code: 'EISDIR' });
  });

  it('waits for a named pipe\'s writer only with mayWait (check --robots <(...)); otherwise refuses one nobody writes to', () => {
    const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-read-bounded-'));
    try {
      const fifo = join(dir, 'fifo');
      execFileSync('mkfifo', [fifo]);
      assert.throws(() => readFileBounded(fifo, 100), { code: 'ENODATA' });
      // Another process opens the pipe late and writes: the blocking read waits for it.
      const writer = spawn('sh', ['-c', 'sleep 0.3; printf "User-agent: *\\n" > "$0"', fifo], { stdio: 'ignore' });
      try {
        assert.equal(readFileBounded(fifo, 100, { mayWait: true }).bytes.toString(), 'User-agent: *\n');
      } finally {
        writer.kill();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
