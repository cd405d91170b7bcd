/**
 * `_id` condition for a chunk of ids: `$in` with the chunk's range in front. Same meaning; on the
 * test emulator (which checks a `$in` list linearly against every document it scans) the range
 * turns most documents away cheaply, several times faster for chunks of hundreds. Put it first in
 * the filter.
 */
export function idsIn<T extends number | string>(
  ids: readonly T[],
): { $gte: T; $lte: T; $in: T[] } {
  let min = ids[0] as T;
  let max = ids[0] as T;
  for (const id of ids) {
    if (id < min) min = id;
    if (id > max) max = id;
  }
  return { $gte: min, $lte: max, $in: [...ids] };
}
