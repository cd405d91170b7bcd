import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, postForm, type RunningService, startService } from "../support/service.ts";

const run = promisify(execFile);
let service: RunningService;

beforeAll(async () => {
  service = await startService();
});
afterAll(() => service?.close());

async function admin(...args: string[]) {
  const { stdout } = await run("npx", ["--no-install", "tsx", "src/cli/admin.ts", ...args], {
    env: { ...process.env, SMS_URL: service.baseUrl, SMS_ADMIN_TOKEN: ADMIN_TOKEN },
  });
  return JSON.parse(stdout);
}

describe("the operator CLI", () => {
  it("creates an account whose credentials send a message", async () => {
    const created = await admin("account", "create", "--name", "acme", "--credit", "10");
    expect(created).toMatchObject({
      apiKey: expect.any(String),
      apiSecret: expect.any(String),
      webhookSecret: expect.stringMatching(/^whsec_/),
    });
    const stored = await service.store.accounts.findOne({ _id: created.apiKey });
    expect(stored?.secretHash).not.toContain(created.apiSecret);

    const { status, body } = await postForm(`${service.baseUrl}/sms`, {
      to: "+4915112345678",
      text: "Hi",
      apiKey: created.apiKey,
      apiSecret: created.apiSecret,
    });
    expect(status).toBe(200);
    expect(body.creditRemaining).toBe(9);

    const credited = await admin("account", "credit", "--api-key", created.apiKey, "--add", "5");
    expect(credited.credit).toBe(14);
  });

  it("approves a requested sender name and makes it the default sender", async () => {
    const account = await service.createAccount();
    const requested = await postForm(`${service.baseUrl}/sender_names`, {
      name: "Acme",
      purpose: "NOTIFICATION",
      ownerType: "COMPANY",
      owner: "Acme Ltd",
      exampleMsg: "Your parcel has shipped",
      ...account,
    });
    expect(requested.body).toEqual({
      name: "Acme",
      pending: true,
      reliable: false,
      default: false,
    });

    const approved = await admin(
      "sender-name",
      "approve",
      "--api-key",
      account.apiKey,
      "--name",
      "Acme",
    );
    expect(approved.pending).toBe(false);
    const withDefault = await admin(
      "sender-name",
      "default",
      "--api-key",
      account.apiKey,
      "--name",
      "Acme",
    );
    expect(withDefault.defaultSender).toBe("Acme");

    const sent = await postForm(`${service.baseUrl}/sms`, {
      to: "+4915112345678",
      text: "Hi",
      ...account,
    });
    expect(sent.body.from).toBe("Acme");
  });

  it("assigns a number, sets the inbound URL, simulates a STOP that blocks the next send, lists and releases", async () => {
    const account = await service.createAccount();
    const assigned = await admin(
      "number",
      "assign",
      "--api-key",
      account.apiKey,
      "--number",
      "+4930555000",
    );
    expect(assigned).toMatchObject({ number: "+4930555000", apiKey: account.apiKey });
    const url = await admin(
      "account",
      "inbound-url",
      "--api-key",
      account.apiKey,
      "--url",
      "https://example.com/in",
    );
    expect(url.inboundUrl).toBe("https://example.com/in");

    const stop = await admin(
      "simulate",
      "inbound",
      "--from",
      "+4915100000777",
      "--to",
      "+4930555000",
      "--text",
      "STOP",
    );
    expect(stop).toMatchObject({
      from: "+4915100000777",
      to: "+4930555000",
      text: "STOP",
      optOutType: "OPT_OUT_TYPE_STOP",
    });
    const refused = await postForm(`${service.baseUrl}/sms`, {
      to: "+4915100000777",
      text: "Hi",
      ...account,
    });
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body.errors)).toEqual(["to"]);

    const listed = await admin("number", "list", "--api-key", account.apiKey);
    expect(listed.numbers.map((n: { number: string }) => n.number)).toEqual(["+4930555000"]);
    const released = await admin("number", "release", "--number", "+4930555000");
    expect(released.apiKey).toBe(account.apiKey);
    // Six commands, each a process of its own.
  }, 120_000);

  it("adds and removes the operator's opt-outs", async () => {
    const account = await service.createAccount();
    const added = await admin(
      "opt-out",
      "add",
      "--api-key",
      account.apiKey,
      "--number",
      "+4915100000888",
    );
    expect(added).toMatchObject({ number: "+4915100000888", source: "OPT_OUT_SOURCE_OPERATOR" });
    const removed = await admin(
      "opt-out",
      "remove",
      "--api-key",
      account.apiKey,
      "--number",
      "+4915100000888",
    );
    expect(removed.number).toBe("+4915100000888");
  }, 60_000);

  it("makes, lists and revokes an account's keys, and rotates its webhook secret", async () => {
    const account = await service.createAccount();
    const made = await admin(
      "api-key",
      "create",
      "--api-key",
      account.apiKey,
      "--name",
      "ci",
      "--scope",
      "read",
    );
    expect(made).toMatchObject({
      apiSecret: expect.any(String),
      apiKey: { name: "ci", scope: "API_KEY_SCOPE_READ" },
    });
    const listed = await admin("api-key", "list", "--api-key", account.apiKey);
    expect(listed.apiKeys.map((k: { apiKey: string }) => k.apiKey)).toEqual([
      account.apiKey,
      made.apiKey.apiKey,
    ]);
    expect(JSON.stringify(listed)).not.toContain(made.apiSecret);
    const revoked = await admin("api-key", "revoke", "--key", made.apiKey.apiKey);
    expect(revoked.apiKey).toBe(made.apiKey.apiKey);
    const rotated = await admin("account", "webhook-secret", "--api-key", account.apiKey);
    expect(rotated.webhookSecret).toMatch(/^whsec_/);
  }, 60_000);

  it("suspends, lists, resumes and closes an account, with the reason and the operator audited", async () => {
    const account = await service.createAccount();
    const suspended = await admin(
      "account",
      "suspend",
      "--api-key",
      account.apiKey,
      "--reason",
      "abuse",
      "--operator",
      "bob",
    );
    expect(suspended).toMatchObject({ status: "ACCOUNT_STATUS_SUSPENDED", statusReason: "abuse" });
    const listed = await admin("account", "list", "--status", "suspended");
    expect(listed.accounts.map((a: { apiKey: string }) => a.apiKey)).toContain(account.apiKey);
    const resumed = await admin("account", "resume", "--api-key", account.apiKey);
    expect(resumed.status).toBe("ACCOUNT_STATUS_ACTIVE");
    const closed = await admin("account", "close", "--api-key", account.apiKey, "--reason", "gone");
    expect(closed.status).toBe("ACCOUNT_STATUS_CLOSED");
    const audited = await service.store.db
      .collection("audit_log")
      .findOne({ accountId: account.apiKey, action: "account.suspend" });
    expect(audited).toMatchObject({ detail: "abuse", author: { operator: "bob" } });
  }, 60_000);

  it("shows the approval queue and rejects a name with a reason", async () => {
    const account = await service.createAccount();
    await postForm(`${service.baseUrl}/sender_names`, {
      name: "Queued",
      purpose: "NOTIFICATION",
      ownerType: "COMPANY",
      owner: "Acme Ltd",
      exampleMsg: "Your parcel has shipped",
      ...account,
    });
    const queue = await admin("sender-name", "list", "--pending", "--api-key", account.apiKey);
    expect(queue.senderNames).toEqual([
      expect.objectContaining({ apiKey: account.apiKey, owner: "Acme Ltd" }),
    ]);
    const rejected = await admin(
      "sender-name",
      "reject",
      "--api-key",
      account.apiKey,
      "--name",
      "Queued",
      "--reason",
      "unclear",
    );
    expect(rejected.name).toBe("Queued");
    const empty = await admin("sender-name", "list", "--pending", "--api-key", account.apiKey);
    expect(empty.senderNames).toEqual([]);
  }, 60_000);

  it("prints the error as JSON and exits non-zero for an unknown account", async () => {
    const failure = await run(
      "npx",
      ["--no-install", "tsx", "src/cli/admin.ts", "account", "get", "--api-key", "nope"],
      { env: { ...process.env, SMS_URL: service.baseUrl, SMS_ADMIN_TOKEN: ADMIN_TOKEN } },
    ).catch((e: { code: number; stdout: string }) => e);
    expect((failure as { code: number }).code).toBe(1);
    expect(JSON.parse((failure as { stdout: string }).stdout).error.code).toBe(5);
  });

  it("sets an account's spend controls and toll-fraud overrides, and lists the guard's events", async () => {
    const account = await service.createAccount({ credit: 10 });
    const set = await admin(
      "account",
      "spend-controls",
      "--api-key",
      account.apiKey,
      "--allowed-countries",
      "DE,FR",
      "--daily-limit",
      "2.5",
    );
    expect(set.spendControls).toMatchObject({
      allowedCountries: ["DE", "FR"],
      dailySpendLimitMicros: "2500000",
    });
    const refused = await postForm(`${service.baseUrl}/sms`, {
      to: "+447700900123",
      text: "Hi",
      ...account,
    });
    expect(refused.status).toBe(400);
    const cleared = await admin(
      "account",
      "spend-controls",
      "--api-key",
      account.apiKey,
      "--allowed-countries",
      "",
    );
    expect(cleared.spendControls.allowedCountries).toBeUndefined();

    const risk = await admin(
      "account",
      "risk",
      "--api-key",
      account.apiKey,
      "--mode",
      "block",
      "--max",
      "1",
    );
    expect(risk).toEqual({ mode: "block", max: 1 });
    for (const to of ["+4915112345001", "+4915112345002"]) {
      await postForm(`${service.baseUrl}/sms`, { to, text: "code", ...account });
    }
    // Kept off the send's path: read once it is there.
    await expect
      .poll(() =>
        service.store.db.collection("risk_events").countDocuments({ accountId: account.apiKey }),
      )
      .toBe(1);
    const events = await admin("risk", "events", "--api-key", account.apiKey);
    expect(events).toMatchObject([
      { to: "+4915112345002", action: "refused", range: "4915112345" },
    ]);
  });
});
