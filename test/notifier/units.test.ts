import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { generateWebhookSecret } from "../../src/domain/credentials.ts";
import {
  AddressBlockedError,
  blockedAddressReason,
  checkCallbackUrl,
  guardedLookup,
} from "../../src/notifier/address-guard.ts";
import {
  DEFAULT_RETRY_SCHEDULE_MS,
  parseRetrySchedule,
  retryDelayMs,
} from "../../src/notifier/retry-schedule.ts";
import { notificationUrl, receiverKey, WebhookSender } from "../../src/notifier/sending.ts";
import {
  signWebhook,
  verifyWebhookSignature,
  webhookHeaders,
} from "../../src/notifier/signature.ts";
import { startWebhookReceiver } from "../support/webhook-receiver.ts";

describe("retry schedule", () => {
  it("parses comma-separated durations", () => {
    expect(parseRetrySchedule("1s,5s,30s,5m,2h")).toEqual([1000, 5000, 30_000, 300_000, 7_200_000]);
    expect(parseRetrySchedule(" 100ms , 1.5s ,1d")).toEqual([100, 1500, 86_400_000]);
    expect(parseRetrySchedule("none")).toEqual([]);
  });

  it("defaults to a Standard Webhooks-like schedule of about a day", () => {
    expect(parseRetrySchedule(undefined)).toEqual([...DEFAULT_RETRY_SCHEDULE_MS]);
    expect(parseRetrySchedule("")).toEqual([...DEFAULT_RETRY_SCHEDULE_MS]);
    const total = DEFAULT_RETRY_SCHEDULE_MS.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(20 * 3_600_000);
    expect(total).toBeLessThan(30 * 3_600_000);
    expect(DEFAULT_RETRY_SCHEDULE_MS[0]).toBe(5000);
  });

  it("refuses bad entries", () => {
    expect(() => parseRetrySchedule("1s,,5s")).toThrow(RangeError);
    expect(() => parseRetrySchedule("5")).toThrow(/invalid duration/);
    expect(() => parseRetrySchedule("-1s")).toThrow(RangeError);
    expect(() => parseRetrySchedule("1w")).toThrow(RangeError);
  });

  it("gives the delay before each retry, then nothing", () => {
    const schedule = [100, 200];
    expect(retryDelayMs(schedule, 1)).toBe(100);
    expect(retryDelayMs(schedule, 2)).toBe(200);
    expect(retryDelayMs(schedule, 3)).toBeUndefined();
  });
});

describe("webhook signature", () => {
  // The example secret of the Standard Webhooks specification.
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

  it("signs id.timestamp.pathAndQuery with the base64-decoded secret", async () => {
    const { createHmac } = await import("node:crypto");
    const key = Buffer.from("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "base64");
    const expected = createHmac("sha256", key)
      .update("msg_1_0.1700000000./hook?id=1&status=SENT")
      .digest("base64");
    expect(signWebhook(secret, "msg_1_0", 1_700_000_000, "/hook?id=1&status=SENT")).toBe(
      `v1,${expected}`,
    );
  });

  it("verifies its own headers, and nothing else", () => {
    const now = new Date();
    const headers = webhookHeaders(secret, "msg_7_1", "/cb?x=1&id=7&status=DELIVERED", now);
    const ok = {
      secret,
      headers: { ...headers },
      pathAndQuery: "/cb?x=1&id=7&status=DELIVERED",
      now,
    };
    expect(verifyWebhookSignature(ok)).toBe(true);
    // header names are case-insensitive, several signatures may be given
    expect(
      verifyWebhookSignature({
        ...ok,
        headers: {
          "Webhook-Id": headers["webhook-id"],
          "Webhook-Timestamp": headers["webhook-timestamp"],
          "Webhook-Signature": `v1,AAAA ${headers["webhook-signature"]}`,
        },
      }),
    ).toBe(true);
    expect(verifyWebhookSignature({ ...ok, pathAndQuery: "/cb?x=1&id=7&status=SENT" })).toBe(false);
    expect(verifyWebhookSignature({ ...ok, secret: generateWebhookSecret() })).toBe(false);
    expect(
      verifyWebhookSignature({ ...ok, headers: { ...headers, "webhook-id": "msg_7_2" } }),
    ).toBe(false);
    expect(verifyWebhookSignature({ ...ok, now: new Date(now.getTime() + 600_000) })).toBe(false);
    expect(verifyWebhookSignature({ ...ok, headers: { "webhook-id": "msg_7_1" } })).toBe(false);
  });

  it("generates Standard Webhooks secrets", () => {
    const generated = generateWebhookSecret();
    expect(generated).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(generated.slice(6), "base64")).toHaveLength(24);
  });
});

