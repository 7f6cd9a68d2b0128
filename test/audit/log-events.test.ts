/**
 * Every log line but the access line has an `event` field (README, **Logs**): a stable name to
 * filter on. Read from the source: each logger call in src/ (a receiver named `logger`) passes an
 * object literal with `event: '<kebab-case>'` first, except the access line
 * (`logger.info(record, ACCESS_LOG_MESSAGE)`), and each name is in README's table. Then from a
 * real run: the robots cache's "keeping the previously fetched snapshot" warning (the line found
 * without one) and its other lines carry theirs.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { RobotsCache, type FetchRobots } from '../../src/cache/robots-cache.js';
import type { RobotsSnapshot } from '../../src/policy/snapshot.js';
import { parseRobotsTxt } from '../../src/robots/index.js';
import { manualClock } from '../cache/support.js';

const SRC = new URL('../../src/', import.meta.url).pathname;
const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? sourceFiles(full) : name.endsWith('.ts') ? [full] : [];
  });
}

/** One logger call: where, and the text of its arguments (up to the closing parenthesis). */
interface LoggerCall {
  where: string;
  args: string;
}

/** The calls `<...logger>.<level>(...)` in `text`, their arguments read to the matching parenthesis. */
function loggerCalls(file: string, text: string): LoggerCall[] {
  const calls: LoggerCall[] = [];
  for (const m of text.matchAll(/\blogger\??\.(trace|debug|info|warn|error|fatal)\(/gi)) {
    let depth = 1;
    let at = m.index + m[0].length;
    for (; depth > 0 && at < text.length; at++) {
      const c = text[at];
      if (c === '(' || c === '{' || c === '[') depth++;
      else if (c === ')' || c === '}' || c === ']') depth--;
    }
    const line = text.slice(0, m.index).split('\n').length;
    calls.push({ where: `${file.slice(SRC.length)}:${line}`, args: text.slice(m.index + m[0].length, at - 1) });
  }
  return calls;
}

describe('every log line has an event', () => {
  it('each logger call in src/ names its event (the access line aside), and README lists each name', () => {
    const missing: string[] = [];
    const names = new Set<string>();
    let count = 0;
    for (const file of sourceFiles(SRC)) {
      const text = readFileSync(file, 'utf8');
      for (const call of loggerCalls(file, text)) {
        // Doc comments quote calls too: only code counts.
        const lineText = text.split('\n')[Number(call.where.split(':').at(-1)) - 1] ?? '';
        if (/^\s*(\*|\/\/)/.test(lineText)) continue;
        count++;
        if (/^\s*record\s*,\s*ACCESS_LOG_MESSAGE\s*$/.test(call.args)) continue;
        const event = /^\s*\{\s*event:\s*'([a-z0-9]+(?:-[a-z0-9]+)*)'/.exec(call.args)?.[1];
        if (event === undefined) missing.push(`${call.where}: ${call.args.slice(0, 80).replace(/\s+/g, ' ')}`);
        else names.add(event);
      }
    }
    assert.ok(count > 50, `found ${count} logger calls: the scan reads the source`);
    assert.deepEqual(missing, [], 'logger calls without an event first');
    const undocumented = [...names].filter((name) => !README.includes(`\`${name}\``));
    assert.deepEqual(undocumented, [], "event names missing from README's table");
  });

  it("the robots cache's lines carry theirs: robots-stale-kept when an unreachable robots.txt keeps the previous snapshot", async () => {
    const lines: Record<string, unknown>[] = [];
    const capture = (level: string) => (fields: object, msg: string) => void lines.push({ level, ...fields, msg });
    const clock = manualClock(1_700_000_000_000);
    let state: 'ok' | 'unreachable' = 'ok';
    const fetch: FetchRobots = async (origin) => {
      const nowMs = clock.nowMs();
      const snapshot: RobotsSnapshot = {
        info: { url: `${origin}/robots.txt`, state, status: state === 'ok' ? 200 : 503, error: undefined, fetchedAtMs: nowMs, expiresAtMs: nowMs + 1_000, bytes: 0, truncated: false },
        robots: state === 'ok' ? parseRobotsTxt('User-agent: *\nDisallow: /private/\n') : null,
      };
      return snapshot;
    };
    const cache = new RobotsCache({ fetch, clock, maxOrigins: 10, logger: { debug: capture('debug'), warn: capture('warn'), error: capture('error') } });
    await cache.get('https://a.example');
    clock.advance(1_000);
    state = 'unreachable';
    await cache.get('https://a.example');
    const stale = lines.find((l) => l['level'] === 'warn');
    assert.equal(stale?.['event'], 'robots-stale-kept', JSON.stringify(lines));
    assert.equal(stale?.['origin'], 'https://a.example');
    assert.ok(lines.every((l) => typeof l['event'] === 'string'), JSON.stringify(lines));
  });
});
