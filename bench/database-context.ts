// A figure's context on a database server of its own (figures 12 and 22 start an emulator on the
// H2 store beside the run's in-memory one).

import { MongoClient } from "mongodb";
import type { StartedDatabase } from "../src/dev-database/embedded-mongo.ts";
import type { BenchContext } from "./common.ts";
import { collectEmulatorHeap, cpuSeconds, emulatorHeap } from "./processes.ts";

/** The figures' context on another database server. */
export async function contextOn(ctx: BenchContext, database: StartedDatabase) {
  const client = await new MongoClient(database.uri, { maxPoolSize: 64 }).connect();
  const pid =
    database.kind === "emulator" ? /pid (\d+)/.exec(database.description)?.[1] : undefined;
  const on: BenchContext = {
    ...ctx,
    client,
    serviceEnv: (db, extra) => ({ ...ctx.serviceEnv(db, extra), MONGODB_URI: database.uri }),
    collectDatabaseHeap: () => collectEmulatorHeap(pid),
    databaseHeap: () => emulatorHeap(pid),
    databaseCpuSeconds: () => (pid ? cpuSeconds(Number(pid)) : undefined),
    async dropDatabases(...names) {
      await Promise.all(names.map((name) => client.db(name).dropDatabase()));
      await on.collectDatabaseHeap();
    },
  };
  return on;
}
