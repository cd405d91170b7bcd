/**
 * The text of a mobile-originated message from its bytes and its `data_coding` (design
 * "Two-way messaging": "then decoded"). Pure. Always applied to a whole message's bytes, after
 * reassembly, so that a character split across two parts (a UCS-2 surrogate pair, a GSM escape
 * and the character it escapes) is decoded whole.
 *
 * - `data_coding` 0: the carrier's default alphabet, `SMS_MO_DEFAULT_ALPHABET`: GSM 03.38 (the
 *   default), IA5/ASCII or Latin-1.
 * - 1 IA5 (ASCII), 3 Latin-1 (ISO-8859-1), 8 UCS-2, read as UTF-16BE so that surrogate pairs
 *   (emoji) are characters; 2 and 4 (8-bit binary) are read byte per character, as Latin-1.
 * - Values above 0x0F are GSM 03.38 data coding schemes (3GPP TS 23.038): their alphabet bits
 *   say GSM 7-bit, 8-bit or UCS-2.
 * - GSM 03.38 comes one septet per byte, as SMPP carries it (unpacked). An escape (0x1B) takes
 *   the next septet from the extension table (`€`, `[`, `{`, `|`, `~`...); an escape before a
 *   septet the extension table lacks gives that septet's basic character (TS 23.038 6.2.1.1).
 *   A byte above 0x7F is no septet: U+FFFD. National language shift tables are not supported.
 * - A byte sequence that is not valid UTF-16 (a lone surrogate, an odd byte) gives U+FFFD there.
 */

export type DefaultAlphabet = "gsm7" | "ia5" | "latin1";

export const DEFAULT_ALPHABETS: readonly DefaultAlphabet[] = ["gsm7", "ia5", "latin1"];

type Alphabet = DefaultAlphabet | "ucs2";

// GSM 03.38 basic character set, septets 0x00-0x7F (0x1B is the escape, never printed).
const GSM_BASIC =
  "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\u001bÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
  "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";

// GSM 03.38 extension table: the septet after an escape.
const GSM_EXTENSION = new Map<number, string>([
  [0x0a, "\f"],
  [0x14, "^"],
  [0x28, "{"],
  [0x29, "}"],
  [0x2f, "\\"],
  [0x3c, "["],
  [0x3d, "~"],
  [0x3e, "]"],
  [0x40, "|"],
  [0x65, "€"],
]);

const ESCAPE = 0x1b;
const REPLACEMENT = "\ufffd";
const utf16be = new TextDecoder("utf-16be");

/** The alphabet a data_coding value names. */
export function alphabetOf(dataCoding: number, byDefault: DefaultAlphabet): Alphabet {
  if (dataCoding <= 0x0f) {
    switch (dataCoding) {
      case 0:
        return byDefault;
      case 1:
        return "ia5";
      case 8:
        return "ucs2";
      default:
        // 3 Latin-1; 2 and 4 binary; the national codings (5, 6, 7, 10, 13, 14) are not decoded.
        return "latin1";
    }
  }
  // TS 23.038: general data coding groups 00xx and 01xx, bits 3-2 the alphabet.
  if ((dataCoding & 0x80) === 0) return alphabetBits((dataCoding >> 2) & 0x03);
  // Message waiting groups: 1100 and 1101 GSM 7-bit, 1110 UCS-2.
  if ((dataCoding & 0xf0) === 0xc0 || (dataCoding & 0xf0) === 0xd0) return "gsm7";
  if ((dataCoding & 0xf0) === 0xe0) return "ucs2";
  // Data coding/message class group 1111: bit 2 is 8-bit data, else GSM 7-bit.
  if ((dataCoding & 0xf0) === 0xf0) return dataCoding & 0x04 ? "latin1" : "gsm7";
  return "latin1";
}

function alphabetBits(bits: number): Alphabet {
  if (bits === 0) return "gsm7";
  if (bits === 2) return "ucs2";
  return "latin1";
}

/** The text of a whole message's bytes. */
export function decodeText(
  bytes: Uint8Array,
  dataCoding: number,
  byDefault: DefaultAlphabet = "gsm7",
): string {
  switch (alphabetOf(dataCoding, byDefault)) {
    case "gsm7":
      return decodeGsm7(bytes);
    case "ucs2":
      return utf16be.decode(bytes);
    case "ia5":
      return decodeIa5(bytes);
    case "latin1":
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
  }
}

/** GSM 03.38, one septet per byte. */
export function decodeGsm7(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i++) {
    const septet = bytes[i] as number;
    if (septet > 0x7f) {
      text += REPLACEMENT;
      continue;
    }
    if (septet !== ESCAPE) {
      text += GSM_BASIC[septet];
      continue;
    }
    const next = bytes[i + 1];
    // A lone escape at the end stands for nothing.
    if (next === undefined) break;
    i++;
    if (next > 0x7f) text += REPLACEMENT;
    else text += GSM_EXTENSION.get(next) ?? (next === ESCAPE ? " " : GSM_BASIC[next]);
  }
  return text;
}

/** GSM 03.38 bytes of a text made of its characters (tests, the simulator); undefined if one is not. */
export function encodeGsm7(text: string): Buffer | undefined {
  const bytes: number[] = [];
  for (const char of text) {
    const basic = char === "\u001b" ? -1 : GSM_BASIC.indexOf(char);
    if (basic >= 0) {
      bytes.push(basic);
      continue;
    }
    const extension = [...GSM_EXTENSION].find(([, c]) => c === char)?.[0];
    if (extension === undefined) return undefined;
    bytes.push(ESCAPE, extension);
  }
  return Buffer.from(bytes);
}

/** IA5 (ASCII): a byte above 0x7F is no IA5 character. */
function decodeIa5(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += byte > 0x7f ? REPLACEMENT : String.fromCharCode(byte);
  return text;
}
