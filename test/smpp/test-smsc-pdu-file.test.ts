/**
 * The test SMSC's PDU file (`pduFile`, --pdu-file): every PDU it logged is also in the file, so
 * what it received can be counted after a SIGKILL took its in-memory log (benchmark figure 16).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { partsOf, smppCarrier, waitFor } from "../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../support/smsc.ts";
import { readPduFile } from "../support/smsc-pdus.ts";

let smsc: TestSmsc | undefined;
afterAll(() => smsc?.stop());

it("keeps every PDU it logged in its file after it was killed, and appends after a restart", async () => {
  const file = join(mkdtempSync(join(tmpdir(), "smsc-pdus-")), "pdus.jsonl");
  smsc = await startSmsc({ pduFile: file, config: { receiptDelayMs: 0 } });
  const carrier = smppCarrier(smsc);
  await carrier.start(async () => ({}));
  try {
    await waitFor(() => carrier.status().state === "bound");
    const numbers = ["+4915100000001", "+4915100000002", "+4915100000003"];
    const results = await carrier.submit(numbers.flatMap((to) => partsOf(["pdu file"], { to })));
    expect(results.every((r) => r.ok)).toBe(true);
    await waitFor(async () => (await smsc?.pdus({ command: "deliver_sm" }))?.length === 3);
    const logged = await smsc.pdus();
    await smsc.kill();

    // The file may hold an enquire_link more, logged between the read and the kill.
    const kept = readPduFile(file);
    expect(kept.slice(0, logged.length)).toEqual(logged);
    expect(
      kept
        .filter((p) => p.command === "submit_sm" && p.dir === "in")
        .map((p) => p.destination_addr),
    ).toEqual(numbers.map((n) => n.slice(1)));

    // A reset clears the memory only; a restart appends, numbering on from 0 in its process.
    await smsc.restart();
    await waitFor(() => carrier.status().state === "bound", 20_000);
    await smsc.reset();
    await carrier.submit(partsOf(["after restart"], { to: "+4915100000004" }));
    const after = readPduFile(file).slice(kept.length);
    expect(
      after.some((p) => p.command === "submit_sm" && p.destination_addr === "4915100000004"),
    ).toBe(true);
    expect(after[0]?.index).toBe(0);
  } finally {
    await carrier.stop();
  }
}, 60_000);
