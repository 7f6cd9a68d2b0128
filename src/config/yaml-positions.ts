/**
 * Where keys are in a YAML document, so that configuration errors can name a
 * line and column. Works on documents with syntax errors too (the `yaml`
 * package still builds a best-effort tree). Pure; no I/O.
 */
import { isAlias, isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';

/** A 1-based line and column. */
export interface Position {
  readonly line: number;
  readonly column: number;
}

/** A key of the document: its path of keys from the top and where the key starts. */
interface KeyEntry {
  readonly path: readonly (string | number)[];
  readonly start: number;
  readonly end: number;
}

/** Converts a character offset into a 1-based line and column. Never throws. */
export function positionAt(lineCounter: LineCounter, offset: number): Position {
  const { line, col } = lineCounter.linePos(offset);
  return { line, column: col };
}

/**
 * Finds the key at the end of `path` (e.g. `['pacing', 'maxWait']`). When the
 * path leads outside the document (a key that was never written, such as a
 * missing sibling), the deepest key that does exist is returned instead.
 * Aliases are followed to their anchor. Never throws.
 * @returns the character offset of the key, or `undefined` when not even the
 *   first segment is in the document (then the error concerns the whole file).
 */
export function findKeyOffset(doc: Document, path: readonly PropertyKey[]): number | undefined {
  let node: unknown = doc.contents;
  let found: number | undefined;
  for (const segment of path) {
    if (isAlias(node)) node = node.resolve(doc);
    if (isMap(node)) {
      const pair = node.items.find((item) => isPair(item) && keyText(item.key) === String(segment));
      if (pair === undefined) return found;
      found = rangeStart(pair.key) ?? found;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      node = node.items[segment];
      found = rangeStart(node) ?? found;
    } else {
      return found;
    }
  }
  return found;
}

/**
 * Names the key a syntax error at `offset` is about: the first key on the
 * error's line (the one the author wrote; keys further right on a broken line
 * are often artefacts of the error), or failing that the innermost key whose
 * entry spans the offset. Never throws.
 * @returns the key path, or `undefined` when no key is near.
 */
export function findKeyNear(doc: Document, lineCounter: LineCounter, offset: number): readonly (string | number)[] | undefined {
  const entries: KeyEntry[] = [];
  collectKeys(doc.contents, [], entries);
  const line = lineCounter.linePos(offset).line;
  const first = entries.find((e) => lineCounter.linePos(e.start).line === line);
  if (first !== undefined) return first.path;
  const spanning = entries.filter((e) => e.start <= offset && offset <= e.end);
  return spanning.reduce<KeyEntry | undefined>((best, e) => (best === undefined || e.path.length > best.path.length ? e : best), undefined)?.path;
}

function collectKeys(node: unknown, path: readonly (string | number)[], out: KeyEntry[]): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = keyText(pair.key);
      const start = rangeStart(pair.key);
      if (key === undefined || start === undefined) continue;
      const keyPath = [...path, key];
      const value = pair.value as Node | null;
      out.push({ path: keyPath, start, end: value?.range?.[2] ?? (pair.key as Node).range?.[2] ?? start });
      collectKeys(value, keyPath, out);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, index) => collectKeys(item, [...path, index], out));
  }
}

function keyText(key: unknown): string | undefined {
  if (isScalar(key)) return String(key.value);
  return undefined;
}

function rangeStart(node: unknown): number | undefined {
  if (node !== null && typeof node === 'object' && 'range' in node) {
    const range = (node as Node).range;
    return range?.[0];
  }
  return undefined;
}
