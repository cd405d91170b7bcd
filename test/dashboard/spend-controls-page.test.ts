/**
 * The account sets its own spend controls on the dashboard's settings page (docs/design.md
 * "Money", "Spend controls"), and the sends then follow them; a bad value is shown by its field.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formPage, postForm, signIn } from "../support/dashboard-forms.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";

let service: RunningService;
beforeAll(async () => {
  service = await startService({ SMS_RATE_LIMIT_RPS: "0" });
});
afterAll(() => service?.close());

describe("dashboard: spend controls", () => {
  it("sets allowed countries and a daily limit that the next sends follow; emptied, they go", async () => {
    const account = await service.createAccount({ credit: 10 });
    const cookie = await signIn(service.baseUrl, account);
    const form = await formPage(service.baseUrl, cookie, "/settings");
    expect(form.html).toContain('data-testid="spent-today">0<');
    const saved = await postForm(
      `${service.baseUrl}/dashboard/settings/spend-controls`,
      form.cookie,
      {
        _csrf: form.token,
        allowedCountries: "de, fr",
        maxPricePerMessage: "",
        dailySpendLimit: "1",
      },
    );
    expect(saved.status).toBe(303);
    expect(saved.headers.get("location")).toBe("/dashboard/settings?saved=spend");

    const send = (to: string) => postJson(`${service.baseUrl}/sms`, { ...account, to, text: "hi" });
    expect((await send("+447700900123")).status).toBe(400);
    expect((await send("+4915112345678")).status).toBe(200);
    expect((await send("+4915112345679")).status).toBe(402);

    const after = await formPage(service.baseUrl, form.cookie, "/settings?saved=spend");
    expect(after.html).toContain("Spend controls saved.");
    expect(after.html).toContain('name="allowedCountries" value="DE, FR"');
    expect(after.html).toContain('data-testid="spent-today">1<');

    const cleared = await postForm(
      `${service.baseUrl}/dashboard/settings/spend-controls`,
      after.cookie,
      {
        _csrf: after.token,
        allowedCountries: "",
        maxPricePerMessage: "",
        dailySpendLimit: "",
      },
    );
    expect(cleared.status).toBe(303);
    expect((await send("+447700900123")).status).toBe(200);
  });

  it("shows a bad value by its field and changes nothing", async () => {
    const account = await service.createAccount({ credit: 10 });
    const cookie = await signIn(service.baseUrl, account);
    const form = await formPage(service.baseUrl, cookie, "/settings");
    const refused = await postForm(
      `${service.baseUrl}/dashboard/settings/spend-controls`,
      form.cookie,
      {
        _csrf: form.token,
        allowedCountries: "Germany",
        maxPricePerMessage: "lots",
        dailySpendLimit: "",
      },
    );
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(html).toContain("allowedCountries must hold ISO 3166");
    const doc = await service.store.accounts.findOne({ _id: account.apiKey });
    expect(doc?.spendControls).toBeUndefined();
  });
});
