/**
 * Ctrl-C on the embedded database (issue 25 item 2.12): a terminal sends SIGINT to its whole
 * foreground process group. The service on its default database (no MONGODB_URI: the embedded
 * chain) gets it while its notifier is sending webhooks to a slow receiver; it drains on a
 * database that is still there, stops the database itself, and exits 0, with no connection
 * refused on the way. Before, the database (a child in the same group) died at once and the
 * notifier logged ECONNREFUSED during the drain.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServiceProcess, startServiceProcess } from "../support/service-process.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

const DATABASE_ERRORS =
  /ECONNREFUSED|MongoNetworkError|MongoServerSelectionError|MongoTopologyClosedError|MongoNotConnectedError/;

let dataDir: string;
let receiver: WebhookReceiver;
let service: ServiceProcess;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "sms-ctrl-c-"));
  receiver = await startWebhookReceiver({ delayMs: 300 });
  service = await startServiceProcess(
    "source",
    "sms",
    {
      // The embedded chain, with its data in a directory of the test's own.
      MONGODB_URI: "",
      SMS_DATA_DIR: dataDir,
      SMS_SIM_SEND_DELAY_MS: "20",
      SMS_SIM_RECEIPT_DELAY_MS: "50",
      SMS_WEBHOOK_ALLOW_PRIVATE: "true",
    },
    180_000,
  );
}, 200_000);

afterAll(async () => {
  await service?.kill();
  await receiver?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("SIGINT to the process group of the service on its embedded database", () => {
  it("drains with the database up, then stops it, and exits 0", async () => {
    const databaseLine = /database: using the (emulator|mongodb-memory-server)/.exec(
      service.output(),
    );
    expect(databaseLine, service.output()).not.toBeNull();
    const emulatorPid = /using the emulator: .* pid (\d+)/.exec(service.output())?.[1];

    const account = await service.createAccount(100);
    const sent = await fetch(`${service.baseUrl}/sms-batch`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        ...account,
        statusCallback: `${receiver.baseUrl}/hooks`,
        messages: Array.from({ length: 20 }, (_, i) => ({
          to: `+49151${String(10_000_000 + i)}`,
          text: `message ${i}`,
        })),
      }),
    });
    expect(sent.status).toBe(200);
    // The notifier is at work: webhooks are being sent, each answered after 300 ms.
    await receiver.waitFor((requests) => requests.length >= 3, 60_000);

    const refused = service.logged(DATABASE_ERRORS, 120_000).catch(() => undefined);
    // What a terminal does on Ctrl-C: the signal to every process of the foreground group.
    process.kill(-service.pid, "SIGINT");
    const exit = await service.exited;
    expect(exit, service.output()).toEqual({ code: 0, signal: null });
    expect(await refused, service.output()).toBeUndefined();
    expect(service.output()).toMatch(/"msg":"shut down"/);
    // The service stopped the database it started: no process of it is left.
    if (emulatorPid) expect(alive(Number(emulatorPid)), `pid ${emulatorPid}`).toBe(false);
  }, 180_000);
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
