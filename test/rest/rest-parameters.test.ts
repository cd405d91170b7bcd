/**
 * The REST façade names a service's field violation by the REST parameter: the request field's
 * JSON name. For that to hold, every field of a request REST sends must have the JSON name of a
 * parameter of its REST route (the rule that keeps `sender` named `from`, `ttl_seconds` `ttl`).
 */
import type { DescMessage } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import {
  getBatchSchema,
  sendBatchSchema,
  sendMessageSchema,
} from "../../src/rest/message-schemas.ts";
import { restParameter } from "../../src/rest/parameter-names.ts";
import {
  createSenderNameSchema,
  deleteSenderNameSchema,
} from "../../src/rest/sender-name-schemas.ts";

interface RouteSchema {
  body?: { properties?: Record<string, unknown> };
  params?: { properties?: Record<string, unknown> };
}

const parametersOf = (schema: RouteSchema) =>
  Object.keys({ ...schema.body?.properties, ...schema.params?.properties });

const ROUTES: [string, DescMessage, RouteSchema][] = [
  ["POST /sms", MessagingService.method.sendMessage.input, sendMessageSchema],
  ["POST /sms-batch", MessagingService.method.sendBatch.input, sendBatchSchema],
  ["GET /sms-batch/{id}", MessagingService.method.getBatch.input, getBatchSchema],
  ["POST /sender_names", SenderNameService.method.createSenderName.input, createSenderNameSchema],
  [
    "DELETE /sender_names/{name}",
    SenderNameService.method.deleteSenderName.input,
    deleteSenderNameSchema,
  ],
];

describe("proto field paths as REST parameters", () => {
  it.each(ROUTES)(
    "%s: every request field is named as a parameter of the route",
    (_, input, schema) => {
      const parameters = parametersOf(schema);
      for (const field of input.fields) expect(parameters).toContain(restParameter(field.name));
    },
  );

  it("paths name their first field: messages[3].to is about messages; unknown paths stay", () => {
    expect(restParameter("sender")).toBe("from");
    expect(restParameter("ttl_seconds")).toBe("ttl");
    expect(restParameter("status_callback")).toBe("statusCallback");
    expect(restParameter("messages[3].to")).toBe("messages");
    expect(restParameter("request")).toBe("request");
  });
});
