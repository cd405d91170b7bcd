/**
 * The STOP feed across instances (src/opt-outs/stop-feed.ts) on the test database: a STOP
 * announced on one instance is held back by another once it has read the feed, which then says
 * it is covered; an instance that never read it is not covered; one that starts later holds back
 * what the feed still holds for claims screened before it read it, and nothing for claims
 * screened after.
 */
import { afterEach, expect, it } from "vitest";
import { StopFeed } from "../../src/opt-outs/stop-feed.ts";
import { nextTestId } from "../support/fixtures.ts";
import { waitFor } from "../support/smpp.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
const feeds: StopFeed[] = [];

afterEach(async () => {
  for (const feed of feeds.splice(0)) await feed.stop();
});

function feed(instanceId: string): StopFeed {
  const made = new StopFeed({ db: fixture.store.db, instanceId, pollMs: 20 });
  feeds.push(made);
  return made;
}

it("holds a STOP announced elsewhere back once read, and says so; an instance not reading is not covered", async () => {
  const tag = nextTestId();
  const watcher = feed(`a-${tag}`);
  const announcer = feed(`b-${tag}`);
  await watcher.start();
  const screened = watcher.seen();
  const seq = await announcer.announce("acct-feed", "+4915100000001");
  expect(seq).toBeGreaterThan(screened);
  await waitFor(
    async () => (await announcer.coveredAmong([`a-${tag}`], seq)).size === 1,
    10_000,
    "the watcher covered",
  );
  // A claim screened before the STOP is held back; one screened after it, or another number, not.
  expect(watcher.heldBack("acct-feed", "4915100000001", screened)).toBe(true);
  expect(watcher.heldBack("acct-feed", "+4915100000001", watcher.seen())).toBe(false);
  expect(watcher.heldBack("acct-feed", "+4915100000002", screened)).toBe(false);
  expect(watcher.heldBack("acct-other", "+4915100000001", screened)).toBe(false);
  // Neither the announcer (not started) nor an unknown instance is covered.
  expect(
    [...(await announcer.coveredAmong([`a-${tag}`, `b-${tag}`, `c-${tag}`], seq))].sort(),
  ).toEqual([`a-${tag}`]);
});

it("an instance that starts after a STOP holds it back for claims screened before it read the feed", async () => {
  const tag = nextTestId();
  const announcer = feed(`b-${tag}`);
  const seq = await announcer.announce("acct-feed", "+4915100000003");
  const late = feed(`d-${tag}`);
  expect(late.heldBack("acct-feed", "+4915100000003", late.seen())).toBe(false);
  const before = late.seen();
  await late.start();
  expect(late.heldBack("acct-feed", "+4915100000003", before)).toBe(true);
  expect(late.heldBack("acct-feed", "+4915100000003", late.seen())).toBe(false);
  expect((await announcer.coveredAmong([`d-${tag}`], seq)).size).toBe(1);
});
