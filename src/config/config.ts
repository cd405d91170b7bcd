import {
  type CarrierPlan,
  type SmppSettings,
  singleCarrierPlan,
} from "../delivery/routing/carrier-plan.ts";
import { parseDuration, parseRetrySchedule } from "../notifier/retry-schedule.ts";
import { DEFAULT_SECRET_OVERLAP_MS } from "../notifier/signature.ts";
import { DEFAULT_ALPHABETS, type DefaultAlphabet } from "../smpp/alphabets.ts";
import { parseSmppUrl, type SmppEndpoint } from "../smpp/endpoint.ts";
import { CarriersFileError, loadCarriersFile } from "./carriers-file.ts";
// Configuration from environment variables, validated once at start. Every bad value is reported
// with its variable name and what was expected, all at once.

export interface Config {
  port: number;
  grpcPort: number;
  /** Prometheus `/metrics`, on a port of its own (never PORT or GRPC_PORT); 0: no metrics. */
  metricsPort: number;
  /** OPERATOR_PORT: the operator's console (src/console); 0 turns it off. */
  operatorPort: number;
  /** OPERATOR_HOST: where the console listens; loopback by default. */
  operatorHost: string;
  host: string;
  /** Unset: the embedded database chain (mongodb-memory-server, else the emulator). */
  mongodbUri: string | undefined;
  /** Where the embedded database keeps its data (without MONGODB_URI). */
  dataDir: string;
  mongodbDatabase: string;
  adminToken: string;
  logLevel: string;
  production: boolean;
  /** The sender literal every account may use, and the fallback `from`. */
  sharedSender: string;
  pricePerPartMicros: number;
  maxParts: number;
  bodyLimitBytes: number;
  simSendDelayMs: number;
  simReceiptDelayMs: number;
  /** Simulator: parts per second it accepts (the carrier's sold throughput); undefined: unlimited. */
  simTps: number | undefined;
  /** Delays between webhook attempts, in ms. */
  webhookRetryScheduleMs: number[];
  webhookTimeoutMs: number;
  webhookConcurrency: number;
  /** Webhook requests in flight per receiver (scheme, host, port and path) and instance. */
  webhookReceiverConcurrency: number;
  /** Webhook requests in flight per account and instance. */
  webhookAccountConcurrency: number;
  webhookAllowPrivate: boolean;
  /** SMS_WEBHOOK_SECRET_OVERLAP: how long a rotated-out webhook secret keeps signing (default 24h). */
  webhookSecretOverlapMs: number;
  /** Whether this instance runs the delivery worker and the notifier. */
  runWorkers: boolean;
  /** A call's deadline: past it, UNAVAILABLE (REST 503), and no database call of it is issued. */
  requestTimeoutMs: number;
  /** A batch's deadline from its charge on: storing 10000 messages takes longer than a call. */
  batchStoreTimeoutMs: number;
  /**
   * A charge still pending after this long is settled: confirmed if stored, else refunded. At
   * least twice the longer deadline, so no write of its request can still land.
   */
  settleAfterMs: number;
  /**
   * How long a SIGTERM/SIGINT waits for in-flight requests before exiting anyway; by default
   * the longer request deadline and 5 s, so every accepted request can run to its deadline.
   */
  shutdownGraceMs: number;
  /** Requests per second per account and instance (bursts to twice that); 0: no limit. */
  rateLimitRps: number;
  /** Failed authentications per minute per client address and instance; 0: no limit. */
  authFailuresPerMin: number;
  /** The carrier adapter: the simulator (default) or an SMSC over SMPP 3.4. */
  carrier: "simulator" | "smpp";
  /** With `carrier: "smpp"`. */
  smpp: SmppConfig | undefined;
  /** Every SMPP carrier's framing: PDUs longer than this close the bind (SMS_SMPP_MAX_PDU_BYTES). */
  smppMaxPduBytes: number;
  /** A PDU begun and not whole after this long closes the bind (SMS_SMPP_READ_TIMEOUT_S). */
  smppReadTimeoutS: number;
  /**
   * Carriers, routes and prices: from SMS_CARRIERS_FILE, else the one carrier above with
   * SMS_PRICE_PER_PART for every destination (delivery/routing/carrier-plan.ts).
   */
  carriers: CarrierPlan;
  /** `format`: the spec's rule for `to`; `strict`: also valid for its country (libphonenumber). */
  numberValidation: "format" | "strict";
  /** How long the parts of a long inbound message wait for the rest (SMS_MO_REASSEMBLY_S). */
  moReassemblyS: number;
  /** What an MO's data_coding 0 means: the carrier's default alphabet (SMS_MO_DEFAULT_ALPHABET). */
  moDefaultAlphabet: DefaultAlphabet;
  /**
   * The key that encrypts and signs the dashboard's session cookies (32 bytes, given as 64 hex
   * digits). Unset: a random key per start, so sessions end with the process and are not shared
   * between instances.
   */
  dashboardSessionKey: Buffer | undefined;
  /** How long a dashboard sign-in lasts, in minutes. */
  dashboardSessionMinutes: number;
  /** Time bounds and caps of the connections on PORT and GRPC_PORT (src/connections/). */
  connections: ConnectionLimits;
}

