/**
 * The intake of mobile-originated messages (docs/design.md "Two-way messaging": "Receiving", "At least
 * once, never lost"): what the carrier hands in, a batch of PDUs at a time, becomes stored inbound
 * messages; the carrier acknowledges each PDU only after `take` answered for it.
 *
 * - The destination decides the account (src/store/numbers.ts), read by its TON (numberCandidates);
 *   a PDU to a number nobody owns is `unowned`: logged and counted, never stored (the SMPP
 *   adapter answers it ESME_RX_R_APPN).
 * - A single MO becomes a message in one unordered insert with the others of its batch. The same MO
 *   delivered again within 10 minutes is the message already stored (its key: carrier, addresses,
 *   coding and bytes).
 * - A part of a long MO is stored as a part first (src/store/inbound-parts.ts, also one insert per
 *   batch); once every place of its message is stored, however they came, the parts are assembled
 *   from their bytes and decoded (reassembly.ts, alphabets.ts) into one message. Parts whose
 *   message is still not whole after SMS_MO_REASSEMBLY_S become one message marked `incomplete`
 *   (the sweep, every tenth of that time, at most every minute).
 * - A message whose account has an inbound URL is stored with its webhook pending (`webhooks`,
 *   src/notifier/inbound-queue.ts): storing it queues its webhook, so a crash loses none.
 * - Each message stored, or found stored already, is handed to the `onInbound` hook (opt-out
 *   keywords) before `take` answers: a crash in between leaves the PDU unacknowledged, and its
 *   redelivery calls the hook again. The hook must therefore be idempotent.
 * - `take` throws when the database fails (the SMPP adapter answers ESME_RX_T_APPN, the SMSC
 *   delivers again later): nothing is acknowledged that is not stored.
 */
import type { Db } from "mongodb";
import type { Logger } from "../logger.ts";
import { optOutTypeOf } from "../opt-outs/keywords.ts";
import { type DefaultAlphabet, decodeText } from "../smpp/alphabets.ts";
import {
  type InboundMessageDoc,
  inboundMessagesByIds,
  storeInboundMessages,
} from "../store/inbound-messages.ts";
import {
  closeParts,
  type InboundPartDoc,
  messagesOfParts,
  openParts,
  overdueGroups,
  payloadBytes,
  storeInboundParts,
} from "../store/inbound-parts.ts";
import { ownersOfNumbers } from "../store/numbers.ts";
import type { IdAllocator } from "../store/sequences.ts";
import { assembledKey, groupKey, type MoPart, numberCandidates, partKey } from "./mo-part.ts";
import { assemble } from "./reassembly.ts";

/** What became of one PDU: stored (or found stored), or refused for a number nobody owns. */
export type PartOutcome = "stored" | "unowned";

/** Called with every inbound message stored or found stored again; must be idempotent. */
export type InboundHook = (message: InboundMessageDoc) => Promise<void>;

/** The inbound webhooks' queue (src/notifier/inbound-queue.ts). */
export interface InboundWebhooks {
  /** Before new messages are stored: those whose account has an inbound URL get their webhook. */
  prepare(docs: readonly InboundMessageDoc[], now: Date): Promise<void>;
  /** Messages stored (or found stored): their webhooks' lanes marked due, the notifier woken. */
  queued(messages: readonly InboundMessageDoc[]): Promise<void>;
}

export interface InboundIntakeOptions {
  db: Db;
  /** The database server's clock. */
  now: () => Date;
  /** Ids of the `inbound` sequence. */
  ids: IdAllocator;
  logger: Logger;
  onInbound?: InboundHook | undefined;
  webhooks?: InboundWebhooks | undefined;
  /** SMS_MO_REASSEMBLY_S, in ms: how long the parts of a long MO wait for the rest. */
  reassemblyMs: number;
  /** SMS_MO_DEFAULT_ALPHABET: what data_coding 0 means. */
  defaultAlphabet: DefaultAlphabet;
}

export interface InboundIntakeStats {
  /** Messages stored (a redelivery found stored is not counted again). */
  messages: number;
  /** Of them, given up on with parts missing. */
  incomplete: number;
  /** PDUs found stored already (redeliveries). */
  redelivered: number;
  /** PDUs to numbers nobody owns. */
  unowned: number;
}

/** Parts whose message is not whole after this long are assembled by the sweep, if whole by now. */
const LATE_ASSEMBLY_MS = 60_000;

