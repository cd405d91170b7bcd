import { parseArgs } from "node:util";
import { toJson } from "@bufbuild/protobuf";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { type Account, AccountSchema, AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";
import { type SenderName, SenderNameSchema } from "../../gen/sms/v1/types_pb.ts";
import { DEV_ADMIN_TOKEN } from "../config/config.ts";

// The operator CLI: `npm run --silent admin -- <command>`. Talks to a running server through
// AdminService (SMS_URL, SMS_ADMIN_TOKEN) and prints one JSON object per command.

const USAGE = `usage: npm run --silent admin -- <command>
  account create --name N [--credit C] [--status-url U] [--default-sender S]
  account get --api-key K
  account credit --api-key K --add C
  account status-url --api-key K --url U        (empty U clears it)
  sender-name approve|reject|default --api-key K --name N
environment: SMS_URL (default http://127.0.0.1:8080), SMS_ADMIN_TOKEN`;

class UsageError extends Error {}

// Operators read and type amounts in account currency; the contract carries micro-units.
const MICROS = 1_000_000;
const accountJson = (account: Account | undefined) =>
  account
    ? {
        ...(toJson(AccountSchema, account, { alwaysEmitImplicit: true }) as object),
        credit: Number(account.creditMicros) / MICROS,
      }
    : null;
const senderNameJson = (senderName: SenderName | undefined) =>
  senderName ? toJson(SenderNameSchema, senderName, { alwaysEmitImplicit: true }) : null;

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: "string" },
      credit: { type: "string" },
      "status-url": { type: "string" },
      "default-sender": { type: "string" },
      "api-key": { type: "string" },
      add: { type: "string" },
      url: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [noun, verb] = positionals;
  if (values.help || !noun || !verb) throw new UsageError("");

  const client = createClient(
    AdminService,
    createConnectTransport({
      baseUrl: process.env.SMS_URL || "http://127.0.0.1:8080",
      httpVersion: "1.1",
    }),
  );
  const options = {
    headers: { authorization: `Bearer ${process.env.SMS_ADMIN_TOKEN || DEV_ADMIN_TOKEN}` },
  };
  const required = (name: keyof typeof values): string => {
    const value = values[name];
    if (typeof value !== "string") throw new UsageError(`--${name} is required`);
    return value;
  };
  const amount = (name: "credit" | "add"): bigint => {
    const value = Number(required(name));
    if (!Number.isFinite(value)) throw new UsageError(`--${name} must be a number`);
    return BigInt(Math.round(value * MICROS));
  };

  if (noun === "account") {
    switch (verb) {
      case "create": {
        const created = await client.createAccount(
          {
            name: required("name"),
            creditMicros: values.credit === undefined ? undefined : amount("credit"),
            statusUrl: values["status-url"],
            defaultSender: values["default-sender"],
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
              { apiKey: required("api-key"), amountMicros: amount("add") },
              options,
            )
          ).account,
        );
      case "status-url":
        return accountJson(
          (
            await client.setStatusUrl(
              { apiKey: required("api-key"), statusUrl: values.url ?? "" },
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
        return senderNameJson((await client.rejectSenderName(target, options)).senderName);
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
  throw new UsageError(`unknown command: ${positionals.join(" ")}`);
}

try {
  console.log(JSON.stringify(await run(process.argv.slice(2))));
} catch (error) {
  if (error instanceof UsageError) {
    console.error(error.message ? `${error.message}\n${USAGE}` : USAGE);
    process.exit(2);
  }
  const connectError = ConnectError.from(error);
  console.log(
    JSON.stringify({ error: { code: connectError.code, message: connectError.rawMessage } }),
  );
  process.exit(1);
}
