import type { Store } from "../../src/store/database.ts";

/** Commits a batch as SendBatch does: by storing its document after its messages. */
export async function commitBatch(
  store: Store,
  batchId: number,
  accountId = "test",
): Promise<void> {
  await store.batches.insertOne({
    _id: batchId,
    accountId,
    name: "",
    totalCount: 0,
    acceptedCount: 0,
    rejectedCount: 0,
    createdAt: new Date(),
  });
}
