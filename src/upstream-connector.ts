/**
 * The rules every upstream connection follows, the forwarder's pools (proxy/) and the robots.txt
 * fetch (cache/, main.ts) alike, applied by one wrapper so no caller can take one without the other:
 * a TCP reset fails the response in flight whatever its framing (upstream-resets.ts), and an
 * unsolicited `100 Continue` before a response is read past (upstream-continue.ts).
 */
import type { buildConnector } from 'undici';
import { resetsFailResponses } from './upstream-resets.js';
import { skipsUnsolicitedContinue } from './upstream-continue.js';

/**
 * `connector` with both rules on every connection it makes. A connect that fails hands no socket
 * and is passed on as it is. Never throws.
 */
export function upstreamConnector(connector: buildConnector.connector): buildConnector.connector {
  return resetsFailResponses(skipsUnsolicitedContinue(connector));
}
