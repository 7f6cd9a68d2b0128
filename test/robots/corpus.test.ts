/**
 * Every real robots.txt in ../shared/corpus/robots parses without throwing,
 * each in bounded time, plus spot checks from its MANIFEST.tsv.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { evaluate, parseRobotsTxt } from '../../src/robots/index.js';

const corpusDir = fileURLToPath(new URL('../../../shared/corpus/robots/', import.meta.url));

interface ManifestRow {
  file: string;
  bytes: number;
  flags: string[];
  crawlDelays: string;
}

function readManifest(): ManifestRow[] {
  const [, ...rows] = readFileSync(corpusDir + 'MANIFEST.tsv', 'utf8').split('\n').filter(Boolean);
  return rows.map((row) => {
    const cols = row.split('\t');
    return { file: cols[0]!, bytes: Number(cols[3]), flags: (cols[5] ?? '').split(',').filter(Boolean), crawlDelays: cols[6] ?? '' };
  });
}

function parseFile(file: string) {
  return parseRobotsTxt(readFileSync(corpusDir + file));
}

describe('real robots.txt corpus', () => {
  const manifest = readManifest();

  it('every file parses without throwing, each within a generous bound', () => {
    const files = readdirSync(corpusDir).filter((f) => f.endsWith('.txt'));
    assert.ok(files.length > 1000, `corpus has ${files.length} files`);
    const slow: string[] = [];
    for (const file of files) {
      const started = process.hrtime.bigint();
      const robots = parseFile(file);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // A sanity bound against pathological (super-linear) parsing, not a speed claim: 500 KiB parse in ~10 ms here.
      if (ms > 2000) slow.push(`${file}: ${ms.toFixed(0)} ms`);
      assert.ok(robots.bytesParsed <= 500 * 1024);
      for (const group of robots.groupsByToken.values()) evaluate(robots, [group.productToken], '/some/path?q=1');
    }
    assert.deepEqual(slow, []);
  });

  it('the manifest lists files that exist, with their byte sizes', () => {
    for (const row of manifest.slice(0, 200)) {
      assert.equal(readFileSync(corpusDir + row.file).length, row.bytes, row.file);
    }
  });

  it('files larger than 500 KiB are truncated at the limit; smaller ones are not', () => {
    const big = manifest.filter((r) => r.bytes > 500 * 1024);
    assert.ok(big.length >= 5);
    for (const row of big) {
      const robots = parseFile(row.file);
      assert.equal(robots.truncated, true, row.file);
      assert.equal(robots.bytesParsed, 500 * 1024, row.file);
    }
    const xuexi = parseFile('www.xuexi.cn.txt');
    assert.ok(xuexi.warnings.some((w) => w.code === 'truncated'));
    assert.equal(parseFile('go.com.txt').truncated, true);
    assert.equal(parseFile('m.youtube.com.txt').truncated, false);
  });

  it('fractional crawl-delays come out as numbers', () => {
    const checks: Array<[string, string, number]> = [
      ['m.youtube.com.txt', 'anybot', 0.5],
      ['poshmark.com.txt', 'Pinterestbot', 0.1],
      ['top.mail.ru.txt', 'anybot', 0.1],
      ['openlibrary.org.txt', 'Baiduspider', 0.5],
    ];
    for (const [file, token, seconds] of checks) {
      const r = evaluate(parseFile(file), [token], '/');
      assert.equal(r.group?.crawlDelaySeconds, seconds, file);
    }
    const fractional = manifest.filter((r) => r.flags.includes('crawl-delay-fraction'));
    assert.ok(fractional.length > 20);
    for (const row of fractional) {
      const declared = row.crawlDelays.split(';').map(Number).filter((n) => !Number.isInteger(n));
      const parsed = parseFile(row.file).groups.map((g) => g.crawlDelaySeconds).filter((n): n is number => n !== undefined);
      for (const value of declared) assert.ok(parsed.includes(value) || parsed.some((p) => p > value), `${row.file}: ${value} in ${parsed}`);
    }
  });

  it('a non-numeric crawl-delay gives no delay and a warning', () => {
    const robots = parseFile('globalresearch.ca.txt');
    assert.equal(robots.groupsByToken.get('ahrefsbot')?.crawlDelaySeconds, undefined);
    assert.ok(robots.warnings.some((w) => w.code === 'invalid-crawl-delay'));
  });

  it('HTML, binary and UTF-16 bodies give no rules', () => {
    for (const file of ['103.88.218.109.txt', 'exhentai.org.txt', 'img-media.1plus1.ua.txt', 'store.usps.com.txt']) {
      const robots = parseFile(file);
      const rules = [...robots.groupsByToken.values()].reduce((n, g) => n + g.rules.length, 0);
      assert.equal(rules, 0, file);
      assert.equal(evaluate(robots, ['anybot'], '/anything').allowed, true, file);
    }
  });

  it('reads BOM, lone-CR and CRLF files', () => {
    const bom = manifest.filter((r) => r.flags.includes('bom-utf8')).slice(0, 20);
    for (const row of bom) {
      const robots = parseFile(row.file);
      assert.ok(robots.groups.length > 0, `${row.file} has groups`);
    }
    const loneCr = parseFile('etc.usf.edu.txt');
    assert.ok(loneCr.lineCount > 3);
  });
});
