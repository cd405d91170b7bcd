/**
 * The in-process dispatch of webhooks on its own (no database, no HTTP): the three concurrency
 * bounds, round robin between accounts and receivers, and the bounds on work waiting for a
 * saturated receiver.
 */
import { describe, expect, it } from "vitest";
import { type DispatchLimits, FairDispatcher } from "../../src/notifier/dispatch.ts";

interface Task {
  accountId: string;
  receiver: string;
  n: number;
}

/** A dispatcher whose runs wait until the test finishes them. */
function harness(limits: Partial<DispatchLimits> = {}) {
  let clock = 0;
  const started: Task[] = [];
  const putBack: Task[] = [];
  const finishers = new Map<Task, () => void>();
  const dispatcher = new FairDispatcher<Task>(
    {
      concurrency: 100,
      receiverConcurrency: 100,
      accountConcurrency: 100,
      receiverQueueLimit: 1000,
      receiverWaitMs: 60_000,
      ...limits,
    },
    {
      run: (task) =>
        new Promise<void>((resolve) => {
          started.push(task);
          finishers.set(task, resolve);
        }),
      putBack: (task) => putBack.push(task),
      now: () => clock,
    },
  );
  let n = 0;
  return {
    dispatcher,
    started,
    putBack,
    push(accountId: string, receiver: string, count = 1) {
      for (let i = 0; i < count; i++) dispatcher.push({ accountId, receiver, n: n++ });
    },
    /** Finishes the given running tasks and lets their slots be reused. */
    async finish(tasks: Task[]) {
      for (const task of tasks) {
        finishers.get(task)?.();
        finishers.delete(task);
      }
      await new Promise((resolve) => setTimeout(resolve, 0));
      await new Promise((resolve) => setTimeout(resolve, 0));
    },
    running: () => started.filter((t) => finishers.has(t)),
    advance(ms: number) {
      clock += ms;
    },
  };
}

const labels = (tasks: Task[]) => tasks.map((t) => `${t.accountId}${t.receiver}`);

describe("fair dispatch", () => {
  it("serves accounts round robin, however long one account's queue is", () => {
    const h = harness({ concurrency: 6 });
    h.push("big", "/b", 100);
    h.push("small", "/s", 2);
    h.push("other", "/o", 1);
    h.dispatcher.pump();
    expect(labels(h.started)).toEqual(["big/b", "small/s", "other/o", "big/b", "small/s", "big/b"]);
  });

  it("never exceeds the global, per-receiver and per-account bounds", async () => {
    const h = harness({ concurrency: 5, receiverConcurrency: 2, accountConcurrency: 3 });
    h.push("a", "/1", 10);
    h.push("a", "/2", 10);
    h.push("a", "/3", 10);
    h.push("c", "/1", 10);
    h.dispatcher.pump();
    const check = () => {
      const active = h.dispatcher.active;
      expect(active).toBeLessThanOrEqual(5);
      expect(h.dispatcher.activeFor("a")).toBeLessThanOrEqual(3);
      expect(h.dispatcher.activeFor("c")).toBeLessThanOrEqual(3);
      for (const r of ["/1", "/2", "/3"]) expect(h.dispatcher.activeAt(r)).toBeLessThanOrEqual(2);
    };
    check();
    expect(h.dispatcher.activeFor("a")).toBe(3);
    // receiver /1 is shared: a took one slot of it, so c gets the other
    expect(h.dispatcher.activeFor("c")).toBe(1);
    for (let round = 0; round < 40 && h.dispatcher.queued + h.dispatcher.active > 0; round++) {
      await h.finish(h.running().slice(0, 2));
      check();
    }
    expect(h.started).toHaveLength(40);
    expect(h.putBack).toHaveLength(0);
  });

  it("lets other receivers of the same host pass one that hangs", async () => {
    const h = harness({ concurrency: 4, receiverConcurrency: 2, accountConcurrency: 4 });
    h.push("a", "http://h:1/hang", 20);
    h.dispatcher.pump();
    h.push("c", "http://h:1/ok", 10);
    h.dispatcher.pump();
    // the hanging receiver keeps its two slots; c's requests go through the other two, all of them
    for (let round = 0; round < 10; round++) {
      const ok = h.running().filter((t) => t.accountId === "c");
      await h.finish(ok);
    }
    expect(h.started.filter((t) => t.accountId === "c")).toHaveLength(10);
    expect(h.started.filter((t) => t.accountId === "a")).toHaveLength(2);
  });

  it("puts back work beyond the queue limit of a saturated receiver, from the longest queue", () => {
    const h = harness({ receiverConcurrency: 1, receiverQueueLimit: 4 });
    h.push("a", "/r", 10);
    h.push("b", "/r", 2);
    h.dispatcher.pump();
    expect(h.started).toHaveLength(1);
    expect(h.dispatcher.queued).toBe(4);
    // a had the longest queue: its newest went back, b's two stay
    expect(h.putBack.map((t) => t.accountId)).toEqual(["a", "a", "a", "a", "a", "a", "a"]);
    expect(h.putBack.map((t) => t.n)).toEqual([3, 4, 5, 6, 7, 8, 9]);
  });

  it("puts back work that waited too long for a saturated receiver, and only that", () => {
    const h = harness({ receiverConcurrency: 1, receiverWaitMs: 1000 });
    h.push("a", "/slow", 3);
    h.push("a", "/free", 0);
    h.dispatcher.pump();
    h.advance(600);
    h.push("a", "/slow", 1);
    h.dispatcher.expire();
    expect(h.putBack).toHaveLength(0);
    h.advance(600);
    h.dispatcher.expire();
    expect(h.putBack.map((t) => t.n)).toEqual([1, 2]);
    expect(h.dispatcher.queued).toBe(1);
  });

  it("drains what waits, leaving what runs", () => {
    const h = harness({ concurrency: 2 });
    h.push("a", "/1", 3);
    h.push("b", "/2", 3);
    h.dispatcher.pump();
    const drained = h.dispatcher.drain();
    expect(drained).toHaveLength(4);
    expect(h.dispatcher.queued).toBe(0);
    expect(h.dispatcher.active).toBe(2);
  });
});
