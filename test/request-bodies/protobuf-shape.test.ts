/**
 * The protobuf shape scanner alone (pure): it counts the fields of a binary message at every depth
 * the schema declares, exactly, however the bytes are split, and refuses past the limits.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SendBatchRequestSchema } from "../../gen/sms/v1/messaging_pb.ts";
import { ProtobufShapeScanner } from "../../src/request-bodies/protobuf-shape.ts";
import { BODY_SHAPE_LIMITS, type ShapeLimits } from "../../src/request-bodies/shape-limits.ts";
import { feedInChunks } from "./chunked-feed.ts";

const scan = (bytes: Uint8Array, limits: ShapeLimits, cuts: number[] = []) =>
  feedInChunks(new ProtobufShapeScanner(SendBatchRequestSchema, limits), bytes, cuts);

const message = fc.record(
  { to: fc.string(), sender: fc.string(), text: fc.string() },
  { requiredKeys: [] },
);
const request = fc.record(
  {
    messages: fc.array(message, { maxLength: 50 }),
    sender: fc.string(),
    statusCallback: fc.string(),
    name: fc.string(),
  },
  { requiredKeys: ["messages"] },
);

/** Fields on the wire (proto3 leaves out empty implicit fields), plus the message itself. */
interface Request {
  messages: { to?: string; sender?: string; text?: string }[];
  sender?: string;
  statusCallback?: string;
  name?: string;
}

function fieldsOf(value: Request): number {
  let count = 1 + value.messages.length;
  for (const m of value.messages) {
    count += (m.to ? 1 : 0) + (m.sender !== undefined ? 1 : 0) + (m.text ? 1 : 0);
  }
  for (const key of ["sender", "statusCallback", "name"] as const) {
    if (value[key] !== undefined) count++;
  }
  return count;
}

describe("protobuf shape scanner", () => {
  it("property: exact field count of any SendBatchRequest, in any chunks", () => {
    fc.assert(
      fc.property(request, fc.array(fc.nat(), { maxLength: 6 }), (value, cuts) => {
        const bytes = toBinary(SendBatchRequestSchema, create(SendBatchRequestSchema, value));
        const fields = fieldsOf(value);
        expect(scan(bytes, { maxDepth: 1, maxValues: fields }, cuts)).toBeUndefined();
        // An empty request has no byte to count: only the message itself, always within.
        if (fields > 1) {
          expect(scan(bytes, { maxDepth: 1, maxValues: fields - 1 }, cuts)).toMatch(/more than/);
        }
        // A message is entered only when it has fields on the wire (an empty one is 2 bytes).
        if (value.messages.some((m) => m.to || m.sender !== undefined || m.text)) {
          expect(scan(bytes, { maxDepth: 0, maxValues: fields }, cuts)).toMatch(/deeper/);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("a 10000-message batch is within the body limits", () => {
    const batch = create(SendBatchRequestSchema, {
      messages: Array.from({ length: 10_000 }, (_, i) => ({
        to: `+49151${10_000_000 + i}`,
        sender: "Shop",
        text: "x".repeat(1530),
      })),
      name: "bench",
    });
    expect(scan(toBinary(SendBatchRequestSchema, batch), BODY_SHAPE_LIMITS, [7, 70_000])).toBe(
      undefined,
    );
  });

  it("16 MB of empty messages or of unknown varints is refused within its first megabyte", () => {
    const emptyMessages = Buffer.alloc(1024 * 1024);
    const unknownVarints = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < emptyMessages.length; i += 2) {
      emptyMessages[i] = 0x0a; // field 1 (messages), length-delimited, length 0
      unknownVarints[i] = 0x78; // field 15, varint 0
    }
    const limit = `the message holds more than ${BODY_SHAPE_LIMITS.maxValues} fields`;
    expect(scan(emptyMessages, BODY_SHAPE_LIMITS)).toBe(limit);
    expect(scan(unknownVarints, BODY_SHAPE_LIMITS)).toBe(limit);
  });

  it("unknown groups count and nest; unknown length-delimited fields are skipped whole", () => {
    const groups = Buffer.concat([Buffer.alloc(40, 0x7b), Buffer.alloc(40, 0x7c)]);
    expect(scan(groups, BODY_SHAPE_LIMITS)).toBe("the message nests deeper than 32 levels");
    // Field 15, length-delimited, 3 bytes that would be 3 fields if entered.
    expect(scan(Buffer.from([0x7a, 3, 0x78, 0, 0x78]), { maxDepth: 1, maxValues: 2 })).toBe(
      undefined,
    );
  });

  it("bytes that are no protobuf are left to the decoder", () => {
    expect(scan(Buffer.from([0x0f, 0x00, 0x78, 0x00]), { maxDepth: 0, maxValues: 1 })).toBe(
      undefined,
    );
  });
});
