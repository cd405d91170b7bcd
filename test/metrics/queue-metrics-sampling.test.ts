/**
 * The queue metrics' readings (src/metrics/queues.ts) cost the database more as the backlog grows:
 * a reading is reused for 5 s, and for twenty times as long as it took when that is longer, so
 * that a database already behind spends at most a twentieth of its time on them.
 */
import { expect, it } from "vitest";
import { SpacedSampler } from "../../src/metrics/queues.ts";

function sampler(readMs: () => number) {
  let clock = 0;
  let reads = 0;
  const sampled = new SpacedSampler(
    async () => {
      clock += readMs();
      return ++reads;
    },
    () => clock,
  );
  return {
    current: () => sampled.current(),
    advance: (ms: number) => {
      clock += ms;
    },
  };
}

it("reads again after 5 s when a reading is quick", async () => {
  const s = sampler(() => 10);
  expect(await s.current()).toBe(1);
  s.advance(4_999);
  expect(await s.current()).toBe(1);
  s.advance(1);
  expect(await s.current()).toBe(2);
});

it("waits twenty times as long as a slow reading took before the next", async () => {
  const s = sampler(() => 1_000);
  expect(await s.current()).toBe(1);
  s.advance(19_999);
  expect(await s.current()).toBe(1);
  s.advance(1);
  expect(await s.current()).toBe(2);
});

it("shares one reading between the gauges of a scrape and concurrent scrapes", async () => {
  const s = sampler(() => 10);
  const [a, b, c] = await Promise.all([s.current(), s.current(), s.current()]);
  expect([a, b, c]).toEqual([1, 1, 1]);
});
