/**
 * The `smpp` package as the adapter uses it, with one change: an incoming `deliver_sm`'s
 * `short_message`, and the `message_payload` TLV of any PDU, are left as the raw bytes that came
 * (UDH included) instead of being decoded by `data_coding`, as the package's author advises for
 * whoever needs the original message (farhadi/node-smpp#30). The package decodes each part on its
 * own, through its own GSM table: a UCS-2 surrogate pair split across two parts, or a GSM escape
 * at a part's end, would be broken before reassembly (src/inbound/). Encoding is unchanged: the
 * adapter writes Buffers, which the package's encoder passes through.
 *
 * Two more, for carriers that write what the specification's examples do not (docs/design.md
 * "Carrier-grade SMPP"): the package's own cap of 16384 octets is lifted (framing and its limit
 * are ours: pdu-framer.ts), and a C-string TLV (`receipted_message_id`...) is read within its
 * length, its NULs dropped: the package read on to the next NUL of the PDU, so an id written
 * without its NUL took the next TLV's bytes with it.
 *
 * Every import of the package in src/ goes through this module, so every PDU the adapter reads
 * is decoded the same way.
 */
import smpp from "smpp";

type Filter = NonNullable<(typeof smpp.tlvs)[string]["filter"]>;

function keepRaw(field: { filter?: Filter } | undefined): void {
  const filter = field?.filter;
  if (!field || !filter) throw new Error("smpp: the package's message filters moved");
  field.filter = { encode: filter.encode, decode: (value: unknown) => value };
}

keepRaw(smpp.commands.deliver_sm?.params?.short_message);
keepRaw(smpp.tlvs.message_payload);

smpp.PDU.maxLength = Number.POSITIVE_INFINITY;

const cstring = smpp.types.tlv.cstring;
const boundedCString = {
  ...cstring,
  read: (buffer: Buffer, offset: number, length = 0) =>
    buffer.toString("ascii", offset, offset + length).replace(/\0+$/, ""),
};
for (const tlv of Object.values(smpp.tlvs)) if (tlv.type === cstring) tlv.type = boundedCString;

export default smpp;
