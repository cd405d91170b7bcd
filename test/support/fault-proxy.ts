/**
 * A TCP proxy between the driver and a real MongoDB that injects network faults: it reads the wire
 * protocol's length-prefixed messages, decodes each command (OP_MSG), and can cut a connection
 * before a command reaches the server or after the server answered it (an unknown outcome for the
 * client), hold commands (slow storage), refuse connections (database down) or swallow everything
 * (a database that accepts connections and never answers). It also records the commands, so tests
 * can read what the driver really sent (write concerns, read preferences).
 */
import { once } from "node:events";
import net from "node:net";
import { BSON, type Document } from "mongodb";

export interface Command {
  name: string;
  /** The command's collection (its first field's value) when it is a string. */
  collection: string | undefined;
  body: Document;
}

/** What to do with one command: `pass`, hold it `delayMs` first, or cut the connection. */
export type Verdict =
  | "pass"
  | "cut-before" // the server never sees it
  | "cut-after" // the server runs it; the client never gets the answer
  | "swallow" // forwarded nowhere, answered never: the connection hangs
  | { delayMs: number };

export type Rule = (command: Command) => Verdict | undefined;

const OP_MSG = 2013;

export class FaultProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private rules: Rule[] = [];
  private mode: "up" | "refuse" | "blackhole" = "up";
  readonly commands: Command[] = [];
  port = 0;

  constructor(
    private readonly target: { host: string; port: number },
    private readonly record = false,
  ) {}

  /** A proxy in front of the server of `uri` (host:port of a single server). */
  static async start(uri: string, options: { record?: boolean } = {}): Promise<FaultProxy> {
    const [host = "127.0.0.1", port = "27017"] = new URL(uri).host.split(":");
    const proxy = new FaultProxy({ host, port: Number(port) }, options.record);
    await proxy.listen();
    return proxy;
  }

  /** The URI clients use to reach the server through the proxy. */
  get uri(): string {
    return `mongodb://127.0.0.1:${this.port}/?directConnection=true`;
  }

  /** Applies `rule` to every command until the returned function removes it. */
  addRule(rule: Rule): () => void {
    this.rules.push(rule);
    return () => {
      this.rules = this.rules.filter((r) => r !== rule);
    };
  }

  /** The next command matching `match` gets `verdict`; resolves when it happened. */
  once(match: (command: Command) => boolean, verdict: Exclude<Verdict, "pass">): Promise<Command> {
    return new Promise((resolve) => {
      const remove = this.addRule((command) => {
        if (!match(command)) return undefined;
        remove();
        resolve(command);
        return verdict;
      });
    });
  }

  /** The database as unreachable: every connection is closed and new ones are refused. */
  refuse(): void {
    this.mode = "refuse";
    this.dropAll();
  }

  /** The database as hung: connections are accepted and nothing is ever answered. */
  blackhole(): void {
    this.mode = "blackhole";
    this.dropAll();
  }

  /** Back to normal. */
  restore(): void {
    this.mode = "up";
  }

  async close(): Promise<void> {
    this.dropAll();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private dropAll(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  private async listen(): Promise<void> {
    this.server = net.createServer((client) => this.accept(client));
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  private accept(client: net.Socket): void {
    client.on("error", () => undefined);
    if (this.mode === "refuse") {
      client.destroy();
      return;
    }
    this.sockets.add(client);
    client.once("close", () => this.sockets.delete(client));
    if (this.mode === "blackhole") return; // read nothing, answer nothing

    const upstream = net.connect(this.target.port, this.target.host);
    upstream.setNoDelay(true);
    client.setNoDelay(true);
    this.sockets.add(upstream);
    upstream.on("error", () => client.destroy());
    upstream.once("close", () => {
      this.sockets.delete(upstream);
      client.destroy();
    });
    client.once("close", () => upstream.destroy());

    // Replies owed to commands marked "cut-after": the connection is cut when the next reply comes.
    let cutOnReply = 0;
    // Client to server, one message at a time and in order (a held message holds those behind it).
    let chain = Promise.resolve();
    frames(client, (frame) => {
      chain = chain.then(async () => {
        const command = decode(frame);
        const verdict = command ? this.verdict(command) : "pass";
        if (verdict === "cut-before") return void client.destroy();
        if (verdict === "swallow") return;
        if (typeof verdict === "object") await sleep(verdict.delayMs);
        if (client.destroyed) return; // the client gave up meanwhile: the message is never sent
        if (verdict === "cut-after") cutOnReply++;
        upstream.write(frame);
      });
    });
    frames(upstream, (frame) => {
      if (cutOnReply > 0) {
        cutOnReply--;
        client.destroy();
        return;
      }
      client.write(frame);
    });
  }

  private verdict(command: Command): Verdict {
    if (this.record) this.commands.push(command);
    for (const rule of this.rules) {
      const verdict = rule(command);
      if (verdict !== undefined) return verdict;
    }
    return "pass";
  }
}

/** Calls `onFrame` with each whole wire-protocol message read from `socket`. */
function frames(socket: net.Socket, onFrame: (frame: Buffer) => void): void {
  let buffered: Buffer = Buffer.alloc(0);
  socket.on("data", (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    while (buffered.length >= 4) {
      const length = buffered.readInt32LE(0);
      if (buffered.length < length) break;
      onFrame(buffered.subarray(0, length));
      buffered = buffered.subarray(length);
    }
  });
}

/** The command of an OP_MSG (its body section), or undefined for anything else. */
function decode(frame: Buffer): Command | undefined {
  if (frame.length < 21 || frame.readInt32LE(12) !== OP_MSG) return undefined;
  // header (16) + flagBits (4), then sections; kind 0 is the body document.
  let offset = 20;
  while (offset < frame.length) {
    const kind = frame[offset];
    offset++;
    const size = frame.readInt32LE(offset);
    if (kind === 0) {
      const body = BSON.deserialize(frame.subarray(offset, offset + size));
      const name = Object.keys(body)[0] ?? "";
      const value = body[name];
      return { name, collection: typeof value === "string" ? value : undefined, body };
    }
    offset += size;
  }
  return undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Matches a command by name and collection, e.g. `is("insert", "messages")`. */
export const is =
  (name: string, collection?: string) =>
  (command: Command): boolean =>
    command.name === name && (collection === undefined || command.collection === collection);
