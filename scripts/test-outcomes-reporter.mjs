// A node:test reporter for scripts/run-tests.mjs: one JSON line per outcome, so the
// runner can count what the built-in summary leaves out. On Node 20, a test file that
// fails to load (import error, throw at top level) is one failure named by its path,
// and a describe() whose callback throws is a failed suite whose tests never
// registered; the built-in summary reports the latter as "fail 0".
//
// Lines: {"kind":"test","outcome":"pass"|"fail"|"cancelled"|"skip"|"todo","file","name"}, and for a
//        failed test "path" (its suites' names and its own, outermost first) and "reason" (its error's first line)
//        {"kind":"file-failed","file","reason"}   the file did not load, or its process crashed
//        {"kind":"suite-failed","file","name","reason"}   a suite's own code or hook threw

/** Lines of a file's stderr kept to explain a file-level failure. */
const STDERR_LINES_KEPT = 200;

/** The first line that names an error (`Error: ...`, `TypeError [CODE]: ...`), else the last non-empty line. */
function reasonFrom(lines, fallback) {
  const named = lines.find((line) => /^[A-Za-z]*Error\b/.test(line.trim()));
  if (named !== undefined) return named.trim();
  const last = lines.filter((line) => line.trim() !== '' && !line.startsWith('Node.js v')).at(-1);
  return last?.trim() ?? fallback;
}

/** The first line of a failed test's error: the assertion's own message, else the error's. */
function failureReason(error) {
  const message = String(error.cause?.message ?? error.message ?? error.failureType ?? 'failed');
  return message.split('\n').find((line) => line.trim() !== '')?.trim() ?? message;
}

export default async function* outcomes(source) {
  const stderrByFile = new Map();
  /** Names of the suites open at each nesting level of each file (test:start comes before a test's subtests). */
  const suitesByFile = new Map();
  for await (const event of source) {
    const data = event.data ?? {};
    if (event.type === 'test:stderr') {
      const kept = stderrByFile.get(data.file) ?? [];
      kept.push(...String(data.message).split('\n'));
      stderrByFile.set(data.file, kept.slice(-STDERR_LINES_KEPT));
      continue;
    }
    if (event.type === 'test:start') {
      const names = suitesByFile.get(data.file) ?? [];
      names.length = data.nesting;
      names.push(data.name);
      suitesByFile.set(data.file, names);
      continue;
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const details = data.details ?? {};
    const error = details.error ?? {};
    const isFileLevel = data.nesting === 0 && data.file !== undefined && data.name === data.file;
    if (isFileLevel) {
      if (event.type === 'test:fail' && error.failureType === 'testTimeoutFailure') {
        // run-tests.mjs's per-file timeout: the runner killed the file's process.
        const reason = `the file did not end in time (${error.message ?? error.cause?.message}; a hook or test left a process, server or timer running?): killed`;
        yield `${JSON.stringify({ kind: 'file-failed', file: data.file, reason })}\n`;
      } else if (event.type === 'test:fail') {
        const exit = error.exitCode != null ? `exit code ${error.exitCode}` : `signal ${error.signal}`;
        yield `${JSON.stringify({ kind: 'file-failed', file: data.file, reason: reasonFrom(stderrByFile.get(data.file) ?? [], `the test process ended with ${exit}`) })}\n`;
      }
      continue;
    }
    if (details.type === 'suite') {
      // A suite fails on its own (not just because a test in it failed) when its callback or a hook threw.
      if (event.type === 'test:fail' && error.failureType !== 'subtestsFailed') {
        const message = String(error.cause?.message ?? error.message ?? '');
        yield `${JSON.stringify({ kind: 'suite-failed', file: data.file, name: data.name, reason: `${error.failureType}: ${message.split('\n')[0]}` })}\n`;
      }
      continue;
    }
    let outcome = event.type === 'test:pass' ? 'pass' : 'fail';
    if (data.skip !== undefined) outcome = 'skip';
    else if (data.todo !== undefined) outcome = 'todo';
    else if (error.failureType === 'cancelledByParent') outcome = 'cancelled';
    const record = { kind: 'test', outcome, file: data.file, name: data.name };
    if (outcome === 'fail') {
      // The file-level entry (nesting 0, named by the path) is not a suite of its own.
      const path = (suitesByFile.get(data.file) ?? []).slice(0, data.nesting).filter((name) => name !== data.file);
      Object.assign(record, { path: [...path, data.name], reason: failureReason(error) });
    }
    yield `${JSON.stringify(record)}\n`;
  }
}