export interface ConnectionLimits {
  /** A request's head must have arrived within this (on GRPC_PORT: a new connection's first stream). */
  headersTimeoutMs: number;
  /** Longest pause within a request body. */
  bodyIdleTimeoutMs: number;
  /** The whole request, head and body, must have arrived within this. */
  requestTimeoutMs: number;
  /** A connection with no request in progress closes after this. */
  keepAliveTimeoutMs: number;
  /** Open connections per port; more are closed as they come. */
  maxConnections: number;
  /** Streams at once on one HTTP/2 connection (GRPC_PORT). */
  maxStreamsPerConnection: number;
}

/** `SMS_SMPP_*`: the settings of an SMPP carrier in the carriers file too. */
export type SmppConfig = SmppSettings;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

export const DEV_ADMIN_TOKEN = "dev-admin-token";

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const read = new EnvReader(env, problems);
  const production = env.NODE_ENV === "production";

  const adminToken = read.string("SMS_ADMIN_TOKEN", production ? undefined : DEV_ADMIN_TOKEN);
  if (production && adminToken !== undefined && adminToken.length < 16) {
    problems.push("SMS_ADMIN_TOKEN: must be at least 16 characters in production");
  }
  const sharedSender = read.string("SMS_SHARED_SENDER", "SMSINFO");
  if (sharedSender !== undefined && !/^[A-Za-z0-9]{1,11}$/.test(sharedSender)) {
    problems.push("SMS_SHARED_SENDER: must be 1 to 11 letters and digits");
  }
  const price = read.number("SMS_PRICE_PER_PART", 1, { min: 0, max: 1_000_000 });

  const config: Config = {
    port: read.integer("PORT", 8080, { min: 0, max: 65535 }),
    grpcPort: read.integer("GRPC_PORT", 8081, { min: 0, max: 65535 }),
    metricsPort: read.integer("METRICS_PORT", 9464, { min: 0, max: 65535 }),
    operatorPort: read.integer("OPERATOR_PORT", 8082, { min: 0, max: 65535 }),
    operatorHost: read.string("OPERATOR_HOST", "127.0.0.1") ?? "127.0.0.1",
    host: read.string("HOST", "0.0.0.0") ?? "",
    mongodbUri: env.MONGODB_URI || undefined,
    dataDir: read.string("SMS_DATA_DIR", ".data") ?? "",
    mongodbDatabase: read.string("MONGODB_DATABASE", "sms") ?? "",
    adminToken: adminToken ?? "",
    logLevel: read.oneOf(
      "LOG_LEVEL",
      ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
      "info",
    ),
    production,
    sharedSender: sharedSender ?? "",
    pricePerPartMicros: Math.round(price * 1_000_000),
    maxParts: read.integer("SMS_MAX_PARTS", 10, { min: 1, max: 255 }),
    // POST /sms-batch only. The largest valid batch, 10000 texts of 1530 Latin-1 characters that a
    // JSON encoder writes as \u00XX escapes (Python's default), is about 92 MB: it must fit.
    bodyLimitBytes: read.integer("SMS_BODY_LIMIT_BYTES", 96 * 1024 * 1024, {
      min: 1024,
      max: 1024 ** 3,
    }),
    simSendDelayMs: read.integer("SMS_SIM_SEND_DELAY_MS", 200, { min: 0, max: 3_600_000 }),
    simReceiptDelayMs: read.integer("SMS_SIM_RECEIPT_DELAY_MS", 1000, { min: 0, max: 86_400_000 }),
    simTps: read.optionalInteger("SMS_SIM_TPS", { min: 1, max: 1_000_000 }),
    webhookRetryScheduleMs: read.parsed("SMS_WEBHOOK_RETRY_SCHEDULE", parseRetrySchedule),
    webhookTimeoutMs: read.integer("SMS_WEBHOOK_TIMEOUT_MS", 5000, { min: 100, max: 60_000 }),
    webhookConcurrency: read.integer("SMS_WEBHOOK_CONCURRENCY", 64, { min: 1, max: 10_000 }),
    webhookReceiverConcurrency: read.integer("SMS_WEBHOOK_RECEIVER_CONCURRENCY", 16, {
      min: 1,
      max: 10_000,
    }),
    webhookAccountConcurrency: read.integer("SMS_WEBHOOK_ACCOUNT_CONCURRENCY", 32, {
      min: 1,
      max: 10_000,
    }),
    webhookAllowPrivate: read.boolean("SMS_WEBHOOK_ALLOW_PRIVATE", !production),
    webhookSecretOverlapMs: read.parsed("SMS_WEBHOOK_SECRET_OVERLAP", (text) =>
      text === undefined || text.trim() === "" ? DEFAULT_SECRET_OVERLAP_MS : parseDuration(text),
    ),
    runWorkers: read.boolean("SMS_RUN_WORKERS", true),
    requestTimeoutMs: read.integer("SMS_REQUEST_TIMEOUT_MS", 5_000, { min: 100, max: 60_000 }),
    batchStoreTimeoutMs: read.integer("SMS_BATCH_STORE_TIMEOUT_MS", 30_000, {
      min: 100,
      max: 600_000,
    }),
    settleAfterMs: read.integer("SMS_SETTLE_AFTER_MS", 120_000, { min: 1000, max: 86_400_000 }),
    shutdownGraceMs: 0, // below, from the deadlines unless given
    rateLimitRps: read.integer("SMS_RATE_LIMIT_RPS", 100, { min: 0, max: 1_000_000 }),
    authFailuresPerMin: read.integer("SMS_AUTH_FAILURES_PER_MIN", 30, { min: 0, max: 1_000_000 }),
    carrier: read.oneOf("SMS_CARRIER", ["simulator", "smpp"], "simulator"),
    smpp: undefined,
    // 64 KB of message_payload and the rest of a deliver_sm or data_sm pass.
    smppMaxPduBytes: read.integer("SMS_SMPP_MAX_PDU_BYTES", 70_000, {
      min: 1_024,
      max: 16_777_216,
    }),
    smppReadTimeoutS: read.integer("SMS_SMPP_READ_TIMEOUT_S", 30, { min: 1, max: 3600 }),
    carriers: undefined as unknown as CarrierPlan, // below, once SMS_SMPP_* are read
    numberValidation: read.oneOf("SMS_NUMBER_VALIDATION", ["format", "strict"], "format"),
    // Kannel's default (sms-combine-concatenated-mo-timeout).
    moReassemblyS: read.integer("SMS_MO_REASSEMBLY_S", 1800, { min: 1, max: 7 * 86_400 }),
    moDefaultAlphabet: read.oneOf("SMS_MO_DEFAULT_ALPHABET", DEFAULT_ALPHABETS, "gsm7"),
    dashboardSessionKey: readSessionKey(read.secret("SMS_DASHBOARD_SESSION_KEY"), problems),
    dashboardSessionMinutes: read.integer("SMS_DASHBOARD_SESSION_MINUTES", 60, {
      min: 1,
      max: 7 * 24 * 60,
    }),
    connections: readConnectionLimits(read, problems),
  };
  if (config.carrier === "smpp") config.smpp = readSmppConfig(read, problems);
  config.carriers = readCarrierPlan(env, config, problems);
  // The settler's rule (store/charge-settler.ts): no write of a request lands past its deadline, so a
  // cutoff of twice the longer deadline leaves the other half for clocks and the network.
  const longest = Math.max(config.requestTimeoutMs, config.batchStoreTimeoutMs);
  config.shutdownGraceMs =
    read.optionalInteger("SMS_SHUTDOWN_GRACE_MS", { min: 0, max: 3_600_000 }) ?? longest + 5_000;
  if (config.settleAfterMs < 2 * longest) {
    problems.push(
      `SMS_SETTLE_AFTER_MS: must be at least twice SMS_REQUEST_TIMEOUT_MS and SMS_BATCH_STORE_TIMEOUT_MS (${2 * longest})`,
    );
  }
  // Metrics are for the operator's scraper, never for the public (docs/design.md, "Operations").
  if (config.metricsPort !== 0 && [config.port, config.grpcPort].includes(config.metricsPort)) {
    problems.push("METRICS_PORT: must differ from PORT and GRPC_PORT (0 turns metrics off)");
  }
  checkOperatorConsole(config, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/**
 * The console takes the admin token: reachable beyond this machine only with a token that is
 * neither the development default nor short (docs/design.md "Accounts, API keys and the operator
 * console").
 */
function checkOperatorConsole(config: Config, problems: string[]): void {
  if (config.operatorPort === 0) return;
  if ([config.port, config.grpcPort, config.metricsPort].includes(config.operatorPort)) {
    problems.push(
      "OPERATOR_PORT: must differ from PORT, GRPC_PORT and METRICS_PORT (0 turns the console off)",
    );
  }
  const loopback = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/i.test(config.operatorHost);
  if (!loopback && (config.adminToken === DEV_ADMIN_TOKEN || config.adminToken.length < 16)) {
    problems.push(
      `OPERATOR_HOST: ${config.operatorHost} is not loopback, and SMS_ADMIN_TOKEN is the default or shorter than 16 characters: set a long SMS_ADMIN_TOKEN, OPERATOR_HOST=127.0.0.1, or OPERATOR_PORT=0`,
    );
  }
}

/** 64 hex digits; a bad value is reported without repeating it (it is a secret). */
function readSessionKey(value: string | undefined, problems: string[]): Buffer | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9a-fA-F]{64}$/.test(value)) {
    problems.push("SMS_DASHBOARD_SESSION_KEY: expected 64 hex digits (32 random bytes)");
    return undefined;
  }
  return Buffer.from(value, "hex");
}

