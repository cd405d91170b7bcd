import { randomInt } from "node:crypto";
import type { Collection } from "mongodb";
import {
  generateWebhookSecret,
  hashSecret,
  newApiKey,
  newApiSecret,
} from "../domain/credentials.ts";
import { settleCharge } from "./charges.ts";
import type { AccountDoc, PendingCharge } from "./documents.ts";
import { entryOf, type MoneyCollections } from "./ledger.ts";

export const MICROS = 1_000_000;

export interface NewAccount {
  name: string;
  creditMicros: number;
  statusUrl?: string;
  defaultSender?: string;
}

export interface CreatedAccount {
  account: AccountDoc;
  apiSecret: string;
}

export async function createAccount(
  accounts: Collection<AccountDoc>,
  input: NewAccount,
  now = new Date(),
): Promise<CreatedAccount> {
  const apiSecret = newApiSecret();
  const account: AccountDoc = {
    _id: newApiKey(),
    name: input.name,
    secretHash: hashSecret(apiSecret),
    webhookSecret: generateWebhookSecret(),
    creditMicros: input.creditMicros,
    initialCreditMicros: input.creditMicros,
    pendingCharges: [],
    createdAt: now,
  };
  if (input.statusUrl) account.statusUrl = input.statusUrl;
  if (input.defaultSender) account.defaultSender = input.defaultSender;
  await accounts.insertOne(account);
  return { account, apiSecret };
}

/**
 * Adds (or, negative, removes) credit; refuses to go below zero. Null when no such account. The
 * change carries its pending record in the same update, and the record goes once its CREDIT entry
 * is written (store/ledger.ts); a crash in between leaves both to the settler.
 */
export async function addCredit(
  money: MoneyCollections,
  apiKey: string,
  amountMicros: number,
  now: Date,
  note?: string,
): Promise<AccountDoc | "insufficient" | null> {
  const filter =
    amountMicros < 0 ? { _id: apiKey, creditMicros: { $gte: -amountMicros } } : { _id: apiKey };
  const record: PendingCharge = {
    ref: randomInt(2 ** 47),
    kind: "credit",
    amountMicros,
    at: now,
    ...(note && { note }),
  };
  const updated = await money.accounts.findOneAndUpdate(
    filter,
    { $inc: { creditMicros: amountMicros }, $push: { pendingCharges: record } },
    { returnDocument: "after" },
  );
  if (updated) {
    const entry = entryOf(apiKey, record, amountMicros, note ? { note } : {});
    // Left pending on failure: the settler writes the entry and removes the record.
    await settleCharge(money, apiKey, record, 0, { record: { entry } }).catch(() => undefined);
    return { ...updated, pendingCharges: updated.pendingCharges.filter((c) => c !== record) };
  }
  const exists = await money.accounts.countDocuments({ _id: apiKey }, { limit: 1 });
  return exists ? "insufficient" : null;
}

export async function updateAccount(
  accounts: Collection<AccountDoc>,
  apiKey: string,
  field: "statusUrl" | "defaultSender",
  value: string,
): Promise<AccountDoc | null> {
  const update = value ? { $set: { [field]: value } } : { $unset: { [field]: "" as const } };
  return accounts.findOneAndUpdate({ _id: apiKey }, update, { returnDocument: "after" });
}
