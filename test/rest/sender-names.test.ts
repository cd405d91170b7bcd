/**
 * Sender names over real HTTP, with the operator's side through AdminService: request (form and
 * JSON) with every field checked, list, delete, approval and rejection, the `default` flag, and
 * which names a message may be sent from.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  adminHeaders,
  postForm,
  postJson,
  type RunningService,
  startService,
} from "../support/service.ts";
import { type Account, senderNameRequest, setDefaultSender, withQuery } from "./helpers.ts";

let service: RunningService;
let url: string;

beforeAll(async () => {
  service = await startService();
  url = `${service.baseUrl}/sender_names`;
});
afterAll(() => service?.close());

const request = (name: string, who: Account) =>
  postJson(url, { ...senderNameRequest(name), ...who });
const list = (who: Account) => withQuery("GET", url, { ...who });
const remove = (name: string, who: Account) =>
  withQuery("DELETE", `${url}/${encodeURIComponent(name)}`, { ...who });
const approve = (name: string, who: Account) =>
  service.admin.approveSenderName({ apiKey: who.apiKey, name }, adminHeaders);
const reject = (name: string, who: Account) =>
  service.admin.rejectSenderName({ apiKey: who.apiKey, name }, adminHeaders);
const sendFrom = (from: string, who: Account) =>
  postJson(`${service.baseUrl}/sms`, { to: "+4915112345678", text: "x", from, ...who });
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );

describe("POST /sender_names", () => {
  it("answers the new name: pending, not reliable, not default (JSON and form)", async () => {
    const account = await service.createAccount();
    const json = await request("Shop24", account);
    expect(json.status).toBe(200);
    expect(json.body).toEqual({ name: "Shop24", pending: true, reliable: false, default: false });
    const form = await postForm(url, { ...senderNameRequest("Form"), ...account });
    expect(form.status).toBe(200);
    expect(form.body).toEqual({ name: "Form", pending: true, reliable: false, default: false });
    const stored = await service.store.senderNames.findOne({
      accountId: account.apiKey,
      name: "Shop24",
    });
    expect(stored).toMatchObject({
      purpose: "NOTIFICATION",
      ownerType: "COMPANY",
      owner: "Example Ltd",
      exampleMsg: "Your parcel arrives today",
    });
  });

  it("accepts 11 letters and digits and refuses 12 or anything else", async () => {
    const account = await service.createAccount();
    expect((await request("Abcdefghij1", account)).status).toBe(200);
    for (const name of ["Abcdefghij12", "Shop-24", "Shop 24", "Café", "😀"]) {
      const { status, body } = await request(name, account);
      expect(status).toBe(400);
      expect(body).toEqual({
        errors: { name: ["name must be at most 11 characters, letters and digits only"] },
      });
    }
  });

  it("requires every field; purpose and ownerType are enumerations", async () => {
    const account = await service.createAccount();
    const missing = await postJson(url, {});
    expect(missing.status).toBe(400);
    expect(Object.keys(missing.body.errors).sort()).toEqual([
      "apiKey",
      "apiSecret",
      "exampleMsg",
      "name",
      "owner",
      "ownerType",
      "purpose",
    ]);
    expect(missing.body.errors.exampleMsg).toEqual(["exampleMsg cannot be empty"]);

    const invalid = await postJson(url, {
      ...senderNameRequest("Valid"),
      purpose: "SPAM",
      ownerType: "company",
      owner: "",
      exampleMsg: "   ",
      ...account,
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body).toEqual({
      errors: {
        purpose: ["purpose must be one of OTP, NOTIFICATION, MARKETING"],
        ownerType: ["ownerType must be one of COMPANY, NAME, WEBSITE"],
        owner: ["owner cannot be empty"],
      },
    });
    // Blank text passes the shape check and is caught by the service.
    const blank = await postJson(url, {
      ...senderNameRequest("Valid"),
      exampleMsg: "   ",
      ...account,
    });
    expect(blank.body).toEqual({ errors: { exampleMsg: ["exampleMsg cannot be empty"] } });
    expect(await service.store.senderNames.countDocuments({ accountId: account.apiKey })).toBe(0);
  });

  it("accepts every purpose and owner type", async () => {
    const account = await service.createAccount();
    let n = 0;
    for (const purpose of ["OTP", "NOTIFICATION", "MARKETING"]) {
      for (const ownerType of ["COMPANY", "NAME", "WEBSITE"]) {
        const { status } = await postJson(url, {
          ...senderNameRequest(`Name${n++}`),
          purpose,
          ownerType,
          ...account,
        });
        expect(status).toBe(200);
      }
    }
  });

  it("refuses a name the account has already, and the shared sender literal", async () => {
    const account = await service.createAccount();
    const other = await service.createAccount();
    expect((await request("Twice", account)).status).toBe(200);
    const again = await request("Twice", account);
    expect(again.status).toBe(400);
    expect(again.body).toEqual({
      errors: { name: ["sender name Twice already exists on this account"] },
    });
    // Names are per account.
    expect((await request("Twice", other)).status).toBe(200);
    const shared = await request("SMSINFO", account);
    expect(shared.status).toBe(400);
    expect(shared.body).toEqual({
      errors: {
        name: ["SMSINFO is the shared sender name: every account may send from it already"],
      },
    });
  });

  it("wrong credentials are 401", async () => {
    const account = await service.createAccount();
    const { status, body } = await request("Name", { apiKey: account.apiKey, apiSecret: "x" });
    expect(status).toBe(401);
    expect(body).toEqual({ errors: { request: ["apiKey and apiSecret do not match an account"] } });
  });
});

describe("GET /sender_names", () => {
  it("lists the account's names under sender_names, with the default flag", async () => {
    const account = await service.createAccount();
    expect((await list(account)).body).toEqual({ sender_names: [] });
    await request("First", account);
    await request("Second", account);
    await approve("Second", account);
    await setDefaultSender(service, account, "Second");
    const { status, body } = await list(account);
    expect(status).toBe(200);
    expect(body).toEqual({
      sender_names: [
        { name: "First", pending: true, reliable: false, default: false },
        { name: "Second", pending: false, reliable: false, default: true },
      ],
    });
    const stranger = await service.createAccount();
    expect((await list(stranger)).body).toEqual({ sender_names: [] });
  });

  it("credentials: missing is 400 per parameter, wrong is 401", async () => {
    const missing = await withQuery("GET", url, { apiKey: "" });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({
      errors: { apiKey: ["apiKey cannot be empty"], apiSecret: ["apiSecret cannot be empty"] },
    });
    const wrong = await withQuery("GET", url, { apiKey: "nobody", apiSecret: "x" });
    expect(wrong.status).toBe(401);
  });
});

describe("approval, rejection and use as sender", () => {
  it("a pending name cannot be sent from; approved, it can", async () => {
    const account = await service.createAccount();
    await request("Brand", account);
    expect((await sendFrom("Brand", account)).status).toBe(400);
    const approved = await approve("Brand", account);
    expect(approved.senderName).toMatchObject({ name: "Brand", pending: false, isDefault: false });
    // Approving again changes nothing.
    expect((await approve("Brand", account)).senderName?.pending).toBe(false);
    expect((await list(account)).body.sender_names[0]).toMatchObject({
      name: "Brand",
      pending: false,
    });
    const sent = await sendFrom("Brand", account);
    expect(sent.status).toBe(200);
    expect(sent.body.from).toBe("Brand");
  });

  it("rejection removes a pending name; an approved name cannot be rejected", async () => {
    const account = await service.createAccount();
    await request("Rejected", account);
    const rejected = await reject("Rejected", account);
    expect(rejected.senderName?.name).toBe("Rejected");
    expect((await list(account)).body).toEqual({ sender_names: [] });
    expect((await failure(reject("Rejected", account)))?.code).toBe(Code.NotFound);

    await request("Kept", account);
    await approve("Kept", account);
    const error = await failure(reject("Kept", account));
    expect(error?.code).toBe(Code.FailedPrecondition);
    expect((await list(account)).body.sender_names).toHaveLength(1);
  });

  it("the operator cannot approve an unknown name, nor make a pending one the default", async () => {
    const account = await service.createAccount();
    expect((await failure(approve("Unknown", account)))?.code).toBe(Code.NotFound);
    await request("Waiting", account);
    const error = await failure(setDefaultSender(service, account, "Waiting"));
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(error?.rawMessage).toMatch(
      /neither the shared sender SMSINFO, an approved sender name of the account nor a number assigned to it/,
    );
    await setDefaultSender(service, account, "SMSINFO");
  });
});

describe("DELETE /sender_names/{name}", () => {
  it("answers the deleted object; deleting the default clears the default", async () => {
    const account = await service.createAccount();
    await request("Main", account);
    await approve("Main", account);
    await setDefaultSender(service, account, "Main");
    expect(
      (await postJson(`${service.baseUrl}/sms`, { to: "+4915112345678", text: "x", ...account }))
        .body.from,
    ).toBe("Main");

    const { status, body } = await remove("Main", account);
    expect(status).toBe(200);
    expect(body).toEqual({ name: "Main", pending: false, reliable: false, default: true });
    expect((await list(account)).body).toEqual({ sender_names: [] });
    const stored = await service.admin.getAccount({ apiKey: account.apiKey }, adminHeaders);
    expect(stored.account?.defaultSender).toBe("");
    const sent = await postJson(`${service.baseUrl}/sms`, {
      to: "+4915112345678",
      text: "x",
      ...account,
    });
    expect(sent.body.from).toBe("SMSINFO");
    expect((await sendFrom("Main", account)).status).toBe(400);
  });

  it("deletes a pending name too", async () => {
    const account = await service.createAccount();
    await request("Pending", account);
    const { status, body } = await remove("Pending", account);
    expect(status).toBe(200);
    expect(body).toEqual({ name: "Pending", pending: true, reliable: false, default: false });
  });

  it("an unknown name, or another account's, is 404 on errors.name", async () => {
    const account = await service.createAccount();
    const other = await service.createAccount();
    await request("Theirs", other);
    for (const name of ["Nothing", "Theirs"]) {
      const { status, body } = await remove(name, account);
      expect(status).toBe(404);
      expect(body).toEqual({ errors: { name: [`no sender name ${name} on this account`] } });
    }
    expect((await list(other)).body.sender_names).toHaveLength(1);
  });

  it("credentials are query parameters", async () => {
    const { status, body } = await withQuery("DELETE", `${url}/Name`, {});
    expect(status).toBe(400);
    expect(body).toEqual({
      errors: { apiKey: ["apiKey cannot be empty"], apiSecret: ["apiSecret cannot be empty"] },
    });
  });
});
