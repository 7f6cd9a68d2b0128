/**
 * The reference matcher's test vectors (github.com/google/robotstxt @ 22b355f,
 * Apache-2.0; see test/fixtures/conformance/README.md) and the project's one
 * skip table. Read by the tests from test/fixtures/conformance/ and by
 * `npm run sweep` from the shared conformance directory.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { evaluate, extractPathAndQuery, isValidProductToken, normaliseOctets, parseRobotsTxt } from '../../src/robots/index.js';
import { extractProductTokens } from '../../src/robots/agent.js';

/** The copies kept in the repository. */
export const CONFORMANCE_FIXTURES_DIR = fileURLToPath(new URL('../fixtures/conformance/', import.meta.url));

/** Allowed/disallowed vectors. */
export const MATCH_VECTORS_FILE = 'google-robotstxt.jsonl';
/** Token, URL-path, pattern and parse-report vectors. */
export const OTHER_VECTORS_FILE = 'google-robotstxt-other.jsonl';

/** One allowed/disallowed vector. */
export interface MatchCase {
  id: string;
  robots: string;
  agent: string;
  url: string;
  allowed: boolean;
}

/** One vector of another shape; `kind` names the reference function it tests. */
export interface OtherCase {
  id: string;
  kind: string;
  input?: string;
  expected: unknown;
}

/** Reads a JSON-lines file of `dir`. Throws when it is missing or a line is not JSON. */
export function readVectors<T>(dir: string, file: string): T[] {
  return readFileSync(join(dir, file), 'utf8')
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => JSON.parse(line) as T);
}

/**
 * The one skip table: vectors where this project deliberately differs from
 * the reference. Each entry gives the verdict we give and why.
 */
export const DEVIATIONS: Record<string, { allowed: boolean; reason: string }> = {
  'ID_Encoding#3': {
    allowed: true,
    reason: 'RFC 9309 §2.2.2: raw non-ASCII in the URL is percent-encoded as UTF-8 before matching, so /foo/bar/ツ matches the allow rule; the reference compares raw bytes with the encoded pattern',
  },
  'ID_Encoding#5': {
    allowed: true,
    reason: 'RFC 9309 §2.2.2: the URL /foo/bar/ツ is encoded to /foo/bar/%E3%83%84 before matching, which equals the allow pattern',
  },
  'ID_Encoding#6': {
    allowed: true,
    reason: 'RFC 9309 §2.2.2: %62%61%7A encodes unreserved octets, which are decoded on both sides, so the pattern is /foo/bar/baz; the reference keeps them encoded',
  },
};

/** The number of allowed/disallowed vectors in the set. */
export const MATCH_VECTOR_COUNT = 145;

/** The verdict this project must give for `c`: the reference's, unless the skip table says otherwise. */
export function expectedVerdict(c: MatchCase): boolean {
  return DEVIATIONS[c.id]?.allowed ?? c.allowed;
}

/** Asserts the engine's verdict on one allowed/disallowed vector. */
export function assertMatchCase(c: MatchCase): void {
  const expected = expectedVerdict(c);
  const result = evaluate(parseRobotsTxt(c.robots), [c.agent], extractPathAndQuery(c.url));
  assert.equal(result.allowed, expected, `${c.id}: expected ${expected ? 'allowed' : 'disallowed'} for ${c.url}`);
}

/** Asserts that every skip-table entry names a vector that exists and differs from the reference. */
export function assertDeviationsExist(cases: readonly MatchCase[]): void {
  for (const [id, deviation] of Object.entries(DEVIATIONS)) {
    const c = cases.find((x) => x.id === id);
    assert.ok(c, `${id} is in the skip table but not in the vectors`);
    assert.notEqual(c.allowed, deviation.allowed, `${id} is in the skip table but agrees with the reference`);
  }
}

/** The kinds of {@link OtherCase} that {@link assertOtherCase} checks. */
export const CHECKED_OTHER_KINDS = ['GetPathParamsQuery', 'MaybeEscapePattern', 'IsValidUserAgentToObey'] as const;

/** Asserts one vector of a kind in {@link CHECKED_OTHER_KINDS}; throws for any other kind. */
export function assertOtherCase(c: OtherCase): void {
  const input = c.input ?? '';
  switch (c.kind) {
    case 'GetPathParamsQuery':
      return assert.equal(extractPathAndQuery(input), c.expected, c.id);
    case 'MaybeEscapePattern':
      return assert.equal(normaliseOctets(Buffer.from(input, 'utf8').toString('latin1')), c.expected, c.id);
    case 'IsValidUserAgentToObey':
      return assert.equal(isValidProductToken(input), c.expected, c.id);
    default:
      throw new Error(`${c.id}: vectors of kind ${c.kind} are not checked`);
  }
}

