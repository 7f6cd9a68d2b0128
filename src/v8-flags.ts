/**
 * V8 flags the proxy sets on itself, before any other module of the program is
 * loaded: `src/cli.ts` imports this module first (ES modules evaluate their
 * imports in order), so the flags hold for every process started through
 * `dist/cli.js` (`npm start`, the Dockerfile's entry point, the `robots-proxy` bin).
 *
 * `--no-allocation-site-pretenuring`: during a process's first second requests
 * wait for robots.txt fetches, so the objects of some allocation sites (object
 * and array literals on the request path) outlive a scavenge or two, V8 marks
 * those sites "tenure" and allocates their objects in old space for the rest of
 * the process's life. A dead old-space object is only reclaimed by a
 * mark-compact, and until then everything young it references (the request,
 * the response, buffers, closures) survives scavenges through the old-to-new
 * remembered set and is promoted: about 1.7 MB per scavenge, 90% promoted, in
 * some processes and not others, +15-27 µs of CPU per request (bench/PROFILE.md,
 * "The GC state is V8's allocation-site pretenuring"). Without the feedback
 * every object starts young and the dead ones die in the next scavenge.
 *
 * A flag named on node's own command line (`process.execArgv`, in either form,
 * e.g. `node --allocation-site-pretenuring dist/cli.js serve` to measure the
 * difference) is left as given.
 */
import { setFlagsFromString } from 'node:v8';

/** The flags, as `node` takes them on its command line. */
export const PROXY_V8_FLAGS: readonly string[] = ['--no-allocation-site-pretenuring'];

/** `--no-foo` and `--foo` both name `foo`. */
function flagName(flag: string): string {
  return flag.replace(/^--(no-)?/, '').split('=')[0]!.replace(/_/g, '-');
}

const given = new Set(process.execArgv.filter((arg) => arg.startsWith('--')).map(flagName));
for (const flag of PROXY_V8_FLAGS) if (!given.has(flagName(flag))) setFlagsFromString(flag);