function readConnectionLimits(read: EnvReader, problems: string[]): ConnectionLimits {
  const ms = { min: 100, max: 3_600_000 };
  const limits: ConnectionLimits = {
    headersTimeoutMs: read.integer("SMS_HEADERS_TIMEOUT_MS", 10_000, ms),
    bodyIdleTimeoutMs: read.integer("SMS_BODY_IDLE_TIMEOUT_MS", 10_000, ms),
    // 96 MiB (the largest batch body) at about 1 MB/s.
    requestTimeoutMs: read.integer("SMS_REQUEST_RECEIVE_TIMEOUT_MS", 120_000, ms),
    // Fastify's default: longer than the 60 s idle timeout of common load balancers, so the
    // balancer, not the service, closes a connection it still means to use.
    keepAliveTimeoutMs: read.integer("SMS_KEEP_ALIVE_TIMEOUT_MS", 72_000, ms),
    maxConnections: read.integer("SMS_MAX_CONNECTIONS", 10_000, { min: 1, max: 1_000_000 }),
    maxStreamsPerConnection: read.integer("SMS_GRPC_MAX_STREAMS", 100, { min: 1, max: 100_000 }),
  };
  // Node refuses a headers timeout longer than the request timeout.
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    problems.push("SMS_HEADERS_TIMEOUT_MS: must not exceed SMS_REQUEST_RECEIVE_TIMEOUT_MS");
  }
  return limits;
}