/** Other implementations' vectors (test/fixtures/peers, see its SOURCES). */
export const PEER_FIXTURES_DIR = fileURLToPath(new URL('../fixtures/peers/', import.meta.url));

/** One allowed/disallowed vector of a peer's test suite. */
export interface PeerCase {
  id: string;
  robots: string;
  /** What the peer's test passes as the agent: read as a User-Agent header. */
  agent: string;
  /** Path plus query as the peer's test passes it. */
  path: string;
  /** The peer's expectation. */
  allowed: boolean;
  /** Body and path are octet strings (one char per octet). */
  octets?: boolean;
  /** The line of the rule that decides, as the peer reports it; -1 when none does. */
  line?: number;
}

/** RFC 9309 §2.2.2 keeps reserved characters encoded: `%XX` of a reserved character and the character itself differ; the reference compares them as written too. */
const RESERVED_STAYS_ENCODED =
  'RFC 9309 §2.2.2: a percent-encoded reserved character is not decoded before comparison, so it and the raw character are different paths (the reference agrees); Python decodes both sides';

const CRAWLER_COMMONS = 'crawler-commons-SimpleRobotRulesParserTest.jsonl';
const PROTEGO = 'protego-test_protego.jsonl';
const TEXTING_ROBOTS = 'texting_robots-test.jsonl';
const SPATIE = 'spatie-robots-txt-RobotsTxtTest.jsonl';

/** Skip-table entries for the vectors `ids` of a peer's `file` that share one reason; `allowed` is our verdict, or a function of the id giving it. */
function peerDeviations(file: string, ids: readonly string[], allowed: boolean | ((id: string) => boolean), reason: string): Record<string, { allowed: boolean; reason: string }> {
  return Object.fromEntries(ids.map((id) => [`${file}:${id}`, { allowed: typeof allowed === 'function' ? allowed(id) : allowed, reason }]));
}

/**
 * The peers' part of the skip table: where a peer's test expects another verdict than
 * RFC 9309 (or the reference, where the RFC leaves the choice) gives. Keyed by
 * `file:id`; each entry gives the verdict we give and why.
 */
