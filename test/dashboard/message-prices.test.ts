/**
 * Each message's country and price on the dashboard (issue 27, item 5) over plain HTTP against
 * the whole service, with a carriers file whose prices differ by country: the list and the
 * detail page show the country the number was parsed to and parts times its price per part, in
 * the credit's units.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { page, signIn } from "../support/dashboard-forms.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";

const FILE = `carriers:
  - { name: alpha, url: simulator }
routes:
  - { name: default, carriers: [alpha] }
prices:
  default: 0.01
  countries: { DE: 0.08, FR: 0.05 }
`;

let service: RunningService;

beforeAll(async () => {
  const path = join(mkdtempSync(join(tmpdir(), "dashboard-prices-")), "carriers.yaml");
  writeFileSync(path, FILE);
  service = await startService({ SMS_CARRIERS_FILE: path });
}, 60_000);

afterAll(async () => {
  await service?.close();
});

/** The list's rows by message id: their Country and Price cells. */
function rowsOf(html: string): Record<string, { country: string; price: string }> {
  const rows: Record<string, { country: string; price: string }> = {};
  const row =
    /Message (\d+)<\/a>.*?<td class="country">([^<]*)<\/td><td class="price">([^<]*)<\/td>/g;
  for (const [, id, country, price] of html.matchAll(row)) {
    rows[id as string] = { country: country as string, price: price as string };
  }
  return rows;
}

describe("dashboard prices", () => {
  it("shows each message's country and parts times its price per part", async () => {
    const account = await service.createAccount({ credit: 10 });
    const send = async (to: string, text: string) => {
      const sent = await postJson(`${service.baseUrl}/sms`, { ...account, to, text });
      expect(sent.status).toBe(200);
      return String(sent.body.id);
    };
    const german = await send("+4915112345678", "one part");
    const germanLong = await send("+493012345678", "x".repeat(153 * 2 + 1));
    const french = await send("+33612345678", "un");
    const nowhere = await send("+9991234561", "simulator number");

    const cookie = await signIn(service.baseUrl, account);
    const list = await page(service.baseUrl, cookie, "/messages");
    expect(list.status).toBe(200);
    const html = await list.text();
    expect(html).toContain('<th scope="col">Country</th><th scope="col">Price</th>');
    expect(rowsOf(html)).toEqual({
      [german]: { country: "DE", price: "0.08" },
      [germanLong]: { country: "DE", price: "0.24" },
      [french]: { country: "FR", price: "0.05" },
      // No country's plan: the default price.
      [nowhere]: { country: "—", price: "0.01" },
    });

    const detail = await (await page(service.baseUrl, cookie, `/messages/${germanLong}`)).text();
    expect(detail).toContain('<dd data-testid="country">DE</dd>');
    expect(detail).toContain('<dd data-testid="price">0.24 (3 parts × 0.08)</dd>');
    const one = await (await page(service.baseUrl, cookie, `/messages/${german}`)).text();
    expect(one).toContain('<dd data-testid="price">0.08</dd>');
  });
});
