import type { DescMethod } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";

// What each key scope may call (docs/design.md "Accounts, API keys and the operator console"):
// `read` every call without side effects, `send` those and the calls that send or charge, `full`
// everything. A method not named here and with side effects needs `full`: a new RPC is closed to
// restricted keys until someone decides otherwise.

export type Scope = "full" | "send" | "read";
export const SCOPES: readonly Scope[] = ["full", "send", "read"];

const RANK: Record<Scope, number> = { read: 0, send: 1, full: 2 };

/** Calls a `send` key may make besides every read: sends, quotes, cancels, adding an opt-out. */
const SEND_CALLS = new Set([
  "sms.v1.MessagingService.SendMessage",
  "sms.v1.MessagingService.SendBatch",
  "sms.v1.MessagingService.QuoteMessage",
  "sms.v1.MessagingService.CancelMessage",
  "sms.v1.OptOutService.CreateOptOut",
]);

/** Calls a suspended account may not make: those that send, ask for a name or make a key. */
const SUSPENDED_CALLS = new Set([
  "sms.v1.MessagingService.SendMessage",
  "sms.v1.MessagingService.SendBatch",
  "sms.v1.SenderNameService.CreateSenderName",
  "sms.v1.ApiKeyService.CreateApiKey",
]);

/** Services whose every call needs `full`, reads included: the account's keys are its keys. */
const FULL_SERVICES = new Set(["sms.v1.ApiKeyService"]);

const fullName = (method: DescMethod) => `${method.parent.typeName}.${method.name}`;

/** The least scope that may call `method`. */
export function scopeNeeded(method: DescMethod): Scope {
  if (FULL_SERVICES.has(method.parent.typeName)) return "full";
  if (SEND_CALLS.has(fullName(method))) return "send";
  if (method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS) return "read";
  return "full";
}

export function scopeAllows(scope: Scope, method: DescMethod): boolean {
  return RANK[scope] >= RANK[scopeNeeded(method)];
}

export function refusedWhileSuspended(method: DescMethod): boolean {
  return SUSPENDED_CALLS.has(fullName(method));
}
