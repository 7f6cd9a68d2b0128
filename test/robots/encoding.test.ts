// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mayResolve, normaliseOctets, normalisePath, originDecodedPath, originResolvedPath } from '../../src/robots/encoding.js';

/** What `originResolvedPath` tested with a regex before the scan replaced it (the oracle). */
const RESOLVABLE = /%2F|%5C|\\|;|\/\/|\/\.\.?(?:\/|$)/i;

/** Every string of `alphabet` up to `maxLength` characters. */
function* stringsOf(alphabet: string[], maxLength: number): Generator<string> {
  let level = [''];
  yield '';
  for (let length = 1; length <= maxLength; length++) {
    const next: string[] = [];
    for (const prefix of level) for (const c of alphabet) next.push(prefix + c);
    yield* next;
    level = next;
  }
}

describe('mayResolve: the scan that spares most paths the regex and the slice', () => {
  it('agrees with the regex on every string of the characters that matter, up to 5 long, at every end', () => {
    let checked = 0;
    for (const s of stringsOf(['/', '.', '%', '2', '5', 'F', 'f', 'C', 'c', '\\', ';', 'a'], 5)) {
      for (let end = 0; end <= s.length; end++) {
        assert.equal(mayResolve(s, end), RESOLVABLE.test(s.slice(0, end)), JSON.stringify([s, end]));
        checked++;
      }
    }
    for (const s of ['/a/..', '/a/.', '/.b', '/..b', '/%2', '/%2f', '/%5c/x', '/x/.../y', '/x//', '/F%', 'a/./b']) {
      assert.equal(mayResolve(s, s.length), RESOLVABLE.test(s), s);
    }
    assert.ok(checked > 100_000);
  });
});

describe('originResolvedPath', () => {
  it('resolves encoded slashes, backslashes, runs of slashes and dot segments, keeping the query', () => {
    assert.equal(originResolvedPath('/private%2Fx'), '/private/x');
    assert.equal(originResolvedPath('//private/x?q=1'), '/private/x?q=1');
    assert.equal(originResolvedPath('/a/..%2Fprivate/x'), '/private/x');
    assert.equal(originResolvedPath('/a\\b'), '/a/b');
    assert.equal(originResolvedPath('/a/./b/.'), '/a/b/');
  });

  it('drops path parameters as Servlet containers do: /private;x/y, /a/..;/private, ;jsessionid, keeping the query', () => {
    assert.equal(originResolvedPath('/private;x=1/y'), '/private/y');
    assert.equal(originResolvedPath('/a/..;/private/y'), '/private/y');
    assert.equal(originResolvedPath('/a/.;x/b'), '/a/b');
    assert.equal(originResolvedPath('/page;jsessionid=ABC?q=a;b'), '/page?q=a;b');
    assert.equal(originResolvedPath('/search?q=a;b'), undefined);
    assert.equal(originResolvedPath('/a;/b;'), '/a/b');
  });

  it('answers undefined for a path with nothing to resolve, a query with slashes or dots included', () => {
    assert.equal(originResolvedPath('/page/1?q=1'), undefined);
    assert.equal(originResolvedPath('/a.b/c..d/.e'), undefined);
    assert.equal(originResolvedPath('/search?u=//x/../y%2F'), undefined);
    assert.equal(originResolvedPath(''), undefined);
  });
});

describe('normalisation leaves a string as it is exactly when no character needs respelling (the fast path)', () => {
  it('at every code unit up to U+02FF, in a path and in octets', () => {
    for (let c = 0; c <= 0x2ff; c++) {
      const ch = String.fromCharCode(c);
      const plainAscii = c > 0x20 && c < 0x7f && !'%"<>\\^`{|}'.includes(ch);
      const octets = `/a${ch}b`;
      if (c <= 0xff) assert.equal(normaliseOctets(octets) === octets, plainAscii, `octet ${c}`);
      const path = `/a${ch}b?q=1`;
      assert.equal(normalisePath(path) === path, plainAscii && ch !== '$' && ch !== '*', `path char ${c}`);
    }
    // Respelt after a plain run, from the first character that needs it.
    assert.equal(normalisePath('/plain/run/%7e/a b'), '/plain/run/~/a%20b');
    assert.equal(normaliseOctets('/plain/run/\xe9'), '/plain/run/%E9');
  });
});

describe('normalisePath, called again with the path it was just given (the policy, then the robots.txt decision)', () => {
  it('gives each path its own result whatever was normalised before: the same path again, another one, an equal string built apart', () => {
    const paths = ['/a b/$x', '/caf\u00e9*', '/page/1?q=1', '/a%2fb', ''];
    const expected = ['/a%20b/%24x', '/caf%C3%A9%2A', '/page/1?q=1', '/a%2Fb', ''];
    for (let round = 0; round < 2; round++) {
      paths.forEach((path, i) => {
        assert.equal(normalisePath(path), expected[i], path);
        assert.equal(normalisePath(path), expected[i], `${path}, again`);
        assert.equal(normalisePath([...path].join('')), expected[i], `${path}, built apart`);
      });
    }
  });
});

describe('originResolvedPath, called again with the path it was just given', () => {
  it('answers each path for itself whatever was asked before', () => {
    const cases: Array<[string, string | undefined]> = [['/a%2Fb', '/a/b'], ['/page/1?q=1', undefined], ['//x/../y?z', '/y?z'], ['/a/b', undefined]];
    for (let round = 0; round < 2; round++) {
      for (const [path, expected] of cases) {
        assert.equal(originResolvedPath(path), expected, path);
        assert.equal(originResolvedPath(path), expected, `${path}, again`);
        assert.equal(originResolvedPath([...path].join('')), expected, `${path}, built apart`);
      }
    }
  });
});

describe('originDecodedPath', () => {
  it('decodes the reserved characters origins decode in a path, any hex case, and keeps the query', () => {
    assert.equal(originDecodedPath('/wiki/Special%3ASearch'), '/wiki/Special:Search');
    assert.equal(originDecodedPath('/wiki/Special%3aSearch?q=%3A'), '/wiki/Special:Search?q=%3A');
    assert.equal(originDecodedPath("/a%21%26%27%28%29%2B%2C%3A%3B%3D%40%5B%5D"), "/a!&'()+,:;=@[]");
  });

  it('answers undefined when nothing is decoded: no escape, or only the escapes that keep a meaning', () => {
    for (const path of ['/wiki/Main_Page', '/search?q=%3A', '/a%2Fb', '/a%5Cb', '/a%3Fb', '/a%23b', '/a%24b', '/a%2Ab', '/a%25b', '/caf%C3%A9', '']) {
      assert.equal(originDecodedPath(path), undefined, path);
    }
  });
});
