import type { PricedDestination, Routing } from "../delivery/routing/routing.ts";
import { isOwnNumber } from "../domain/assigned-numbers.ts";
import { isValidPhoneNumber, PHONE_NUMBER_ERROR } from "../domain/phone-numbers.ts";
import { segmentText, textErrorMessage } from "../domain/segments.ts";
import { cannotBeEmpty, type FieldMessages } from "../errors/api-errors.ts";
import type { AccountView } from "./account-directory.ts";

// Validation of one message's fields, shared by single sends and every message of a batch.

export interface IntakePolicy {
  sharedSender: string;
  maxParts: number;
  /** Number validation, prices and routes (SMS_CARRIERS_FILE or the one-carrier shorthand). */
  routing: Routing;
}

export interface CheckedMessage {
  to: string;
  from: string;
  text: string;
  /** The parts when the text is split; undefined for a single-part message. */
  parts: string[] | undefined;
  partCount: number;
  /** Its country and price per part; the route is resolved with its id. */
  destination: PricedDestination;
  /** A batch message's clientRef (its own, else the batch's), set once checked. */
  clientRef?: string;
}

export type SenderCheck = { sender: string } | { error: string };

/**
 * The sender of a message: the given `from` when it is the shared literal or an approved name of
 * the account; when omitted, the account's default sender if it is still allowed, else the
 * shared literal.
 */
export function resolveSender(
  from: string | undefined,
  account: AccountView,
  policy: IntakePolicy,
): SenderCheck {
  if (from === undefined || from === "") {
    const fallback = account.defaultSender;
    return {
      sender: fallback && senderAllowed(fallback, account, policy) ? fallback : policy.sharedSender,
    };
  }
  if (senderAllowed(from, account, policy)) return { sender: from };
  return {
    error: `from must be the shared sender ${policy.sharedSender}, an approved sender name of the account or a number assigned to it`,
  };
}

function withError(
  errors: FieldMessages | undefined,
  field: keyof FieldMessages & string,
  message: string,
): FieldMessages {
  const found = errors ?? {};
  found[field] = message;
  return found;
}

function senderAllowed(name: string, account: AccountView, policy: IntakePolicy): boolean {
  return (
    name === policy.sharedSender ||
    account.approvedSenders.has(name) ||
    // A number the operator assigned needs no approval (docs/design.md "Two-way messaging": "Numbers").
    (account.numbers.size > 0 && isOwnNumber(name, account.numbers))
  );
}

export function checkMessage(
  input: { to: string; from: string | undefined; text: string },
  account: AccountView,
  policy: IntakePolicy,
): { message: CheckedMessage } | { errors: FieldMessages } {
  // Called for each of up to 10000 messages of a batch: no errors object unless one is found.
  let errors: FieldMessages | undefined;
  let destination: PricedDestination | undefined;
  if (input.to === "") errors = withError(errors, "to", cannotBeEmpty("to"));
  else if (!isValidPhoneNumber(input.to)) errors = withError(errors, "to", PHONE_NUMBER_ERROR);
  else {
    // Strict validation and the price: refused here, before anything is stored or charged.
    const checked = policy.routing.check(input.to);
    if ("error" in checked) errors = withError(errors, "to", checked.error);
    else destination = checked.destination;
  }

  let parts: string[] | undefined;
  let partCount = 0;
  if (input.text === "") errors = withError(errors, "text", cannotBeEmpty("text"));
  else {
    const segmented = segmentText(input.text, policy.maxParts);
    if (segmented.ok) {
      partCount = segmented.parts.length;
      parts = partCount > 1 ? segmented.parts : undefined;
    } else errors = withError(errors, "text", textErrorMessage(segmented.error, policy.maxParts));
  }

  const sender = resolveSender(input.from, account, policy);
  // Keys are proto field paths (SendMessageRequest.sender is `from` on REST and in JSON).
  if ("error" in sender) errors = withError(errors, "sender", sender.error);

  if (errors || "error" in sender || !destination) return { errors: errors ?? {} };
  return {
    message: { to: input.to, from: sender.sender, text: input.text, parts, partCount, destination },
  };
}

/** A status callback must be an absolute http(s) URL. Addresses are checked when sending. */
export function checkStatusCallback(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "statusCallback must be an absolute http or https URL";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return "statusCallback must be an absolute http or https URL";
  }
  if (parsed.username || parsed.password) return "statusCallback must not carry credentials";
  return undefined;
}
