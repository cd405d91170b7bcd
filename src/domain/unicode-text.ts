/**
 * Text must be Unicode: every parameter is UTF-8 on the wire, and UTF-8 cannot carry a lone
 * surrogate. JSON can (`"\ud800"`); re-encoding such a string (to protobuf, to BSON) would
 * silently turn it into U+FFFD, so the REST parser refuses it. (Connect JSON and protobuf binary
 * requests are refused by protobuf-es itself when decoded.) Pure: no I/O.
 */

// With the `u` flag a well-formed pair is read as one astral code point, so only lone halves match.
const LONE_SURROGATE = /\p{Cs}/u;

/** False when the string holds a UTF-16 surrogate that is not half of a pair. */
export function isWellFormedUnicode(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}
