/**
 * The test SMSC (test/smsc/: an SMPP 3.4 server on the Java library jsmpp, so the adapter is
 * tested against an implementation other than its own npm library). Built with Maven on first use
 * (`test/smsc/target/test-smsc.jar`, as the MongoDB emulator is), started as a child process per
 * `startSmsc()`, driven over its HTTP/JSON control port.
 *
 *   const smsc = await startSmsc();          // port 0: any free port; several may run at once
 *   // SMS_SMPP_URL=smsc.url  (smpp://test:secret@127.0.0.1:<port>)
 *   await smsc.configure({ answerDelayMs: 50, maxTps: 100 });
 *   const submits = await smsc.pdus({ command: "submit_sm" });
 *   await smsc.kill(); await smsc.restart(); // SIGKILL, then the same ports again
 *   await smsc.stop();
 *
 * Answers by destination (digits, `+` ignored) as the simulator's table does: numbers starting 999
 * and ending in 1 get submit_sm_resp ESME_RSUBMITFAIL; 2 UNDELIV err:027; 3 EXPIRED; 4 UNDELIV
 * err:032; 5 UNDELIV err:001; 6 UNDELIV err:000; 7 no receipt; 8 ESME_RTHROTTLED for the first
 * submit_sm to that number, then DELIVRD; 9 ESME_RMSGQFUL first, then DELIVRD; anything else
 * DELIVRD. See test/smsc/README.md.
 */
import type { ChildProcess } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startJavaTool } from "../../src/dev-database/java-tool.ts";
import { ensureMavenBuilt } from "../../src/dev-database/maven-build.ts";
import type { Pdu } from "./smsc-pdus.ts";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const smscDir = join(repoRoot, "test", "smsc");
export const smscJar = join(smscDir, "target", "test-smsc.jar");

const READY_TIMEOUT_MS = 30_000;

/** The run-time settings (POST /config); each start begins from the defaults below and `config`. */
export interface SmscConfig {
  /** Between a submit_sm_resp and the first sending of its receipt. Default 100. */
  receiptDelayMs: number;
  /** Before each submit_sm_resp, errors included. Default 0. */
  answerDelayMs: number;
  /** A receipt without a deliver_sm_resp of status 0 is sent again after this long. Default 3000. */
  resendUnackedMs: number;
  /** The SMSC's own enquire_link on every bind, this often whatever the traffic; 0 = never. Default 10000. */
  enquireLinkMs: number;
  /** submit_sm admitted per bind in any second before ESME_RTHROTTLED; 0 = unlimited. Default 0. */
  maxTps: number;
  /** Accepted submissions get no receipt while on. Default false. */
  dropReceipts: boolean;
  /** Receipts carry receipted_message_id (0x001E) and message_state (0x0427); off: only the text. Default true. */
  receiptTlvs: boolean;
  /** 0 = off; else every submit_sm admitted (within maxTps) is refused with this command_status, e.g. 8 (ESME_RSYSERR). Default 0. */
  refuseStatus: number;
  /** 0 = off; else the submit_sm after this many (since it was set, or a reset) get no answer until it is set again. Default 0. */
  hangAfterSubmits: number;
}

export interface SmscBind {
  bind: number;
  system_id: string;
  type: "transceiver" | "transmitter" | "receiver";
  state: "BOUND_TRX" | "BOUND_TX" | "BOUND_RX";
  remote_port: number;
  bound_at: number;
}

/** A receipt not yet acknowledged with a deliver_sm_resp of status 0. */
export interface PendingReceipt {
  message_id: string;
  destination_addr: string;
  stat: string;
  err: string;
  /** false until its submit_sm_resp went out. */
  released: boolean;
  attempts: number;
  last_bind: number | null;
  last_status: number | null;
}

export interface MoPartResult {
  /** 1-based place of the part in its message. */
  part: number;
  /** Tracks the part in GET /mo (with resend). */
  id: number;
  bind: number | null;
  sequence: number | null;
  /** The response's command_status, or null when none came within waitMs. */
  status: number | null;
}

export interface MoResult {
  bind: number;
  sequence: number;
  /** The first part's response status (deliver_sm_resp or data_sm_resp), or null when none came within waitMs. */
  status: number | null;
  /** Every part sent, in the order sent. */
  parts: MoPartResult[];
}

