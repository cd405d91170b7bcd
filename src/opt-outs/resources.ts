import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import {
  type OptOut,
  OptOutAction,
  type OptOutChange,
  OptOutChangeSchema,
  OptOutSchema,
  OptOutSource,
} from "../../gen/sms/v1/types_pb.ts";
import { isValidPhoneNumber } from "../domain/phone-numbers.ts";
import { cannotBeEmpty, fieldErrors, invalidArgument, notFound } from "../errors/api-errors.ts";
import type { OptOutChangeDoc, OptOutDoc, OptOutSource as SourceName } from "./list.ts";

// Opt-out documents as the contract's resources, and the refusals every door shares.

export const SOURCE_TO_PROTO: Record<SourceName, OptOutSource> = {
  KEYWORD: OptOutSource.KEYWORD,
  API: OptOutSource.API,
  OPERATOR: OptOutSource.OPERATOR,
};

export function optOutResource(doc: OptOutDoc): OptOut {
  return create(OptOutSchema, {
    number: doc.number,
    source: SOURCE_TO_PROTO[doc.source],
    keyword: doc.keyword ?? "",
    ...(doc.inboundId !== undefined && { inboundMessageId: BigInt(doc.inboundId) }),
    createTime: timestampFromDate(doc.createTime),
  });
}

export function optOutChangeResource(doc: OptOutChangeDoc): OptOutChange {
  return create(OptOutChangeSchema, {
    number: doc.number,
    action: doc.action === "ADDED" ? OptOutAction.ADDED : OptOutAction.REMOVED,
    source: SOURCE_TO_PROTO[doc.source],
    keyword: doc.keyword ?? "",
    ...(doc.inboundId !== undefined && { inboundMessageId: BigInt(doc.inboundId) }),
    changeTime: timestampFromDate(doc.at),
  });
}

export const OPT_OUT_NUMBER_ERROR =
  "number must be a phone number: optional +, then 8 to 15 digits (country code and number), not starting with 0";

/** Refuses a number that cannot be on a list (the `to` rule of sends). */
export function checkOptOutNumber(number: string, field = "number"): void {
  if (number === "") throw invalidArgument({ [field]: cannotBeEmpty("number") });
  if (!isValidPhoneNumber(number)) throw invalidArgument({ [field]: OPT_OUT_NUMBER_ERROR });
}

export const optOutNotFound = (number: string) =>
  notFound("number", `${number} is not on the opt-out list`, "OPT_OUT_NOT_FOUND", {
    type: "sms.v1.OptOut",
    name: number,
  });

/** A handset's STOP (or, for the account, the operator's entry) is not the caller's to lift. */
export const notRemovable = (number: string, by: "account" | "operator") =>
  fieldErrors(
    Code.FailedPrecondition,
    {
      number:
        by === "account"
          ? `${number} was put on the list by the handset's STOP or by the operator: only the handset's START lifts a STOP`
          : `${number} was put on the list by the handset's STOP: only its START lifts it`,
    },
    { reason: "OPT_OUT_NOT_REMOVABLE" },
  );

/** A send to a number on the account's list: FAILED_PRECONDITION with the field `to`. */
export const OPTED_OUT_MESSAGE =
  "to has opted out of this account's messages (it sent STOP or was put on the account's opt-out list)";

export const recipientOptedOut = () =>
  fieldErrors(
    Code.FailedPrecondition,
    { to: OPTED_OUT_MESSAGE },
    { reason: "RECIPIENT_OPTED_OUT" },
  );
