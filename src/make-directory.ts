/**
 * Creating a directory and its missing parents, failing fast.
 *
 * Node's own `mkdir(path, { recursive: true })` never returns when a parent
 * exists but refuses children with ENOENT (`/proc/nope`: measured spinning a
 * core for as long as it was let run, Node 20 and 22), so the parents are
 * created one at a time here and each is tried once.
 */
import { mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/**
 * Creates `path` and any missing parent, each with `mode` (before the umask).
 * An existing directory is fine.
 * @throws the `fs` error (`ENOENT`, `EACCES`, `EROFS`, `ENOTDIR`...) of the
 *   first directory that could not be created; `ENOTDIR` when `path` exists
 *   and is not a directory.
 */
export async function makeDirectory(path: string, mode: number): Promise<void> {
  const absolute = resolve(path);
  try {
    await mkdir(absolute, { mode });
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return assertDirectory(absolute, error);
    const parent = dirname(absolute);
    if (code !== 'ENOENT' || parent === absolute) throw error;
    await makeDirectory(parent, mode);
  }
  // The parent exists now: one more try, and its error (ENOENT again from /proc) is final.
  try {
    await mkdir(absolute, { mode });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    await assertDirectory(absolute, error);
  }
}

async function assertDirectory(path: string, cause: unknown): Promise<void> {
  if ((await stat(path)).isDirectory()) return;
  const error: NodeJS.ErrnoException = new Error(`${path} exists and is not a directory`, { cause });
  error.code = 'ENOTDIR';
  error.path = path;
  throw error;
}
