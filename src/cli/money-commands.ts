import { toJson } from "@bufbuild/protobuf";
import { RiskEventSchema, RiskOverridesSchema } from "../../gen/sms/admin/v1/admin_pb.ts";
import { AccountViewSchema } from "../../gen/sms/v1/money_pb.ts";
import { type Commands, UsageError } from "./command-context.ts";

export const MONEY_USAGE = `  account spend-controls --api-key K [--allowed-countries DE,FR] [--max-price P] [--daily-limit L]
                                                (an empty value clears one)
  account risk --api-key K [--mode monitor|block|off] [--max N]   (neither: clear)
  risk events [--api-key K]`;

const MICROS = 1_000_000;

function micros(flag: string, value: string): bigint {
  const number = Number(value);
  if (value.trim() === "" || !Number.isFinite(number) || number < 0)
    throw new UsageError(`--${flag} must be a number >= 0 (empty clears it)`);
  return BigInt(Math.round(number * MICROS));
}

/** `account spend-controls`, `account risk` and `risk events` (docs/design.md "Money"). */
export const moneyCommands: Commands = async (noun, verb, context) => {
  const { client, options, values, required } = context;
  const text = (name: string) => values[name] as string | undefined;
  if (noun === "account" && verb === "spend-controls") {
    const mask: string[] = [];
    const controls: {
      allowedCountries: string[];
      maxPricePerMessageMicros?: bigint;
      dailySpendLimitMicros?: bigint;
    } = { allowedCountries: [] };
    const countries = text("allowed-countries");
    if (countries !== undefined) {
      mask.push("allowed_countries");
      controls.allowedCountries = countries.split(",").filter((c) => c !== "");
    }
    for (const [flag, path, field] of [
      ["max-price", "max_price_per_message_micros", "maxPricePerMessageMicros"],
      ["daily-limit", "daily_spend_limit_micros", "dailySpendLimitMicros"],
    ] as const) {
      const value = text(flag);
      if (value === undefined) continue;
      mask.push(path);
      if (value !== "") controls[field] = micros(flag, value);
    }
    const { account } = await client.updateSpendControls(
      { apiKey: required("api-key"), spendControls: controls, updateMask: mask },
      options,
    );
    return account ? toJson(AccountViewSchema, account) : null;
  }
  if (noun === "account" && verb === "risk") {
    const max = text("max");
    const { overrides } = await client.setRiskOverrides(
      {
        apiKey: required("api-key"),
        overrides: { mode: text("mode") ?? "", max: max === undefined ? 0 : Number(max) },
      },
      options,
    );
    return overrides ? toJson(RiskOverridesSchema, overrides, { alwaysEmitImplicit: true }) : null;
  }
  if (noun === "risk" && verb === "events") {
    const { events } = await client.listRiskEvents({ apiKey: text("api-key") ?? "" }, options);
    return events.map((e) => toJson(RiskEventSchema, e));
  }
  return undefined;
};
