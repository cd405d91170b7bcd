import { once } from "node:events";
import { connect, type Socket } from "node:net";

/** A TCP connection that sends only what the test writes, and keeps what comes back. */
export interface RawConnection {
  socket: Socket;
  write(data: string | Buffer): void;
  /** Everything received so far. */
  received(): Buffer;
  /** Resolves when the server has closed (or reset) the connection. */
  closed: Promise<void>;
  /** Whether the connection is still open. */
  open(): boolean;
}

export async function rawConnection(url: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const chunks: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  // A reset counts as closed, too: `once(socket, "close")` would reject on the reset's error
  // (a server that answers and closes while the test still writes resets the connection).
  socket.on("error", () => undefined);
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  await once(socket, "connect");
  return {
    socket,
    write: (data) => socket.write(data),
    received: () => Buffer.concat(chunks),
    closed,
    open: () => !socket.destroyed && socket.readyState === "open",
  };
}
