// For the shape scanners' tests: a body fed in the chunks that cut points split it into.

/** Feeds `bytes` to `scanner` cut at `cuts` (taken modulo its length); the first violation, if any. */
export function feedInChunks(
  scanner: { feed(chunk: Uint8Array): string | undefined },
  bytes: Uint8Array,
  cuts: number[],
): string | undefined {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  let start = 0;
  for (const end of [...points, bytes.length]) {
    const violation = scanner.feed(bytes.subarray(start, end));
    if (violation) return violation;
    start = end;
  }
  return undefined;
}
