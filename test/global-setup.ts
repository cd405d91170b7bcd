/**
 * Vitest global setup: one MongoDB for the whole run (MONGODB_URI, else mongodb-memory-server,
 * else the mongo-java-server emulator; see src/dev-database/embedded-mongo.ts). Test files reach it with
 * `testDatabase()` from test/support/database.ts, each on a database of its own.
 */
import type { TestProject } from "vitest/node";
import { type StartedDatabase, startDatabase } from "../src/dev-database/embedded-mongo.ts";

let database: StartedDatabase | undefined;

export async function setup(project: TestProject): Promise<void> {
  database = await startDatabase({ logger: (msg) => console.log(`[test-db] ${msg}`) });
  project.provide("mongoUri", database.uri);
  project.provide("mongoKind", database.kind);
  // For anything that is not a test file (spawned processes, scripts) started from the tests.
  process.env.TEST_MONGODB_URI = database.uri;
  process.env.TEST_MONGODB_KIND = database.kind;
}

export async function teardown(): Promise<void> {
  await database?.stop();
  database = undefined;
}
