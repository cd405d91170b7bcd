/**
 * The test database chain (MONGODB_URI, mongodb-memory-server, mongo-java-server emulator) gives a
 * server whose change streams do what the service relies on: events for inserts and updates, and
 * resuming from a stored token. Runs against whichever server the chain chose.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ChangeStreamDocument, ResumeToken } from "mongodb";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDatabase } from "../src/dev-database/embedded-mongo.ts";
import {
  readChangeStream,
  type TestDatabase,
  testDatabase,
  testServer,
} from "./support/database.ts";

interface Item {
  seq: number;
  status?: string;
  count?: number;
}

let t: TestDatabase;

beforeAll(async () => {
  t = await testDatabase({ label: "chain" });
});

afterAll(async () => {
  await t?.close();
});

describe(`test database chain (${testServer().kind})`, () => {
  it("answers ping and reports a wire version the driver supports", async () => {
    expect((await t.client.db("admin").command({ ping: 1 })).ok).toBe(1);
    const hello = await t.client.db("admin").command({ hello: 1 });
    expect(hello.maxWireVersion).toBeGreaterThanOrEqual(9);
  });

  it("delivers an insert through a change stream", async () => {
    const items = t.db.collection<Item>("inserts");
    const reader = await readChangeStream(items.watch());
    try {
      const { insertedId } = await items.insertOne({ seq: 1 });
      const event = await reader.next();
      expect(event.operationType).toBe("insert");
      if (event.operationType !== "insert") return;
      expect(event.documentKey._id).toEqual(insertedId);
      expect(event.fullDocument).toMatchObject({ seq: 1 });
      expect(event.ns).toEqual({ db: t.name, coll: "inserts" });
    } finally {
      await reader.close();
    }
  });

  it("resumes after a stored token (resumeAfter) with the next insert", async () => {
    const items = t.db.collection<Item>("resume");
    const first = await readChangeStream(items.watch());
    await items.insertOne({ seq: 1 });
    const seen = await first.next();
    const token: ResumeToken = seen._id;
    await first.close();

    await items.insertOne({ seq: 2 });
    await items.insertOne({ seq: 3 });
    const resumed = await readChangeStream(items.watch([], { resumeAfter: token }));
    try {
      const next = await resumed.next();
      const after = await resumed.next();
      expect(next.operationType === "insert" && next.fullDocument.seq).toBe(2);
      expect(after.operationType === "insert" && after.fullDocument.seq).toBe(3);
    } finally {
      await resumed.close();
    }
  });

  it("starts after a stored token (startAfter)", async () => {
    const items = t.db.collection<Item>("start-after");
    const first = await readChangeStream(items.watch());
    await items.insertOne({ seq: 1 });
    const token = (await first.next())._id;
    await first.close();

    await items.insertOne({ seq: 2 });
    const resumed = await readChangeStream(items.watch([], { startAfter: token }));
    try {
      const next = await resumed.next();
      expect(next.operationType === "insert" && next.fullDocument.seq).toBe(2);
    } finally {
      await resumed.close();
    }
  });

  it("gives an idle stream a resume token (postBatchResumeToken) to resume from", async () => {
    const items = t.db.collection<Item>("idle");
    const idle = await readChangeStream(items.watch());
    const token = idle.stream.resumeToken;
    await idle.close();
    expect(token).toBeTruthy();

    await items.insertOne({ seq: 7 });
    const resumed = await readChangeStream(items.watch([], { resumeAfter: token }));
    try {
      const next = await resumed.next();
      expect(next.operationType === "insert" && next.fullDocument.seq).toBe(7);
    } finally {
      await resumed.close();
    }
  });

  it("reports updates (updateOne, findOneAndUpdate) with updateDescription and updateLookup", async () => {
    const items = t.db.collection<Item>("updates");
    const { insertedId } = await items.insertOne({ seq: 1, status: "ACCEPTED", count: 0 });
    const reader = await readChangeStream(items.watch([], { fullDocument: "updateLookup" }));
    try {
      await items.updateOne(
        { _id: insertedId, status: "ACCEPTED" },
        { $set: { status: "SENT" }, $inc: { count: 1 } },
      );
      await items.findOneAndUpdate(
        { _id: insertedId, status: "SENT" },
        { $set: { status: "DELIVERED" } },
      );
      const events = [await reader.next(), await reader.next()];
      const updates = events.filter(
        (e): e is Extract<ChangeStreamDocument<Item>, { operationType: "update" }> =>
          e.operationType === "update",
      );
      expect(updates).toHaveLength(2);
      expect(updates[0]?.updateDescription.updatedFields).toMatchObject({
        status: "SENT",
        count: 1,
      });
      expect(updates[1]?.updateDescription.updatedFields).toMatchObject({ status: "DELIVERED" });
      expect(updates[1]?.fullDocument).toMatchObject({ status: "DELIVERED", count: 1 });
    } finally {
      await reader.close();
    }
  });

  it("watches a whole database, filtered by a $match pipeline", async () => {
    const reader = await readChangeStream(t.db.watch<Item>([{ $match: { "ns.coll": "db-b" } }]));
    try {
      await t.db.collection<Item>("db-a").insertOne({ seq: 1 });
      await t.db.collection<Item>("db-b").insertOne({ seq: 2 });
      const event = await reader.next();
      expect(event.operationType === "insert" && event.fullDocument.seq).toBe(2);
    } finally {
      await reader.close();
    }
  });

  it("uses MONGODB_URI as is when it is set", async () => {
    const saved = process.env.MONGODB_URI;
    process.env.MONGODB_URI = "mongodb://example.invalid:1/";
    try {
      const db = await startDatabase({ logger: () => {} });
      expect(db).toMatchObject({ kind: "uri", uri: "mongodb://example.invalid:1/" });
      await db.stop();
    } finally {
      if (saved === undefined) delete process.env.MONGODB_URI;
      else process.env.MONGODB_URI = saved;
    }
  });
});

describe.runIf(testServer().kind === "emulator")("emulator with a data directory", () => {
  it("keeps documents across restarts; resume tokens from before a restart fail with ChangeStreamHistoryLost", async () => {
    const saved = { uri: process.env.MONGODB_URI, forced: process.env.EMBEDDED_MONGO };
    delete process.env.MONGODB_URI;
    process.env.EMBEDDED_MONGO = "emulator";
    const dataDir = await mkdtemp(join(tmpdir(), "emulator-data-"));
    try {
      let token: ResumeToken;
      {
        const server = await startDatabase({ dataDir, logger: () => {} });
        const client = new MongoClient(server.uri);
        try {
          const items = client.db("persist").collection<Item & { _id: string }>("items");
          const reader = await readChangeStream(items.watch());
          await items.insertOne({ _id: "kept", seq: 1 });
          token = (await reader.next())._id;
          await reader.close();
        } finally {
          await client.close();
          await server.stop();
        }
      }
      const server = await startDatabase({ dataDir, logger: () => {} });
      const client = new MongoClient(server.uri);
      try {
        const items = client.db("persist").collection<Item & { _id: string }>("items");
        expect(await items.findOne({ _id: "kept" })).toMatchObject({ seq: 1 });
        const stream = items.watch([], { resumeAfter: token });
        const outcome = Promise.race([
          stream.next(),
          new Promise((_, reject) =>
            setTimeout(() => reject(new Error("resume did not fail")), 5_000),
          ),
        ]);
        await expect(outcome).rejects.toMatchObject({ code: 286 });
        await stream.close();
      } finally {
        await client.close();
        await server.stop();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      if (saved.uri === undefined) delete process.env.MONGODB_URI;
      else process.env.MONGODB_URI = saved.uri;
      if (saved.forced === undefined) delete process.env.EMBEDDED_MONGO;
      else process.env.EMBEDDED_MONGO = saved.forced;
    }
  });
});
