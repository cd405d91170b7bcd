import { generateWebhookSecret } from "../../src/domain/credentials.ts";
import type { ReasonName, StatusName } from "../../src/domain/message-status.ts";
import { markLanesDue } from "../../src/scheduling/lanes.ts";
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

/**
 * Stores the messages as accepted (at `at`, default now) and marks their accounts' lanes due, as
 * the intake does; returns their ids.
 */
export async function insertMessages(
  store: Store,
  messages: NewMessage[],
  at: Date = new Date(),
): Promise<number[]> {
  const docs = messages.map((m) => acceptedMessage(m, at));
  await store.messages.insertMany(docs);
  const due = new Map<string, { delivery: Date; notify: Date }>();
  for (const doc of docs) {
    const lanes = due.get(doc.accountId) ?? { delivery: doc.deliveryAt ?? at, notify: at };
    if (doc.deliveryAt && doc.deliveryAt < lanes.delivery) lanes.delivery = doc.deliveryAt;
    due.set(doc.accountId, lanes);
  }
  await markLanesDue(store.lanes, due);
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

const DESIGNED_FAILURES: Readonly<Record<string, { status: StatusName; reason?: ReasonName }>> = {
  "1": { status: "SEND_ERROR" },
  "2": { status: "DELIVERY_ERROR", reason: "Unreachable" },
  "3": { status: "DELIVERY_ERROR", reason: "Expired" },
  "4": { status: "DELIVERY_ERROR", reason: "SIM card full" },
  "5": { status: "DELIVERY_ERROR", reason: "Unroutable" },
  "6": { status: "DELIVERY_ERROR", reason: "Undelivered" },
  // SENT, then no receipt: expired when the ttl runs out.
  "7": { status: "DELIVERY_ERROR", reason: "Expired" },
};

/**
 * The final status, reason and notified statuses the design's simulator table gives a number
 * (`+999…` by its last digit; every other number is delivered). Restated here, not read from the
 * simulator, so the tests check the simulator against the design.
 */
export function designedOutcome(to: string): {
  status: StatusName;
  reason?: ReasonName;
  statuses: StatusName[];
} {
  const failure = to.startsWith("+999") ? DESIGNED_FAILURES[to.slice(-1)] : undefined;
  const final = failure ?? { status: "DELIVERED" as const };
  const statuses: StatusName[] =
    final.status === "SEND_ERROR" ? ["ACCEPTED", "SEND_ERROR"] : ["ACCEPTED", "SENT", final.status];
  return { ...final, statuses };
}
