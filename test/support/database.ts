/**
 * Test-file access to the run's shared MongoDB (started by test/global-setup.ts).
 *
 *   const t = await testDatabase();           // in beforeAll
 *   ... t.db.collection("x") ...
 *   await t.close();                          // in afterAll: drops the database, closes the client
 *
 * Change streams: the driver sends a stream's aggregate only when it is first read, so writes made
 * between `watch()` and the first read are not seen (on mongod too). `readChangeStream()` opens the
 * stream on the server before returning.
 */
import { randomBytes } from "node:crypto";
import { type ChangeStream, type Db, type Document, MongoClient } from "mongodb";
import { inject } from "vitest";
import type { DatabaseKind } from "../../src/dev-database/embedded-mongo.ts";

declare module "vitest" {
  export interface ProvidedContext {
    mongoUri: string;
    mongoKind: DatabaseKind;
  }
}

export interface TestDatabase {
  client: MongoClient;
  db: Db;
  /** The server's URI (without the database name) and this file's database name, e.g. to configure the app under test. */
  uri: string;
  name: string;
  /** Which link of the chain provides the server: "uri" (MONGODB_URI), "memory-server" (real mongod) or "emulator". */
  kind: DatabaseKind;
  /** Drops the database (unless kept) and closes the client. */
  close(): Promise<void>;
}

/** The shared server's URI and kind. */
export function testServer(): { uri: string; kind: DatabaseKind } {
  const uri = inject("mongoUri") ?? process.env.TEST_MONGODB_URI;
  const kind =
    inject("mongoKind") ?? (process.env.TEST_MONGODB_KIND as DatabaseKind | undefined) ?? "uri";
  if (!uri)
    throw new Error("no test MongoDB: is test/global-setup.ts configured as vitest globalSetup?");
  return { uri, kind };
}

/** A uniquely named database on the shared server, with its own client. */
export async function testDatabase(
  options: { label?: string; keep?: boolean } = {},
): Promise<TestDatabase> {
  const { uri, kind } = testServer();
  const label = (options.label ?? "t").replace(/[^A-Za-z0-9_]/g, "_").slice(0, 20);
  // Database names: at most 63 bytes, no "/\. \"$".
  const name = `test_${label}_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000 });
  await client.connect();
  const db = client.db(name);
  let closed = false;
  return {
    client,
    db,
    uri,
    name,
    kind,
    close: async () => {
      if (closed) return;
      closed = true;
      try {
        if (!options.keep) await db.dropDatabase();
      } finally {
        await client.close();
      }
    },
  };
}

export interface ChangeStreamReader<TSchema extends Document, T extends Document> {
  stream: ChangeStream<TSchema, T>;
  /** The next event; rejects after timeoutMs (the pending read is kept for the next call). */
  next(timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

/** Opens the change stream on the server now, so that writes made after this resolves are seen. */
export async function readChangeStream<TSchema extends Document, T extends Document>(
  stream: ChangeStream<TSchema, T>,
  openTimeoutMs = 10_000,
): Promise<ChangeStreamReader<TSchema, T>> {
  let pending: Promise<T> | undefined = stream.next();
  pending.catch(() => {});
  const opened = new Promise<void>((resolve) => stream.once("resumeTokenChanged", () => resolve()));
  // The aggregate's reply carries a resume token when it has no events yet; with events, the read resolves.
  await within(
    Promise.race([opened, pending.then(() => undefined)]),
    openTimeoutMs,
    "change stream did not open",
  );
  return {
    stream,
    async next(timeoutMs = 5_000) {
      pending ??= stream.next();
      const value = await within(pending, timeoutMs, "no change event");
      pending = undefined;
      return value;
    },
    close: () => stream.close(),
  };
}

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
