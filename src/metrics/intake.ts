import { Counter, type Registry } from "prom-client";

// What the messaging service accepted, refused and charged. No account label: the design keeps
// accounts out of labels (per-account traffic is the dashboard's and the database's).

/** Why messages were refused at intake. */
export type RejectionReason =
  | "invalid"
  | "credit"
  | "busy"
  | "opted_out"
  /** The account's allowed countries or price ceiling (docs/design.md "Money"). */
  | "spend_controls"
  /** The account's daily spend limit. */
  | "spend_limit"
  /** The toll-fraud guard in `block` mode. */
  | "toll_fraud";

export interface IntakeMetrics {
  accepted(messages: number, parts: number, chargedMicros: number): void;
  rejected(reason: RejectionReason, messages: number, parts: number): void;
  /** Messages the toll-fraud guard flagged (`monitor`: accepted) or refused (`block`). */
  riskFlagged?(action: "flagged" | "refused", messages: number): void;
}

export function intakeMetrics(registry: Registry): IntakeMetrics {
  const registers = [registry];
  const messagesAccepted = new Counter({
    name: "sms_messages_accepted_total",
    help: "Messages accepted (single sends and batch members)",
    registers,
  });
  const partsAccepted = new Counter({
    name: "sms_parts_accepted_total",
    help: "Message parts accepted (what is charged and submitted)",
    registers,
  });
  const messagesRejected = new Counter({
    name: "sms_messages_rejected_total",
    help: "Messages refused: invalid fields, not enough credit, the account busy, the recipient opted out, the account's spend controls or daily limit, or the toll-fraud guard",
    labelNames: ["reason"],
    registers,
  });
  const partsRejected = new Counter({
    name: "sms_parts_rejected_total",
    help: "Parts of refused messages, where the text could be split (not for an invalid text)",
    labelNames: ["reason"],
    registers,
  });
  const credit = new Counter({
    name: "sms_credit_charged_total",
    help: "Credit charged for accepted messages, in credit units",
    registers,
  });
  const riskFlagged = new Counter({
    name: "sms_risk_flagged_total",
    help: "Messages the toll-fraud guard flagged (accepted, mode monitor) or refused (mode block)",
    labelNames: ["action"],
    registers,
  });
  return {
    riskFlagged(action, messages) {
      riskFlagged.inc({ action }, messages);
    },
    accepted(messages, parts, chargedMicros) {
      messagesAccepted.inc(messages);
      partsAccepted.inc(parts);
      credit.inc(chargedMicros / 1_000_000);
    },
    rejected(reason, messages, parts) {
      messagesRejected.inc({ reason }, messages);
      if (parts > 0) partsRejected.inc({ reason }, parts);
    },
  };
}
