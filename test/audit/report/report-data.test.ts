/**
 * The report's tables from a real ledger file holding what issue 8 adds:
 * identities, the operator's reasons (`operator-allow`, `operator-policy`) and
 * report mode (a robots.txt refusal forwarded: verdict allow, reason kept).
 * Refusals are counted by verdict, identities get their own bot rows and
 * filter, and unknown reasons are shown as they are.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import pino from 'pino';
import { Ledger } from '../../../src/audit/ledger/index.js';
import type { AccessEntry } from '../../../src/audit/access-entry.js';
import type { DecisionReason } from '../../../src/policy/decision.js';
import { LedgerReader } from '../../../src/audit/report/ledger-reader.js';
import { buildReport } from '../../../src/audit/report/report-data.js';
import { makeDecision, makeEntry, T0_MS } from '../factories.js';
import { tempDir } from '../ledger/support.js';

const clock = { nowMs: () => T0_MS + 60_000, setTimer: () => undefined, clearTimer: () => undefined };

function entry(identity: string | null, verdict: 'allow' | 'deny', reason: string, status: number): AccessEntry {
  const decision = makeDecision({ verdict, reason: reason as DecisionReason, ...(reason === 'rule-disallow' ? {} : { rule: null }) });
  return { ...makeEntry({ decision, response: { status, upstreamStatus: verdict === 'allow' ? 200 : null } }), identity };
}

describe('report data with identities and operator reasons', () => {
  it('counts refusals by verdict, gives each identity its rows and filter, and lists every reason', () => {
    const path = join(tempDir(), 'ledger.sqlite');
    const ledger = new Ledger({ path, clock, logger: pino({ level: 'silent' }), flushIntervalMs: 0, pruneIntervalMs: 0 });
    ledger.observe(entry('crawler-team', 'deny', 'rule-disallow', 403));
    ledger.observe(entry('crawler-team', 'deny', 'rule-disallow', 403));
    // Report mode: the robots.txt rule would refuse it, the request was forwarded.
    ledger.observe(entry('crawler-team', 'allow', 'rule-disallow', 200));
    ledger.observe(entry('partner', 'allow', 'operator-allow', 200));
    ledger.observe(entry('partner', 'deny', 'operator-policy', 403));
    ledger.observe(entry(null, 'allow', 'no-matching-rule', 200));
    ledger.close();

    const reader = LedgerReader.open(path);
    try {
      const report = buildReport(reader, { fromMs: T0_MS - 3_600_000, toMs: T0_MS + 3_600_000, limit: 100 }, T0_MS + 60_000);
      const summary = report.tables.summary.rows[0]!;
      assert.equal(summary['requests'], 6);
      assert.equal(summary['allowed'], 3);
      assert.equal(summary['refused'], 3);
      assert.equal(summary['refusedByRule'], 2, 'the forwarded (report mode) request was not refused');
      assert.equal(summary['refusedOther'], 1, 'operator-policy');

      const reasons = report.tables.reasons.rows.map((r) => `${r['verdict']} ${r['reason']} ${r['requests']}`).sort();
      assert.deepEqual(reasons, ['allow no-matching-rule 1', 'allow operator-allow 1', 'allow rule-disallow 1', 'deny operator-policy 1', 'deny rule-disallow 2']);

      const bots = new Map(report.tables.bots.rows.map((r) => [r['identity'], r]));
      assert.deepEqual([...bots.keys()].sort(), ['', 'crawler-team', 'partner']);
      assert.equal(bots.get('crawler-team')!['refused'], 2);
      assert.equal(bots.get('crawler-team')!['refusedByRule'], 2);
      assert.equal(bots.get('partner')!['allowed'], 1);
      assert.equal(bots.get('partner')!['refused'], 1);
      assert.deepEqual(report.filters.identities.sort(), ['', 'crawler-team', 'partner']);

      const most = report.highlights.mostRefused!;
      assert.equal(most.identity, 'crawler-team');
      assert.equal(most.refused, 2);
      assert.equal(most.rule?.ruleLine, 3);

      const narrowed = buildReport(reader, { fromMs: T0_MS - 3_600_000, toMs: T0_MS + 3_600_000, limit: 100, identity: 'partner' }, T0_MS + 60_000);
      assert.equal(narrowed.tables.summary.rows[0]!['requests'], 2);
      assert.deepEqual(narrowed.tables.refusals.rows.map((r) => r['reason']), ['operator-policy']);
    } finally {
      reader.close();
    }
  });
});
