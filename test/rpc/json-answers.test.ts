/**
 * The Connect fast path's answer writers (src/rpc/json-answers.ts) write the text protobuf-es's
 * toJsonString writes, for every message type of the API filled at random, for the SendMessage
 * answer the service makes, and for values protobuf-es refuses (the same error).
 */
import {
  create,
  type DescField,
  type DescMessage,
  type Message,
  ScalarType,
  toJsonString,
} from "@bufbuild/protobuf";
import type { GenFile } from "@bufbuild/protobuf/codegenv2";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { file_sms_admin_v1_admin } from "../../gen/sms/admin/v1/admin_pb.ts";
import { file_sms_v1_api_keys } from "../../gen/sms/v1/api_keys_pb.ts";
import { file_sms_v1_inbound } from "../../gen/sms/v1/inbound_pb.ts";
import { file_sms_v1_messaging, SendMessageResponseSchema } from "../../gen/sms/v1/messaging_pb.ts";
import { file_sms_v1_money } from "../../gen/sms/v1/money_pb.ts";
import { file_sms_v1_opt_outs } from "../../gen/sms/v1/opt_outs_pb.ts";
import { file_sms_v1_sender_names } from "../../gen/sms/v1/sender_names_pb.ts";
import {
  MessageSchema,
  MessageStatus,
  NotificationState,
  StatusNotificationSchema,
} from "../../gen/sms/v1/types_pb.ts";
import { answerWriter } from "../../src/rpc/json-answers.ts";

const FILES: GenFile[] = [
  file_sms_admin_v1_admin,
  file_sms_v1_api_keys,
  file_sms_v1_inbound,
  file_sms_v1_messaging,
  file_sms_v1_money,
  file_sms_v1_opt_outs,
  file_sms_v1_sender_names,
];

function messagesOf(files: GenFile[]): DescMessage[] {
  const all: DescMessage[] = [];
  const add = (desc: DescMessage) => {
    all.push(desc);
    for (const nested of desc.nestedMessages) add(nested);
  };
  for (const file of files) for (const desc of file.messages) add(desc);
  return all;
}

/** A small deterministic generator, so that a failure can be repeated. */
function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

const STRINGS = ["", "a", "+4915112345678", 'quote " and \\ back', "ü€😀", "\u0000\n\t", "\ud800"];

function scalarValue(scalar: ScalarType, next: () => number): unknown {
  const pick = next();
  switch (scalar) {
    case ScalarType.STRING:
      return STRINGS[Math.floor(pick * STRINGS.length)];
    case ScalarType.BOOL:
      return pick < 0.5;
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return [0n, 1n, -5n, 9007199254740993n, -9223372036854775808n][Math.floor(pick * 5)];
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return [0n, 7n, 18446744073709551615n][Math.floor(pick * 3)];
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return [0, -1, 2147483647, -2147483648, 42][Math.floor(pick * 5)];
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return [0, 1, 4294967295][Math.floor(pick * 3)];
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return [0, -0, 1.5, Number.NaN, Number.POSITIVE_INFINITY][Math.floor(pick * 5)];
    case ScalarType.BYTES:
      return new Uint8Array([Math.floor(pick * 256), 1, 2]);
  }
}

function fill(desc: DescMessage, next: () => number, depth: number): Message {
  const init: Record<string, unknown> = {};
  for (const field of desc.fields) {
    if (next() < 0.3) continue;
    const value = (kind: "scalar" | "enum" | "message", f: DescField): unknown => {
      if (kind === "enum" && f.enum) {
        const values = f.enum.values;
        return next() < 0.1 ? 99 : values[Math.floor(next() * values.length)]?.number;
      }
      if (kind === "message" && f.message) return messageValue(f.message, next, depth + 1);
      return scalarValue(f.scalar as ScalarType, next);
    };
    if (field.fieldKind === "list") {
      const count = depth > 3 ? 0 : Math.floor(next() * 3);
      init[field.localName] = Array.from({ length: count }, () => value(field.listKind, field));
    } else if (field.fieldKind === "map") {
      init[field.localName] = next() < 0.5 ? {} : { k: value(field.mapKind, field) };
    } else {
      const v = value(field.fieldKind, field);
      if (v === undefined) continue;
      if (field.oneof) init[field.oneof.localName] = { case: field.localName, value: v };
      else init[field.localName] = v;
    }
  }
  return create(desc, init as never);
}

function messageValue(desc: DescMessage, next: () => number, depth: number): unknown {
  if (desc.typeName === "google.protobuf.Timestamp") {
    const nanos = [0, 1, 123000000, 123456000, 123456789, 999999999][Math.floor(next() * 6)] ?? 0;
    // From year 1 to 2100.
    const seconds = BigInt(Math.floor(next() * 66238000000)) - 62135596800n;
    return create(desc, { seconds, nanos } as never);
  }
  if (depth > 4) return undefined;
  return fill(desc, next, depth);
}

describe("answerWriter", () => {
  const types = messagesOf(FILES);

  it("writes what toJsonString writes, for every message type filled at random", () => {
    const next = random(43);
    let compared = 0;
    let compiled = 0;
    for (const desc of types) {
      const write = answerWriter(desc);
      if (write.compiled) compiled++;
      for (let i = 0; i < 40; i++) {
        const message = fill(desc, next, 0);
        expect(write(message), desc.typeName).toBe(toJsonString(desc, message));
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(1000);
    // Most types are written by the writers, not left to toJsonString.
    expect(compiled).toBeGreaterThan(types.length / 2);
  });

  it("writes SendMessage's answer as the service makes it", () => {
    const created = timestampFromMs(Date.parse("2026-11-28T14:05:48.123Z"));
    const answer = create(SendMessageResponseSchema, {
      message: create(MessageSchema, {
        id: 123456789n,
        to: "+4915112345678",
        sender: "SMS",
        text: "Hello from the benchmark",
        status: MessageStatus.ACCEPTED,
        creditRemainingMicros: 0n,
        ttlSeconds: 21600,
        createTime: created,
        updateTime: created,
        country: "DE",
        pricePerPartMicros: 70000n,
        notifications: [
          create(StatusNotificationSchema, {
            status: MessageStatus.ACCEPTED,
            state: NotificationState.SKIPPED,
            createTime: created,
          }),
        ],
      }),
    });
    const write = answerWriter(SendMessageResponseSchema);
    expect(write.compiled).toBe(true);
    const text = write(answer);
    expect(text).toBe(toJsonString(SendMessageResponseSchema, answer));
    expect(JSON.parse(text).message.createTime).toBe("2026-11-28T14:05:48.123Z");
  });

  it("leaves to protobuf-es what it refuses", () => {
    const write = answerWriter(MessageSchema);
    expect(write.compiled).toBe(true);
    const wrong = [
      create(MessageSchema, { to: 5 as never }),
      create(MessageSchema, {
        createTime: { $typeName: "google.protobuf.Timestamp", seconds: 99999999999999n, nanos: 0 },
      }),
      create(MessageSchema, {
        createTime: { $typeName: "google.protobuf.Timestamp", seconds: 1n, nanos: -1 },
      }),
      create(MessageSchema, { status: "ACCEPTED" as never }),
      { ...create(StatusNotificationSchema), $typeName: "sms.v1.StatusNotification" } as never,
    ];
    for (const message of wrong) {
      let expected: unknown;
      try {
        expected = toJsonString(MessageSchema, message);
      } catch (error) {
        expected = error;
      }
      if (expected instanceof Error) expect(() => write(message)).toThrow(expected.message);
      else expect(write(message)).toBe(expected);
    }
  });
});
