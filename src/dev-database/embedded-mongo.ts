import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startJavaTool } from "./java-tool.ts";
import { ensureMavenBuilt } from "./maven-build.ts";

export type DatabaseKind = "uri" | "memory-server" | "emulator";

export interface StartDatabaseOptions {
  /** Keep data here between runs (a real mongod's dbPath, or the emulator's H2 file). Unset: in memory. */
  dataDir?: string;
  logger?: (msg: string) => void;
  /** Port for the started server; 0 (default) picks a free one. */
  port?: number;
  /** The emulator JVM's largest heap (`-Xmx`, e.g. "12g"); unset: the JVM's default, a quarter of memory. */
  emulatorMaxHeap?: string;
}

export interface StartedDatabase {
  uri: string;
  kind: DatabaseKind;
  /** One line saying what was started (version, persistence). */
  description: string;
  stop(): Promise<void>;
}

// The nearest directory with a package.json: src/store/ when run from source, dist/src/store/
// when built (npm start), so no fixed number of "..".
const repoRoot = projectRoot(dirname(fileURLToPath(import.meta.url)));
export const emulatorDir = join(repoRoot, "test", "mongo-emulator");
const emulatorJar = join(emulatorDir, "target", "mongo-emulator.jar");

const PROBE_TIMEOUT_MS = 3_000;
const DOWNLOAD_TIMEOUT_MS = Number(process.env.EMBEDDED_MONGO_DOWNLOAD_TIMEOUT_MS ?? 300_000);
const EMULATOR_READY_TIMEOUT_MS = 60_000;
/** A kept H2 store rebuilds its indexes when opened: about 25 s per 200000 messages measured. */
const STORE_OPEN_TIMEOUT_MS = 15 * 60_000;

export async function startDatabase(opts: StartDatabaseOptions = {}): Promise<StartedDatabase> {
  const log = opts.logger ?? ((msg: string) => console.error(msg));

  const configured = process.env.MONGODB_URI;
  if (configured) {
    log("database: using MONGODB_URI");
    return { uri: configured, kind: "uri", description: "MONGODB_URI", stop: async () => {} };
  }

  const forced = process.env.EMBEDDED_MONGO?.trim();
  if (forced && forced !== "memory-server" && forced !== "emulator" && forced !== "auto") {
    throw new Error(`EMBEDDED_MONGO must be memory-server, emulator or auto (got "${forced}")`);
  }

  if (forced !== "emulator") {
    const started = Date.now();
    try {
      const db = await startMemoryServer(opts, log);
      if (db) {
        log(
          `database: using mongodb-memory-server: ${db.description} at ${db.uri} (${Date.now() - started} ms)`,
        );
        return db;
      }
    } catch (err) {
      if (forced === "memory-server") throw err;
      log(
        `database: mongodb-memory-server failed, falling back to the emulator: ${errorText(err)}`,
      );
    }
    if (forced === "memory-server") {
      throw new Error(
        "EMBEDDED_MONGO=memory-server but no mongod binary is cached or downloadable",
      );
    }
  }

  const started = Date.now();
  const db = await startEmulator(opts, log);
  log(`database: using the emulator: ${db.description} at ${db.uri} (${Date.now() - started} ms)`);
  return db;
}

// ---------------------------------------------------------------------------------------------
// 2. mongodb-memory-server

