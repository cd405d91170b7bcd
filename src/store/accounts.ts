import type { Collection } from "mongodb";
import {
  generateWebhookSecret,
  hashSecret,
  newApiKey,
  newApiSecret,
} from "../domain/credentials.ts";
import type { AccountDoc } from "./documents.ts";

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
    pendingCharges: [],
    createdAt: now,
  };
  if (input.statusUrl) account.statusUrl = input.statusUrl;
  if (input.defaultSender) account.defaultSender = input.defaultSender;
  await accounts.insertOne(account);
  return { account, apiSecret };
}

/** Adds (or, negative, removes) credit; refuses to go below zero. Null when no such account. */
export async function addCredit(
  accounts: Collection<AccountDoc>,
  apiKey: string,
  amountMicros: number,
): Promise<AccountDoc | "insufficient" | null> {
  const filter =
    amountMicros < 0 ? { _id: apiKey, creditMicros: { $gte: -amountMicros } } : { _id: apiKey };
  const updated = await accounts.findOneAndUpdate(
    filter,
    { $inc: { creditMicros: amountMicros } },
    { returnDocument: "after" },
  );
  if (updated) return updated;
  const exists = await accounts.countDocuments({ _id: apiKey }, { limit: 1 });
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