export const PEER_DEVIATIONS: Record<string, { allowed: boolean; reason: string }> = {
  'cpython-test_robotparser.jsonl:UserAgentGoogleMobileTest#1': {
    allowed: true,
    reason: 'RFC 9309 §2.2.1: Googlebot-Mobile matches its own group exactly; Python takes the first group whose name is a substring of the agent (googlebot)',
  },
  'cpython-test_robotparser.jsonl:UseFirstUserAgentWildcardTest#1': {
    allowed: false,
    reason: 'RFC 9309 §2.2.1: groups for the same token (here two `*` groups) are combined; Python obeys the first only',
  },
  'cpython-test_robotparser.jsonl:PercentEncodingTest#8': {
    allowed: false,
    reason: 'the reference reads the lone % that ends `Disallow: /p2%` as a literal octet that matches the % of any escape (`/p2%F0`); Python reads it as %25',
  },
  'cpython-test_robotparser.jsonl:PercentEncodingTest#58': {
    allowed: true,
    reason: 'a fragment is never sent (RFC 9110 §4.2.4; the proxy drops it, extractPathAndQuery too); given as a path, `#` is a plain octet that `Disallow: /hash%23f` does not name',
  },
  'cpython-test_robotparser.jsonl:PercentEncodingTest#65': { allowed: true, reason: `${RESERVED_STAYS_ENCODED} (%2F; the proxy also decides /sub/dir, an origin's reading, and denies)` },
  'cpython-test_robotparser.jsonl:PercentEncodingTest#67': { allowed: true, reason: `${RESERVED_STAYS_ENCODED} (%2F)` },
  'cpython-test_robotparser.jsonl:PercentEncodingTest#68': { allowed: true, reason: `${RESERVED_STAYS_ENCODED} (%3F)` },
  'cpython-test_robotparser.jsonl:PercentEncodingTest#71': { allowed: true, reason: `${RESERVED_STAYS_ENCODED} (%3F)` },
  ...Object.fromEntries(
    [76, 80, 84, 88, 92, 96, 100, 108, 112, 116, 120, 128, 132, 136, 140].map((n) => [
      `cpython-test_robotparser.jsonl:PercentEncodingTest#${n}`,
      { allowed: true, reason: `${RESERVED_STAYS_ENCODED} (a raw reserved character against \`Disallow: /pc%XX\`)` },
    ]),
  ),
  ...Object.fromEntries(
    [19, 20, 25, 26].map((n) => [
      `robots-parser-Robots.jsonl:should handle Unicode and urlencoded paths#${n}`,
      {
        allowed: true,
        reason:
          'the path holds a lone % (`/%a%a`, `/%E2%9C%BF%atest`), which no valid URI does; it is spelt %25, and a rule that ends in % and one hex digit (`/%a`, `/✿%a`) reads as the start of an escape (`%A?`), as the reference matches `/a%2` against `/a%2F`',
      },
    ]),
  ),
  'temoto-robotstxt_test.jsonl:TestRobotstxtOrgCase2': {
    allowed: false,
    reason: 'RFC 9309 §2.2.1: `User-agent: Google` names Google, not Googlebot (the reference compares whole tokens too); temoto/robotstxt takes a group whose name is a prefix of the agent',
  },
  ...peerDeviations(
    CRAWLER_COMMONS,
    [...[52, 53, 56, 59].map((n) => `testNutchCases#${n}`), 'testMultiAgentNames#1', 'testSpacesInMultipleUserAgentNames#2', 'testSpacesInMultipleUserAgentNames#3'],
    // Agent3 falls to `*`, whose /foo/bar/ we apply to #59 (crawler-commons allows it); the others we allow.
    (id) => id !== 'testNutchCases#59',
    'RFC 9309 §2.1 and §2.2.1: a user-agent line names one product token (`User-agent: Agent2 Agent3`, `User-agent: One, Two, Three` name Agent2 and One; the reference reads the leading [A-Za-z_-] run too); crawler-commons splits the value at spaces and commas into several names',
  ),
  ...peerDeviations(
    CRAWLER_COMMONS,
    [101, 102, 103, 105, 106, 112, 113, 116].map((n) => `testNutchCases#${n}`),
    (id) => Number(id.split('#')[1]) < 112,
    'crawler-commons takes a comma-separated list of its own names and obeys the first group in the file that names any of them (Agent1 here, the test says so); read as a User-Agent header the list is product tokens in the crawler\'s order, and the first with a group (Agent2) decides, as RFC 9309 §2.2.1 has a crawler obey the group of its own product token',
  ),
  [`${CRAWLER_COMMONS}:testHtmlMarkupInRobotsTxt#2`]: {
    allowed: true,
    reason: 'RFC 9309 §2.2.2: `Disallow: /<BR>` is the path /<BR> (the reference reads it so too); crawler-commons strips HTML tags from lines first, so it reads `Disallow: /`',
  },
  [`${CRAWLER_COMMONS}:testBigCrawlDelay#1`]: {
    allowed: true,
    reason: 'RFC 9309 §2.2.2: `Disallow:` (empty) disallows nothing; crawl-delay is not part of RFC 9309 (§2.2.4: other records) and paces, never denies; crawler-commons denies all when the delay exceeds its limit',
  },
  [`${CRAWLER_COMMONS}:testBrokenKrugleRobotsTxtFile#1`]: {
    allowed: false,
    reason:
      'RFC 9309 §2.1: a group is its user-agent lines then its rules; `User-agent: googlebot` / `Crawl-delay: 1` / `User-agent: qihoobot` / `Disallow: /` is one group for both (no rule ends the user-agent run; the reference ends a group only at a user-agent line after a rule, and disallows); crawler-commons ends the group at the crawl-delay line',
  },
  [`${PROTEGO}:test_unicode_url_and_useragent#12`]: {
    allowed: true,
    reason: 'RFC 9309 §2.2.1: a product token is [a-zA-Z_-] only; `Jävla-Foobot` is none, so no crawler obeys its group (the reference reads the line as `J`); Protego compares the whole value, case-folded',
  },
  [`${PROTEGO}:test_unicode_url_and_useragent#15`]: {
    allowed: true,
    reason: 'RFC 9309 §2.2.1: a product token is [a-zA-Z_-] only; `Львів-bot` is none, so its group names no crawler (the reference reads the line as an empty token); Protego matches the Unicode name inside the User-Agent',
  },
  ...peerDeviations(
    PROTEGO,
    [1, 2, 3].map((n) => `test_grouping_unknown_keys#${n}`),
    false,
    'RFC 9309 §2.1: a group is its user-agent lines then its rules, and lines the parser does not know are ignored (§2.2.4), so `User-agent: *` / `Invalid_directive: …` / `User-agent: ia_archiver` / `Disallow: /` is one group for both (the reference agrees: only a rule ends a user-agent run); Protego ends the group at the unknown key',
  ),
  [`${PROTEGO}:test_generosity#3`]: {
    allowed: true,
    reason: 'RFC 9309 §2.1: a user-agent line is `user-agent` and a colon; `user agent harry potter` (a space in the key, no colon, several words) is no line the reference reads either (its missing-colon leniency takes one key and one value), so `disallow /horcrux` stays in foobot\'s group; Protego reads it as the group of `harry potter`',
  },
  [`${PROTEGO}:test_generosity#6`]: {
    allowed: true,
    reason: 'RFC 9309 §2.2.1: a product token has no wildcard; `User-agent: foo*bot` names `foo` (the reference reads the [A-Za-z_-] run too), not foobot; Protego reads * in a user-agent as a wildcard',
  },
  ...peerDeviations(
    PROTEGO,
    ['test_special_symbols_dual_behaviour#2', 'test_special_symbols_dual_behaviour#3'],
    true,
    'RFC 9309 §2.2.3: a $ that ends a pattern is the end of the path, so `Disallow: /x/abc$` matches /x/abc only (the reference agrees); Protego also matches a path with a literal $ (or %24) there',
  ),
  [`${PROTEGO}:test_with_absolute_urls#2`]: {
    allowed: true,
    reason: 'RFC 9309 §2.2.2: a rule\'s path starts with /; `Disallow: http://ms-web00.walkerplus.com/` matches no path (nor in the reference, which matches it from the path\'s first octet); Protego puts a / in front of it',
  },
  ...peerDeviations(
    TEXTING_ROBOTS,
    ['test_reppy_no_leading_user_agent#2', 'test_google_order_of_precedence#5', 'test_google_order_of_precedence#6', 'test_google_order_of_precedence#8'],
    true,
    'RFC 9309 §2.1: rules belong to the group of the user-agent lines before them; rules before any user-agent line are in no group and bind no crawler (the reference ignores them too); texting_robots applies them to every agent',
  ),
  [`${TEXTING_ROBOTS}:test_reppy_skips_malformed_line#1`]: {
    allowed: false,
    reason:
      'RFC 9309 §2.1 has crawlers parse each line and use the parseable rules; the reference reads `Disallow /path` (a key, one space, a value, no colon) as a rule, and so do Google\'s tests (test/fixtures/conformance); texting_robots follows reppy and skips it (its own comment notes the conflict with Google)',
  },
  [`${TEXTING_ROBOTS}:test_google_encoding#8`]: {
    allowed: true,
    reason: 'RFC 9309 §2.2.2: %62%61%7A encodes unreserved octets, which are decoded before comparison, so `Allow: /foo/bar/%62%61%7A` is /foo/bar/baz (the reference keeps them encoded, and texting_robots copies its test)',
  },
  [`${SPATIE}:it_can_handle_wildcard_and_user_agent#2`]: {
    allowed: false,
    reason:
      'RFC 9309 §2.2.1: a product token has no wildcard, and a crawler obeys the group of its own token; `User-agent: googlebot*` names googlebot, not googlebot-news (the reference compares whole tokens too), so googlebot-news obeys `*`, which disallows /; spatie/robots-txt reads * in a user-agent as a wildcard',
  },
  'cpython-test_robotparser.jsonl:LocalNetworkTestCase#8': { allowed: true, reason: `${RESERVED_STAYS_ENCODED} (%2F against \`Disallow: //[spam]/path\`)` },
};

