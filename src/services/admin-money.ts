import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type AdminService,
  type RiskOverrides as RiskOverridesMessage,
  RiskOverridesSchema,
} from "../../gen/sms/admin/v1/admin_pb.ts";
import type { RiskOverrides } from "../domain/risk-settings.ts";
import { invalidArgument } from "../errors/api-errors.ts";
import type { RiskEvents } from "../money/toll-fraud-guard.ts";
import type { Store } from "../store/database.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { authenticateOperator } from "./authentication.ts";
import { changeSpendControls, spendControlsChange } from "./money-services.ts";

// The operator's side of money (docs/design.md "Money"): any account's spend controls, its
// overrides of the toll-fraud guard, and what the guard flagged or refused.

export interface AdminMoneyDeps {
  store: Store;
  directory: AccountDirectory;
  adminToken: string;
  risk?: { events: RiskEvents };
}

type MoneyMethods = Pick<
  ServiceImpl<typeof AdminService>,
  "updateSpendControls" | "setRiskOverrides" | "listRiskEvents"
>;

const MODES = new Set(["monitor", "block", "off"]);

function overridesMessage(overrides: RiskOverrides | undefined): RiskOverridesMessage {
  return create(RiskOverridesSchema, { mode: overrides?.mode ?? "", max: overrides?.max ?? 0 });
}

export function adminMoney(deps: AdminMoneyDeps): MoneyMethods {
  const { store, directory } = deps;
  return {
    async updateSpendControls(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      if (!req.apiKey) throw invalidArgument({ api_key: "api_key cannot be empty" });
      const change = spendControlsChange(req.updateMask, req.spendControls);
      return { account: await changeSpendControls(store, directory, req.apiKey, change) };
    },

    async setRiskOverrides(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const mode = req.overrides?.mode ?? "";
      const max = req.overrides?.max ?? 0;
      if (mode !== "" && !MODES.has(mode))
        throw invalidArgument({ "overrides.mode": "mode must be monitor, block or off" });
      if (max < 0 || max > 1_000_000)
        throw invalidArgument({ "overrides.max": "max must be from 1 to 1000000 (0 clears it)" });
      const overrides: RiskOverrides = {
        ...(mode !== "" && { mode: mode as NonNullable<RiskOverrides["mode"]> }),
        ...(max > 0 && { max }),
      };
      const update =
        Object.keys(overrides).length > 0
          ? { $set: { riskOverrides: overrides } }
          : { $unset: { riskOverrides: "" as const } };
      const doc = await store.accounts.findOneAndUpdate({ _id: req.apiKey }, update, {
        returnDocument: "after",
        projection: { riskOverrides: 1 },
      });
      if (!doc) throw invalidArgument({ api_key: `no account ${req.apiKey}` });
      directory.forget(req.apiKey);
      return { overrides: overridesMessage(doc.riskOverrides) };
    },

    async listRiskEvents(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      if (req.pageSize < 0) throw invalidArgument({ page_size: "page_size must not be negative" });
      const limit = req.pageSize === 0 ? 100 : Math.min(req.pageSize, 1000);
      const events =
        (await deps.risk?.events.list(req.apiKey ? { accountId: req.apiKey } : {}, limit)) ?? [];
      return {
        events: events.map((e) => ({
          apiKey: e.accountId,
          time: timestampFromDate(e.at),
          to: e.to,
          range: e.range,
          action: e.action,
          ...(e.messageId !== undefined && { messageId: BigInt(e.messageId) }),
        })),
      };
    },
  };
}
