// Preloaded into a service by `bench/send-cost-probe.ts` with PROBE_COUNTS=1 (`--import`): counts
// the driver's commands by name and collection (its `Connection.sendCommand`, which every command
// goes through, monitored or not) and socket writes, to clients and to the database. On SIGUSR2 it
// writes them as JSON to `/tmp/command-counts-<pid>.json`: the probe reads them before and after a
// slice. Counts are noise-free where CPU times are not.

import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Socket } from "node:net";

type Send = (
  this: unknown,
  ns: unknown,
  command: Record<string, unknown>,
  ...rest: unknown[]
) => unknown;
type WriteGeneric = (
  this: Socket & { server?: unknown },
  writev: boolean,
  ...rest: unknown[]
) => unknown;

const counts: Record<string, number> = {};
const bump = (key: string) => {
  counts[key] = (counts[key] ?? 0) + 1;
};

// The driver's internals are not among its exports: reached by path, from the service's own copy.
const require = createRequire(`${process.cwd()}/`);
const { Connection } = require(
  require.resolve("mongodb/lib/cmap/connection.js", { paths: [process.cwd()] }),
) as { Connection: { prototype: { sendCommand: Send } } };
const send = Connection.prototype.sendCommand;
Connection.prototype.sendCommand = function (ns, command, ...rest) {
  const name = Object.keys(command)[0] ?? "";
  const target = command[name];
  bump(`command ${name}${typeof target === "string" ? ` ${target}` : ""}`);
  return send.call(this, ns, command, ...rest);
};

// Sockets a server accepted are the clients'; the others are the driver's (and webhooks').
const proto = Socket.prototype as unknown as { _writeGeneric: WriteGeneric };
const write = proto._writeGeneric;
proto._writeGeneric = function (writev, ...rest) {
  bump(`socket write ${this.server ? "to client" : "to database"}${writev ? " (writev)" : ""}`);
  return write.call(this, writev, ...rest);
};

process.on("SIGUSR2", () => {
  writeFileSync(`/tmp/command-counts-${process.pid}.json`, JSON.stringify(counts));
});
