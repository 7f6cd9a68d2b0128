/**
 * A name resolver with `dns.lookup`'s signature for the target guard, so a
 * test can map a name to loopback (as `vm` in /etc/hosts would) without
 * editing /etc/hosts on a shared machine.
 */
import { lookup as dnsLookup } from 'node:dns';

/**
 * A resolver that answers `answer(hostname)` (IP addresses, in order), and
 * asks the system for names it returns undefined for.
 */
export function fakeResolver(answer: (hostname: string) => string[] | undefined): typeof dnsLookup {
  const resolve = (hostname: string, options: { all?: boolean }, callback: (err: NodeJS.ErrnoException | null, address: unknown, family?: number) => void): void => {
    const addresses = answer(hostname);
    if (addresses === undefined) return void dnsLookup(hostname, options as never, callback as never);
    const list = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    if (list.length === 0) return callback(Object.assign(new Error(`${hostname} not found`), { code: 'ENOTFOUND' }), options.all ? [] : undefined);
    if (options.all) return callback(null, list);
    callback(null, list[0]!.address, list[0]!.family);
  };
  return resolve as unknown as typeof dnsLookup;
}