/** How POST /mo sends (test/smsc/README.md). */
export interface MoOptions {
  /** deliver_sm (default) or data_sm (the message in message_payload). */
  command?: "deliver_sm" | "data_sm";
  /** Any data_coding with `hex`; 0, 1, 3 or 8 with a text. Default 3 when Latin-1 fits, else 8. */
  dataCoding?: number;
  /** The message's bytes instead of the text (the text argument is then ignored). */
  hex?: string;
  /** Cut the bytes at these offsets into parts, concatenated by a UDH (8- or 16-bit reference) or SAR TLVs. */
  cuts?: number[];
  concat?: "udh8" | "udh16" | "sar";
  ref?: number;
  /** The 1-based parts in the order to send them, repeats allowed. Default 1..n. */
  order?: number[];
  /** dest_addr_ton; default 1 for a numeric address, else 5. */
  destTon?: number;
  /** Bits or'ed into esm_class (the UDHI bit is set for a UDH). */
  esmClass?: number;
  /** Sends each part again every resendUnackedMs until answered with 0 or ESME_RX_R_APPN. */
  resend?: boolean;
  waitMs?: number;
  systemId?: string;
}

/** POST /mo/bulk: many MO from distinct handsets to one number (test/smsc/README.md). */
export interface BulkMoOptions {
  to: string;
  count: number;
  /** Every n-th MO in three parts (UDH, 8-bit reference); 0: none. Default 4. */
  longEvery?: number;
  /** Unanswered deliver_sm per bind at most. Default 50. */
  window?: number;
  /** MO started per second; 0 (default): as fast as the windows allow. */
  perSecond?: number;
  /** The first handset's number (digits); the others follow. */
  fromBase?: number;
  timeoutMs?: number;
}

export interface BulkMoResult {
  mo: number;
  parts: number;
  /** Every part answered within timeoutMs. */
  complete: boolean;
  /** MO whose every part was answered. */
  answeredMo: number;
  /** Answers by command_status. */
  statuses: Record<string, number>;
  /** First deliver_sm to last answer. */
  seconds: number;
  moPerSecond: number;
  /** deliver_sm to its response, per part and per MO (first part sent to last part answered). */
  partMs: { p50: number | null; p99: number | null };
  moMs: { p50: number | null; p99: number | null };
}

/** A part sent with `resend`: its answers so far. */
export interface TrackedMoPart {
  id: number;
  seq: number;
  attempts: number;
  statuses: number[];
  done: boolean;
}

export interface StartSmscOptions {
  /** SMPP port; 0 (default) picks a free one. */
  port?: number;
  /** Control (HTTP) port; 0 (default) picks a free one. */
  controlPort?: number;
  /** The one account that may bind. Defaults "test" / "secret". */
  systemId?: string;
  password?: string;
  /** Settings from the start (and again after each restart()). */
  config?: Partial<SmscConfig>;
  /** Receives the SMSC's stderr lines and build messages; default: dropped. */
  log?: (line: string) => void;
  /**
   * Also appends every PDU to this file as one JSON line (a `Pdu`, `index` counted since start,
   * not cleared by reset()), each written as it is logged: what it received survives kill().
   */
  pduFile?: string;
}

export interface TestSmsc {
  /** smpp://SYSTEM_ID:PASSWORD@127.0.0.1:PORT, for SMS_SMPP_URL. */
  readonly url: string;
  readonly port: number;
  readonly controlUrl: string;
  readonly systemId: string;
  readonly password: string;
  /** The current process's pid (changes on restart()). */
  readonly pid: number | undefined;
  configure(config: Partial<SmscConfig>): Promise<SmscConfig>;
  config(): Promise<SmscConfig>;
  /** The PDU log; `since` skips the first entries, `command` keeps only those commands. */
  pdus(filter?: { since?: number; command?: string | string[] }): Promise<Pdu[]>;
  /** Clears the PDU log, the first-refusal state of 8/9 numbers, pending receipts and the TPS windows. */
  reset(): Promise<void>;
  /** Sends a mobile-originated message (its parts, in order) on a receiving bind; waits for each response. */
  mo(from: string, to: string, text: string, options?: MoOptions): Promise<MoResult>;
  /** The parts sent with `resend` and their answers. */
  moParts(): Promise<TrackedMoPart[]>;
  /** Sends many MO at once and answers when every part was answered (or timeoutMs ran out). */
  moBulk(options: BulkMoOptions): Promise<BulkMoResult>;
  binds(): Promise<SmscBind[]>;
  receipts(): Promise<PendingReceipt[]>;
  /** The SMSC unbinds (unbind PDU, then closes) one bind or all; returns the binds concerned. */
  unbind(bind?: number): Promise<number[]>;
  /** The SMSC closes the TCP connection of one bind or all, without unbind. */
  drop(bind?: number): Promise<number[]>;
  /** Graceful stop (stdin closed, then SIGTERM, then SIGKILL). */
  stop(): Promise<void>;
  /** SIGKILL, as a crash. */
  kill(): Promise<void>;
  /** Starts again on the same ports (stopping first if running); run-time config and state are lost. */
  restart(): Promise<void>;
}

