import { toJson } from "@bufbuild/protobuf";
import { type Account, AccountSchema } from "../../gen/sms/admin/v1/admin_pb.ts";
import { type SenderName, SenderNameSchema } from "../../gen/sms/v1/types_pb.ts";
import { type CommandContext, type Commands, UsageError } from "./command-context.ts";

export const ACCOUNT_USAGE = `  account create --name N [--credit C] [--status-url U] [--default-sender S]
  account get --api-key K
  account credit --api-key K --add C
  account status-url --api-key K --url U        (empty U clears it)
  sender-name approve|default --api-key K --name N
  sender-name reject --api-key K --name N [--reason R]   (the account sees R for 30 days)`;

// Operators read and type amounts in account currency; the contract carries micro-units.
const MICROS = 1_000_000;

export const accountJson = (account: Account | undefined) =>
  account
    ? {
        ...(toJson(AccountSchema, account, { alwaysEmitImplicit: true }) as object),
        credit: Number(account.creditMicros) / MICROS,
      }
    : null;

const senderNameJson = (senderName: SenderName | undefined) =>
  senderName ? toJson(SenderNameSchema, senderName, { alwaysEmitImplicit: true }) : null;

function amount(context: CommandContext, name: "credit" | "add"): bigint {
  const value = Number(context.required(name));
  if (!Number.isFinite(value)) throw new UsageError(`--${name} must be a number`);
  return BigInt(Math.round(value * MICROS));
}

/** `account create|get|credit|status-url` and `sender-name approve|reject|default`. */
export const accountCommands: Commands = async (noun, verb, context) => {
  const { client, options, values, required } = context;
  if (noun === "account") {
    switch (verb) {
      case "create": {
        const created = await client.createAccount(
          {
            name: required("name"),
            creditMicros: values.credit === undefined ? undefined : amount(context, "credit"),
            statusUrl: values["status-url"] as string | undefined,
            defaultSender: values["default-sender"] as string | undefined,
          },
          options,
        );
        return {
          apiKey: created.account?.apiKey,
          apiSecret: created.apiSecret,
          webhookSecret: created.webhookSecret,
          account: accountJson(created.account),
        };
      }
      case "get":
        return accountJson(
          (await client.getAccount({ apiKey: required("api-key") }, options)).account,
        );
      case "credit":
        return accountJson(
          (
            await client.addCredit(
              { apiKey: required("api-key"), amountMicros: amount(context, "add") },
              options,
            )
          ).account,
        );
      case "status-url":
        return accountJson(
          (
            await client.setStatusUrl(
              { apiKey: required("api-key"), statusUrl: (values.url as string | undefined) ?? "" },
              options,
            )
          ).account,
        );
    }
  }
  if (noun === "sender-name") {
    const target = { apiKey: required("api-key"), name: required("name") };
    switch (verb) {
      case "approve":
        return senderNameJson((await client.approveSenderName(target, options)).senderName);
      case "reject":
        return senderNameJson(
          (
            await client.rejectSenderName(
              { ...target, reason: (values.reason as string | undefined) ?? "" },
              options,
            )
          ).senderName,
        );
      case "default":
        return accountJson(
          (
            await client.setDefaultSender(
              { apiKey: target.apiKey, senderName: target.name },
              options,
            )
          ).account,
        );
    }
  }
  return undefined;
};
