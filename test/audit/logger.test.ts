import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, constants as fsConstants, mkdtempSync, openSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../../src/audit/logger.js';
import { REDACTED_VALUE } from '../../src/audit/redact.js';
import { CapturedLines } from './factories.js';

describe('createLogger', () => {
  it('writes one JSON object per line with an ISO time, a word level and the message', () => {
    const out = new CapturedLines();
    const logger = createLogger({ level: 'info', destination: out });
    logger.info({ answer: 42 }, 'hello');
    logger.debug('below the level');
    const records = out.records();
    assert.equal(records.length, 1);
    const [record] = records;
    assert.equal(record?.level, 'info');
    assert.equal(record?.msg, 'hello');
    assert.equal(record?.answer, 42);
    assert.match(String(record?.time), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('honours the level, and silent writes nothing', () => {
    const debugOut = new CapturedLines();
    createLogger({ level: 'debug', destination: debugOut }).debug('shown');
    assert.equal(debugOut.records().length, 1);
    const silentOut = new CapturedLines();
    createLogger({ level: 'silent', destination: silentOut }).fatal('hidden');
    assert.equal(silentOut.text, '');
  });

  it('redacts secret headers wherever they appear, in any case', () => {
    const out = new CapturedLines();
    const logger = createLogger({ level: 'info', destination: out });
    const headers = {
      authorization: 'Basic c2VjcmV0',
      'Proxy-Authorization': 'Bearer token-1',
      cookie: 'session=abc',
      'set-cookie': ['a=1', 'b=2'],
      accept: 'text/html',
    };
    logger.info({ headers, upstream: { response: { headers: { 'SET-COOKIE': 'c=3' } } } }, 'with headers');
    assert.doesNotMatch(out.text, /c2VjcmV0|token-1|session=abc|a=1|c=3/);
    const [record] = out.records();
    const logged = record?.headers as Record<string, unknown>;
    assert.equal(logged.authorization, REDACTED_VALUE);
    assert.equal(logged['Proxy-Authorization'], REDACTED_VALUE);
    assert.equal(logged.cookie, REDACTED_VALUE);
    assert.equal(logged['set-cookie'], REDACTED_VALUE);
    assert.equal(logged.accept, 'text/html', 'other headers are kept');
    assert.equal(headers.authorization, 'Basic c2VjcmV0', 'the logged object is not modified');
  });

  it('serializes an error without secrets as pino does, causes included', () => {
    const out = new CapturedLines();
    const logger = createLogger({ level: 'info', destination: out });
    const cause = Object.assign(new Error('inner'), { headers: { authorization: 'Bearer in-cause' } });
    logger.error(new Error('plain failure'));
    logger.error({ err: new Error('outer', { cause }) }, 'with cause');
    assert.doesNotMatch(out.text, /in-cause/);
    const [first, second] = out.records();
    const err = first?.err as Record<string, unknown>;
    assert.equal(err.type, 'Error');
    assert.equal(err.message, 'plain failure');
    assert.match(String(err.stack), /plain failure/);
    const outer = second?.err as Record<string, unknown>;
    assert.match(String(outer.message), /^outer/);
    assert.equal(outer.type, 'Error');
  });

  it('redacts req/res given as plain objects and errors carrying headers', () => {
    const out = new CapturedLines();
    const logger = createLogger({ level: 'info', destination: out });
    const err = Object.assign(new Error('upstream said no'), { code: 'E_TEST', headers: { 'set-cookie': 'sid=zzz' } });
    logger.error({ err, req: { method: 'GET', url: '/', headers: { cookie: 'sid=yyy' } } }, 'failed');
    assert.doesNotMatch(out.text, /sid=zzz|sid=yyy/);
    const [record] = out.records();
    const loggedErr = record?.err as Record<string, unknown>;
    assert.equal(loggedErr.type, 'Error');
    assert.equal(loggedErr.message, 'upstream said no');
    assert.equal(loggedErr.code, 'E_TEST');
    assert.equal((loggedErr.headers as Record<string, unknown>)['set-cookie'], REDACTED_VALUE);
  });
});

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Runs test/helpers/log-process.ts in `mode`; resolves with its stdout lines (and when each arrived) and exit code. */
function runLogProcess(mode: string): Promise<{ lines: Array<{ record: Record<string, unknown>; whileRunning: boolean }>; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/log-process.ts', mode], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    const lines: Array<{ record: Record<string, unknown>; whileRunning: boolean }> = [];
    let pending = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk;
      const parts = pending.split('\n');
      pending = parts.pop() ?? '';
      for (const part of parts) if (part.trim()) lines.push({ record: JSON.parse(part) as Record<string, unknown>, whileRunning: child.exitCode === null });
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ lines, code }));
  });
}

