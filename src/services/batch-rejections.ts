import { create } from "@bufbuild/protobuf";
import { type BatchMessageError, BatchMessageErrorSchema } from "../../gen/sms/v1/messaging_pb.ts";
import type { FieldMessages, Reason } from "../errors/api-errors.ts";
import { canonicalNumber } from "../opt-outs/list.ts";
import { OPTED_OUT_MESSAGE } from "../opt-outs/resources.ts";
import type { CheckedMessage } from "./message-intake.ts";

// The rejected messages of a batch (SendBatchResponse.errors): invalid ones, and those to
// numbers on the account's opt-out list, in index order.

/** A rejected message of a batch: its errors with their proto paths in the request. */
export function rejection(
  index: number,
  errors: FieldMessages,
  reason: Reason = "FIELD_INVALID",
): BatchMessageError {
  return create(BatchMessageErrorSchema, {
    index,
    reason,
    text: Object.values(errors).join("; "),
    fieldViolations: Object.entries(errors).map(([field, description]) => ({
      field: `messages[${index}].${field}`,
      description,
    })),
  });
}

/** Splits the batch's valid messages (`at`: their indexes) into those sent and the opted-out. */
export function withoutOptedOut(
  messages: CheckedMessage[],
  at: number[],
  refused: ReadonlySet<string>,
) {
  const accepted: CheckedMessage[] = [];
  const rejected: BatchMessageError[] = [];
  let parts = 0;
  messages.forEach((message, i) => {
    if (!refused.has(canonicalNumber(message.to))) accepted.push(message);
    else {
      rejected.push(rejection(at[i] ?? 0, { to: OPTED_OUT_MESSAGE }, "RECIPIENT_OPTED_OUT"));
      parts += message.partCount;
    }
  });
  return { accepted, rejected, parts };
}

/** Two lists of rejections, each in index order, as one in index order. */
export function mergeByIndex(a: BatchMessageError[], b: BatchMessageError[]): BatchMessageError[] {
  const merged: BatchMessageError[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const x = a[i];
    const y = b[j];
    if (y === undefined || (x !== undefined && x.index < y.index)) {
      merged.push(x as BatchMessageError);
      i++;
    } else {
      merged.push(y);
      j++;
    }
  }
  return merged;
}
