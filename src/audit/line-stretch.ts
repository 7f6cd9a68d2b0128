/**
 * A stretch of a log line kept as bytes for the next line: the access line's
 * encoder (access-line.ts) keeps, for each run of fields whose values usually
 * repeat from one request to the next (the User-Agent and product tokens, the
 * response's sizes, the matched group and rule, the pacing and upstream
 * facts), the bytes it wrote for the last line and the values they were
 * written from; when the next entry's values are the same, the bytes are
 * copied ({@link LineBuffer.constant}) instead of encoded again. The values
 * and their comparison are the encoder's (one set per stretch); this holds
 * the bytes and the names the stretch listed under `truncated`, which a copy
 * lists again. Extension, not in RFC 9309.
 */
import { ConstantBytes, type LineBuffer } from './line-buffer.js';

/** One stretch's last bytes and cut names. Not thread-safe; one per stretch of the line. */
export class LineStretch {
  /** The bytes of the stretch as last written (valid when {@link isValid}). */
  readonly bytes = new ConstantBytes('');
  /** The field names the stretch pushed onto `truncated` when it was last written, in order. */
  readonly cuts: string[] = [];
  /** False until {@link end} captured a stretch (the values beside it mean nothing before). */
  isValid = false;
  /** Where the stretch being written began: its first byte, and its first name in `truncated`. */
  #start = 0;
  #cutStart = 0;

  /** Marks the start of a stretch about to be encoded into `out` (the caller then writes its fields, then calls {@link end}). */
  begin(out: LineBuffer, truncated: readonly string[]): void {
    this.#start = out.length;
    this.#cutStart = truncated.length;
  }

  /**
   * Keeps the bytes written into `out` since {@link begin} and the names pushed onto `truncated` since, as the
   * stretch's last bytes. Call only after the whole stretch was written (a stretch that threw is never kept),
   * and set the values it was written from beside it.
   */
  end(out: LineBuffer, truncated: readonly string[]): void {
    out.capture(this.bytes, this.#start);
    const cuts = this.cuts;
    cuts.length = 0;
    for (let i = this.#cutStart; i < truncated.length; i++) cuts.push(truncated[i] as string);
    this.isValid = true;
  }

  /** Appends the stretch's last bytes to `out` and its cut names to `truncated` (the caller checked the values are the same). */
  copy(out: LineBuffer, truncated: string[]): void {
    out.constant(this.bytes);
    const cuts = this.cuts;
    for (let i = 0; i < cuts.length; i++) truncated.push(cuts[i] as string);
  }
}

/** Whether `kept` holds the first `count` items of `values`, by `===` (a token array changed in place compares by its contents, never by identity). */
export function sameItems(kept: readonly string[], values: readonly string[], count: number): boolean {
  if (kept.length !== count) return false;
  for (let i = 0; i < count; i++) if (kept[i] !== values[i]) return false;
  return true;
}

/** Sets `kept` to the first `count` items of `values` (a copy: the caller's array may change in place). */
export function keepItems(kept: string[], values: readonly string[], count: number): void {
  kept.length = count;
  for (let i = 0; i < count; i++) kept[i] = values[i] as string;
}
