import { describe, expect, it } from "vitest";
import { isInboundNumber } from "../../src/domain/inbound-numbers.ts";
import {
  assignNumber,
  listNumbers,
  NumberTaken,
  ownerOfNumber,
  ownersOfNumbers,
  releaseNumber,
} from "../../src/store/numbers.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();

describe("inbound numbers", () => {
  it("belong to one account at most; assigning again to the owner changes nothing", async () => {
    const db = fixture.store.db;
    const first = await assignNumber(db, "acct-a", "+4915100000001", new Date(1_000));
    expect(first).toEqual({
      _id: "+4915100000001",
      accountId: "acct-a",
      assignedAt: new Date(1_000),
    });
    const again = await assignNumber(db, "acct-a", "+4915100000001", new Date(2_000));
    expect(again.assignedAt).toEqual(new Date(1_000));
    await expect(assignNumber(db, "acct-b", "+4915100000001")).rejects.toBeInstanceOf(NumberTaken);
    expect(await ownerOfNumber(db, "+4915100000001")).toBe("acct-a");
  });

  it("of two accounts assigning one number at once, exactly one gets it", async () => {
    const db = fixture.store.db;
    const outcomes = await Promise.allSettled(
      ["acct-x", "acct-y", "acct-z"].map((account) => assignNumber(db, account, "12345")),
    );
    const won = outcomes.filter((o) => o.status === "fulfilled");
    expect(won).toHaveLength(1);
    expect(
      outcomes
        .filter((o) => o.status === "rejected")
        .every((o) => (o as PromiseRejectedResult).reason instanceof NumberTaken),
    ).toBe(true);
    expect(await ownerOfNumber(db, "12345")).toBe(
      (won[0] as PromiseFulfilledResult<{ accountId: string }>).value.accountId,
    );
  });

  it("are listed per account and released, then free for another account", async () => {
    const db = fixture.store.db;
    await assignNumber(db, "acct-c", "+4915100000003");
    await assignNumber(db, "acct-c", "+4915100000002");
    await assignNumber(db, "acct-d", "+4915100000004");
    expect((await listNumbers(db, "acct-c")).map((n) => n._id)).toEqual([
      "+4915100000002",
      "+4915100000003",
    ]);
    expect((await listNumbers(db)).map((n) => n._id)).toContain("+4915100000004");
    expect(await releaseNumber(db, "+4915100000003", "acct-d")).toBe(false);
    expect(await releaseNumber(db, "+4915100000003")).toBe(true);
    expect(await releaseNumber(db, "+4915100000003")).toBe(false);
    expect(await ownerOfNumber(db, "+4915100000003")).toBeUndefined();
    await assignNumber(db, "acct-d", "+4915100000003");
    const owners = await ownersOfNumbers(db, ["+4915100000003", "+4915100000002", "999"]);
    expect([...owners]).toEqual(
      expect.arrayContaining([
        ["+4915100000003", "acct-d"],
        ["+4915100000002", "acct-c"],
      ]),
    );
    expect(owners.size).toBe(2);
  });

  it("are E.164 with their + or short codes of 3 to 8 digits", () => {
    for (const ok of ["+4915112345678", "+12025550123", "123", "12345678"])
      expect(isInboundNumber(ok), ok).toBe(true);
    for (const bad of ["4915112345678", "+0151234567", "12", "123456789", "+1234567", "12a4", ""])
      expect(isInboundNumber(bad), bad).toBe(false);
  });
});
