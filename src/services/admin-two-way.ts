import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import {
  type Account,
  type AdminService,
  type AssignedNumber,
  AssignedNumberSchema,
} from "../../gen/sms/admin/v1/admin_pb.ts";
import { ASSIGNED_NUMBER_ERROR, assignedNumberForm } from "../domain/assigned-numbers.ts";
import { PHONE_NUMBER_PATTERN } from "../domain/phone-numbers.ts";
import { validateText } from "../domain/segments.ts";
import {
  cannotBeEmpty,
  type FieldMessages,
  fieldErrors,
  invalidArgument,
  notFound,
} from "../errors/api-errors.ts";
import type { MoPart } from "../inbound/mo-part.ts";
import { partKey } from "../inbound/mo-part.ts";
import {
  checkOptOutNumber,
  notRemovable,
  optOutNotFound,
  optOutResource,
} from "../opt-outs/resources.ts";
import type { OptOutRules } from "../opt-outs/rules.ts";
import type { Store } from "../store/database.ts";
import type { AccountDoc } from "../store/documents.ts";
import { inboundMessagesCollection } from "../store/inbound-messages.ts";
import { findNumberPage } from "../store/number-pages.ts";
import { assignNumber, type NumberDoc, NumberTaken, numbersCollection } from "../store/numbers.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { authenticateOperator } from "./authentication.ts";
import { checkCallbackUrl } from "./callback-urls.ts";
import { inboundResource } from "./inbound-service.ts";
import { cursorOf, MESSAGE_PAGES, paged, pageSize, pageToken } from "./page-tokens.ts";

type TwoWayMethods =
  | "assignNumber"
  | "releaseNumber"
  | "listNumbers"
  | "setInboundUrl"
  | "simulateInbound"
  | "createOptOut"
  | "deleteOptOut";

export interface TwoWayAdminDeps {
  store: Store;
  directory: AccountDirectory;
  adminToken: string;
  /** The opt-out rules; the opt-out RPCs are refused (UNAVAILABLE) without them. */
  optOutRules?: OptOutRules;
  /** SMS_CARRIER: SimulateInbound works with the simulator only. */
  carrier?: string;
  /** The inbound intake (src/inbound/intake.ts) that SimulateInbound feeds. */
  inbound?: { take(parts: readonly MoPart[]): Promise<("stored" | "unowned")[]> };
}

const numberNotFound = (number: string) =>
  notFound("number", `number ${number} is not assigned to any account`, "NUMBER_NOT_FOUND", {
    type: "sms.admin.v1.AssignedNumber",
    name: number,
  });

export function assignedNumberResource(doc: NumberDoc): AssignedNumber {
  return create(AssignedNumberSchema, {
    number: doc._id,
    apiKey: doc.accountId,
    assignTime: timestampFromDate(doc.assignedAt),
  });
}

function keptForm(number: string): string {
  if (number === "") throw invalidArgument({ number: cannotBeEmpty("number") });
  const kept = assignedNumberForm(number);
  if (!kept) throw invalidArgument({ number: ASSIGNED_NUMBER_ERROR });
  return kept;
}

/** The UTF-16BE payload of a simulated MO: any text, in one part (the simulator has no size). */
function simulatedPart(from: string, to: string, text: string): MoPart {
  const payload = Buffer.from(text, "utf16le").swap16();
  // Each call is a message of its own: a carrier connection of its own, so the redelivery key
  // never merges two demos of the same word (docs/design.md "Two-way messaging": the simulator).
  return { carrier: `simulator:${randomUUID()}`, from, to, dataCoding: 8, payload };
}

