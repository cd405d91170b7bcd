/**
 * `compute` made once per key and kept: for what a webhook needs per account or per callback and
 * costs more to make than to look up (an HMAC key, a parsed callback URL). Past `maxKeys` keys the
 * cache starts over; a bound on memory, not an LRU.
 */
export function cachePerKey<V>(maxKeys: number, compute: (key: string) => V): (key: string) => V {
  const values = new Map<string, V>();
  return (key) => {
    let value = values.get(key);
    if (value === undefined) {
      value = compute(key);
      if (values.size >= maxKeys) values.clear();
      values.set(key, value);
    }
    return value;
  };
}
