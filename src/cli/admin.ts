import { parseArgs } from "node:util";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";
import { DEV_ADMIN_TOKEN } from "../config/config.ts";
import { ACCOUNT_USAGE, accountCommands } from "./account-commands.ts";
import { type CommandContext, UsageError } from "./command-context.ts";
import { MONEY_USAGE, moneyCommands } from "./money-commands.ts";
import { OPERATOR_USAGE, operatorCommands } from "./operator-commands.ts";
import { TWO_WAY_USAGE, twoWayCommands } from "./two-way-commands.ts";

// The operator CLI: `npm run --silent admin -- <command>`. Talks to a running server through
// AdminService (SMS_URL, SMS_ADMIN_TOKEN) and prints one JSON object per command. The commands
// live in groups (account-commands.ts, two-way-commands.ts).

const USAGE = `usage: npm run --silent admin -- <command>
${ACCOUNT_USAGE}
${OPERATOR_USAGE}
${TWO_WAY_USAGE}
${MONEY_USAGE}
environment: SMS_URL (default http://127.0.0.1:8080), SMS_ADMIN_TOKEN`;

// The operator's commands first: `account list` and `sender-name list` are theirs.
const COMMANDS = [operatorCommands, accountCommands, twoWayCommands, moneyCommands];

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
      number: { type: "string" },
      from: { type: "string" },
      to: { type: "string" },
      text: { type: "string" },
      "allowed-countries": { type: "string" },
      "max-price": { type: "string" },
      "daily-limit": { type: "string" },
      mode: { type: "string" },
      max: { type: "string" },
      scope: { type: "string" },
      key: { type: "string" },
      reason: { type: "string" },
      status: { type: "string" },
      pending: { type: "boolean" },
      "name-prefix": { type: "string" },
      "expire-time": { type: "string" },
      operator: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [noun, verb] = positionals;
  if (values.help || !noun || !verb) throw new UsageError("");

  const context: CommandContext = {
    client: createClient(
      AdminService,
      createConnectTransport({
        baseUrl: process.env.SMS_URL || "http://127.0.0.1:8080",
        httpVersion: "1.1",
      }),
    ),
    options: {
      headers: {
        authorization: `Bearer ${process.env.SMS_ADMIN_TOKEN || DEV_ADMIN_TOKEN}`,
        // The audit log's author (services/admin-accounts.ts).
        "sms-operator": values.operator || process.env.USER || "cli",
      },
    },
    values,
    required: (name) => {
      const value = (values as Record<string, unknown>)[name];
      if (typeof value !== "string") throw new UsageError(`--${name} is required`);
      return value;
    },
  };
  for (const commands of COMMANDS) {
    const answer = await commands(noun, verb, context);
    if (answer !== undefined) return answer;
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
