// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { formatDuration, formatSize, parseDuration, parseSize } from '../../src/config/units.js';

describe('parseDuration', () => {
  const accepted: [unknown, number][] = [
    [0, 0],
    ['0', 0],
    ['0s', 0],
    ['500ms', 500],
    ['10s', 10_000],
    ['1.5s', 1_500],
    ['0.05s', 50],
    ['0.1s', 100],
    ['5m', 300_000],
    ['24h', 86_400_000],
    ['1h30m', 5_400_000],
    ['1m30s', 90_000],
    ['2s500ms', 2_500],
    ['10 s', 10_000],
    [' 10s ', 10_000],
    ['1.1h', 3_960_000],
    ['7d', 604_800_000],
    ['1d12h', 129_600_000],
    // One space before a unit, and between parts (as sizes take `500 KiB`).
    ['1m 30s', 90_000],
    ['1 s', 1_000],
    ['1 m 30 s', 90_000],
    ['1h 30m 15s', 5_415_000],
  ];
  for (const [input, ms] of accepted) {
    it(`reads ${JSON.stringify(input)} as ${ms} ms`, () => {
      assert.deepEqual(parseDuration(input), { ok: true, value: ms });
    });
  }

  const refused: unknown[] = [
    10, // no unit: seconds or milliseconds?
    1.5,
    -1,
    '-1s',
    '10',
    '10x',
    '10 sec',
    '10S',
    '1w',
    's',
    '.5s',
    '0.5ms', // not a whole number of milliseconds
    '1.0005s',
    '',
    '   ',
    '10s 5m',
    '1m  30s', // one space, not two
    '1m\t30s',
    null,
    undefined,
    true,
    [],
    {},
    Number.POSITIVE_INFINITY,
    Number.NaN,
  ];
  for (const input of refused) {
    it(`refuses ${typeof input === 'string' ? JSON.stringify(input) : String(input)}`, () => {
      const result = parseDuration(input);
      assert.equal(result.ok, false);
    });
  }
});

describe('parseDuration: one grammar, and refusals that say it', () => {
  it('refuses parts out of order or a unit twice, naming the two parts and the rule', () => {
    for (const [input, first, second] of [['30s1m', '30s', '1m'], ['1s1s', '1s', '1s'], ['500ms2s', '500ms', '2s'], ['12h1d', '12h', '1d']] as const) {
      const result = parseDuration(input);
      assert.equal(result.ok, false, input);
      const reason = (result as { reason: string }).reason;
      assert.ok(reason.includes(`"${first}" then "${second}"`), reason);
      assert.match(reason, /from the largest unit to the smallest, each unit once/);
    }
  });

  it('a refusal says which forms are accepted: units, compounds, spaces', () => {
    for (const input of ['10 sec', '1m  30s', '1m30']) {
      const reason = (parseDuration(input) as { reason: string }).reason;
      for (const part of ['ms, s, m, h or d', '"1m30s"', '"1h 30m"', 'one space may stand before a unit or between parts']) assert.ok(reason.includes(part), `${input}: ${reason}`);
    }
  });
});

describe('parseSize', () => {
  const accepted: [unknown, number][] = [
    [0, 0],
    [512, 512],
    ['512', 512],
    ['512B', 512],
    ['500KiB', 512_000],
    ['500 KiB', 512_000],
    ['1MiB', 1_048_576],
    ['1.5KiB', 1_536],
    ['1GiB', 1_073_741_824],
    ['10KB', 10_000],
    ['10kB', 10_000],
    ['2MB', 2_000_000],
    ['1GB', 1_000_000_000],
  ];
  for (const [input, bytes] of accepted) {
    it(`reads ${JSON.stringify(input)} as ${bytes} bytes`, () => {
      assert.deepEqual(parseSize(input), { ok: true, value: bytes });
    });
  }

  const refused: unknown[] = [-1, 1.5, '-1KiB', '1.5B', '4Mb', '1kb', '1K', '1 MiB extra', 'KiB', '', null, true, Number.NaN];
  for (const input of refused) {
    it(`refuses ${typeof input === 'string' ? JSON.stringify(input) : String(input)}`, () => {
      assert.equal(parseSize(input).ok, false);
    });
  }
});

describe('formatDuration and formatSize', () => {
  it('write the largest exact unit', () => {
    assert.equal(formatDuration(0), '0');
    assert.equal(formatDuration(86_400_000), '24h');
    assert.equal(formatDuration(90_000), '90s');
    assert.equal(formatDuration(1_500), '1500ms');
    assert.equal(formatSize(512_000), '500KiB');
    assert.equal(formatSize(1_000), '1000B');
    assert.equal(formatSize(0), '0B');
  });

  it('refuse negative and fractional values', () => {
    assert.throws(() => formatDuration(-1), RangeError);
    assert.throws(() => formatDuration(0.5), RangeError);
    assert.throws(() => formatSize(-1), RangeError);
  });

  it('round-trip through the parsers', () => {
    fc.assert(
      fc.property(fc.nat({ max: 2 ** 40 }), (n) => {
        assert.deepEqual(parseDuration(formatDuration(n)), { ok: true, value: n });
        assert.deepEqual(parseSize(formatSize(n)), { ok: true, value: n });
      }),
    );
  });
});
