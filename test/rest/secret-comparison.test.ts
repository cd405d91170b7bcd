/**
 * Secrets are compared as SHA-256 digests in constant time (issue 25 item 2.10): the operator
 * token, API secrets (REST, Connect, gRPC and the dashboard's sign-in all go through
 * `secretMatches`) and webhook signatures. A token of another length is refused like any wrong
 * one, and nothing compares lengths first (that branch told a guesser the token's length; a unit
 * test cannot measure time, docs/decisions.md records the review).
 */
import { Code, ConnectError, createHandlerContext } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";
import { hashSecret, sameSecret, secretMatches } from "../../src/domain/credentials.ts";
import { authenticateOperator } from "../../src/services/authentication.ts";

const TOKEN = "operator-token-0123456789abcdef";

/** Tokens that must all be refused: shorter, longer, a prefix, an extension, one byte off. */
const WRONG = [
  "",
  "o",
  TOKEN.slice(0, -1),
  `${TOKEN}x`,
  `${TOKEN}${TOKEN}`,
  `${TOKEN.slice(0, -1)}g`,
  TOKEN.toUpperCase(),
  "x".repeat(4096),
];

function context(authorization?: string) {
  const method = AdminService.method.getAccount;
  return createHandlerContext({
    service: AdminService,
    method,
    protocolName: "connect",
    requestMethod: "POST",
    url: `http://127.0.0.1/${AdminService.typeName}/${method.name}`,
    ...(authorization !== undefined && { requestHeader: { authorization } }),
  });
}

function refusal(authorization?: string): unknown {
  try {
    authenticateOperator(context(authorization), TOKEN);
    return undefined;
  } catch (error) {
    return error;
  }
}

describe("sameSecret", () => {
  it("accepts the same secret and refuses one of any other length or content", () => {
    expect(sameSecret(TOKEN, TOKEN)).toBe(true);
    expect(sameSecret(Buffer.from(TOKEN), Buffer.from(TOKEN))).toBe(true);
    for (const wrong of WRONG) expect(sameSecret(wrong, TOKEN), wrong).toBe(false);
  });

  it("never matches an empty expected secret, even an empty presented one", () => {
    expect(sameSecret("", "")).toBe(false);
    expect(sameSecret(Buffer.alloc(0), Buffer.alloc(0))).toBe(false);
  });
});

describe("the operator token", () => {
  it("is accepted exactly, after Bearer in any case", () => {
    expect(refusal(`Bearer ${TOKEN}`)).toBeUndefined();
    expect(refusal(`bearer ${TOKEN}`)).toBeUndefined();
  });

  it("of any other length or content, or without Bearer, is refused as UNAUTHENTICATED", () => {
    for (const authorization of [
      ...WRONG.map((wrong) => `Bearer ${wrong}`),
      TOKEN,
      `Basic ${TOKEN}`,
      undefined,
    ]) {
      const error = refusal(authorization);
      expect(error, authorization).toBeInstanceOf(ConnectError);
      expect((error as ConnectError).code).toBe(Code.Unauthenticated);
    }
  });
});

describe("API secrets", () => {
  it("match their stored digest only", () => {
    const secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3Jl";
    const stored = hashSecret(secret);
    expect(secretMatches(secret, stored)).toBe(true);
    for (const wrong of ["", secret.slice(1), `${secret}=`, secret.replace("c", "d")]) {
      expect(secretMatches(wrong, stored), wrong).toBe(false);
    }
    // A stored value of another form (another length) is refused, not thrown on.
    expect(secretMatches(secret, "sha256$short")).toBe(false);
    expect(secretMatches(secret, "")).toBe(false);
  });
});
