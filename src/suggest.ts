/**
 * "Did you mean" hints: the accepted name nearest to a mistyped one.
 */

/**
 * The known name closest to `key` (case, `-` and `_` ignored; typos up to 2 edits, 1 when what was
 * written has 4 characters or fewer), if any: the "did you mean" of an unknown config key or command.
 * @param key what was written.
 * @param known the names accepted there.
 * @returns the nearest known name, or undefined when none is close enough.
 */
export function suggestKey(key: string, known: readonly string[]): string | undefined {
  const fold = (s: string) => s.toLowerCase().replace(/[-_]/g, '');
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(fold(key), fold(name));
    if (best === undefined || distance < best.distance) best = { name, distance };
  }
  if (best === undefined) return undefined;
  return best.distance <= (key.length <= 4 ? 1 : 2) ? best.name : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps cost 1. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  const at = (i: number, j: number) => d[i]?.[j] ?? Infinity;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      (d[i] as number[])[j] = best;
    }
  }
  return at(a.length, b.length);
}
