import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { MongoServerError } from "mongodb";
import type { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import {
  type SenderName,
  SenderNameOwnerType,
  SenderNamePurpose,
  SenderNameSchema,
} from "../../gen/sms/v1/types_pb.ts";
import {
  exceedsChars,
  isValidSenderName,
  SENDER_EXAMPLE_MAX_CHARS,
  SENDER_NAMES_PER_ACCOUNT_MAX,
  SENDER_OWNER_MAX_CHARS,
  tooLong,
} from "../domain/limits.ts";
import {
  cannotBeEmpty,
  type FieldMessages,
  invalidArgument,
  notFound,
} from "../errors/api-errors.ts";
import type { Store } from "../store/database.ts";
import type { SenderNameDoc } from "../store/documents.ts";
import { findSenderNamePage, type NameCursor } from "../store/message-listing.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { authenticateAccount } from "./authentication.ts";
import { deadlineOf } from "./database-deadlines.ts";
import { cursorOf, pageSize, pageToken, SENDER_NAME_PAGES } from "./page-tokens.ts";

export const PURPOSES: Record<SenderNameDoc["purpose"], SenderNamePurpose> = {
  OTP: SenderNamePurpose.OTP,
  NOTIFICATION: SenderNamePurpose.NOTIFICATION,
  MARKETING: SenderNamePurpose.MARKETING,
};

export const OWNER_TYPES: Record<SenderNameDoc["ownerType"], SenderNameOwnerType> = {
  COMPANY: SenderNameOwnerType.COMPANY,
  NAME: SenderNameOwnerType.NAME,
  WEBSITE: SenderNameOwnerType.WEBSITE,
};

const nameOf = <K extends string, V>(table: Record<K, V>, value: V): K | undefined =>
  (Object.keys(table) as K[]).find((key) => table[key] === value);

export function senderNameMessage(
  doc: SenderNameDoc,
  defaultSender: string | undefined,
): SenderName {
  return create(SenderNameSchema, {
    name: doc.name,
    pending: doc.pending,
    reliable: doc.reliable,
    isDefault: doc.name === defaultSender,
    purpose: PURPOSES[doc.purpose],
    ownerType: OWNER_TYPES[doc.ownerType],
    owner: doc.owner,
    exampleMsg: doc.exampleMsg,
  });
}

export interface SenderNameDeps {
  store: Store;
  directory: AccountDirectory;
  /** The literal every account may send from: requesting it as a name of one's own is refused. */
  sharedSender: string;
  timeouts?: { requestMs: number };
}

export function createSenderNameService(
  deps: SenderNameDeps,
): ServiceImpl<typeof SenderNameService> {
  const { store, directory } = deps;
  return {
    async createSenderName(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const errors: FieldMessages = {};
      if (req.name === "") errors.name = cannotBeEmpty("name");
      else if (!isValidSenderName(req.name)) {
        errors.name = "name must be at most 11 characters, letters and digits only";
      } else if (req.name === deps.sharedSender) {
        errors.name = `${req.name} is the shared sender name: every account may send from it already`;
      }
      const purpose = nameOf(PURPOSES, req.purpose);
      if (!purpose) errors.purpose = "purpose must be one of OTP, NOTIFICATION, MARKETING";
      // Keys are proto field paths; the messages name the REST parameters.
      const ownerType = nameOf(OWNER_TYPES, req.ownerType);
      if (!ownerType) errors.owner_type = "ownerType must be one of COMPANY, NAME, WEBSITE";
      if (req.owner.trim() === "") errors.owner = cannotBeEmpty("owner");
      else if (exceedsChars(req.owner, SENDER_OWNER_MAX_CHARS)) {
        errors.owner = tooLong("owner", SENDER_OWNER_MAX_CHARS);
      }
      if (req.exampleMsg.trim() === "") errors.example_msg = cannotBeEmpty("exampleMsg");
      else if (exceedsChars(req.exampleMsg, SENDER_EXAMPLE_MAX_CHARS)) {
        errors.example_msg = tooLong("exampleMsg", SENDER_EXAMPLE_MAX_CHARS);
      }
      if (Object.keys(errors).length > 0 || !purpose || !ownerType) throw invalidArgument(errors);
      // Checked before the insert: requests racing past it can exceed the bound by their number.
      const held = await store.senderNames.countDocuments(
        { accountId: account.apiKey },
        { limit: SENDER_NAMES_PER_ACCOUNT_MAX },
      );
      if (held >= SENDER_NAMES_PER_ACCOUNT_MAX) {
        throw invalidArgument(
          {
            request: `the account holds ${SENDER_NAMES_PER_ACCOUNT_MAX} sender names, the most it may; delete one first`,
          },
          "SENDER_NAME_LIMIT_REACHED",
        );
      }
      const doc: SenderNameDoc = {
        accountId: account.apiKey,
        name: req.name,
        pending: true,
        reliable: false,
        purpose,
        ownerType,
        owner: req.owner,
        exampleMsg: req.exampleMsg,
        createdAt: new Date(),
      };
      try {
        await store.senderNames.insertOne(doc);
      } catch (error) {
        if ((error as MongoServerError).code === 11000) {
          throw invalidArgument(
            { name: `sender name ${req.name} already exists on this account` },
            "SENDER_NAME_EXISTS",
          );
        }
        throw error;
      }
      return { senderName: senderNameMessage(doc, account.defaultSender) };
    },

    async listSenderNames(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const limit = pageSize(req.pageSize, SENDER_NAME_PAGES);
      const scope = ["ListSenderNames", account.apiKey];
      const after = cursorOf(req.pageToken, scope, ["number", "string"]) as NameCursor | undefined;
      const options = deadlineOf(ctx, deps.timeouts?.requestMs ?? 5_000).options();
      const docs = await findSenderNamePage(store, account.apiKey, after, limit, options);
      const page = docs.slice(0, limit);
      const last = page[page.length - 1];
      return {
        senderNames: page.map((doc) => senderNameMessage(doc, account.defaultSender)),
        nextPageToken:
          docs.length > limit && last
            ? pageToken(scope, [last.createdAt.getTime(), last.name])
            : "",
      };
    },

    async deleteSenderName(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const doc = await store.senderNames.findOneAndDelete({
        accountId: account.apiKey,
        name: req.name,
      });
      if (!doc) {
        throw notFound(
          "name",
          `no sender name ${req.name} on this account`,
          "SENDER_NAME_NOT_FOUND",
          {
            type: "sms.v1.SenderName",
            name: req.name,
          },
        );
      }
      // The account view may be up to 2 s old (another instance may have just made this name the
      // default), so the default is cleared on the stored account, not on the cached view.
      const cleared = await store.accounts.updateOne(
        { _id: account.apiKey, defaultSender: req.name },
        { $unset: { defaultSender: "" } },
      );
      directory.forget(account.apiKey);
      const wasDefault = cleared.modifiedCount > 0 || account.defaultSender === req.name;
      // The deleted object as it was: `default` says whether it was the default until now.
      return { senderName: senderNameMessage(doc, wasDefault ? req.name : undefined) };
    },
  };
}
