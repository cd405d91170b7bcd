/**
 * The second test SMSC (test/smsc-cloudhopper/: an SMPP server on cloudhopper-smpp, an
 * implementation written by others than jsmpp's test/smsc). Built with Maven on first use, started
 * as a child process per `startCloudhopperSmsc()`, driven over its HTTP control port. Every
 * submit_sm is accepted with a message_id in lowercase hex; its receipt (DELIVRD) carries the same
 * number in decimal. See test/smsc-cloudhopper/README.md.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startJavaTool } from "../../src/dev-database/java-tool.ts";
import { ensureMavenBuilt } from "../../src/dev-database/maven-build.ts";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const cloudhopperDir = join(repoRoot, "test", "smsc-cloudhopper");
const jar = join(cloudhopperDir, "target", "smsc-cloudhopper.jar");

/** One line of its log (GET /log), in the order it happened. */
export type CloudhopperEvent =
  | { command: "bind"; bind: number }
  | {
      command: "submit_sm";
      source: string;
      destination: string;
      esm_class: number;
      data_coding: number;
      /** SAR TLVs as [reference, total, sequence]. */
      sar: [number, number, number] | null;
      short_message_hex: string;
      /** As answered in submit_sm_resp: lowercase hex. */
      message_id: string;
    }
  | { command: "deliver_sm_resp"; kind: "receipt" | "mo"; id?: string; status: number }
  | { command: "enquire_link_resp"; status: number }
  | { command: "error"; kind: string; error: string }
  | { command: string };

export interface CloudhopperSmsc {
  /** smpp://test:secret@127.0.0.1:PORT */
  readonly url: string;
  log(): Promise<CloudhopperEvent[]>;
  binds(): Promise<number>;
  /** A mobile-originated deliver_sm (data_coding 3) on the first bind; its response's status. */
  mo(from: string, to: string, text: string, ton?: number): Promise<number>;
  /** The SMSC's own enquire_link on the first bind; its response's status. */
  enquireLink(): Promise<number>;
  stop(): Promise<void>;
}

export async function startCloudhopperSmsc(
  options: { receiptDelayMs?: number; log?: (line: string) => void } = {},
): Promise<CloudhopperSmsc> {
  const log = options.log ?? (() => {});
  await ensureMavenBuilt(
    {
      dir: cloudhopperDir,
      jar,
      args: ["-DskipTests"],
      describe: "smsc-cloudhopper: building",
    },
    log,
  );
  const tool = await startJavaTool({
    name: "smsc-cloudhopper",
    cwd: cloudhopperDir,
    args: [
      "-XX:+UseSerialGC",
      "-jar",
      jar,
      "--receipt-delay-ms",
      String(options.receiptDelayMs ?? 50),
    ],
    ready: /^smsc-cloudhopper listening smpp=(\d+) control=(\d+)/,
    readyTimeoutMs: 60_000,
    log,
  });
  const control = `http://127.0.0.1:${tool.ready[2]}`;
  const call = async <T>(method: "GET" | "POST", path: string): Promise<T> => {
    const response = await fetch(`${control}${path}`, { method });
    const text = await response.text();
    if (!response.ok) throw new Error(`cloudhopper SMSC ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as T;
  };
  return {
    url: `smpp://test:secret@127.0.0.1:${tool.ready[1]}`,
    log: () => call<CloudhopperEvent[]>("GET", "/log"),
    binds: async () => (await call<{ binds: number }>("GET", "/binds")).binds,
    mo: async (from, to, text, ton = 1) => {
      const query = new URLSearchParams({ from, to, text, ton: String(ton) });
      return (await call<{ status: number }>("POST", `/mo?${query}`)).status;
    },
    enquireLink: async () => (await call<{ status: number }>("POST", "/enquire-link")).status,
    stop: () => tool.stop(),
  };
}
