/**
 * The OpenAPI 3.1 document at /openapi.json and the docs page at /docs: generated from the route
 * schemas (so it cannot drift), documenting form and JSON bodies, query credentials and the error
 * shapes of every endpoint, and nothing but the REST API.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendBatchSchema, sendMessageSchema } from "../../src/rest/message-schemas.ts";
import { createOptOutSchema } from "../../src/rest/opt-out-schemas.ts";
import { createSenderNameSchema } from "../../src/rest/sender-name-schemas.ts";
import { type RunningService, startService } from "../support/service.ts";

let service: RunningService;
let doc: any;

beforeAll(async () => {
  service = await startService();
  const response = await fetch(`${service.baseUrl}/openapi.json`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  doc = await response.json();
});
afterAll(() => service?.close());

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const FORM = "application/x-www-form-urlencoded";
const JSON_TYPE = "application/json";

/** Every operation as [path, method, operation]. */
const operations = (): [string, string, any][] =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => (item as Record<string, unknown>)[m]).map(
      (m) => [path, m, (item as any)[m]] as [string, string, any],
    ),
  );

describe("the document", () => {
  it("is OpenAPI 3.1 with info and paths", () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(typeof doc.info?.title).toBe("string");
    expect(typeof doc.info?.version).toBe("string");
    expect(typeof doc.paths).toBe("object");
  });

  it("documents exactly the REST endpoints (not the Connect RPC routes)", () => {
    expect(
      operations()
        .map(([path, method]) => `${method.toUpperCase()} ${path}`)
        .sort(),
    ).toEqual([
      "DELETE /api-keys/{key}",
      "DELETE /opt-outs/{number}",
      "DELETE /sender_names/{name}",
      "GET /account",
      "GET /api-keys",
      "GET /inbound",
      "GET /inbound/{id}",
      "GET /ledger",
      "GET /opt-outs",
      "GET /opt-outs/changes",
      "GET /sender_names",
      "GET /sms",
      "GET /sms-batch/{id}",
      "GET /sms/quote",
      "GET /sms/{id}",
      "GET /usage",
      "PATCH /account/quiet-hours",
      "PATCH /account/spend-controls",
      "POST /api-keys",
      "POST /opt-outs",
      "POST /sender_names",
      "POST /sms",
      "POST /sms-batch",
      "POST /sms-batch/{id}/cancel",
      "POST /sms/{id}/cancel",
      "POST /webhook-secret",
    ]);
  });

  it("is structurally valid: responses with descriptions, parameters and media types with schemas", () => {
    for (const [path, , operation] of operations()) {
      expect(Object.keys(operation.responses).length).toBeGreaterThan(0);
      for (const [status, response] of Object.entries<{
        description?: string;
        content?: Record<string, { schema?: object }>;
      }>(operation.responses)) {
        expect(status).toMatch(/^[1-5]\d\d$/);
        expect(typeof response.description).toBe("string");
        for (const media of Object.values(response.content ?? {})) {
          expect(typeof media.schema).toBe("object");
        }
      }
      for (const parameter of operation.parameters ?? []) {
        expect(["query", "path", "header", "cookie"]).toContain(parameter.in);
        expect(typeof parameter.name).toBe("string");
        expect(typeof parameter.schema).toBe("object");
        if (parameter.in === "path") {
          expect(parameter.required).toBe(true);
          expect(path).toContain(`{${parameter.name}}`);
        }
      }
      for (const media of Object.values<{ schema?: object }>(
        operation.requestBody?.content ?? {},
      )) {
        expect(typeof media.schema).toBe("object");
      }
    }
    // Every $ref resolves inside the document.
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]*"/g) ?? [];
    for (const ref of refs) {
      const pointer = ref.slice(9, -1);
      expect(pointer.startsWith("#/")).toBe(true);
      let node = doc;
      for (const part of pointer.slice(2).split("/"))
        node = node?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
      expect(node, ref).toBeDefined();
    }
  });
});

