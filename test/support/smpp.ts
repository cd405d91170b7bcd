import type { CarrierPart } from "../../src/delivery/carrier.ts";
import { SmppCarrier } from "../../src/delivery/smpp-carrier/adapter.ts";
import type { SmppCarrierOptions } from "../../src/delivery/smpp-carrier/carrier-options.ts";
import type { Logger } from "../../src/logger.ts";
import { parseSmppUrl } from "../../src/smpp/endpoint.ts";
import type { Store } from "../../src/store/database.ts";
import type { TestSmsc } from "./smsc.ts";
import type { Pdu } from "./smsc-pdus.ts";

export interface LogRecord {
  level: "info" | "warn" | "error" | "debug";
  msg: string;
  obj: Record<string, unknown>;
}

/** A logger that keeps what it is told (and prints warnings and errors with SMPP_TEST_LOG=1). */
export function recordingLogger(): Logger & { records: LogRecord[]; text(): string } {
  const records: LogRecord[] = [];
  const keep = (level: LogRecord["level"]) => (obj: unknown, msg?: string) => {
    records.push({ level, msg: msg ?? "", obj: (obj ?? {}) as Record<string, unknown> });
    if (process.env.SMPP_TEST_LOG && level !== "debug") console.log(level, msg, obj);
  };
  return {
    records,
    info: keep("info"),
    warn: keep("warn"),
    error: keep("error"),
    debug: keep("debug"),
    text: () =>
      records.map((r) => `${r.level} ${r.msg} ${JSON.stringify(r.obj, errorsAsText)}`).join("\n"),
  };
}

function errorsAsText(_key: string, value: unknown) {
  return value instanceof Error ? value.message : value;
}

/** An SmppCarrier on the test SMSC, with short timeouts and backoffs for tests. */
export function smppCarrier(
  smsc: Pick<TestSmsc, "url">,
  options: Partial<SmppCarrierOptions> = {},
): SmppCarrier {
  return new SmppCarrier({
    endpoint: parseSmppUrl(smsc.url),
    window: 10,
    enquireLinkMs: 5_000,
    responseTimeoutMs: 5_000,
    unboundWaitMs: 5_000,
    backoffInitialMs: 200,
    backoffMaxMs: 1_000,
    holdUnknownReceiptsMs: 2_000,
    logger: recordingLogger(),
    ...options,
  });
}

let nextMessageId = 1_000;

/** Parts of one message with a new id, from texts already segmented. */
export function partsOf(
  texts: string[],
  extra: Partial<Omit<CarrierPart, "partIndex" | "partCount" | "text">> = {},
): CarrierPart[] {
  const messageId = nextMessageId++;
  return texts.map((text, partIndex) => ({
    messageId,
    partId: messageId * 100 + partIndex,
    partIndex,
    partCount: texts.length,
    to: "+4915112345678",
    from: "Acme",
    text,
    expiresAt: new Date(Date.now() + 3_600_000),
    ...extra,
  }));
}

/**
 * The most submit_sm ever unanswered at once on each bind, from the log (in the order the SMSC saw
 * them: a submit_sm when read, its answer just before it was written).
 */
export function peakUnanswered(log: Pdu[]): Map<number, number> {
  const open = new Map<number, Set<number>>();
  const peak = new Map<number, number>();
  for (const pdu of log) {
    const mine = open.get(pdu.bind) ?? new Set<number>();
    open.set(pdu.bind, mine);
    if (pdu.command === "submit_sm" && pdu.dir === "in") mine.add(pdu.sequence);
    if (pdu.command === "submit_sm_resp" && pdu.dir === "out") mine.delete(pdu.sequence);
    peak.set(pdu.bind, Math.max(peak.get(pdu.bind) ?? 0, mine.size));
  }
  return peak;
}

export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export { deliveryService } from "./delivery-service.ts";

/** Whether every message is final with every notification sent (or given up). */
export async function allFinal(store: Store, ids: number[]): Promise<boolean> {
  const docs = await store.messages
    .find({ _id: { $in: ids } }, { projection: { status: 1, notifications: 1 } })
    .toArray();
  return (
    docs.length === ids.length &&
    docs.every(
      (d) =>
        d.status !== "ACCEPTED" &&
        d.status !== "SENT" &&
        d.notifications.every((n) => n.state !== "pending"),
    )
  );
}
