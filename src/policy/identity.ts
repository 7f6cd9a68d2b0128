/**
 * Identities (issue 8): who a client is to the operator, and what that means for the product
 * tokens its requests are decided for. Pure: no I/O, no clock. Extension, not in RFC 9309.
 *
 * An identity is a name: the user of a proxy credential, or the name a client range gives its
 * clients (`access.clients`). It may be bound to product tokens (`identities.<name>.tokens`):
 * then its requests are decided for those tokens whatever the User-Agent says, so a scraper
 * cannot escape the rules written for it by sending a browser's User-Agent or another bot's name.
 */
import type { DecisionIdentity } from './decision.js';

/** What the proxy does with the outgoing User-Agent of an identity's requests. */
export type UserAgentRewrite =
  /** Forward the client's User-Agent unchanged. */
  | { mode: 'keep' }
  /** Replace it with `value` (so the origin sees who is really crawling). */
  | { mode: 'set'; value: string }
  /** Append the first bound token to the client's own, unless it already names a bound token. */
  | { mode: 'append' };

/** What to do when a bound identity's User-Agent does not name any of its bound tokens (see {@link identifyAgent}). */
export type MismatchAction = 'flag' | 'deny';

/** An identity as admission establishes it, with what the configuration binds to it. */
export interface Identity {
  /** The name: a credentials user (or the identity its line names), or a client range's `identity`. */
  readonly name: string;
  /** How it was established: `credentials` (`Proxy-Authorization`) or `client-range` (the client's address). */
  readonly source: 'credentials' | 'client-range';
  /** Product tokens the identity is decided for (RFC 9309 §2.2.1), best first; empty: unbound, the User-Agent decides. */
  readonly boundTokens: readonly string[];
  /** What a bound identity's mismatching User-Agent gets: `flag` (decided for the bound tokens, logged and counted) or `deny` (403 `identity-mismatch`). */
  readonly onMismatch: MismatchAction;
  /** The outgoing User-Agent. */
  readonly userAgent: UserAgentRewrite;
}

/** What {@link identifyAgent} found: the tokens to decide for, and the identity facts the Decision carries. */
export interface AgentIdentification {
  /** The candidate product tokens to decide for, best first: the bound tokens of a bound identity, else those of the User-Agent. */
  productTokens: readonly string[];
  /** The identity facts for `Decision.identity`; null without an identity. */
  identity: DecisionIdentity | null;
  /** True when a bound identity's User-Agent names none of its tokens and its `onMismatch` is `deny`. */
  isRefused: boolean;
}

/** Product tokens compare case-insensitively (RFC 9309 §2.2.1). */
function sameToken(a: string, b: string): boolean {
  return a.length === b.length && a.toLowerCase() === b.toLowerCase();
}

/**
 * The product tokens a request is decided for, given who sent it. Without an identity, or with
 * an unbound one, the User-Agent's candidates decide. A bound identity is decided for its bound
 * tokens; its User-Agent is a mismatch when it names none of them: another bot's name, a
 * browser's User-Agent (which names no crawler at all), or none. The User-Agent's candidates are
 * recorded in `identity.claimedTokens`, a mismatch in `isMismatch`.
 * The result, and its `identity`, are frozen and shared: a client sends request after request with
 * one identity and one User-Agent (whose token array the pipeline keeps, the same array each time),
 * so the last result per identity is remembered and returned again for the same `agentTokens` array
 * (no objects per request; the access line encodes a repeated `identity` once, access-line.ts).
 * Pure (the memo only saves work); never throws.
 * @param identity who the client is, or null.
 * @param agentTokens candidate product tokens from the User-Agent, best first (`extractProductTokens`).
 */
export function identifyAgent(identity: Identity | null, agentTokens: readonly string[]): AgentIdentification {
  if (identity === null) {
    if (agentTokens !== lastAnonymous.productTokens) lastAnonymous = Object.freeze({ productTokens: agentTokens, identity: null, isRefused: false });
    return lastAnonymous;
  }
  if (identity === lastIdentity && agentTokens === lastIdentified.identity!.claimedTokens) return lastIdentified;
  let identified = lastByIdentity.get(identity);
  if (identified === undefined || identified.identity!.claimedTokens !== agentTokens) {
    identified = Object.freeze(identify(identity, agentTokens));
    lastByIdentity.set(identity, identified);
  }
  lastIdentity = identity;
  lastIdentified = identified;
  return identified;
}

/** The identity of the latest request with one, and its identification (compared before the WeakMap's look-up: cheaper). */
let lastIdentity: Identity | undefined = undefined;
let lastIdentified: AgentIdentification = Object.freeze({ productTokens: [], identity: null, isRefused: false });

/** {@link identifyAgent} of the latest anonymous request. */
let lastAnonymous: AgentIdentification = Object.freeze({ productTokens: [], identity: null, isRefused: false });
/** {@link identifyAgent} of each identity's latest request (identities are made once per configuration: access-control.ts). */
const lastByIdentity = new WeakMap<Identity, AgentIdentification>();

/** {@link identifyAgent} made anew, its `identity` frozen. */
function identify(identity: Identity, agentTokens: readonly string[]): AgentIdentification {
  const isBound = identity.boundTokens.length > 0;
  const isMismatch = isBound && !agentTokens.some((claimed) => identity.boundTokens.some((bound) => sameToken(claimed, bound)));
  const facts: DecisionIdentity = Object.freeze({ name: identity.name, source: identity.source, boundTokens: identity.boundTokens, claimedTokens: agentTokens, isMismatch });
  if (!isBound) return { productTokens: agentTokens, identity: facts, isRefused: false };
  return { productTokens: identity.boundTokens, identity: facts, isRefused: isMismatch && identity.onMismatch === 'deny' };
}

/**
 * The User-Agent to send upstream for `identity`'s request (see {@link UserAgentRewrite}).
 * `append` adds the first bound token after a space, unless the header already names a bound
 * token (whole-word, any case) or the identity is unbound; an absent header becomes the token.
 * Pure; never throws.
 * @param original the client's User-Agent, or undefined when absent.
 * @param agentTokens its candidate product tokens.
 * @returns the header value, or undefined to send none (the client sent none, and nothing is set).
 */
export function outgoingUserAgent(identity: Identity | null, original: string | undefined, agentTokens: readonly string[]): string | undefined {
  if (identity === null) return original;
  const rewrite = identity.userAgent;
  if (rewrite.mode === 'set') return rewrite.value;
  if (rewrite.mode === 'keep') return original;
  const token = identity.boundTokens[0];
  if (token === undefined) return original;
  if (agentTokens.some((claimed) => identity.boundTokens.some((bound) => sameToken(claimed, bound)))) return original;
  return original === undefined || original.trim() === '' ? token : `${original} ${token}`;
}