/** SMS_CARRIERS_FILE, whose problems are reported one per line; else the one-carrier shorthand. */
function readCarrierPlan(env: NodeJS.ProcessEnv, config: Config, problems: string[]): CarrierPlan {
  const shorthand = singleCarrierPlan({
    smpp: config.smpp,
    simTps: config.simTps,
    pricePerPartMicros: config.pricePerPartMicros,
  });
  const path = env.SMS_CARRIERS_FILE;
  if (!path) return shorthand;
  for (const name of ["SMS_CARRIER", "SMS_SMPP_URL"]) {
    if (env[name]) problems.push(`${name}: not used with SMS_CARRIERS_FILE (give carriers there)`);
  }
  try {
    const plan = loadCarriersFile(path, {
      pricePerPartMicros: config.pricePerPartMicros,
      simTps: config.simTps,
      env,
    });
    // A file of one carrier runs it through the one-carrier path (background.ts), never a
    // simulator the file does not name; several carriers each get their own worker.
    const first = plan.carriers.find((c) => c.name === plan.routes.at(-1)?.carriers[0]);
    if (first?.kind === "smpp") {
      config.carrier = "smpp";
      config.smpp = first.smpp;
    }
    return plan;
  } catch (error) {
    if (!(error instanceof CarriersFileError)) throw error;
    for (const problem of error.problems) problems.push(`SMS_CARRIERS_FILE ${path}: ${problem}`);
    return shorthand;
  }
}