/** AdminService's numbers, inbound URL, simulated inbound messages and opt-outs. */
export function twoWayAdmin(
  deps: TwoWayAdminDeps,
  account: {
    message: (doc: AccountDoc) => Account;
    found: (doc: AccountDoc | null, apiKey: string) => AccountDoc;
  },
): Pick<ServiceImpl<typeof AdminService>, TwoWayMethods> {
  const { store, directory } = deps;
  const rules = () => {
    if (!deps.optOutRules) throw new Error("opt-out rules are not configured");
    return deps.optOutRules;
  };
  const existingAccount = async (apiKey: string) =>
    account.found(
      await store.accounts.findOne({ _id: apiKey }, { projection: { _id: 1 } }),
      apiKey,
    );

  return {
    async assignNumber(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const number = keptForm(req.number);
      await existingAccount(req.apiKey);
      try {
        const doc = await assignNumber(store.db, req.apiKey, number, store.clock.now());
        directory.forget(req.apiKey);
        return { number: assignedNumberResource(doc) };
      } catch (error) {
        if (!(error instanceof NumberTaken)) throw error;
        throw fieldErrors(
          Code.FailedPrecondition,
          { number: `number ${number} is assigned to another account: release it first` },
          { reason: "NUMBER_ASSIGNED_ELSEWHERE" },
        );
      }
    },

    async releaseNumber(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const number = keptForm(req.number);
      const doc = await numbersCollection(store.db).findOneAndDelete({ _id: number });
      if (!doc) throw numberNotFound(number);
      directory.forget(doc.accountId);
      return { number: assignedNumberResource(doc) };
    },

    async listNumbers(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const limit = pageSize(req.pageSize, MESSAGE_PAGES);
      const accountId = req.apiKey === "" ? undefined : req.apiKey;
      const scope = ["ListNumbers", accountId];
      const after = cursorOf(req.pageToken, scope, ["string"])?.[0] as string | undefined;
      const docs = await findNumberPage(store.db, accountId, after, limit);
      const [page, nextPageToken] = paged(docs, limit, (last) => pageToken(scope, [last._id]));
      return { numbers: page.map(assignedNumberResource), nextPageToken };
    },

    async setInboundUrl(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const urlError = req.inboundUrl ? checkCallbackUrl("inboundUrl", req.inboundUrl) : undefined;
      if (urlError) throw invalidArgument({ inbound_url: urlError });
      const update = req.inboundUrl
        ? { $set: { inboundUrl: req.inboundUrl } }
        : { $unset: { inboundUrl: "" as const } };
      const doc = await store.accounts.findOneAndUpdate({ _id: req.apiKey }, update, {
        returnDocument: "after",
      });
      return { account: account.message(account.found(doc, req.apiKey)) };
    },

    async simulateInbound(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      if (deps.carrier !== "simulator" || !deps.inbound) {
        throw fieldErrors(
          Code.FailedPrecondition,
          {
            request:
              "inbound messages can be simulated only with the simulator carrier (SMS_CARRIER=simulator)",
          },
          { reason: "SIMULATOR_ONLY" },
        );
      }
      const errors: FieldMessages = {};
      if (req.sender === "") errors.sender = cannotBeEmpty("from");
      else if (!PHONE_NUMBER_PATTERN.test(req.sender)) {
        errors.sender = "from must be a phone number: optional +, then 8 to 15 digits";
      }
      if (req.to === "") errors.to = cannotBeEmpty("to");
      if (req.text === "") errors.text = cannotBeEmpty("text");
      else if (!validateText(req.text).ok) errors.text = "text must be at most 10 parts long";
      if (Object.keys(errors).length > 0) throw invalidArgument(errors);
      const from = req.sender.startsWith("+") ? req.sender : `+${req.sender}`;
      const part = simulatedPart(from, req.to, req.text);
      const [outcome] = await deps.inbound.take([part]);
      if (outcome !== "stored") throw numberNotFound(req.to);
      const stored = await inboundMessagesCollection(store.db).findOne(
        { dedupeKey: partKey(part) },
        { projection: { dedupeKey: 0 } },
      );
      if (!stored) throw new Error("the simulated inbound message was stored but is not found");
      return { inboundMessage: inboundResource(stored) };
    },

    async createOptOut(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      checkOptOutNumber(req.number);
      await existingAccount(req.apiKey);
      const { optOut } = await rules().add(req.apiKey, req.number, { source: "OPERATOR" });
      return { optOut: optOutResource(optOut) };
    },

    async deleteOptOut(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      checkOptOutNumber(req.number);
      await existingAccount(req.apiKey);
      const removed = await rules().remove(req.apiKey, req.number, ["API", "OPERATOR"], {
        source: "OPERATOR",
      });
      if (removed === undefined) throw optOutNotFound(req.number);
      if (removed === "not-removable") throw notRemovable(req.number, "operator");
      return { optOut: optOutResource(removed) };
    },
  };
}
