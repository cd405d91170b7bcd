/**
 * The documents and queries of the emulator's index test (indexes.test.ts): the shapes the
 * service stores and some it does not (mixed types, arrays, nulls, ties), and queries over them.
 */
import { type Document, Long } from "mongodb";

/** Deterministic pseudo-random numbers. */
function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

export const BASE = Date.UTC(2026, 0, 1);
const pick = <T>(r: () => number, values: readonly T[]): T =>
  values[Math.floor(r() * values.length)] as T;

/** Documents with the shapes the service stores and some it does not (mixed types, arrays, nulls). */
export function documents(): Document[] {
  const r = random(7);
  return Array.from({ length: 600 }, (_, i) => {
    const doc: Document = {
      _id: i + 1,
      accountId: pick(r, ["a", "b", "c", "d"]),
      status: pick(r, ["ACCEPTED", "SENT", "DELIVERED", "FAILED"]),
      code: `c${i}`,
    };
    // Due times with many ties (sorting by them must keep the natural order among equals).
    const due = r();
    if (due < 0.6) doc.dueAt = new Date(BASE + Math.floor(r() * 40) * 1000);
    else if (due < 0.7) doc.dueAt = null;
    else if (due < 0.75) doc.dueAt = [new Date(BASE + 5000), new Date(BASE + 39_000)];
    else if (due < 0.8) doc.dueAt = "soon";
    const n = r();
    if (n < 0.3) doc.n = Math.floor(r() * 20);
    else if (n < 0.5) doc.n = Math.floor(r() * 20) + 0.5;
    else if (n < 0.6) doc.n = Long.fromNumber(Math.floor(r() * 20));
    else if (n < 0.7) doc.n = String(Math.floor(r() * 20));
    else if (n < 0.75) doc.n = { x: 1 };
    // A field the index covers wholly (a date or absent): $exists + sort walks it in order.
    if (r() < 0.5) doc.at = new Date(BASE + Math.floor(r() * 40) * 1000);
    const tags = r();
    if (tags < 0.5)
      doc.tags = Array.from({ length: Math.floor(r() * 3) }, () => pick(r, ["x", "y", "z"]));
    else if (tags < 0.75) doc.tags = pick(r, ["x", "y", "z"]);
    if (r() < 0.3)
      doc.lease = {
        owner: pick(r, ["p", "q"]),
        until: new Date(BASE + Math.floor(r() * 40) * 1000),
      };
    return doc;
  });
}

export const at = (seconds: number) => new Date(BASE + seconds * 1000);

export interface Query {
  filter: Document;
  sort?: Document;
  limit?: number;
  skip?: number;
}

export const QUERIES: Query[] = [
  { filter: { status: "SENT" } },
  { filter: { status: { $in: ["SENT", "FAILED"] }, accountId: "b" } },
  { filter: { accountId: "a", dueAt: { $lte: at(20) } } },
  { filter: { accountId: "a", dueAt: { $lte: at(20) } }, sort: { dueAt: 1 }, limit: 7 },
  { filter: { accountId: "c", dueAt: { $lte: at(30) } }, sort: { dueAt: 1 }, limit: 25, skip: 3 },
  { filter: { dueAt: { $lte: at(10) } }, sort: { dueAt: 1 }, limit: 50 },
  { filter: { dueAt: { $lt: at(10) } }, sort: { dueAt: -1 }, limit: 50 },
  { filter: { dueAt: { $gte: at(15), $lt: at(25) } }, sort: { dueAt: 1 }, limit: 40 },
  { filter: { dueAt: { $gt: at(30) } }, sort: { dueAt: -1 }, limit: 10, skip: 5 },
  { filter: { dueAt: { $gt: at(50) } }, sort: { dueAt: 1 }, limit: 10 },
  { filter: { dueAt: { $gt: at(20), $lt: at(10) } } },
  { filter: { dueAt: { $lte: at(39) } } },
  { filter: { dueAt: at(5) } },
  { filter: { dueAt: null } },
  { filter: { dueAt: { $exists: true } }, sort: { dueAt: 1 }, limit: 30 },
  { filter: { dueAt: { $exists: false } } },
  { filter: { dueAt: { $gte: "a" } } },
  { filter: { dueAt: { $gte: at(0), $lte: "z" } } },
  { filter: { dueAt: { $lte: at(20), $ne: at(3) } }, sort: { dueAt: 1 }, limit: 20 },
  { filter: { dueAt: { $in: [at(3), at(4), null] } } },
  { filter: { n: 5 } },
  { filter: { n: 5.5 } },
  { filter: { n: { $in: [1, 2.5, "3", Long.fromNumber(4)] } } },
  { filter: { n: { $gt: 5, $lte: 10 } } },
  { filter: { n: { $gte: "1" } } },
  { filter: { n: { $gt: 5 } }, sort: { n: 1 }, limit: 10 },
  { filter: { n: { x: 1 } } },
  { filter: { tags: "x" } },
  { filter: { tags: { $in: ["y", "z"] } }, sort: { _id: -1 }, limit: 15 },
  { filter: { tags: { $gte: "y" } }, sort: { tags: 1 }, limit: 15 },
  { filter: { tags: [] } },
  { filter: { tags: ["x", "y"] } },
  { filter: { "lease.until": { $lte: at(10) } } },
  { filter: { "lease.until": { $lte: at(10) } }, sort: { "lease.until": 1 }, limit: 5 },
  { filter: { code: "c17", status: { $ne: "nothing" } } },
  { filter: { code: "c17", accountId: "nobody" } },
  { filter: { _id: { $in: [5, 3, 400, 9999] }, status: { $ne: "FAILED" } } },
  { filter: { _id: { $gte: 100, $lte: 200, $in: [150, 120, 201, 99, 180] } } },
  { filter: { $or: [{ status: "SENT" }, { dueAt: { $lte: at(2) } }] } },
  { filter: { status: "DELIVERED" }, sort: { accountId: 1, _id: -1 }, limit: 40, skip: 10 },
  { filter: {}, sort: { dueAt: 1 }, limit: 60 },
  { filter: { at: { $exists: true } }, sort: { at: 1 }, limit: 30 },
  { filter: { at: { $exists: 1 } }, sort: { at: -1 }, limit: 30, skip: 4 },
  { filter: { accountId: "b", at: { $exists: true } }, sort: { at: 1 }, limit: 1 },
  { filter: { accountId: "c", at: { $exists: true } }, sort: { at: -1 }, limit: 12 },
  { filter: { at: { $exists: false } }, sort: { at: 1 }, limit: 12 },
];