describe('createLogger on a file descriptor (batched, as serve runs it)', () => {
  it('writes a line within the flush interval although the process then idles', async () => {
    const { lines, code } = await runLogProcess('idle');
    assert.equal(code, 0);
    assert.equal(lines.length, 1);
    // The child idles 3 s after its one line (30 flush intervals): the line must come while it runs.
    assert.equal(lines[0]?.whileRunning, true, 'the line waited for the exit instead of the flush interval');
  });

  for (const mode of ['exit', 'end']) {
    it(`writes every buffered line when the process ends (${mode === 'exit' ? 'process.exit at once' : 'event loop runs dry'})`, async () => {
      const { lines, code } = await runLogProcess(mode);
      assert.equal(code, 0);
      assert.deepEqual(lines.map((l) => l.record['n']), [0, 1, 2]);
    });
  }
});

describe('createLogger on a file path', () => {
  it('appends every line, in order, once flushed', async () => {
    const { readFileSync, writeFileSync } = await import('node:fs');
    const path = join(mkdtempSync(join(tmpdir(), 'logger-')), 'out.log');
    writeFileSync(path, 'kept\n');
    const logger = createLogger({ level: 'info', file: path });
    for (let n = 0; n < 100; n++) logger.info({ n, text: 'é😀' }, 'line');
    logger.flush();
    const [first, ...rest] = readFileSync(path, 'utf8').trimEnd().split('\n');
    assert.equal(first, 'kept', 'appended, not truncated');
    assert.deepEqual(rest.map((line) => (JSON.parse(line) as { n: number; text: string }).n), Array.from({ length: 100 }, (_, n) => n));
    assert.ok(rest.every((line) => (JSON.parse(line) as { text: string }).text === 'é😀'));
  });
});

describe('createLogger on stdout as a slow pipe (LogWriter)', () => {
  /**
   * Starts the child with stdout on a named pipe that nobody reads (a FIFO, so
   * that no reader drains it behind the test's back: it holds the kernel's 64 KiB
   * and no more), then reads it and sends `then`; resolves with the child's
   * report and every line.
   */
  async function runSlowPipe(then: 'more' | 'exit'): Promise<{ report: { written: number; dropped: number; bufferedBytes: number; maxBufferBytes: number }; code: number | null; records: Record<string, unknown>[] }> {
    const fifo = join(mkdtempSync(join(tmpdir(), 'slow-pipe-')), 'stdout.fifo');
    execFileSync('mkfifo', [fifo]);
    const readFd = openSync(fifo, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const writeFd = openSync(fifo, fsConstants.O_WRONLY);
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/slow-pipe-process.ts'], { cwd: root, stdio: ['ignore', writeFd, 'inherit', 'ipc'] });
    closeSync(writeFd);
    const report = await new Promise<{ written: number; dropped: number; bufferedBytes: number; maxBufferBytes: number }>((resolve, reject) => {
      child.once('message', (message) => resolve(message as { written: number; dropped: number; bufferedBytes: number; maxBufferBytes: number }));
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`child exited (${String(code)}) before reporting`)));
    });
    const reader = new Socket({ fd: readFd, readable: true, writable: false });
    let text = '';
    reader.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    const readerEnded = new Promise((resolve) => reader.once('end', resolve));
    const code = await new Promise<number | null>((resolve) => {
      child.once('exit', resolve);
      child.send(then);
    });
    await readerEnded;
    assert.ok(text.endsWith('\n'));
    return { report, code, records: text.trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>) };
  }

  for (const then of ['more', 'exit'] as const) {
    it(`never blocks on a reader that does not read, drops and counts lines past its buffer, writes the rest in order with the gap reported (${then === 'more' ? 'reader catches up, more lines' : 'exit with the pipe full: the exit flush'})`, async () => {
      const { FIRST_LINES, MORE_LINES, PAD } = await import('../helpers/slow-pipe-process.js');
      const { report, code, records } = await runSlowPipe(then);
      assert.equal(report.written, FIRST_LINES, 'the loop ended although nobody read: no write blocked');
      assert.ok(report.dropped > 0, 'the buffer filled: some lines were dropped');
      assert.ok(report.dropped < FIRST_LINES, 'the lines that fit were kept');
      assert.ok(report.bufferedBytes > 0 && report.bufferedBytes <= report.maxBufferBytes, `held ${report.bufferedBytes} bytes, bound ${report.maxBufferBytes}`);
      assert.equal(code, 0);
      for (const record of records) if (record['event'] !== 'log-lines-dropped') assert.equal(record['pad'], PAD, `line ${String(record['n'])} intact`);
      const notices = records.filter((r) => r['event'] === 'log-lines-dropped');
      assert.equal(notices.length, 1, 'one notice for the one gap');
      assert.equal(notices[0]?.['droppedLines'], report.dropped);
      assert.equal(notices[0]?.['level'], 'warn');
      const kept = Array.from({ length: FIRST_LINES - report.dropped }, (_, n) => n);
      const later = then === 'more' ? Array.from({ length: MORE_LINES }, (_, i) => FIRST_LINES + i) : [];
      assert.deepEqual(
        records.map((r) => (r['event'] === 'log-lines-dropped' ? 'gap' : r['n'])),
        [...kept, 'gap', ...later],
        'the first lines that fit, in order, then the gap, then any later lines: none split, repeated or reordered',
      );
    });
  }
});
