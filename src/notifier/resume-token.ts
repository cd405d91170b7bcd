/**
 * Where the notifier's change stream resumes after a restart: its last resume token, kept in the
 * state collection under one key per stream.
 */
import type { Store } from "../store/database.ts";

export const RESUME_TOKEN_KEY = "notifier.resumeToken";

export async function loadResumeToken(store: Store, key = RESUME_TOKEN_KEY): Promise<unknown> {
  const doc = await store.state.findOne({ _id: key });
  return doc?.value ?? undefined;
}

export async function saveResumeToken(
  store: Store,
  token: unknown,
  key = RESUME_TOKEN_KEY,
): Promise<void> {
  await store.state.updateOne(
    { _id: key },
    { $set: { value: token, updatedAt: new Date() } },
    { upsert: true },
  );
}

export async function clearResumeToken(store: Store, key = RESUME_TOKEN_KEY): Promise<void> {
  await store.state.deleteOne({ _id: key });
}
