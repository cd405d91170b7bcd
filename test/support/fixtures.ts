import { generateWebhookSecret } from "../../src/notifier/signature.ts";
import type { Store } from "../../src/store/database.ts";
import type { AccountDoc } from "../../src/store/documents.ts";
import { acceptedMessage, type NewMessage } from "../../src/store/messages.ts";

// Accounts and messages written straight into a test database, for tests of the worker and the
// notifier that do not go through the API.

let nextId = 1;

/** Ids unique within a test file (each file has its own database). */
export function nextTestId(): number {
  return nextId++;
}

export async function insertAccount(store: Store, statusUrl?: string): Promise<AccountDoc> {
  const account: AccountDoc = {
    _id: `key-${nextTestId()}`,
    name: "test",
    secretHash: "unused",
    webhookSecret: generateWebhookSecret(),
    creditMicros: 0,
    pendingCharges: [],
    createdAt: new Date(),
  };
  if (statusUrl) account.statusUrl = statusUrl;
  await store.accounts.insertOne(account);
  return account;
}

/** A one-part message with a new id; `extra` overrides any field. */
export function testMessage(
  accountId: string,
  to: string,
  extra: Partial<NewMessage> = {},
): NewMessage {
  return {
    id: nextTestId(),
    accountId,
    to,
    from: "Tester",
    text: "hello",
    parts: 1,
    ttl: 3600,
    ...extra,
  };
}

/** Stores the messages as accepted (at `at`, default now) and returns their ids. */
export async function insertMessages(
  store: Store,
  messages: NewMessage[],
  at: Date = new Date(),
): Promise<number[]> {
  await store.messages.insertMany(messages.map((m) => acceptedMessage(m, at)));
  return messages.map((m) => m.id);
}

/** Polls until `check` holds; fails after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
