/**
 * A private MongoDB emulator that a test can stop and start again on the same port with its data:
 * the H2-backed mongo-java-server in a temporary directory. Stopping is orderly (the store is
 * flushed, every connection closed), like a database restarted by its operator.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type StartedDatabase, startEmulator } from "../../src/dev-database/embedded-mongo.ts";

export class StoppableDatabase {
  private running: StartedDatabase | undefined;

  private constructor(
    private readonly dataDir: string,
    private port: number,
  ) {}

  static async start(): Promise<StoppableDatabase> {
    const database = new StoppableDatabase(await mkdtemp(join(tmpdir(), "sms-restart-")), 0);
    await database.restart();
    return database;
  }

  get uri(): string {
    return `mongodb://127.0.0.1:${this.port}/?directConnection=true`;
  }

  async stop(): Promise<void> {
    await this.running?.stop();
    this.running = undefined;
  }

  /** Starts it (again), on the port it had, with the data it had. */
  async restart(): Promise<void> {
    this.running = await startEmulator({ dataDir: this.dataDir, port: this.port }, () => {});
    this.port = Number(/:(\d+)\//.exec(this.running.uri)?.[1]);
  }

  async destroy(): Promise<void> {
    await this.stop();
    await rm(this.dataDir, { recursive: true, force: true });
  }
}
