// Figure 19 of issue 40 (run.ts's id "19" or "keys"): what many accounts of many keys cost a send.
// One service on a database holding 10000 accounts of 20 keys each (written as CreateApiKey
// writes them: the account's counters, one document per key with its secret's digest), beside an
// account of one key made by CreateAccount. Figure 1's load (POST /sms, 1 part, 32 connections)
// from the 20th key of one of the 10000 accounts, and from the single-key account, alternated:
// >= 0.95 x, same run. Authentication stays one cached lookup of the presented key.

import { randomBytes } from "node:crypto";
import { type ApiKeyDoc, apiKeysCollection } from "../src/accounts/api-keys.ts";
import { hashSecret } from "../src/domain/credentials.ts";
import type { AccountDoc } from "../src/store/documents.ts";
import { alternated, type BenchContext, createAccount, sendRate } from "./common.ts";
import { median, startProcess } from "./processes.ts";

const ACCOUNTS = 10_000;
const KEYS = 20;

export async function apiKeysFigure(ctx: BenchContext): Promise<void> {
  if (!ctx.runs("19", "keys")) return;
  ctx.log(`figure 19 (issue 40): POST /sms among ${ACCOUNTS} accounts of ${KEYS} keys each`);
  const dbName = "bench_api_keys";
  const db = ctx.client.db(dbName);
  const accounts = db.collection<AccountDoc>("accounts");
  const keys = apiKeysCollection(db);
  const now = new Date();
  // The last account's 20th key is the one that sends; its secret is the only one kept.
  const secret = randomBytes(32).toString("base64url");
  const digest = hashSecret(secret);
  let sender = { apiKey: "", apiSecret: secret };
  for (let start = 0; start < ACCOUNTS; start += 500) {
    const accountDocs: AccountDoc[] = [];
    const keyDocs: ApiKeyDoc[] = [];
    for (let a = start; a < start + 500; a++) {
      const id = `bench${String(a).padStart(8, "0")}`;
      accountDocs.push({
        _id: id,
        name: `bench ${a}`,
        secretHash: digest,
        webhookSecret: `whsec_${randomBytes(24).toString("base64")}`,
        creditMicros: 1e8 * 1e6,
        pendingCharges: [],
        createdAt: now,
        keyCount: KEYS,
        fullKeyCount: KEYS,
      });
      for (let k = 0; k < KEYS; k++) {
        const keyId = k === 0 ? id : `${id}k${k}`;
        keyDocs.push({
          _id: keyId,
          accountId: id,
          name: `key ${k}`,
          scope: "full",
          secretHash: digest,
          createdAt: now,
        });
        if (a === ACCOUNTS - 1 && k === KEYS - 1) sender = { apiKey: keyId, apiSecret: secret };
      }
    }
    await accounts.insertMany(accountDocs, { ordered: false });
    await keys.insertMany(keyDocs, { ordered: false });
  }
  const api = await startProcess(
    "src/main.ts",
    ctx.serviceEnv(dbName, { SMS_RUN_WORKERS: "false" }),
  );
  try {
    const single = await createAccount(api.baseUrl, undefined, "single");
    const seconds = ctx.quick ? 3 : 10;
    const rounds = ctx.quick ? 2 : 5;
    const sides = { single, many: sender };
    await sendRate(api.baseUrl, single, seconds, "19"); // warm-up
    await sendRate(api.baseUrl, sender, seconds, "19");
    const rates = { single: [] as number[], many: [] as number[] };
    await alternated(
      rounds,
      ["single", "many"],
      async (side) => {
        await ctx.collectDatabaseHeap();
        return sendRate(api.baseUrl, sides[side], seconds, "19");
      },
      rates,
    );
    ctx.log(`figure 19: single ${rates.single.map((r) => r.toFixed(0)).join(" ")} req/s`);
    ctx.log(`figure 19: many ${rates.many.map((r) => r.toFixed(0)).join(" ")} req/s`);
    const value = median(rates.many);
    const base = median(rates.single);
    ctx.figures.push({
      figure: `19 (issue 40). POST /sms requests/s from the 20th key of one of ${ACCOUNTS} accounts of ${KEYS} keys`,
      value,
      unit: "req/s",
      baseline: base,
      baselineName: "same run, an account of one key",
      ratio: value / base,
      target: ">= 0.95 x one account of one key",
      met: value >= 0.95 * base,
    });
  } finally {
    await api.stop();
    await ctx.dropDatabases(dbName);
  }
}
