/**
 * The one rule that reads a crawler's name, used on both sides of a group
 * match: for `User-agent:` values in robots.txt (parse.ts) and for the words
 * of a User-Agent header (agent.ts). Pure; never throws.
 *
 * A name is a run of letters, digits, `-` and `_`, compared case-insensitively.
 * RFC 9309 §2.2.1 allows only letters, `-` and `_` in a product token, and the
 * reference parser cuts a `User-agent:` value at the first other character,
 * so `MJ12bot` becomes `MJ` and `W3C-checklink` becomes `W`: different
 * crawlers merge (`Rule1TestBot` and `Rule2TestBot` are both `Rule`), and a
 * bot named with digits never gets its own group. Reading the whole name on
 * both sides keeps every name apart. For a name that is a valid RFC 9309
 * token (letters, `-`, `_` only) the comparison is the RFC's: such a name
 * equals another whole name exactly when their RFC forms are equal and
 * neither goes on with digits. The one reading this drops is the
 * reference's cut of a name that goes on with digits (`crawler4j` read as
 * `crawler`, `RankingBot2` as `RankingBot`): that would hand a group written
 * for one crawler to another, shorter name (extension, not in RFC 9309).
 */

/** Whether `code` (a UTF-16 code unit) may appear in a name: `[A-Za-z0-9_-]`. */
export function isNameChar(code: number): boolean {
  return isTokenChar(code) || (code >= 0x30 && code <= 0x39);
}

/** Whether `code` may appear in an RFC 9309 product token: `[A-Za-z_-]` (§2.2.1). */
export function isTokenChar(code: number): boolean {
  return (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x2d || code === 0x5f;
}

/**
 * The name `text` starts with: its leading `[A-Za-z0-9_-]` run, possibly
 * empty. `Googlebot/2.1` gives `Googlebot`, `Foo Bar` gives `Foo`,
 * `MJ12bot` gives `MJ12bot`, `Mail.RU_Bot` gives `Mail` (a domain-style name
 * is named by the part before its first dot). Pure; never throws.
 */
export function leadingName(text: string): string {
  let end = 0;
  while (end < text.length && isNameChar(text.charCodeAt(end))) end++;
  return end === text.length ? text : text.slice(0, end);
}

/**
 * Whether `token` is a valid RFC 9309 product token: non-empty and only
 * `[A-Za-z_-]` (§2.2.1; the reference parser's
 * `RobotsMatcher::IsValidUserAgentToObey`). Names with digits (`MJ12bot`,
 * `008`) are not, yet still name groups here (see the module comment).
 * Pure; never throws.
 */
export function isValidProductToken(token: string): boolean {
  if (typeof token !== 'string' || token.length === 0) return false;
  for (let i = 0; i < token.length; i++) {
    if (!isTokenChar(token.charCodeAt(i))) return false;
  }
  return true;
}

/** Whether `token` is a non-empty `[A-Za-z0-9_-]` run, the shape every extracted candidate has. Pure. */
export function isName(token: string): boolean {
  return typeof token === 'string' && token.length > 0 && leadingName(token).length === token.length;
}
