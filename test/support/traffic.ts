/**
 * Sends from several concurrent clients for fault tests, records every outcome (an answer, or
 * none when the connection broke), and reconciles credit and messages exactly afterwards.
 */
import type { Db } from "mongodb";
import { expect } from "vitest";
import type { AccountDoc, BatchDoc, MessageDoc } from "../../src/store/documents.ts";

export interface Outcome {
  kind: "sms" | "batch";
  /** The HTTP status, or "no answer" when the request failed on the wire (unknown outcome). */
  status: number | "no answer";
  body?: any;
}

/** One part, or two (a text over 160 Latin-1 characters), alternately. */
const TEXTS = ["One part, kept whole", `Two parts: ${"x".repeat(200)}`];

export class Traffic {
  readonly outcomes: Outcome[] = [];
  /** Requests sent and not answered yet. */
  inFlight = 0;
  private stopped = false;
  private readonly clients: Promise<void>[] = [];
  private sequence = 0;

  constructor(
    private readonly baseUrl: string,
    private readonly credentials: { apiKey: string; apiSecret: string },
    /** The n-th destination; by default distinct German mobile numbers (all delivered). */
    private readonly numberAt: (n: number) => string = (n) => `+49151${String(10_000_000 + n)}`,
  ) {}

  /** `count` clients, each sending POST /sms one after another until stopped. */
  singles(count: number): this {
    for (let i = 0; i < count; i++) {
      this.clients.push(
        this.loop("sms", "/sms", () => ({
          ...this.credentials,
          to: this.nextNumber(),
          text: TEXTS[this.sequence % 2],
        })),
      );
    }
    return this;
  }

  /** `count` clients, each sending POST /sms-batch of `size` messages one after another. */
  batches(count: number, size: number): this {
    for (let i = 0; i < count; i++) {
      this.clients.push(
        this.loop("batch", "/sms-batch", () => ({
          ...this.credentials,
          messages: Array.from({ length: size }, (_, j) => ({
            to: this.nextNumber(),
            text: TEXTS[j % 2],
          })),
        })),
      );
    }
    return this;
  }

  answered(kind: Outcome["kind"], status = 200): Outcome[] {
    return this.outcomes.filter((o) => o.kind === kind && o.status === status);
  }

  /** Requests that got no answer: in flight when the service died. */
  unanswered(kind: Outcome["kind"]): Outcome[] {
    return this.outcomes.filter((o) => o.kind === kind && o.status === "no answer");
  }

  /** No new requests; resolves when every client's last request has ended either way. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.clients);
  }

  private nextNumber(): string {
    return this.numberAt(this.sequence++);
  }

  private async loop(kind: Outcome["kind"], path: string, body: () => object): Promise<void> {
    while (!this.stopped) {
      this.inFlight++;
      try {
        const response = await fetch(`${this.baseUrl}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body()),
        });
        this.outcomes.push({ kind, status: response.status, body: await response.json() });
      } catch {
        // Broken connection: the request may or may not have been stored and charged.
        this.outcomes.push({ kind, status: "no answer" });
        return;
      } finally {
        this.inFlight--;
      }
    }
  }
}

/**
 * Asserts the books balance for `apiKey` once the settler has run: every 200 answer has its
 * stored messages; no message of an uncommitted batch is left; nothing is pending; and the
 * credit is the initial credit minus exactly one charge per part of every stored message.
 */
export async function reconcile(
  db: Db,
  apiKey: string,
  initialCredit: number,
  outcomes: readonly Outcome[],
  pricePerPartMicros = 1_000_000,
): Promise<{ storedMessages: number; chargedParts: number }> {
  const messages = db.collection<MessageDoc>("messages");
  const batches = db.collection<BatchDoc>("batches");

  const sent = outcomes.filter((o) => o.kind === "sms" && o.status === 200);
  const storedSingles = await messages
    .find({ _id: { $in: sent.map((o) => o.body.id) } }, { projection: { parts: 1 } })
    .toArray();
  const partsById = new Map(storedSingles.map((m) => [m._id, m.parts]));
  for (const { body } of sent) {
    expect(partsById.get(body.id), `message ${body.id} answered 200`).toBe(
      body.segments?.length ?? 1,
    );
  }

  const perBatch = new Map<number, number>();
  for await (const { _id, n } of messages.aggregate<{ _id: number; n: number }>([
    { $match: { batchId: { $exists: true } } },
    { $group: { _id: "$batchId", n: { $sum: 1 } } },
  ])) {
    perBatch.set(_id, n);
  }
  const committed = new Set(
    (await batches.find({}, { projection: { _id: 1 } }).toArray()).map((b) => b._id),
  );
  for (const { body } of outcomes.filter((o) => o.kind === "batch" && o.status === 200)) {
    expect(committed.has(body.id), `batch ${body.id} answered 200 is stored`).toBe(true);
    expect(perBatch.get(body.id) ?? 0, `messages of batch ${body.id}`).toBe(body.acceptedCount);
  }
  const orphans = [...perBatch.keys()].filter((id) => !committed.has(id));
  expect(orphans, "messages of batches that never committed").toEqual([]);

  const [totals] = await messages
    .aggregate<{ n: number; parts: number }>([
      { $match: { accountId: apiKey } },
      { $group: { _id: null, n: { $sum: 1 }, parts: { $sum: "$parts" } } },
    ])
    .toArray();
  const account = await db
    .collection<AccountDoc>("accounts")
    .findOne({ _id: apiKey }, { projection: { creditMicros: 1, pendingCharges: 1 } });
  expect(account?.pendingCharges ?? [], "charges left pending").toEqual([]);
  const chargedParts = totals?.parts ?? 0;
  expect(account?.creditMicros, "credit = initial - one charge per stored part").toBe(
    initialCredit * 1_000_000 - chargedParts * pricePerPartMicros,
  );
  return { storedMessages: totals?.n ?? 0, chargedParts };
}
