import { type Collection, type Db, MongoClient, type MongoClientOptions } from "mongodb";
import type {
  AccountDoc,
  BatchDoc,
  CounterDoc,
  LaneDoc,
  MessageDoc,
  SenderNameDoc,
  StateDoc,
} from "./documents.ts";
import type { LedgerEntryDoc, UsageDoc } from "./ledger.ts";
import { ServerClock } from "./server-clock.ts";

/** The collections of the service, typed. */
export interface Store {
  db: Db;
  accounts: Collection<AccountDoc>;
  messages: Collection<MessageDoc>;
  batches: Collection<BatchDoc>;
  senderNames: Collection<SenderNameDoc>;
  counters: Collection<CounterDoc>;
  /** Small named documents: the notifier's resume token and the like. */
  state: Collection<StateDoc>;
  /** Per account: its delivery and notification lanes (src/scheduling/lanes.ts). */
  lanes: Collection<LaneDoc>;
  /** Every change of an account's credit (store/ledger.ts). */
  ledger: Collection<LedgerEntryDoc>;
  /** Charged and refunded per account, day and country (store/ledger.ts). */
  usage: Collection<UsageDoc>;
  /** The database server's clock: due times, leases and cutoffs are on it. */
  clock: ServerClock;
}

export function openStore(db: Db): Store {
  return {
    db,
    accounts: db.collection<AccountDoc>("accounts"),
    messages: db.collection<MessageDoc>("messages"),
    batches: db.collection<BatchDoc>("batches"),
    senderNames: db.collection<SenderNameDoc>("sender_names"),
    counters: db.collection<CounterDoc>("counters"),
    state: db.collection<StateDoc>("state"),
    lanes: db.collection<LaneDoc>("lanes"),
    ledger: db.collection<LedgerEntryDoc>("ledger"),
    usage: db.collection<UsageDoc>("usage"),
    clock: new ServerClock(db),
  };
}

/**
 * Client options of the service. A database that cannot be reached fails an operation after
 * 3 s of server selection, so requests answer 503 within about 5 s (docs/decisions.md). A
 * connection silent for a minute is closed and its operation fails (and is retried by its loop):
 * no operation waits that long for its answer (change streams wait at most 500 ms per getMore), so
 * only a database that stopped answering without closing the connection is cut off by it.
 */
export const CLIENT_OPTIONS: MongoClientOptions = {
  serverSelectionTimeoutMS: 3_000,
  connectTimeoutMS: 3_000,
  socketTimeoutMS: 60_000,
  maxPoolSize: 64,
};

export async function connect(uri: string): Promise<MongoClient> {
  const client = new MongoClient(uri, CLIENT_OPTIONS);
  await client.connect();
  return client;
}

/**
 * The service's handle on `db`, whatever the connection string says: every write waits for a
 * majority of the replica set and its journal (a debit and its message cannot be rolled back one
 * without the other), and reads go to the primary, which has the last write.
 */
export function durable(db: Db): Db {
  return db.client.db(db.databaseName, {
    writeConcern: { w: "majority", journal: true },
    readPreference: "primary",
  });
}

/**
 * True when the database answers a ping within `withinMs`. Concurrent callers share one ping, so
 * a burst of health checks against a dead database adds no load and no wait.
 */
export function isReachable(db: Db, withinMs = 1500): Promise<boolean> {
  const pending = pings.get(db);
  if (pending) return pending;
  const signal = AbortSignal.timeout(withinMs);
  const ping = Promise.race([
    db.command({ ping: 1 }, { signal }).then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((resolve) => signal.addEventListener("abort", () => resolve(false))),
  ]).finally(() => pings.delete(db));
  pings.set(db, ping);
  return ping;
}

const pings = new WeakMap<Db, Promise<boolean>>();
