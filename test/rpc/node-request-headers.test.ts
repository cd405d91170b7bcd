/**
 * The fast path's request headers read from node's (src/rpc/node-request-headers.ts) answer as
 * the fetch Headers connect-es builds of the same request would, before and after a change.
 */
import type { IncomingHttpHeaders } from "node:http";
import { describe, expect, it } from "vitest";
import { NodeRequestHeaders } from "../../src/rpc/node-request-headers.ts";

function fetchHeaders(headers: IncomingHttpHeaders): Headers {
  const built = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) built.append(name, v);
    else built.append(name, value);
  }
  return built;
}

const REQUEST: IncomingHttpHeaders = {
  host: "127.0.0.1:3000",
  "content-type": "application/json",
  authorization: "Basic a2V5OnNlY3JldA==",
  "idempotency-key": "  padded\t",
  "set-cookie": ["a=1", "b=2"],
  ":path": "/sms.v1.MessagingService/SendMessage",
  "x-empty": "",
};

const NAMES = [
  "host",
  "Content-Type",
  "AUTHORIZATION",
  "idempotency-key",
  "set-cookie",
  "x-empty",
  "accept-encoding",
  "traceparent",
];

describe("NodeRequestHeaders", () => {
  it("reads each header as fetch Headers would", () => {
    const lazy = new NodeRequestHeaders(REQUEST);
    const built = fetchHeaders(REQUEST);
    for (const name of NAMES) {
      expect(lazy.get(name), name).toBe(built.get(name));
      expect(lazy.has(name), name).toBe(built.has(name));
    }
    expect([...lazy]).toEqual([...built]);
    expect(lazy.getSetCookie()).toEqual(built.getSetCookie());
  });

  it("refuses an invalid name as fetch Headers do", () => {
    const lazy = new NodeRequestHeaders(REQUEST);
    for (const name of ["bad name", ":path"]) {
      expect(() => lazy.get(name)).toThrow(TypeError);
      expect(() => fetchHeaders(REQUEST).get(name)).toThrow(TypeError);
    }
  });

  it("reads its changes", () => {
    const lazy = new NodeRequestHeaders(REQUEST);
    const built = fetchHeaders(REQUEST);
    for (const headers of [lazy, built]) {
      headers.set("authorization", "Bearer x");
      headers.delete("host");
      headers.append("accept-encoding", "gzip");
    }
    for (const name of NAMES) expect(lazy.get(name), name).toBe(built.get(name));
    const seen: string[] = [];
    lazy.forEach((value, name) => {
      seen.push(`${name}: ${value}`);
    });
    expect(seen).toEqual([...built].map(([name, value]) => `${name}: ${value}`));
  });
});
