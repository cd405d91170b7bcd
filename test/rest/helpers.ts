// Helpers shared by the API tests: raw HTTP where fetch cannot go (bodies refused before they are
// read, bytes that are not UTF-8), and the account state the tests assert on.
import http from "node:http";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { adminHeaders, type RunningService } from "../support/service.ts";

export interface Account {
  apiKey: string;
  apiSecret: string;
}

export interface RawResponse {
  status: number;
  body: any;
}

/**
 * POST raw bytes with node:http. A server may answer 413 and close before reading a body, which
 * makes fetch fail with EPIPE; here the answer is read whatever happens to the upload.
 * `declaredLength` may announce more than is sent, to test limits without building the body.
 */
export function rawPost(
  url: string,
  contentType: string | undefined,
  body: string | Buffer,
  declaredLength = Buffer.byteLength(body),
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = { "content-length": declaredLength };
    if (contentType !== undefined) headers["content-type"] = contentType;
    const request = http.request(url, { method: "POST", headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: response.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
      });
      response.on("error", reject);
    });
    // An upload cut short by the server is expected; only a missing answer is an error.
    request.on("error", (error) => setTimeout(() => reject(error), 1000));
    request.end(body);
  });
}

/** GET or DELETE with the credentials in the query. */
export async function withQuery(
  method: "GET" | "DELETE",
  url: string,
  query: Record<string, string>,
): Promise<RawResponse> {
  const response = await fetch(`${url}?${new URLSearchParams(query)}`, { method });
  return { status: response.status, body: await response.json() };
}

/** Account credit, read from the database (exact micro-units converted to currency). */
export async function creditOf(service: RunningService, apiKey: string): Promise<number> {
  const account = await service.store.accounts.findOne({ _id: apiKey });
  return (account?.creditMicros ?? Number.NaN) / 1_000_000;
}

/** What an account has stored: messages, batches and the sum of charges not yet confirmed. */
export async function storedFor(service: RunningService, apiKey: string) {
  const [messages, batches] = await Promise.all([
    service.store.messages.countDocuments({ accountId: apiKey }),
    service.store.batches.countDocuments({ accountId: apiKey }),
  ]);
  return { messages, batches, credit: await creditOf(service, apiKey) };
}

export const senderNameRequest = (name: string) => ({
  name,
  purpose: "NOTIFICATION",
  ownerType: "COMPANY",
  owner: "Example Ltd",
  exampleMsg: "Your parcel arrives today",
});

/** Requests a sender name through REST and has the operator approve it. */
export async function approvedSenderName(
  service: RunningService,
  account: Account,
  name: string,
): Promise<void> {
  const response = await fetch(`${service.baseUrl}/sender_names`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...senderNameRequest(name), ...account }),
  });
  if (response.status !== 200) throw new Error(`sender name ${name}: ${await response.text()}`);
  await service.admin.approveSenderName({ apiKey: account.apiKey, name }, adminHeaders);
}

export async function setDefaultSender(
  service: RunningService,
  account: Account,
  senderName: string,
): Promise<void> {
  await service.admin.setDefaultSender({ apiKey: account.apiKey, senderName }, adminHeaders);
}

/** Call options of an account's Connect call: its Basic credentials. */
export const accountCall = (who: Account) => ({
  headers: { authorization: basicAuthorization(who.apiKey, who.apiSecret) },
});

/** `n` distinct valid phone numbers. */
export const phoneNumbers = (n: number, prefix = "+49151"): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(8, "0")}`);