/** The path a peer's case sends: raw octets >= 0x80 percent-encoded, as an HTTP client sends them (the proxy answers 400 to raw ones). */
function pathSent(c: PeerCase): string {
  if (c.octets !== true) return c.path;
  return c.path.replace(/[\x80-\xff]/g, (ch) => '%' + ch.charCodeAt(0).toString(16).toUpperCase());
}

/** The verdict this project must give for a peer's case of `file`: the peer's, unless {@link PEER_DEVIATIONS} says otherwise. */
export function expectedPeerVerdict(file: string, c: PeerCase): boolean {
  return PEER_DEVIATIONS[`${file}:${c.id}`]?.allowed ?? c.allowed;
}

/** Asserts the engine's verdict on one peer case: the agent read as a User-Agent header, the body parsed as bytes. */
export function assertPeerCase(file: string, c: PeerCase): void {
  const expected = expectedPeerVerdict(file, c);
  const body = c.octets === true ? Buffer.from(c.robots, 'latin1') : c.robots;
  const result = evaluate(parseRobotsTxt(body), extractProductTokens(c.agent), pathSent(c));
  assert.equal(result.allowed, expected, `${file} ${c.id}: expected ${expected ? 'allowed' : 'disallowed'} for ${JSON.stringify(c.path)} as ${JSON.stringify(c.agent)}`);
  if (c.line !== undefined) assert.equal(result.rule?.line ?? -1, c.line, `${file} ${c.id}: the deciding rule's line`);
}

/** Asserts that every peer skip-table entry of `file` names a case that exists and differs from the peer. */
export function assertPeerDeviationsExist(file: string, cases: readonly PeerCase[]): void {
  for (const [key, deviation] of Object.entries(PEER_DEVIATIONS)) {
    if (!key.startsWith(`${file}:`)) continue;
    const c = cases.find((x) => `${file}:${x.id}` === key);
    assert.ok(c, `${key} is in the skip table but not in the vectors`);
    assert.notEqual(c.allowed, deviation.allowed, `${key} is in the skip table but agrees with the peer`);
  }
}