describe("request bodies and parameters", () => {
  it("POST /sms and POST /sender_names take form and JSON; POST /sms-batch JSON only", () => {
    expect(Object.keys(doc.paths["/sms"].post.requestBody.content).sort()).toEqual([
      JSON_TYPE,
      FORM,
    ]);
    expect(Object.keys(doc.paths["/sender_names"].post.requestBody.content).sort()).toEqual([
      JSON_TYPE,
      FORM,
    ]);
    expect(Object.keys(doc.paths["/sms-batch"].post.requestBody.content)).toEqual([JSON_TYPE]);
    expect(Object.keys(doc.paths["/opt-outs"].post.requestBody.content).sort()).toEqual([
      JSON_TYPE,
      FORM,
    ]);
  });

  it("the body schemas are the ones the routes validate with", () => {
    for (const [path, schema] of [
      ["/sms", sendMessageSchema],
      ["/sms-batch", sendBatchSchema],
      ["/sender_names", createSenderNameSchema],
      ["/opt-outs", createOptOutSchema],
    ] as const) {
      for (const media of Object.values<{ schema: { required: string[]; properties: object } }>(
        doc.paths[path].post.requestBody.content,
      )) {
        expect(media.schema.required).toEqual(schema.body.required);
        expect(Object.keys(media.schema.properties)).toEqual(Object.keys(schema.body.properties));
      }
    }
    const ttl = doc.paths["/sms"].post.requestBody.content[JSON_TYPE].schema.properties.ttl;
    // Optional parameters may be null (the same as absent), so the schema says so.
    expect(ttl).toMatchObject({
      type: ["integer", "null"],
      minimum: 1,
      maximum: 21600,
      default: 21600,
    });
    const name =
      doc.paths["/sender_names"].post.requestBody.content[JSON_TYPE].schema.properties.name;
    expect(name).toMatchObject({ maxLength: 11, pattern: "^[A-Za-z0-9]*$" });
    const messages =
      doc.paths["/sms-batch"].post.requestBody.content[JSON_TYPE].schema.properties.messages;
    expect(messages).toMatchObject({ type: "array", maxItems: 10000 });
  });

  it("GET and DELETE take the credentials as required query parameters", () => {
    for (const operation of [
      doc.paths["/sms-batch/{id}"].get,
      doc.paths["/sender_names"].get,
      doc.paths["/sender_names/{name}"].delete,
      doc.paths["/inbound/{id}"].get,
      doc.paths["/opt-outs/{number}"].delete,
    ]) {
      const query = operation.parameters.filter((p: { in: string }) => p.in === "query");
      expect(query.map((p: { name: string; required: boolean }) => [p.name, p.required])).toEqual([
        ["apiKey", true],
        ["apiSecret", true],
      ]);
    }
  });

  it("the two-way lists take their filters and page tokens as optional query parameters", () => {
    const query = (operation: any) =>
      operation.parameters
        .filter((p: { in: string }) => p.in === "query")
        .map((p: { name: string; required: boolean }) => [p.name, p.required]);
    expect(query(doc.paths["/inbound"].get)).toEqual([
      ["apiKey", true],
      ["apiSecret", true],
      ["from", false],
      ["to", false],
      ["since", false],
      ["pageToken", false],
    ]);
    const since = doc.paths["/inbound"].get.parameters.find(
      (p: { name: string }) => p.name === "since",
    );
    expect(since.schema).toMatchObject({ type: "string", format: "date-time" });
    expect(query(doc.paths["/opt-outs"].get)).toEqual([
      ["apiKey", true],
      ["apiSecret", true],
      ["pageToken", false],
    ]);
    expect(query(doc.paths["/opt-outs/changes"].get)).toEqual([
      ["apiKey", true],
      ["apiSecret", true],
      ["number", false],
      ["pageToken", false],
    ]);
  });
});

