import type { Collection } from "mongodb";
import { generateWebhookSecret } from "../domain/credentials.ts";
import type { AccountDoc } from "../store/documents.ts";

/**
 * Gives the account a new webhook secret and keeps the one it replaces, which goes on signing
 * beside it for the overlap (notifier/signature.ts), so receivers can switch without a gap.
 * Null when there is no such account.
 */
export async function rotateWebhookSecret(
  accounts: Collection<AccountDoc>,
  accountId: string,
  now: Date,
): Promise<string | null> {
  const account = await accounts.findOne({ _id: accountId }, { projection: { webhookSecret: 1 } });
  if (!account) return null;
  const webhookSecret = generateWebhookSecret();
  // Held to the secret read: of two concurrent rotations, the second starts again from the first's.
  const rotated = await accounts.updateOne(
    { _id: accountId, webhookSecret: account.webhookSecret },
    {
      $set: {
        webhookSecret,
        previousWebhookSecret: account.webhookSecret,
        webhookSecretRotatedAt: now,
      },
    },
  );
  if (rotated.modifiedCount === 0) return rotateWebhookSecret(accounts, accountId, now);
  return webhookSecret;
}
