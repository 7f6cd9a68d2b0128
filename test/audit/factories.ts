/**
 * Small builders of Decision and AccessEntry values for the audit and admin
 * tests: sensible defaults, overridden field by field.
 */
import { Writable } from 'node:stream';
import type { AccessEntry } from '../../src/audit/access-entry.js';
import type { Decision, SnapshotInfo } from '../../src/policy/decision.js';

/** 2023-11-14T22:13:20.000Z */
export const T0_MS = 1_700_000_000_000;

/** A robots snapshot fetched at {@link T0_MS} with status 200, valid for a day. */
export function makeSnapshot(overrides: Partial<SnapshotInfo> = {}): SnapshotInfo {
  return {
    url: 'http://127.0.0.1:8081/robots.txt',
    state: 'ok',
    status: 200,
    error: undefined,
    fetchedAtMs: T0_MS,
    expiresAtMs: T0_MS + 86_400_000,
    bytes: 120,
    truncated: false,
    ...overrides,
  };
}

/** A `rule-disallow` decision by `Disallow: /private/` on line 3 of the GPTBot group. */
export function makeDecision(overrides: Partial<Decision> = {}): Decision {
  return {
    verdict: 'deny',
    reason: 'rule-disallow',
    origin: 'http://127.0.0.1:8081',
    path: '/private/page?x=1',
    productToken: 'gptbot',
    agentTokens: ['gptbot'],
    group: 'GPTBot',
    rule: { kind: 'disallow', pattern: '/private/', line: 3 },
    crawlDelaySeconds: null,
    snapshot: makeSnapshot(),
    identity: null,
    ...overrides,
  };
}

/** Fields of an {@link AccessEntry} that a test may override, one level deep. */
export interface EntryOverrides {
  requestId?: string;
  startedAtMs?: number;
  client?: Partial<AccessEntry['client']>;
  request?: Partial<AccessEntry['request']>;
  decision?: Decision;
  productTokens?: readonly string[];
  timings?: Partial<AccessEntry['timings']>;
  response?: Partial<AccessEntry['response']>;
  error?: string | null;
}

/** A finished request refused with 403 (see {@link makeDecision}), unless overridden. */
export function makeEntry(overrides: EntryOverrides = {}): AccessEntry {
  return {
    requestId: overrides.requestId ?? '0123456789ab-1',
    startedAtMs: overrides.startedAtMs ?? T0_MS,
    client: { address: '127.0.0.1', port: 50123, ...overrides.client },
    request: {
      method: 'GET',
      url: 'http://127.0.0.1:8081/private/page?x=1',
      userAgent: 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)',
      via: 'http',
      ...overrides.request,
    },
    decision: overrides.decision ?? makeDecision(),
    productTokens: overrides.productTokens ?? ['gptbot'],
    timings: { queueWaitMs: null, upstreamMs: null, durationMs: 3, ...overrides.timings },
    response: { status: 403, upstreamStatus: null, bytesSent: 250, bytesReceived: 0, clientAborted: false, ...overrides.response },
    error: overrides.error ?? null,
  };
}

/** A writable stream that keeps what pino writes, parsed one JSON object per line. */
export class CapturedLines extends Writable {
  #text = '';

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.#text += chunk.toString();
    done();
  }

  /** Raw text written so far. */
  get text(): string {
    return this.#text;
  }

  /** Every complete line, parsed; throws if a line is not JSON. */
  records(): Record<string, unknown>[] {
    return this.#text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}
