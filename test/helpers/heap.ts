/**
 * Heap readings for memory tests and the calibration bench: gc() is exposed
 * at run time (no --expose-gc flag needed), then heapUsed is read after two
 * full collections.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Bytes of heap in use after two full garbage collections. */
export function heapUsedAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Two full garbage collections (to test that something became unreachable, through a WeakRef). */
export function collectGarbage(): void {
  gc();
  gc();
}
