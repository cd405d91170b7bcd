import { describe, expect, it } from "vitest";
import { FRESH_MS, RecentCounts } from "../../src/dashboard/recent-counts.ts";
import type { StatusCount } from "../../src/store/account-summary.ts";

// The overview's counts, kept per account (pure logic, on a clock the test moves): concurrent
// views share one computation, kept ones serve until stale, failures are not kept.

function counted(count: number): StatusCount[] {
  return [{ status: "DELIVERED", count, capped: false }];
}

/** A computation the test finishes by hand, and how many were started per account. */
function manual() {
  const started = new Map<string, number>();
  const pending: {
    accountId: string;
    resolve: (c: StatusCount[]) => void;
    reject: (e: Error) => void;
  }[] = [];
  const compute = (accountId: string) => {
    started.set(accountId, (started.get(accountId) ?? 0) + 1);
    return new Promise<StatusCount[]>((resolve, reject) =>
      pending.push({ accountId, resolve, reject }),
    );
  };
  return { started, pending, compute };
}

describe("RecentCounts", () => {
  it("computes once for concurrent views and keeps the counts while fresh", async () => {
    let now = 1_000_000;
    const work = manual();
    const counts = new RecentCounts(work.compute, () => now);
    const views = Array.from({ length: 40 }, () => counts.get("a"));
    expect(work.started.get("a")).toBe(1);
    work.pending[0]?.resolve(counted(7));
    for (const view of await Promise.all(views)) expect(view).toEqual(counted(7));

    now += FRESH_MS - 1;
    await expect(counts.get("a")).resolves.toEqual(counted(7));
    expect(work.started.get("a")).toBe(1);
    // Another account has counts of its own.
    void counts.get("b");
    expect(work.started.get("b")).toBe(1);

    now += 1;
    const fresh = counts.get("a");
    expect(work.started.get("a")).toBe(2);
    work.pending[2]?.resolve(counted(8));
    await expect(fresh).resolves.toEqual(counted(8));
  });

  it("keeps counts that were slow to compute ten times as long", async () => {
    let now = 0;
    const work = manual();
    const counts = new RecentCounts(work.compute, () => now);
    const view = counts.get("a");
    now += 2_000; // the counts took 2 s
    work.pending[0]?.resolve(counted(1));
    await view;
    now += 19_999;
    await counts.get("a");
    expect(work.started.get("a")).toBe(1);
    now += 1;
    void counts.get("a");
    expect(work.started.get("a")).toBe(2);
  });

  it("does not keep a failure: the next view computes again", async () => {
    const work = manual();
    const counts = new RecentCounts(work.compute, () => 0);
    const failed = counts.get("a");
    work.pending[0]?.reject(new Error("database unavailable"));
    await expect(failed).rejects.toThrow("database unavailable");
    const retried = counts.get("a");
    expect(work.started.get("a")).toBe(2);
    work.pending[1]?.resolve(counted(3));
    await expect(retried).resolves.toEqual(counted(3));
  });
});