export class InboundIntake {
  private readonly counts: InboundIntakeStats = {
    messages: 0,
    incomplete: 0,
    redelivered: 0,
    unowned: 0,
  };
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(private readonly options: InboundIntakeOptions) {}

  /** The hook, when it is made after the intake (app.ts). */
  set onInbound(hook: InboundHook | undefined) {
    this.options.onInbound = hook;
  }

  /** Stores a batch of PDUs; answers one outcome per PDU, in order. Throws when the database fails. */
  async take(parts: readonly MoPart[]): Promise<PartOutcome[]> {
    const { db } = this.options;
    const now = this.options.now();
    const owners = await ownersOfNumbers(
      db,
      parts.flatMap((part) => numberCandidates(part)),
    );
    const outcomes: PartOutcome[] = [];
    const singles: { at: number; doc: InboundMessageDoc & { dedupeKey: string } }[] = [];
    const pieces: InboundPartDoc[] = [];
    /** Each long message's group and the position of its last part in this batch. */
    const groups = new Map<string, number>();
    for (const [at, part] of parts.entries()) {
      const number = numberCandidates(part).find((candidate) => owners.has(candidate));
      const accountId = number === undefined ? undefined : owners.get(number);
      if (number === undefined || accountId === undefined) {
        outcomes.push("unowned");
        this.unowned(part);
        continue;
      }
      outcomes.push("stored");
      const c = part.concatenation;
      if (!c) {
        const text = decodeText(part.payload, part.dataCoding, this.options.defaultAlphabet);
        singles.push({
          at,
          doc: this.message(accountId, part, number, text, 1, now, partKey(part)),
        });
        continue;
      }
      const group = groupKey(part);
      groups.set(group, at);
      pieces.push({
        _id: partKey(part),
        group,
        seq: c.seq,
        total: c.total,
        payload: part.payload,
        dataCoding: part.dataCoding,
        accountId,
        from: part.from,
        to: number,
        carrier: part.carrier,
        receivedAt: now,
        open: true,
      });
    }
    const ids = singles.length > 0 ? await this.options.ids.take(singles.length) : 0;
    for (const [k, single] of singles.entries()) single.doc._id = ids + k;
    if (singles.length > 0)
      await this.options.webhooks?.prepare(
        singles.map((single) => single.doc),
        now,
      );
    const stored = await storeInboundMessages(
      db,
      singles.map((single) => single.doc),
      now,
    );
    this.count(
      stored,
      singles.map((single) => single.doc),
    );
    const redelivered = await storeInboundParts(db, pieces, now);
    this.counts.redelivered += redelivered.length;
    const assembled = await this.assembleGroups([...groups.keys()], now, undefined);
    // A redelivered part of a message stored before: its crash may have come before the hook.
    const again = await inboundMessagesByIds(db, await messagesOfParts(db, redelivered));
    // To the hook in the order their (last) parts came.
    const order = [
      ...stored.map((message, k) => ({ message, at: singles[k]?.at ?? 0 })),
      ...assembled.map(({ group, message }) => ({ message, at: groups.get(group) ?? 0 })),
      ...again.map((message) => ({ message, at: parts.length })),
    ].sort((a, b) => a.at - b.at);
    await this.hand(order.map((entry) => entry.message));
    return outcomes;
  }

  /**
   * Assembles the messages whose parts waited long: whole ones left by a crash, and those still
   * missing parts after SMS_MO_REASSEMBLY_S, marked incomplete. Answers how many it stored.
   */
  async sweep(): Promise<number> {
    const now = this.options.now();
    const late = Math.min(LATE_ASSEMBLY_MS, this.options.reassemblyMs);
    let total = 0;
    for (;;) {
      const groups = await overdueGroups(this.options.db, new Date(now.getTime() - late), 500);
      if (groups.length === 0) return total;
      const giveUpBefore = new Date(now.getTime() - this.options.reassemblyMs);
      const messages = (await this.assembleGroups(groups, now, giveUpBefore)).map(
        (assembled) => assembled.message,
      );
      await this.hand(messages);
      total += messages.length;
      // Groups still waiting for parts (not given up on yet) stay overdue: come back later.
      if (messages.length < groups.length) return total;
    }
  }

