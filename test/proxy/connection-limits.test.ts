// run-tests: in-process
/**
 * Connection caps from the open-file limit (issue 7): `auto` leaves room for
 * the reserve (admin, robots fetches, files) and an upstream socket per
 * connection; a configured cap the limit cannot serve is lowered, with a warning.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AUTO_MAX_CONNECTIONS,
  AUTO_MAX_CONNECTIONS_UNKNOWN_LIMIT,
  MAX_ANSWERED_REFUSALS,
  parseOpenFileLimit,
  readOpenFileLimit,
  resolveConnectionLimits,
} from '../../src/proxy/connection-limits.js';

const LIMITS_TEXT = [
  'Limit                     Soft Limit           Hard Limit           Units     ',
  'Max cpu time              unlimited            unlimited            seconds   ',
  'Max open files            512                  4096                 files     ',
  'Max locked memory         8388608              8388608              bytes     ',
  '',
].join('\n');

const auto = { maxConnections: 'auto', maxConnectionsPerClient: 'auto', reservedDescriptors: 128 } as const;

describe('parseOpenFileLimit', () => {
  it('reads the soft limit of "Max open files"', () => {
    assert.equal(parseOpenFileLimit(LIMITS_TEXT), 512);
  });

  it('gives undefined for unlimited, a missing line or garbage', () => {
    assert.equal(parseOpenFileLimit(LIMITS_TEXT.replace('512   ', 'unlimited')), undefined);
    assert.equal(parseOpenFileLimit('Max cpu time unlimited unlimited seconds\n'), undefined);
    assert.equal(parseOpenFileLimit(''), undefined);
  });
});

describe('readOpenFileLimit', () => {
  it('reads this process\'s limit on Linux, and undefined for an unreadable file', () => {
    if (process.platform === 'linux') {
      const limit = readOpenFileLimit();
      assert.ok(limit !== undefined && limit > 0, `read ${limit}`);
    }
    assert.equal(readOpenFileLimit(join(tmpdir(), 'no-such-dir', 'limits')), undefined);
    const dir = mkdtempSync(join(tmpdir(), 'limits-'));
    writeFileSync(join(dir, 'limits'), LIMITS_TEXT);
    assert.equal(readOpenFileLimit(join(dir, 'limits')), 512);
  });
});

describe('resolveConnectionLimits', () => {
  it('auto under ulimit -n 512: half of what the reserve leaves, a quarter of that per client', () => {
    const limits = resolveConnectionLimits(auto, 512);
    const expected = Math.floor((512 - 128 - MAX_ANSWERED_REFUSALS) / 2);
    assert.equal(limits.maxConnections, expected);
    assert.equal(expected, 176);
    assert.equal(limits.maxConnectionsPerClient, 44);
    assert.deepEqual(limits.warnings, []);
    // Worst case in descriptors: every connection with an upstream socket, every refusal being answered, the reserve.
    assert.ok(limits.maxConnections * 2 + MAX_ANSWERED_REFUSALS + 128 <= 512);
  });

  it('auto is bounded for a huge limit (memory), and per client at 256', () => {
    const limits = resolveConnectionLimits(auto, 1_048_576);
    assert.equal(limits.maxConnections, AUTO_MAX_CONNECTIONS);
    assert.equal(limits.maxConnectionsPerClient, 256);
  });

  it('auto with an unknown limit takes a conservative default', () => {
    const limits = resolveConnectionLimits(auto, undefined);
    assert.equal(limits.maxConnections, AUTO_MAX_CONNECTIONS_UNKNOWN_LIMIT);
    assert.equal(limits.maxConnectionsPerClient, 256);
    assert.equal(limits.openFileLimit, undefined);
  });

  it('lowers a configured cap above what the limit allows, and says so', () => {
    const limits = resolveConnectionLimits({ ...auto, maxConnections: 5000, maxConnectionsPerClient: 1000 }, 512);
    assert.equal(limits.maxConnections, 176);
    assert.equal(limits.maxConnectionsPerClient, 176);
    assert.equal(limits.warnings.length, 2);
    assert.match(limits.warnings[0]!, /clients\.maxConnections 5000 lowered to 176/);
    assert.match(limits.warnings[0]!, /open-file limit is 512/);
    assert.match(limits.warnings[1]!, /clients\.maxConnectionsPerClient 1000 lowered to maxConnections \(176\)/);
  });

  it('keeps configured caps the limit can serve; an unknown limit lowers nothing', () => {
    assert.deepEqual(resolveConnectionLimits({ ...auto, maxConnections: 100, maxConnectionsPerClient: 10 }, 512), {
      maxConnections: 100,
      maxConnectionsPerClient: 10,
      openFileLimit: 512,
      warnings: [],
    });
    assert.equal(resolveConnectionLimits({ ...auto, maxConnections: 50_000 }, undefined).maxConnections, 50_000);
  });

  it('a limit smaller than the reserve still admits one connection, with a warning', () => {
    const limits = resolveConnectionLimits(auto, 100);
    assert.equal(limits.maxConnections, 1);
    assert.equal(limits.maxConnectionsPerClient, 1);
    assert.match(limits.warnings[0]!, /leaves no room/);
  });
});
