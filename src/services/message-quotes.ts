/**
 * MessagingService.QuoteMessage (docs/design.md "Routing, failover and prices"): what SendMessage would
 * charge for a text to a recipient - parts, encoding, the destination's country and number type,
 * the price per part and in all - refused as SendMessage would refuse `to` and `text`. Never the
 * carrier.
 */
import { create } from "@bufbuild/protobuf";
import {
  NumberType,
  type QuoteMessageRequest,
  type QuoteMessageResponse,
  QuoteMessageResponseSchema,
  TextEncoding,
} from "../../gen/sms/v1/messaging_pb.ts";
import type { NumberType as TypeName } from "../domain/destination.ts";
import { isValidPhoneNumber, PHONE_NUMBER_ERROR } from "../domain/phone-numbers.ts";
import { textErrorMessage, validateText } from "../domain/segments.ts";
import { cannotBeEmpty, type FieldMessages, invalidArgument } from "../errors/api-errors.ts";
import type { IntakePolicy } from "./message-intake.ts";

const NUMBER_TYPES: Record<TypeName, NumberType> = {
  MOBILE: NumberType.MOBILE,
  FIXED_LINE: NumberType.FIXED_LINE,
  FIXED_LINE_OR_MOBILE: NumberType.FIXED_LINE_OR_MOBILE,
  TOLL_FREE: NumberType.TOLL_FREE,
  PREMIUM_RATE: NumberType.PREMIUM_RATE,
  SHARED_COST: NumberType.SHARED_COST,
  VOIP: NumberType.VOIP,
  PERSONAL_NUMBER: NumberType.PERSONAL_NUMBER,
  PAGER: NumberType.PAGER,
  UAN: NumberType.UAN,
  VOICEMAIL: NumberType.VOICEMAIL,
};

export function quoteMessage(req: QuoteMessageRequest, policy: IntakePolicy): QuoteMessageResponse {
  const errors: FieldMessages = {};
  let quoted: ReturnType<IntakePolicy["routing"]["quote"]> | undefined;
  if (req.to === "") errors.to = cannotBeEmpty("to");
  else if (!isValidPhoneNumber(req.to)) errors.to = PHONE_NUMBER_ERROR;
  else {
    quoted = policy.routing.quote(req.to);
    if ("error" in quoted) errors.to = quoted.error;
  }
  const text = validateText(req.text, policy.maxParts);
  if (req.text === "") errors.text = cannotBeEmpty("text");
  else if (!text.ok) errors.text = textErrorMessage(text.error, policy.maxParts);
  if (!quoted || "error" in quoted || !text.ok) throw invalidArgument(errors);
  const { country, numberType, pricePerPartMicros } = quoted.destination;
  return create(QuoteMessageResponseSchema, {
    to: req.to,
    country: country ?? "",
    numberType: numberType ? NUMBER_TYPES[numberType] : NumberType.UNSPECIFIED,
    parts: text.partCount,
    encoding: text.encoding === "latin1" ? TextEncoding.LATIN1 : TextEncoding.UNICODE,
    pricePerPartMicros: BigInt(pricePerPartMicros),
    priceMicros: BigInt(pricePerPartMicros) * BigInt(text.partCount),
  });
}