  /** Runs the sweep every tenth of SMS_MO_REASSEMBLY_S, at most every minute. */
  start(): void {
    if (this.timer) return;
    const every = Math.max(1_000, Math.min(LATE_ASSEMBLY_MS, this.options.reassemblyMs / 10));
    this.timer = setInterval(() => {
      if (this.sweeping) return;
      this.sweeping = this.sweep()
        .then(() => undefined)
        .catch((error: unknown) =>
          this.options.logger.warn({ err: error }, "inbound: sweeping waiting parts failed"),
        )
        .finally(() => {
          this.sweeping = undefined;
        });
    }, every);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping;
  }

  stats(): InboundIntakeStats {
    return { ...this.counts };
  }

  /**
   * Assembles the groups whose parts are all stored; with `giveUpBefore`, also those whose first
   * waiting part came before it, as they are. Stores the messages and closes their parts.
   */
  private async assembleGroups(
    groups: readonly string[],
    now: Date,
    giveUpBefore: Date | undefined,
  ): Promise<{ group: string; message: InboundMessageDoc }[]> {
    if (groups.length === 0) return [];
    const waiting = await openParts(this.options.db, groups);
    const docs: (InboundMessageDoc & { dedupeKey: string })[] = [];
    const read: { group: string; ids: string[] }[] = [];
    for (const [group, parts] of waiting) {
      const first = parts[0] as InboundPartDoc;
      const assembly = assemble(
        parts.map((part) => ({ seq: part.seq, payload: payloadBytes(part), id: part._id })),
        first.total,
      );
      const givenUp =
        !assembly.complete && giveUpBefore !== undefined && first.receivedAt < giveUpBefore;
      if (!assembly.complete && !givenUp) continue;
      const text = decodeText(assembly.payload, first.dataCoding, this.options.defaultAlphabet);
      const last = new Date(Math.max(...parts.map((part) => part.receivedAt.getTime())));
      const doc = this.message(
        first.accountId,
        first,
        first.to,
        text,
        assembly.received,
        last,
        assembledKey(
          group,
          assembly.used.map((part) => part.id),
        ),
      );
      if (givenUp) {
        doc.incomplete = true;
        delete doc.optOutType;
      }
      docs.push(doc);
      read.push({ group, ids: parts.map((part) => part._id) });
    }
    if (docs.length === 0) return [];
    const ids = await this.options.ids.take(docs.length);
    for (const [k, doc] of docs.entries()) doc._id = ids + k;
    await this.options.webhooks?.prepare(docs, now);
    const stored = await storeInboundMessages(this.options.db, docs, now);
    this.count(stored, docs);
    await closeParts(
      this.options.db,
      stored.map((message, k) => ({ ids: read[k]?.ids ?? [], inboundId: message._id })),
      now,
    );
    return stored.map((message, k) => ({ group: read[k]?.group ?? "", message }));
  }

  private message(
    accountId: string,
    part: Pick<MoPart, "carrier" | "from">,
    to: string,
    text: string,
    parts: number,
    receivedAt: Date,
    dedupeKey: string,
  ): InboundMessageDoc & { dedupeKey: string } {
    const doc: InboundMessageDoc & { dedupeKey: string } = {
      _id: 0,
      accountId,
      from: part.from,
      to,
      text,
      parts,
      receivedAt,
      carrier: part.carrier,
      dedupeKey,
    };
    const optOutType = optOutTypeOf(text);
    if (optOutType) doc.optOutType = optOutType;
    return doc;
  }

  /** Counts what was stored anew and what was there already. */
  private count(stored: readonly InboundMessageDoc[], offered: readonly InboundMessageDoc[]): void {
    for (const [k, message] of stored.entries()) {
      if (message._id !== offered[k]?._id) {
        this.counts.redelivered++;
        continue;
      }
      this.counts.messages++;
      if (message.incomplete) this.counts.incomplete++;
    }
  }

  /** Queues the messages' webhooks, then hands them to the hook one at a time in the order received. */
  private async hand(messages: readonly InboundMessageDoc[]): Promise<void> {
    if (messages.length > 0) await this.options.webhooks?.queued(messages);
    const hook = this.options.onInbound;
    if (!hook) return;
    for (const message of messages) await hook(message);
  }

  private unowned(part: MoPart): void {
    this.counts.unowned++;
    this.options.logger.warn(
      { carrier: part.carrier, from: part.from, to: part.to },
      "inbound: message to a number no account owns refused",
    );
  }
}
