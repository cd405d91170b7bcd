/**
 * Ids on `npm start`'s default database, the emulator's H2 store: concurrent reservations (two
 * batches and a burst of single sends arriving together) never share an id. A restart test once
 * found two batches stored under one id there.
 */
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CLIENT_OPTIONS, openStore, type Store } from "../../src/store/database.ts";
import { ensureIndexes } from "../../src/store/indexes.ts";
import { IdAllocator, reserveIds } from "../../src/store/sequences.ts";
import { StoppableDatabase } from "../support/stoppable-database.ts";

let server: StoppableDatabase;
let client: MongoClient;
let store: Store;

beforeAll(async () => {
  server = await StoppableDatabase.start();
  client = new MongoClient(server.uri, CLIENT_OPTIONS);
  await client.connect();
  store = openStore(client.db("sequences_on_disk"));
  await ensureIndexes(store);
}, 120_000);
afterAll(async () => {
  await client?.close();
  await server?.destroy();
});

it("concurrent reservations of whole ranges never overlap", async () => {
  for (let round = 0; round < 5; round++) {
    const sizes = Array.from({ length: 24 }, (_, i) => 1 + (i % 4) * 7);
    const firsts = await Promise.all(sizes.map((n) => reserveIds(store.counters, "batch", n)));
    const ids = firsts.flatMap((first, i) =>
      Array.from({ length: sizes[i] ?? 0 }, (_, k) => first + k),
    );
    expect(new Set(ids).size).toBe(ids.length);
  }
});

it("allocators of two instances hand out each message id once", async () => {
  const a = new IdAllocator(store.counters, "message", 8);
  const b = new IdAllocator(store.counters, "message", 8);
  const takes = await Promise.all(
    Array.from({ length: 300 }, (_, i) => (i % 2 ? a : b).take(1 + (i % 2))),
  );
  const ids = takes.flatMap((first, i) => Array.from({ length: 1 + (i % 2) }, (_, k) => first + k));
  expect(new Set(ids).size).toBe(ids.length);
});
