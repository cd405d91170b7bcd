/**
 * A Connect JSON body that sets plain scalar fields only is read into the message fromJson makes
 * of its known fields (src/rpc/json-inputs.ts); anything else is left to that way.
 */
import { type DescMessage, fromJson, toBinary, toJsonString } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { SendBatchRequestSchema, SendMessageRequestSchema } from "../../gen/sms/v1/messaging_pb.ts";
import { keepKnown } from "../../src/request-bodies/json-decoding.ts";
import { plainInputReader } from "../../src/rpc/json-inputs.ts";
import { knownFieldsOfMessage } from "../../src/rpc/json-requests.ts";

/** What call-requests.ts made of a body before, or the error it threw. */
function usual(desc: DescMessage, json: unknown) {
  return fromJson(desc, keepKnown(json, knownFieldsOfMessage(desc)) as never);
}

const BODIES: unknown[] = [
  { to: "+4915112345678", text: "Hello" },
  { to: "+4915112345678", text: "Hello", unknown: { deep: [1, 2] }, another: null },
  { to: "", text: "", from: "" },
  { to: "1", text: "x", from: "SMS", ttl: 60, statusCallback: "https://a.example/x" },
  { to: "1", text: "x", ttl_seconds: 60, status_callback: "u", client_ref: "r" },
  { to: "1", text: "x", clientRef: "r", ignoreQuietHours: true },
  { to: "1", text: "x", ignore_quiet_hours: false, ttl: 0 },
  { to: "1", text: "x", ttl: -2147483648 },
  { to: "1", text: "x", sender: "S" },
  JSON.parse('{"to":"1","__proto__":{"text":"x"},"text":"y"}'),
  JSON.parse('{"constructor":"c","toString":"t","to":"1"}'),
  {},
];

/** Bodies the reader leaves to the usual way (which reads or refuses them). */
const LEFT: unknown[] = [
  { to: null, text: "x" },
  { to: "1", text: "a\ud800b" },
  { to: 5, text: "x" },
  { to: "1", text: "x", ttl: "60" },
  { to: "1", text: "x", ttl: 1.5 },
  { to: "1", text: "x", ttl: 2147483648 },
  { to: "1", text: "x", from: "A", sender: "B" },
  { to: "1", text: "x", ttl: 5, ttl_seconds: 6 },
  { to: "1", text: "x", sendAt: "2030-01-01T00:00:00Z" },
  { to: "1", text: "x", ignoreQuietHours: "true" },
  { to: ["1"], text: "x" },
  [],
  null,
  "text",
];

describe("plainInputReader", () => {
  const read = plainInputReader(SendMessageRequestSchema);

  it("makes the message fromJson makes of the known fields", () => {
    for (const body of BODIES) {
      const message = read(body);
      expect(message, JSON.stringify(body)).toBeDefined();
      const expected = usual(SendMessageRequestSchema, body);
      expect(toBinary(SendMessageRequestSchema, message as never)).toEqual(
        toBinary(SendMessageRequestSchema, expected as never),
      );
      expect(toJsonString(SendMessageRequestSchema, message as never)).toBe(
        toJsonString(SendMessageRequestSchema, expected as never),
      );
    }
  });

  it("leaves everything else to fromJson", () => {
    for (const body of LEFT) expect(read(body), JSON.stringify(body)).toBeUndefined();
  });

  it("leaves a type's lists to fromJson", () => {
    const batch = plainInputReader(SendBatchRequestSchema);
    expect(batch({ messages: [{ to: "1", text: "x" }] })).toBeUndefined();
    expect(batch({ from: "S" })).toBeDefined();
  });
});
