import { afterAll, beforeAll } from "vitest";
import { ensureOptOutIndexes, openOptOuts } from "../../src/opt-outs/list.ts";
import { openStore, type Store } from "../../src/store/database.ts";
import { ensureIndexes } from "../../src/store/indexes.ts";
import { testDatabase } from "./database.ts";

/** The service's collections on this test file's own database, opened before its tests. */
export function useTestStore(): { store: Store } {
  const handle = {} as { store: Store };
  let close: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const database = await testDatabase();
    handle.store = openStore(database.db);
    await ensureIndexes(handle.store);
    await ensureOptOutIndexes(openOptOuts(handle.store.db));
    close = database.close;
  });
  afterAll(() => close?.());
  return handle;
}
