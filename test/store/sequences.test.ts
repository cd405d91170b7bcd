import { describe, expect, it } from "vitest";
import { IdAllocator, reserveIds } from "../../src/store/sequences.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();

describe("id sequences", () => {
  it("reserve whole ranges atomically: concurrent reservations never overlap", async () => {
    const sizes = [1, 5, 100, 3, 10_000, 7, 1, 2];
    const firsts = await Promise.all(
      sizes.map((n) => reserveIds(fixture.store.counters, "batch", n)),
    );
    const ids = firsts.flatMap((first, i) =>
      Array.from({ length: sizes[i] ?? 0 }, (_, k) => first + k),
    );
    expect(new Set(ids).size).toBe(ids.length);
    expect(Math.min(...ids)).toBe(1);
    expect(Math.max(...ids)).toBe(ids.length);
  });

  it("hand out unique positive integers from two allocators sharing one sequence", async () => {
    const a = new IdAllocator(fixture.store.counters, "message", 16);
    const b = new IdAllocator(fixture.store.counters, "message", 16);
    const takes = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).take(1 + (i % 3))),
    );
    const ids = takes.flatMap((first, i) =>
      Array.from({ length: 1 + (i % 3) }, (_, k) => first + k),
    );
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => Number.isInteger(id) && id > 0)).toBe(true);
  });
});
