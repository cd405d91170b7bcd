import type { ServiceImpl } from "@connectrpc/connect";
import type { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import type { IntakeMetrics } from "../metrics/intake.ts";
import type { RiskEvents, TollFraudGuard } from "../money/toll-fraud-guard.ts";
import type { OptOutReads } from "../opt-outs/list-reads.ts";
import type { ChargeConfirmations } from "../store/charge-confirmations.ts";
import type { Store } from "../store/database.ts";
import type { MessageWriter } from "../store/message-writer.ts";
import type { IdAllocator } from "../store/sequences.ts";
import type { AccountDirectory } from "./account-directory.ts";
import type { IntakePolicy } from "./message-intake.ts";

export type OptedOutCheck = (
  accountId: string,
  numbers: string[],
  options: { maxTimeMS: number; signal: AbortSignal },
) => Promise<ReadonlySet<string>>;

export interface MessagingDeps {
  store: Store;
  directory: AccountDirectory;
  messageIds: IdAllocator;
  confirmations: ChargeConfirmations;
  /** Stores single sends with group commit. */
  writer: MessageWriter;
  /** Senders, text length, and (policy.routing) number validation, prices per part and routes. */
  policy: IntakePolicy;
  /**
   * A call's deadline (services/database-deadlines.ts), and how long a batch may take to store
   * once charged; the settler's cutoff is at least twice the longer (docs/decisions.md).
   */
  timeouts?: { requestMs: number; batchStoreMs: number };
  /**
   * Called after messages are stored, before the answer: schedules their delivery (the account's
   * lanes, due at the earliest `deliveryAt`) and wakes the delivery worker.
   */
  onAccepted?: (accountId: string, deliveryAt: Date, acceptedAt: Date) => Promise<void> | void;
  /** Counts what is accepted, refused and charged (metrics/intake.ts); none when absent. */
  intake?: IntakeMetrics;
  /**
   * The canonical (`+`) numbers among `numbers` on the account's opt-out list, which are refused
   * before anything is stored or charged (opt-outs/rules.ts); none refused when absent.
   */
  optedOut?: OptedOutCheck;
  /** A single send's check of the list, which reads nothing while it is empty. */
  sendChecks?: Pick<OptOutReads, "checkSend" | "forget">;
  /** The toll-fraud guard and where its events are kept; none when absent. */
  risk?: { guard: TollFraudGuard; events: RiskEvents };
}

export type MessagingImpl = ServiceImpl<typeof MessagingService>;

export const timeoutsOf = (deps: MessagingDeps) =>
  deps.timeouts ?? { requestMs: 5_000, batchStoreMs: 30_000 };