export async function startSmsc(options: StartSmscOptions = {}): Promise<TestSmsc> {
  const log = options.log ?? (() => {});
  await ensureSmscBuilt(log);
  const systemId = options.systemId ?? "test";
  const password = options.password ?? "secret";

  let proc = await spawnSmsc(options.port ?? 0, options.controlPort ?? 0, options, log);
  const port = proc.port;
  const controlPort = proc.controlPort;
  const controlUrl = `http://127.0.0.1:${controlPort}`;

  const call = async <T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${controlUrl}${path}`, {
      method,
      headers: body === undefined ? undefined : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`test SMSC ${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as T;
  };

  return {
    url: `smpp://${encodeURIComponent(systemId)}:${encodeURIComponent(password)}@127.0.0.1:${port}`,
    port,
    controlUrl,
    systemId,
    password,
    get pid() {
      return proc.child.pid;
    },
    configure: (config) => call<SmscConfig>("POST", "/config", config),
    config: () => call<SmscConfig>("GET", "/config"),
    pdus: (filter = {}) => {
      const query = new URLSearchParams();
      if (filter.since !== undefined) query.set("since", String(filter.since));
      if (filter.command !== undefined) {
        query.set("command", ([] as string[]).concat(filter.command).join(","));
      }
      const qs = query.toString();
      return call<Pdu[]>("GET", `/pdus${qs ? `?${qs}` : ""}`);
    },
    reset: async () => {
      await call("POST", "/reset");
    },
    mo: (from, to, text, moOptions = {}) =>
      call<MoResult>("POST", "/mo", {
        from,
        to,
        ...(moOptions.hex === undefined && { text }),
        ...moOptions,
      }),
    moParts: () => call<TrackedMoPart[]>("GET", "/mo"),
    moBulk: (options) => call<BulkMoResult>("POST", "/mo/bulk", options),
    binds: () => call<SmscBind[]>("GET", "/binds"),
    receipts: () => call<PendingReceipt[]>("GET", "/receipts"),
    unbind: async (bind) =>
      (await call<{ binds: number[] }>("POST", "/unbind", bind === undefined ? {} : { bind }))
        .binds,
    drop: async (bind) =>
      (await call<{ binds: number[] }>("POST", "/drop", bind === undefined ? {} : { bind })).binds,
    stop: () => proc.stop(),
    kill: () => proc.kill(),
    restart: async () => {
      await proc.stop();
      proc = await spawnSmsc(port, controlPort, options, log);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The process

interface SmscProcess {
  child: ChildProcess;
  port: number;
  controlPort: number;
  stop(): Promise<void>;
  kill(): Promise<void>;
}

const settingFlags: Record<keyof SmscConfig, string> = {
  receiptDelayMs: "--receipt-delay-ms",
  answerDelayMs: "--answer-delay-ms",
  resendUnackedMs: "--resend-unacked-ms",
  enquireLinkMs: "--enquire-link-ms",
  maxTps: "--max-tps",
  dropReceipts: "--drop-receipts",
  receiptTlvs: "--no-receipt-tlvs",
  refuseStatus: "--refuse-status",
  hangAfterSubmits: "--hang-after-submits",
};

async function spawnSmsc(
  port: number,
  controlPort: number,
  options: StartSmscOptions,
  log: (line: string) => void,
): Promise<SmscProcess> {
  const args = [
    "-XX:+UseSerialGC",
    "-Xss512k",
    "-jar",
    smscJar,
    "--port",
    String(port),
    "--control-port",
    String(controlPort),
    "--system-id",
    options.systemId ?? "test",
    "--password",
    options.password ?? "secret",
  ];
  if (options.pduFile) args.push("--pdu-file", options.pduFile);
  for (const [key, value] of Object.entries(options.config ?? {})) {
    const flag = settingFlags[key as keyof SmscConfig];
    if (!flag) throw new Error(`unknown test SMSC setting ${key}`);
    if (key === "dropReceipts") {
      if (value) args.push(flag);
    } else if (key === "receiptTlvs") {
      if (!value) args.push(flag);
    } else {
      args.push(flag, String(value));
    }
  }

  const tool = await startJavaTool({
    name: "test-smsc",
    cwd: smscDir,
    args,
    ready: /^test-smsc listening smpp=(\d+) control=(\d+)/,
    readyTimeoutMs: READY_TIMEOUT_MS,
    log,
  });
  return {
    child: tool.child,
    port: Number(tool.ready[1]),
    controlPort: Number(tool.ready[2]),
    stop: tool.stop,
    kill: tool.kill,
  };
}

// ---------------------------------------------------------------------------------------------
// Building the jar

/** Builds target/test-smsc.jar (+ target/lib) with Maven when missing or older than its sources. */
export function ensureSmscBuilt(log: (line: string) => void = () => {}): Promise<void> {
  return ensureMavenBuilt(
    { dir: smscDir, jar: smscJar, args: ["-DskipTests"], describe: "test-smsc: building" },
    log,
  );
}