async function startMemoryServer(
  opts: StartDatabaseOptions,
  log: (msg: string) => void,
): Promise<StartedDatabase | undefined> {
  const mms = await import("mongodb-memory-server");
  const { DryMongoBinary, MongoBinary, MongoMemoryReplSet } = mms;

  const binaryOptions = await DryMongoBinary.generateOptions();
  let binary = await DryMongoBinary.locateBinary(binaryOptions);
  if (!binary) {
    if (/^(0|false|no|off)$/i.test(process.env.MONGOMS_RUNTIME_DOWNLOAD ?? "")) {
      log(
        "database: no cached mongod and MONGOMS_RUNTIME_DOWNLOAD is off; skipping mongodb-memory-server",
      );
      return undefined;
    }
    const probeUrl =
      process.env.MONGOMS_DOWNLOAD_URL ??
      process.env.MONGOMS_DOWNLOAD_MIRROR ??
      "https://fastdl.mongodb.org";
    const usesProxy = ["https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"].some(
      (k) => process.env[k],
    );
    if (!usesProxy) {
      // fetch() ignores proxies, so probe only without one; with a proxy the download's own timeout applies.
      try {
        await fetch(probeUrl, { method: "HEAD", signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      } catch (err) {
        log(
          `database: no cached mongod ${binaryOptions.version} and ${new URL(probeUrl).host} is unreachable (${errorText(err)}); skipping mongodb-memory-server`,
        );
        return undefined;
      }
    }
    log(
      `database: downloading mongod ${binaryOptions.version} for mongodb-memory-server (first run only)`,
    );
    binary = await withTimeout(MongoBinary.getPath(), DOWNLOAD_TIMEOUT_MS, "mongod download");
  }

  let dbPath: string | undefined;
  let port = opts.port || undefined;
  const portFile = opts.dataDir ? resolve(opts.dataDir, "mongod.port") : undefined;
  if (opts.dataDir && portFile) {
    dbPath = resolve(opts.dataDir, "mongod");
    await mkdir(dbPath, { recursive: true });
    // The replica set's config, stored in dbPath, names host:port: a kept dbPath needs the same port.
    port ??= Number(await readFile(portFile, "utf8").catch(() => "")) || undefined;
  }
  const replSet = await MongoMemoryReplSet.create({
    binary: { systemBinary: binary, version: binaryOptions.version },
    // Its own process group, as the emulator's (java-tool.ts): Ctrl-C reaches the service only,
    // which stops mongod after its drain; mongodb-memory-server's killer process still ends it
    // if the service dies.
    replSet: { count: 1, storageEngine: "wiredTiger", spawn: { detached: true } },
    instanceOpts: [{ port, dbPath }],
  });
  await replSet.waitUntilRunning();
  const usedPort = /:(\d+)\//.exec(replSet.getUri())?.[1];
  if (portFile && usedPort) await writeFile(portFile, usedPort);
  return {
    uri: replSet.getUri(),
    kind: "memory-server",
    description: `mongod ${binaryOptions.version}, single-node replica set, ${dbPath ? `data in ${dbPath}` : "in-memory (temporary dbPath)"}`,
    stop: async () => {
      await replSet.stop({ doCleanup: !dbPath, force: false });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// 3. the mongo-java-server emulator

export async function startEmulator(
  opts: StartDatabaseOptions,
  log: (msg: string) => void,
): Promise<StartedDatabase> {
  await ensureEmulatorBuilt(log);

  const args = [
    // Fast start, small footprint: this is a test/dev database.
    "-XX:+UseSerialGC",
    "-Xss512k",
    ...(opts.emulatorMaxHeap ? [`-Xmx${opts.emulatorMaxHeap}`] : []),
    "-jar",
    emulatorJar,
    "--port",
    String(opts.port ?? 0),
  ];
  let dataDir: string | undefined;
  if (opts.dataDir) {
    dataDir = resolve(opts.dataDir, "emulator");
    args.push("--data-dir", dataDir);
  }

  const tool = await startJavaTool({
    name: "emulator",
    cwd: emulatorDir,
    args,
    ready: /^MONGO_EMULATOR_READY port=(\d+)/,
    readyTimeoutMs: dataDir ? STORE_OPEN_TIMEOUT_MS : EMULATOR_READY_TIMEOUT_MS,
    log,
  });
  const port = Number(tool.ready[1]);
  const { child, stop } = tool;

  return {
    uri: `mongodb://127.0.0.1:${port}/?directConnection=true`,
    kind: "emulator",
    description: `mongo-java-server 1.47.0 (reports MongoDB 7.0, wire 21; change streams; no transactions), ${dataDir ? `H2 store in ${dataDir}` : "in-memory"}, pid ${child.pid}`,
    stop,
  };
}

/** Builds target/mongo-emulator.jar (+ target/lib) with Maven when missing or older than its sources. */
function ensureEmulatorBuilt(log: (msg: string) => void): Promise<void> {
  return ensureMavenBuilt(
    { dir: emulatorDir, jar: emulatorJar, describe: "database: building the MongoDB emulator" },
    log,
  );
}

// ---------------------------------------------------------------------------------------------

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  }
  return String(err);
}

function projectRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
    if (dirname(dir) === dir) return resolve(from, "../..");
  }
}
