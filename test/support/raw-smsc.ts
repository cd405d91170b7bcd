/**
 * An SMSC on a raw socket, for what no well-behaved SMSC sends: it answers a bind, enquire_link
 * and submit_sm itself, and writes whatever bytes a test gives it (a PDU whose body does not
 * decode, a length the stream cannot be framed by, half a PDU). Everything the client sends is
 * kept, header fields read from the bytes, so a test sees each answer and its command_status.
 */
import { once } from "node:events";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";

export interface SeenPdu {
  connection: number;
  commandId: number;
  status: number;
  sequence: number;
  body: Buffer;
}

export interface RawSmsc {
  url: string;
  /** Connections accepted so far (each bind opens one). */
  readonly connections: number;
  /** Connections the client closed (or that were closed under it). */
  readonly closed: number;
  /** Every PDU the client sent, in order. */
  readonly seen: SeenPdu[];
  /** submit_sm received and answered, in order, with the destination and the message_id given. */
  readonly submits: { destination: string; messageId: string }[];
  /**
   * The message_id of a submit_sm_resp, from the destination and how many submit_sm went to it
   * before (0 for the first). Default `raw1`, `raw2`...
   */
  messageIdFor: ((destination: string, nth: number) => string) | undefined;
  /** While true, submit_sm_resps are held (their ids are in `submits` already) until `release`. */
  holdAnswers: boolean;
  /** Writes the held submit_sm_resps, in order, and stops holding. */
  release(): void;
  /** Writes bytes on the newest connection. */
  write(bytes: Buffer): void;
  /** The next sequence number for a request the SMSC sends. */
  nextSequence(): number;
  /** Resolves with the client's PDU answering `sequence` (a response id), on any connection. */
  answerTo(sequence: number, timeoutMs?: number): Promise<SeenPdu>;
  /** Resolves once the client is bound on a connection newer than `after`. */
  boundAfter(after: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export const BIND_TRANSCEIVER = 0x00000009;
export const SUBMIT_SM = 0x00000004;
export const DELIVER_SM = 0x00000005;
export const DATA_SM = 0x00000103;
export const ENQUIRE_LINK = 0x00000015;
export const GENERIC_NACK = 0x80000000;

/** A PDU of `commandId` with `body` as it is. */
export function pdu(
  commandId: number,
  sequence: number,
  body: Buffer = Buffer.alloc(0),
  status = 0,
) {
  const header = Buffer.alloc(16);
  header.writeUInt32BE(16 + body.length, 0);
  header.writeUInt32BE(commandId >>> 0, 4);
  header.writeUInt32BE(status, 8);
  header.writeUInt32BE(sequence, 12);
  return Buffer.concat([header, body]);
}

const cstring = (text: string) => Buffer.concat([Buffer.from(text, "latin1"), Buffer.alloc(1)]);

/** A TLV: tag, length, value. */
export function tlv(tag: number, value: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt16BE(tag, 0);
  head.writeUInt16BE(value.length, 2);
  return Buffer.concat([head, value]);
}

export interface DeliverFields {
  from?: string;
  to?: string;
  sourceTon?: number;
  destTon?: number;
  destNpi?: number;
  esmClass?: number;
  dataCoding?: number;
  scheduleDeliveryTime?: string;
  /** short_message (at most 254 bytes). */
  message?: Buffer;
  tlvs?: Buffer[];
}

/** The body of a deliver_sm, every mandatory field in order, then `tlvs`. */
export function deliverSmBody(f: DeliverFields = {}): Buffer {
  const message = f.message ?? Buffer.alloc(0);
  return Buffer.concat([
    cstring(""),
    Buffer.from([f.sourceTon ?? 1, 1]),
    cstring(f.from ?? "4915112345678"),
    Buffer.from([f.destTon ?? 1, f.destNpi ?? 1]),
    cstring(f.to ?? "4930000001"),
    Buffer.from([f.esmClass ?? 0, 0, 0]),
    cstring(f.scheduleDeliveryTime ?? ""),
    cstring(""),
    Buffer.from([0, 0, f.dataCoding ?? 3, 0, message.length]),
    message,
    ...(f.tlvs ?? []),
  ]);
}

/** The body of a data_sm (the message in message_payload, 0x0424). */
export function dataSmBody(f: DeliverFields & { payload: Buffer }): Buffer {
  return Buffer.concat([
    cstring(""),
    Buffer.from([f.sourceTon ?? 1, 1]),
    cstring(f.from ?? "4915112345678"),
    Buffer.from([f.destTon ?? 1, f.destNpi ?? 1]),
    cstring(f.to ?? "4930000001"),
    Buffer.from([f.esmClass ?? 0, 0, f.dataCoding ?? 3]),
    tlv(0x0424, f.payload),
    ...(f.tlvs ?? []),
  ]);
}

/** A submit_sm's destination_addr: after service_type, source TON, NPI, address, dest TON, NPI. */
function destinationOf(body: Buffer): string {
  let offset = body.indexOf(0) + 3;
  offset = body.indexOf(0, offset) + 3;
  return body.toString("latin1", offset, body.indexOf(0, offset));
}

/** A delivery receipt (esm_class 0x04) for `id`, its text as SMPP 3.4 appendix B writes it. */
export function receiptBody(
  id: string,
  stat: string,
  err = "000",
  extra: { networkErrorCode?: Buffer; doneDate?: string } = {},
): Buffer {
  const text = `id:${id} sub:001 dlvrd:${stat === "DELIVRD" ? "001" : "000"} submit date:2501011200 done date:${extra.doneDate ?? "2501011201"} stat:${stat} err:${err} text:hello`;
  return deliverSmBody({
    esmClass: 0x04,
    dataCoding: 0,
    message: Buffer.from(text, "latin1"),
    tlvs: extra.networkErrorCode ? [tlv(0x0423, extra.networkErrorCode)] : [],
  });
}

export async function startRawSmsc(): Promise<RawSmsc> {
  const seen: SeenPdu[] = [];
  const sockets: Socket[] = [];
  let closed = 0;
  let bound = 0;
  let sequence = 1_000;
  let messageIds = 0;
  const waiters = new Set<() => void>();
  const changed = () => {
    for (const waiter of waiters) waiter();
  };

  const submits: { destination: string; messageId: string }[] = [];
  const self = {
    messageIdFor: undefined as ((destination: string, nth: number) => string) | undefined,
    holdAnswers: false,
  };
  const heldAnswers: { socket: Socket; bytes: Buffer }[] = [];
  const server: Server = createServer((socket) => {
    const connection = sockets.push(socket);
    let buffered = Buffer.alloc(0);
    socket.on("error", () => undefined);
    socket.on("close", () => {
      closed++;
      changed();
    });
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 16 && buffered.length >= buffered.readUInt32BE(0)) {
        const length = buffered.readUInt32BE(0);
        const bytes = buffered.subarray(0, length);
        buffered = buffered.subarray(length);
        const got: SeenPdu = {
          connection,
          commandId: bytes.readUInt32BE(4),
          status: bytes.readUInt32BE(8),
          sequence: bytes.readUInt32BE(12),
          body: Buffer.from(bytes.subarray(16)),
        };
        seen.push(got);
        answer(socket, connection, got);
        changed();
      }
    });
  });

  const answer = (socket: Socket, connection: number, got: SeenPdu) => {
    if (got.commandId === BIND_TRANSCEIVER) {
      socket.write(pdu(0x80000009, got.sequence, cstring("raw-smsc")));
      bound = connection;
    } else if (got.commandId === ENQUIRE_LINK) socket.write(pdu(0x80000015, got.sequence));
    else if (got.commandId === SUBMIT_SM) {
      messageIds++;
      const destination = destinationOf(got.body);
      const nth = submits.filter((s) => s.destination === destination).length;
      const messageId = self.messageIdFor?.(destination, nth) ?? `raw${messageIds}`;
      submits.push({ destination, messageId });
      const bytes = pdu(0x80000004, got.sequence, cstring(messageId));
      if (self.holdAnswers) heldAnswers.push({ socket, bytes });
      else socket.write(bytes);
    } else if (got.commandId === 0x00000006) {
      socket.write(pdu(0x80000006, got.sequence));
      socket.end();
    }
  };

  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;

  const until = (check: () => SeenPdu | boolean | undefined, timeoutMs: number, what: string) =>
    new Promise<SeenPdu | boolean>((resolve, reject) => {
      const done = () => {
        const result = check();
        if (!result) return;
        clearTimeout(timer);
        waiters.delete(done);
        resolve(result);
      };
      const timer = setTimeout(() => {
        waiters.delete(done);
        reject(new Error(`raw SMSC: ${what} not within ${timeoutMs} ms`));
      }, timeoutMs);
      waiters.add(done);
      done();
    });

  return {
    url: `smpp://test:secret@127.0.0.1:${port}`,
    get connections() {
      return sockets.length;
    },
    get closed() {
      return closed;
    },
    seen,
    submits,
    get messageIdFor() {
      return self.messageIdFor;
    },
    set messageIdFor(f) {
      self.messageIdFor = f;
    },
    get holdAnswers() {
      return self.holdAnswers;
    },
    set holdAnswers(hold) {
      self.holdAnswers = hold;
    },
    release: () => {
      self.holdAnswers = false;
      for (const { socket, bytes } of heldAnswers.splice(0)) socket.write(bytes);
    },
    write: (bytes) => sockets.at(-1)?.write(bytes),
    nextSequence: () => ++sequence,
    answerTo: async (seq, timeoutMs = 10_000) =>
      (await until(
        () => seen.find((p) => p.sequence === seq && (p.commandId & 0x80000000) !== 0),
        timeoutMs,
        `an answer to sequence ${seq}`,
      )) as SeenPdu,
    boundAfter: async (after, timeoutMs = 10_000) => {
      await until(() => bound > after, timeoutMs, `a bind after connection ${after}`);
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
