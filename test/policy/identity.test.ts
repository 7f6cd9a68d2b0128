// run-tests: in-process
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { identifyAgent, outgoingUserAgent, type Identity } from '../../src/policy/identity.js';
import { extractProductTokens } from '../../src/robots/agent.js';

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';

function identity(overrides: Partial<Identity> = {}): Identity {
  return { name: 'lab-scrapers', source: 'credentials', boundTokens: ['ExampleBot'], onMismatch: 'flag', userAgent: { mode: 'keep' }, ...overrides };
}

test('without an identity the User-Agent decides and no identity facts are recorded', () => {
  const got = identifyAgent(null, ['GPTBot']);
  assert.deepEqual(got.productTokens, ['GPTBot']);
  assert.equal(got.identity, null);
  assert.equal(got.isRefused, false);
});

test('an unbound identity is named but the User-Agent still decides', () => {
  const got = identifyAgent(identity({ boundTokens: [] }), ['GPTBot']);
  assert.deepEqual(got.productTokens, ['GPTBot']);
  assert.equal(got.identity?.name, 'lab-scrapers');
  assert.equal(got.identity?.isMismatch, false);
});

test('a bound identity sending a browser User-Agent is decided for its bound token and flagged', () => {
  const tokens = extractProductTokens(`${CHROME} SneakyScraper/1.0`);
  const got = identifyAgent(identity(), tokens);
  assert.deepEqual(got.productTokens, ['ExampleBot']);
  assert.equal(got.identity?.isMismatch, true);
  assert.deepEqual(got.identity?.claimedTokens, ['SneakyScraper']);
  assert.equal(got.isRefused, false);
});

test('a bound identity naming its own token (any case) is not a mismatch', () => {
  const got = identifyAgent(identity({ boundTokens: ['ExampleBot', 'ExampleImages'] }), ['examplebot', 'Other']);
  assert.equal(got.identity?.isMismatch, false);
  assert.deepEqual(got.productTokens, ['ExampleBot', 'ExampleImages']);
});

test('a browser User-Agent naming no token is a mismatch too; with onMismatch deny it is refused', () => {
  assert.deepEqual(extractProductTokens(CHROME), []);
  const flagged = identifyAgent(identity(), extractProductTokens(CHROME));
  assert.equal(flagged.identity?.isMismatch, true);
  assert.equal(flagged.isRefused, false);
  assert.deepEqual(flagged.productTokens, ['ExampleBot']);
  const refused = identifyAgent(identity({ onMismatch: 'deny' }), extractProductTokens(CHROME));
  assert.equal(refused.isRefused, true);
});

test('onMismatch deny refuses another bot name', () => {
  const got = identifyAgent(identity({ onMismatch: 'deny' }), ['GPTBot']);
  assert.equal(got.isRefused, true);
  assert.equal(got.identity?.isMismatch, true);
});

test('outgoing User-Agent: keep, set, append', () => {
  assert.equal(outgoingUserAgent(null, 'X/1', ['X']), 'X/1');
  assert.equal(outgoingUserAgent(identity(), CHROME, []), CHROME);
  assert.equal(outgoingUserAgent(identity({ userAgent: { mode: 'set', value: 'ExampleBot/2.0 (+https://example.com/bot)' } }), CHROME, []), 'ExampleBot/2.0 (+https://example.com/bot)');
  const append = identity({ userAgent: { mode: 'append' } });
  assert.equal(outgoingUserAgent(append, CHROME, []), `${CHROME} ExampleBot`);
  assert.equal(outgoingUserAgent(append, 'examplebot/1.0', ['examplebot']), 'examplebot/1.0');
  assert.equal(outgoingUserAgent(append, undefined, []), 'ExampleBot');
  assert.equal(outgoingUserAgent(identity({ boundTokens: [], userAgent: { mode: 'append' } }), 'X/1', ['X']), 'X/1');
});

test('the same identity and token array get the same frozen identification; another array, identity or reload a new one', () => {
  const bound = identity();
  const tokens = extractProductTokens('ExampleBot/2.1');
  const got = identifyAgent(bound, tokens);
  assert.equal(identifyAgent(bound, tokens), got);
  assert.ok(Object.isFrozen(got) && Object.isFrozen(got.identity));
  assert.equal(got.identity?.isMismatch, false);
  const other = identifyAgent(bound, ['GPTBot']);
  assert.notEqual(other, got);
  assert.equal(other.identity?.isMismatch, true);
  assert.deepEqual(other.identity?.claimedTokens, ['GPTBot']);
  // A reload makes new Identity objects: its binding applies at once.
  const reloaded = identifyAgent(identity({ boundTokens: ['GPTBot'], onMismatch: 'deny' }), tokens);
  assert.equal(reloaded.isRefused, true);
  assert.deepEqual(reloaded.productTokens, ['GPTBot']);
  const anonymous = identifyAgent(null, tokens);
  assert.equal(identifyAgent(null, tokens), anonymous);
  assert.equal(anonymous.productTokens, tokens);
  assert.deepEqual(identifyAgent(null, ['GPTBot']).productTokens, ['GPTBot']);
});
