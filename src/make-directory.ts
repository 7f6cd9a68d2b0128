/**
 * Creating a directory and its missing parents, failing fast.
 *
 * Node's own `mkdir(path, { recursive: true })` never returns when a parent
 * exists but refuses children with ENOENT (`/proc/nope`: measured spinning a
 * core for as long as it was let run, Node 20 and 22; `mkdirSync` the same,
 * with the event loop blocked), so the parents are created one at a time here
 * and each is tried once.
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Creates `path` and any missing parent, each with `mode` (before the umask).
 * An existing directory is fine. Synchronous (a few system calls): for the
 * edges that open a file at once (the ledger, the admin token file).
 * @throws the `fs` error (`ENOENT`, `EACCES`, `EROFS`, `ENOTDIR`...) of the
 *   first directory that could not be created; `ENOTDIR` when `path` exists
 *   and is not a directory.
 */
export function makeDirectorySync(path: string, mode: number): void {
  const absolute = resolve(path);
  try {
    mkdirSync(absolute, { mode });
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return assertDirectory(absolute, error);
    const parent = dirname(absolute);
    if (code !== 'ENOENT' || parent === absolute) throw error;
    makeDirectorySync(parent, mode);
  }
  // The parent exists now: one more try, and its error (ENOENT again from /proc) is final.
  try {
    mkdirSync(absolute, { mode });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    assertDirectory(absolute, error);
  }
}

/** {@link makeDirectorySync}, as a promise (rejected with its error). */
export async function makeDirectory(path: string, mode: number): Promise<void> {
  makeDirectorySync(path, mode);
}

function assertDirectory(path: string, cause: unknown): void {
  if (statSync(path).isDirectory()) return;
  const error: NodeJS.ErrnoException = new Error(`${path} exists and is not a directory`, { cause });
  error.code = 'ENOTDIR';
  error.path = path;
  throw error;
}