describe("responses", () => {
  it("documents the success bodies", () => {
    const message = doc.paths["/sms"].post.responses["200"].content[JSON_TYPE].schema;
    expect(Object.keys(message.properties)).toEqual([
      "id",
      "to",
      "from",
      "text",
      "status",
      "segments",
      "creditRemaining",
      "clientRef",
      "sendAt",
    ]);
    const read = doc.paths["/sms/{id}"].get.responses["200"].content[JSON_TYPE].schema;
    expect(read.required).toEqual([
      "id",
      "to",
      "from",
      "text",
      "status",
      "parts",
      "price",
      "createTime",
      "statusHistory",
    ]);
    const messages = doc.paths["/sms"].get.responses["200"].content[JSON_TYPE].schema;
    expect(messages.required).toEqual(["messages", "nextPageToken"]);
    expect(messages.properties.messages.items.properties.statusHistory).toBeUndefined();
    const list = doc.paths["/sender_names"].get.responses["200"].content[JSON_TYPE].schema;
    expect(list.properties.sender_names.items.required).toEqual([
      "name",
      "pending",
      "reliable",
      "default",
    ]);
    const info = doc.paths["/sms-batch/{id}"].get.responses["200"].content[JSON_TYPE].schema;
    expect(info.required).toContain("isActive");
    const inbound = doc.paths["/inbound"].get.responses["200"].content[JSON_TYPE].schema;
    expect(inbound.required).toEqual(["inbound", "nextPageToken"]);
    expect(Object.keys(inbound.properties.inbound.items.properties)).toEqual([
      "id",
      "from",
      "to",
      "text",
      "parts",
      "receivedAt",
      "optOutType",
      "incomplete",
    ]);
    // The account's settings answer the account as GET /account reads it, quiet hours included.
    const account = doc.paths["/account"].get.responses["200"].content[JSON_TYPE].schema;
    expect(account.properties.quietHours.required).toEqual(["start", "end"]);
    for (const path of ["/account/quiet-hours", "/account/spend-controls"]) {
      const changed = doc.paths[path].patch.responses["200"].content[JSON_TYPE].schema;
      expect(changed.properties).toEqual(account.properties);
    }
    const optOuts = doc.paths["/opt-outs"].get.responses["200"].content[JSON_TYPE].schema;
    expect(optOuts.required).toEqual(["optOuts", "nextPageToken"]);
    expect(Object.keys(optOuts.properties.optOuts.items.properties)).toEqual([
      "number",
      "source",
      "keyword",
      "createTime",
    ]);
  });

  it("documents the error shapes: arrays of messages; strings or arrays on POST /sms-batch", () => {
    const errorsOf = (operation: any, status: string) =>
      operation.responses[status]?.content[JSON_TYPE]?.schema.properties.errors
        .additionalProperties;
    const arrays = { type: "array", items: { type: "string" } };
    expect(errorsOf(doc.paths["/sms"].post, "400")).toEqual(arrays);
    // Parameters and refusals as strings, parse failures as arrays (design table).
    expect(errorsOf(doc.paths["/sms-batch"].post, "400")).toEqual({
      anyOf: [{ type: "string" }, arrays],
    });
    const statuses = (operation: any) => Object.keys(operation.responses).sort();
    const creating = ["200", "400", "401", "402", "409", "413", "422", "429", "503"];
    expect(statuses(doc.paths["/sms"].post)).toEqual(creating);
    expect(statuses(doc.paths["/sms-batch"].post)).toEqual(creating);
    expect(statuses(doc.paths["/sender_names"].post)).toEqual(creating.filter((s) => s !== "402"));
    const reading = ["200", "400", "401", "404", "429", "503"];
    expect(statuses(doc.paths["/sms-batch/{id}"].get)).toEqual(reading);
    expect(statuses(doc.paths["/sender_names/{name}"].delete)).toEqual(reading);
    expect(statuses(doc.paths["/sender_names"].get)).toEqual(["200", "400", "401", "429", "503"]);
    expect(statuses(doc.paths["/inbound/{id}"].get)).toEqual(reading);
    for (const listing of [
      doc.paths["/inbound"].get,
      doc.paths["/opt-outs"].get,
      doc.paths["/opt-outs/changes"].get,
    ]) {
      expect(statuses(listing)).toEqual(["200", "400", "401", "429", "503"]);
    }
    expect(statuses(doc.paths["/opt-outs"].post)).toEqual([
      "200",
      "400",
      "401",
      "413",
      "429",
      "503",
    ]);
    // A handset's STOP is not the account's to remove: 409.
    expect(statuses(doc.paths["/opt-outs/{number}"].delete)).toEqual([
      "200",
      "400",
      "401",
      "404",
      "409",
      "429",
      "503",
    ]);
  });

  it("every error status has an example in its own shape", () => {
    for (const [path, method, operation] of operations()) {
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        if (status === "200") continue;
        const media = response.content[JSON_TYPE];
        // A single example is rendered as the media type's `example`.
        const example = media.example;
        expect(example, `${method} ${path} ${status}`).toBeDefined();
        expect(Object.keys(example)).toEqual(["errors"]);
        for (const value of Object.values(example.errors)) {
          if (path === "/sms-batch" && method === "post" && status !== "413") {
            expect(typeof value).toBe("string");
          } else {
            expect(Array.isArray(value), `${method} ${path} ${status}`).toBe(true);
          }
        }
      }
    }
  });
});

describe("the docs page", () => {
  it("serves a browsable page at /docs", async () => {
    const response = await fetch(`${service.baseUrl}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await response.text()).toMatch(/swagger/i);
  });
});