describe("address guard", () => {
  it.each([
    ["10.0.0.1", "private"],
    ["172.16.5.4", "private"],
    ["192.168.1.1", "private"],
    ["127.0.0.1", "loopback"],
    ["169.254.169.254", "linkLocal"],
    ["0.0.0.0", "unspecified"],
    ["100.64.0.1", "carrierGradeNat"],
    ["192.0.2.2", "reserved"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fe80::1", "linkLocal"],
    ["fe80::1%eth0", "linkLocal"],
    ["fd00::1", "uniqueLocal"],
    ["fc00::1", "uniqueLocal"],
    ["::ffff:127.0.0.1", "ipv4Mapped"],
    ["::ffff:a00:1", "ipv4Mapped"],
    ["::ffff:8.8.8.8", "ipv4Mapped"],
    ["64:ff9b::10.0.0.1", "IPv4-IPv6 Translat. of private"],
    ["64:ff9b:1::1", "IPv4-IPv6 Translat. (local use)"],
    ["2001:db8::1", "reserved"],
    ["ff02::1", "multicast"],
  ])("refuses %s (%s)", (address, reason) => {
    expect(blockedAddressReason(address)).toBe(reason);
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "172.32.0.1",
    "2001:4860:4860::8888",
    "64:ff9b::8.8.8.8",
    "2606:4700::1111",
  ])("allows %s", (address) => {
    expect(blockedAddressReason(address)).toBeUndefined();
  });

  it("checks IP-literal callback URLs before connecting", () => {
    for (const url of [
      "http://10.0.0.1/hook",
      "http://169.254.169.254/latest",
      "http://[::1]:8080/",
      "http://[::ffff:7f00:1]/",
      "http://2130706433/",
    ]) {
      expect(() => checkCallbackUrl(new URL(url), false)).toThrow(AddressBlockedError);
      expect(() => checkCallbackUrl(new URL(url), true)).not.toThrow();
    }
    expect(() => checkCallbackUrl(new URL("https://8.8.8.8/hook"), false)).not.toThrow();
    expect(() => checkCallbackUrl(new URL("ftp://example.com/"), true)).toThrow(TypeError);
  });

  it("refuses host names resolving to private addresses, in the socket's own lookup", async () => {
    const lookup = guardedLookup(false);
    const error = await new Promise<unknown>((resolve) =>
      lookup("localhost", { all: true }, (err) => resolve(err)),
    );
    expect(error).toBeInstanceOf(AddressBlockedError);
    // The message (recorded where the account reads it) says neither the address nor its range.
    expect((error as Error).message).toBe("callback address is not a public address");
    expect(error).toMatchObject({ block: "loopback" });
    const allowed = await new Promise<unknown>((resolve) =>
      guardedLookup(true)("localhost", {}, (err, address) => resolve(err ?? address)),
    );
    expect(typeof allowed).toBe("string");
  });

  it("refuses in the lookup whatever family or form the socket asks for", async () => {
    for (const options of [{ family: 4 }, { family: "IPv4" }, { all: false }, undefined]) {
      const error = await new Promise<unknown>((resolve) =>
        guardedLookup(false)("localhost", options, (err) => resolve(err)),
      );
      expect(error, JSON.stringify(options)).toBeInstanceOf(AddressBlockedError);
      expect((error as Error).message).not.toMatch(/127\.0\.0\.1|loopback|localhost/);
    }
  });

  it("follows no redirect: a 3xx is the attempt's answer, its Location is never asked", async () => {
    const target = await startWebhookReceiver();
    const redirecting = http.createServer((_request, response) => {
      response.writeHead(302, { location: `${target.baseUrl}/elsewhere`, "content-length": "0" });
      response.end();
    });
    redirecting.listen(0, "127.0.0.1");
    await once(redirecting, "listening");
    const { port } = redirecting.address() as AddressInfo;
    const quiet = () => undefined;
    const sender = new WebhookSender({
      logger: { debug: quiet, info: quiet, warn: quiet, error: quiet },
      timeoutMs: 5_000,
      maxSockets: 2,
      allowPrivate: true,
      userAgent: "test",
    });
    try {
      const result = await sender.attempt(
        new URL(`http://127.0.0.1:${port}/hook`),
        "msg_1",
        undefined,
      );
      expect(result).toMatchObject({ httpStatus: 302, error: "HTTP 302" });
      expect(target.requests).toHaveLength(0);
    } finally {
      sender.destroy();
      redirecting.close();
      await target.close();
    }
  });
});

describe("notification URL", () => {
  it("appends id, status and batch_id to the callback's own query, drops the fragment", () => {
    expect(notificationUrl("https://example.com/hook", 7, "SENT").href).toBe(
      "https://example.com/hook?id=7&status=SENT",
    );
    expect(notificationUrl("https://example.com/h?a=1&b=x%20y#frag", 8, "DELIVERED", 3).href).toBe(
      "https://example.com/h?a=1&b=x%20y&id=8&status=DELIVERED&batch_id=3",
    );
    expect(notificationUrl("http://example.com?", 9, "ACCEPTED").href).toBe(
      "http://example.com/?id=9&status=ACCEPTED",
    );
  });
});

describe("receiver key", () => {
  it("is scheme, host, port and path: another path on the same host is another receiver", () => {
    const key = (callback: string) => receiverKey(notificationUrl(callback, 1, "SENT"));
    expect(key("http://h.example:8080/a?x=1")).toBe("http://h.example:8080/a");
    expect(key("http://h.example:8080/a?x=2")).toBe(key("http://h.example:8080/a"));
    expect(key("http://h.example:8080/b")).not.toBe(key("http://h.example:8080/a"));
    expect(key("http://h.example:8081/a")).not.toBe(key("http://h.example:8080/a"));
    expect(key("https://h.example:8080/a")).not.toBe(key("http://h.example:8080/a"));
    expect(key("https://h.example/a")).toBe(key("https://h.example:443/a"));
  });
});

describe("test webhook receiver", () => {
  it("fails the first N requests, then answers 200 with an empty body", async () => {
    const receiver = await startWebhookReceiver({ failFirst: 2, failStatus: 502 });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const response = await fetch(`${receiver.baseUrl}/r?id=${i}&status=SENT`);
        expect(await response.text()).toBe("");
        statuses.push(response.status);
      }
      expect(statuses).toEqual([502, 502, 200]);
      expect(receiver.requests.map((r) => r.query.id)).toEqual(["0", "1", "2"]);
      expect(receiver.succeeded()).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });
});