function readSmppConfig(read: EnvReader, problems: string[]): SmppConfig | undefined {
  // Read as a secret: a bad value is reported without it.
  const url = read.secret("SMS_SMPP_URL");
  let endpoint: SmppEndpoint | undefined;
  if (url === undefined) problems.push("SMS_SMPP_URL: required with SMS_CARRIER=smpp");
  else {
    try {
      endpoint = parseSmppUrl(url);
    } catch (error) {
      problems.push(`SMS_SMPP_URL: ${(error as Error).message}`);
    }
  }
  const systemType = read.string("SMS_SMPP_SYSTEM_TYPE", "") ?? "";
  if (systemType.length > 12) problems.push("SMS_SMPP_SYSTEM_TYPE: at most 12 characters");
  const tps = read.integer("SMS_SMPP_TPS", 50, { min: 0, max: 1_000_000 });
  const config = {
    systemType,
    binds: read.integer("SMS_SMPP_BINDS", 1, { min: 1, max: 64 }),
    window: read.integer("SMS_SMPP_WINDOW", 10, { min: 1, max: 1000 }),
    tps: tps === 0 ? undefined : tps,
    enquireLinkS: read.integer("SMS_SMPP_ENQUIRE_LINK_S", 30, { min: 1, max: 3600 }),
    concatenation: read.oneOf("SMS_SMPP_CONCATENATION", ["sar", "udh"], "sar"),
    // The carriers file sets these per carrier; a lone SMS_SMPP_* carrier has the defaults.
    receiptIds: "auto" as const,
    multipartReceipts: "any" as const,
  };
  return endpoint ? { endpoint, ...config } : undefined;
}

class EnvReader {
  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly problems: string[],
  ) {}

  private raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value === "" ? undefined : value;
  }

  string(name: string, fallback: string | undefined): string | undefined {
    const value = this.raw(name) ?? fallback;
    if (value === undefined) this.problems.push(`${name}: required`);
    return value;
  }

  /** An optional value never repeated in a message. */
  secret(name: string): string | undefined {
    return this.raw(name);
  }

  integer(name: string, fallback: number, range: { min: number; max: number }): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const parsed = /^-?\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(parsed) || parsed < range.min || parsed > range.max) {
      this.problems.push(
        `${name}: expected an integer from ${range.min} to ${range.max}, got "${value}"`,
      );
      return fallback;
    }
    return parsed;
  }

  /** An integer in range, or undefined when the variable is unset. */
  optionalInteger(name: string, range: { min: number; max: number }): number | undefined {
    if (this.raw(name) === undefined) return undefined;
    return this.integer(name, range.min, range);
  }

  number(name: string, fallback: number, range: { min: number; max: number }): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const parsed = /^\d+(\.\d+)?$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isFinite(parsed) || parsed < range.min || parsed > range.max) {
      this.problems.push(
        `${name}: expected a number from ${range.min} to ${range.max}, got "${value}"`,
      );
      return fallback;
    }
    return parsed;
  }

  boolean(name: string, fallback: boolean): boolean {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (value === "true" || value === "1") return true;
    if (value === "false" || value === "0") return false;
    this.problems.push(`${name}: expected true or false, got "${value}"`);
    return fallback;
  }

  /** A value parsed by `parse`, whose error message says what is expected. */
  parsed<T>(name: string, parse: (value: string | undefined) => T): T {
    try {
      return parse(this.raw(name));
    } catch (error) {
      this.problems.push(`${name}: ${(error as Error).message}`);
      return parse(undefined);
    }
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if ((allowed as readonly string[]).includes(value)) return value as T;
    this.problems.push(`${name}: expected one of ${allowed.join(", ")}, got "${value}"`);
    return fallback;
  }
}
