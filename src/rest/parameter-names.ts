import { ApiKeyService } from "../../gen/sms/v1/api_keys_pb.ts";
import { InboundService } from "../../gen/sms/v1/inbound_pb.ts";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { AccountService, UsageService } from "../../gen/sms/v1/money_pb.ts";
import { OptOutService } from "../../gen/sms/v1/opt_outs_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";

// The services name a wrong field by its proto path (`status_callback`, `messages[3].to`); the
// REST API names the parameter. A request field's JSON name is its REST parameter by
// construction (`statusCallback`; `sender` and `ttl_seconds` carry json_name `from` and `ttl`),
// so the mapping is read from the descriptors rather than kept by hand.

const JSON_NAMES = new Map<string, string>();
for (const service of [
  MessagingService,
  SenderNameService,
  InboundService,
  OptOutService,
  UsageService,
  AccountService,
  ApiKeyService,
]) {
  for (const method of service.methods) {
    for (const field of method.input.fields) JSON_NAMES.set(field.name, field.jsonName);
  }
}

/**
 * Paths whose REST parameter is not their JSON name: the spend controls are top-level fields of
 * `PATCH /account/spend-controls` in credit units, the quiet hours' times top-level fields of
 * `PATCH /account/quiet-hours`, and usage's dates are `since` and `until` (docs/design.md "Money").
 */
const REST_NAMES: Record<string, string> = {
  "spend_controls.allowed_countries": "allowedCountries",
  "spend_controls.max_price_per_message_micros": "maxPricePerMessage",
  "spend_controls.daily_spend_limit_micros": "dailySpendLimit",
  "quiet_hours.start": "start",
  "quiet_hours.end": "end",
  start_date: "since",
  end_date: "until",
};

/** The REST parameter a proto field path is about: its first field's JSON name. */
export function restParameter(fieldPath: string): string {
  const named = REST_NAMES[fieldPath];
  if (named) return named;
  const head = fieldPath.split(/[.[]/, 1)[0] ?? fieldPath;
  return JSON_NAMES.get(head) ?? head;
}
