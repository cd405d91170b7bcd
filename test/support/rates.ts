/** Rate checks over logged submission times (ms): what a carrier's throughput limit allows. */

/**
 * The worst excess over a token bucket of `tps` and `burst`: max over i <= j of
 * (j - i + 1) - burst - tps x (t_j - t_i), for `times` sorted ascending. At most 0 for a bucket
 * that held; above 0 only when more parts went in some stretch of time than the rate allows.
 */
export function worstExcess(times: readonly number[], tps: number, burst: number): number {
  let worst = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < times.length; i++) {
    for (let j = i; j < times.length; j++) {
      const allowed = burst + (tps * ((times[j] as number) - (times[i] as number))) / 1000;
      worst = Math.max(worst, j - i + 1 - allowed);
    }
  }
  return worst;
}
