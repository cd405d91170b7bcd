import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AddressBlockedError } from "../../src/notifier/address-guard.ts";
import { refusedAttempt } from "../../src/notifier/outcomes.ts";
import { storeInboundMessages } from "../../src/store/inbound-messages.ts";
import { reserveIds } from "../../src/store/sequences.ts";
import { formPage, page, postForm, signIn } from "../support/dashboard-forms.ts";
import { adminHeaders, type RunningService, startService } from "../support/service.ts";

// The dashboard's two-way pages over plain HTTP against the whole service (docs/design.md "Two-way
// messaging", issue 26 item 6): inbound messages (search, pages, one message), the opt-out list
// (a handset's STOP, numbers added and removed by the account) and the inbound settings. Inbound
// messages come in through AdminService.SimulateInbound, as the simulator carrier's MO would.

let service: RunningService;

beforeAll(async () => {
  service = await startService();
}, 60_000);

afterAll(async () => {
  await service?.close();
});

type Account = Awaited<ReturnType<RunningService["createAccount"]>>;

let numberSeq = 0;
/** A long code of its own for each call. */
const freshNumber = () => `+4915790${String(numberSeq++).padStart(4, "0")}`;

async function accountWithNumbers(count: number): Promise<{ account: Account; numbers: string[] }> {
  const account = await service.createAccount();
  const numbers: string[] = [];
  for (let i = 0; i < count; i++) {
    const { number } = await service.admin.assignNumber(
      { apiKey: account.apiKey, number: freshNumber() },
      adminHeaders,
    );
    numbers.push(number?.number ?? "");
  }
  return { account, numbers };
}

async function simulate(from: string, to: string, text: string): Promise<string> {
  const { inboundMessage } = await service.admin.simulateInbound(
    { sender: from, to, text },
    adminHeaders,
  );
  return inboundMessage?.id.toString() ?? "";
}

/** The ids of the inbound table's rows, in order. */
const inboundIds = (html: string) =>
  Array.from(html.matchAll(/href="\/dashboard\/inbound\/(\d+)">Inbound /g), (m) => m[1]);

/** The "Next page" link's path and query, unescaped. */
const nextLink = (html: string) =>
  /<a href="\/dashboard([^"]+)" rel="next">/.exec(html)?.[1]?.replaceAll("&amp;", "&");

/** The fields the errors box names. */
const errorFields = (html: string) =>
  Array.from(html.matchAll(/<li data-field="([^"]+)">/g), (m) => m[1]);

async function html(cookie: string, path: string, status = 200): Promise<string> {
  const response = await page(service.baseUrl, cookie, path);
  expect(response.status).toBe(status);
  return response.text();
}

describe("dashboard: inbound messages", () => {
  it("lists the account's inbound messages newest first, 25 a page, and searches by sender, number and time", async () => {
    const { account, numbers } = await accountWithNumbers(2);
    const [first, second] = numbers as [string, string];
    const other = await accountWithNumbers(1);
    const ids: string[] = [];
    for (let i = 1; i <= 27; i++) ids.push(await simulate("+4917011111111", first, `hello ${i}`));
    ids.push(await simulate("+4917022222222", second, "<b>hi</b>"));
    await simulate("+4917011111111", other.numbers[0] as string, "not this account's");
    const newestFirst = ids.toReversed();

    const cookie = await signIn(service.baseUrl, account);
    const firstPage = await html(cookie, "/inbound");
    expect(inboundIds(firstPage)).toEqual(newestFirst.slice(0, 25));
    // The text as text, never as markup.
    expect(firstPage).toContain("&lt;b&gt;hi&lt;/b&gt;");
    const next = nextLink(firstPage) as string;
    expect(next).toMatch(/^\/inbound\?.*page=/);
    const secondPage = await html(cookie, next);
    expect(inboundIds(secondPage)).toEqual(newestFirst.slice(25));
    expect(nextLink(secondPage)).toBeUndefined();

    // By sender and by number; the filters go on with the next page.
    expect(inboundIds(await html(cookie, "/inbound?from=%2B4917022222222"))).toEqual([ids[27]]);
    const toFirst = await html(cookie, `/inbound?to=${encodeURIComponent(first)}`);
    expect(inboundIds(toFirst)).toEqual(newestFirst.slice(1, 26));
    const toNext = nextLink(toFirst) as string;
    expect(new URLSearchParams(toNext.split("?")[1]).get("to")).toBe(first);
    expect(inboundIds(await html(cookie, toNext))).toEqual(newestFirst.slice(26));

    // By time (UTC): all of them fall within the last hour, none after the next one.
    const local = (ms: number) => new Date(ms).toISOString().slice(0, 16);
    const hourAgo = local(Date.now() - 3_600_000);
    const inAnHour = local(Date.now() + 3_600_000);
    const within = await html(
      cookie,
      `/inbound?from=%2B4917022222222&since=${hourAgo}&until=${inAnHour}`,
    );
    expect(inboundIds(within)).toEqual([ids[27]]);
    const later = await html(cookie, `/inbound?since=${inAnHour}`);
    expect(inboundIds(later)).toEqual([]);
    expect(later).toContain("No inbound messages.");
  });

  it("refuses a search it cannot run with a 400 naming the field, the form kept", async () => {
    const { account } = await accountWithNumbers(0);
    const cookie = await signIn(service.baseUrl, account);
    const refused = await html(cookie, "/inbound?from=%2B491701&since=yesterday", 400);
    expect(errorFields(refused)).toEqual(["since"]);
    expect(refused).toContain('value="+491701"');
    const tooLong = await html(cookie, `/inbound?to=${"1".repeat(40)}`, 400);
    expect(errorFields(tooLong)).toEqual(["to"]);
    const badToken = await html(cookie, "/inbound?page=not-a-token", 400);
    expect(errorFields(badToken)).toEqual(["pageToken"]);
  });

  it("shows one message: text, parts, received time, its opt-out word, incomplete", async () => {
    const { account, numbers } = await accountWithNumbers(1);
    const to = numbers[0] as string;
    const stop = await simulate("+4917033333333", to, " Stop! ");
    const cookie = await signIn(service.baseUrl, account);

    const shown = await html(cookie, `/inbound/${stop}`);
    expect(shown).toContain(`<title>Inbound message ${stop} · SMS dashboard</title>`);
    expect(shown).toMatch(/data-testid="opt-out-type"><strong>STOP<\/strong>/);
    expect(shown).toContain('data-testid="text"> Stop! </pre>');
    expect(shown).toContain('data-testid="parts">1</dd>');
    expect(shown).toMatch(/<dt>Received<\/dt><dd>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<\/dd>/);
    expect(shown).not.toContain('data-testid="incomplete"');

    // A long message whose last part never came, as the intake stores it after the reassembly time.
    const id = await reserveIds(service.store.counters, "inbound", 1);
    await storeInboundMessages(
      service.store.db,
      [
        {
          _id: id,
          accountId: account.apiKey,
          from: "+4917044444444",
          to,
          text: "the first two parts of three",
          parts: 3,
          receivedAt: new Date(),
          incomplete: true,
          carrier: "simulator",
          dedupeKey: randomUUID(),
        },
      ],
      new Date(),
    );
    const incomplete = await html(cookie, `/inbound/${id}`);
    expect(incomplete).toContain('data-testid="incomplete">yes: some of its 3 parts never came');
    expect(incomplete).toContain('data-testid="opt-out-type">none: an ordinary answer');

    // Another account's message is not found; a path that is no id is a 400.
    const stranger = await accountWithNumbers(0);
    const strangerCookie = await signIn(service.baseUrl, stranger.account);
    await html(strangerCookie, `/inbound/${stop}`, 404);
    await html(cookie, "/inbound/abc", 400);
  });

  it("shows a message's inbound webhook: none without an inbound URL, a refused address in the status webhooks' words", async () => {
    const { account, numbers } = await accountWithNumbers(1);
    const to = numbers[0] as string;
    const cookie = await signIn(service.baseUrl, account);
    const without = await html(cookie, `/inbound/${await simulate("+4917055555555", to, "hi")}`);
    expect(without).toContain('data-testid="webhook-state">None: the account had no inbound URL');

    // As the notifier records an inbound URL whose address is not public (notifier/outcomes.ts).
    const id = await reserveIds(service.store.counters, "inbound", 1);
    const refused = refusedAttempt(new AddressBlockedError("127.0.0.1", "loopback"), new Date());
    await storeInboundMessages(
      service.store.db,
      [
        {
          _id: id,
          accountId: account.apiKey,
          from: "+4917055555555",
          to,
          text: "hello again",
          parts: 1,
          receivedAt: new Date(),
          carrier: "simulator",
          dedupeKey: randomUUID(),
          webhook: { state: "gave_up", url: "http://127.0.0.1:9/in", attempts: [refused] },
        },
      ],
      new Date(),
    );
    const shown = await html(cookie, `/inbound/${id}`);
    expect(shown).toContain(
      'data-testid="webhook-state">gave up</span> to <code>http://127.0.0.1:9/in</code>',
    );
    expect(shown).toContain("<caption>Inbound webhook attempts</caption>");
    expect(shown).toMatch(
      /<tr><td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<\/td><td>no answer<\/td><td>[^<]*callback address is not a public address<\/td><td>0 ms<\/td><\/tr>/,
    );
  });
});

describe("dashboard: opt-outs", () => {
  it("lists a handset's STOP without a remove button, and its START lifts it", async () => {
    const { account, numbers } = await accountWithNumbers(1);
    const to = numbers[0] as string;
    const stopId = await simulate("+4917055555555", to, "STOP");
    const cookie = await signIn(service.baseUrl, account);

    const list = await html(cookie, "/opt-outs");
    const row = /<tr data-number="\+4917055555555">[\s\S]*?<\/tr>/.exec(list)?.[0] ?? "";
    expect(row).toContain(`the handset (<a href="/dashboard/inbound/${stopId}">STOP</a>)`);
    expect(row).toContain("only the handset&#39;s START lifts it");
    expect(row).not.toContain("<form");

    // A remove asked for all the same (a forged form) is refused by the service: 409.
    const form = await formPage(service.baseUrl, cookie, "/opt-outs");
    const refused = await postForm(
      `${service.baseUrl}/dashboard/opt-outs/${encodeURIComponent("+4917055555555")}/delete`,
      form.cookie,
      { _csrf: form.token },
    );
    expect(refused.status).toBe(409);
    const refusedPage = await refused.text();
    expect(errorFields(refusedPage)).toEqual(["number"]);
    expect(refusedPage).toContain('<tr data-number="+4917055555555">');

    await simulate("+4917055555555", to, "start");
    expect(await html(cookie, "/opt-outs")).toContain("No numbers on the opt-out list.");
  });

  it("adds a number, refuses a wrong one with the service's words, and removes the account's own", async () => {
    const { account } = await accountWithNumbers(0);
    const cookie = await signIn(service.baseUrl, account);
    const add = async (number: string) => {
      const form = await formPage(service.baseUrl, cookie, "/opt-outs");
      return postForm(`${service.baseUrl}/dashboard/opt-outs`, form.cookie, {
        _csrf: form.token,
        number,
      });
    };

    const wrong = await add("12");
    expect(wrong.status).toBe(400);
    const wrongPage = await wrong.text();
    expect(errorFields(wrongPage)).toEqual(["number"]);
    expect(wrongPage).toContain("8 to 15 digits");
    expect(wrongPage).toContain('id="number" name="number" value="12"');

    const added = await add("4915111122223");
    expect(added.status).toBe(303);
    const location = added.headers.get("location") ?? "";
    expect(location).toBe("/dashboard/opt-outs?added=%2B4915111122223");
    const list = await html(cookie, location.replace("/dashboard", ""));
    expect(list).toContain("<strong>+4915111122223</strong> is on the opt-out list");
    const row = /<tr data-number="\+4915111122223">[\s\S]*?<\/tr>/.exec(list)?.[0] ?? "";
    expect(row).toContain("this account");
    expect(row).toContain('aria-label="Remove +4915111122223 from the opt-out list"');
    const stored = await service.store.db
      .collection("optOuts")
      .countDocuments({ accountId: account.apiKey });
    expect(stored).toBe(1);

    // Without the form's CSRF token nothing is removed.
    const forged = await postForm(
      `${service.baseUrl}/dashboard/opt-outs/%2B4915111122223/delete`,
      cookie,
      {},
    );
    expect(forged.status).toBe(403);

    const form = await formPage(service.baseUrl, cookie, "/opt-outs");
    const removed = await postForm(
      `${service.baseUrl}/dashboard/opt-outs/%2B4915111122223/delete`,
      form.cookie,
      { _csrf: form.token },
    );
    expect(removed.status).toBe(303);
    expect(removed.headers.get("location")).toBe("/dashboard/opt-outs?removed=%2B4915111122223");
    expect(await html(cookie, "/opt-outs")).toContain("No numbers on the opt-out list.");
  });
});

describe("dashboard: inbound settings", () => {
  const settingsForm = async (cookie: string) => {
    const form = await formPage(service.baseUrl, cookie, "/settings");
    const field = (name: string) =>
      new RegExp(`name="${name}"[^>]*>([^<]*)</textarea>`).exec(form.html)?.[1] ?? "";
    return {
      ...form,
      inboundUrl: /name="inboundUrl" type="url" value="([^"]*)"/.exec(form.html)?.[1] ?? "",
      stopReply: field("stopReply"),
      startReply: field("startReply"),
      helpReply: field("helpReply"),
    };
  };
  const save = async (cookie: string, change: Record<string, string>) => {
    const { html: _, token, cookie: current, ...shown } = await settingsForm(cookie);
    return postForm(`${service.baseUrl}/dashboard/settings/inbound`, current, {
      _csrf: token,
      ...shown,
      ...change,
    });
  };

  it("sets the inbound URL and the replies; a default left as shown stays the default", async () => {
    const { account } = await accountWithNumbers(0);
    const cookie = await signIn(service.baseUrl, account);
    const defaults = await settingsForm(cookie);
    expect(defaults.inboundUrl).toBe("");
    expect(defaults.stopReply).toBe(
      "test account: you will get no more messages from us. Reply START to get them again.",
    );

    const saved = await save(cookie, {
      inboundUrl: "http://127.0.0.1:9/inbound",
      stopReply: "Acme: unsubscribed.\r\nText START to come back.",
    });
    expect(saved.status).toBe(303);
    expect(saved.headers.get("location")).toBe("/dashboard/settings?saved=1");
    expect(await html(cookie, "/settings?saved=1")).toContain("Inbound settings saved.");
    const after = await settingsForm(cookie);
    expect(after.inboundUrl).toBe("http://127.0.0.1:9/inbound");
    expect(after.stopReply).toBe("Acme: unsubscribed.\nText START to come back.");
    expect(after.helpReply).toBe(defaults.helpReply);
    // Only what changed was written: START and HELP still follow the account's name.
    const stored = await service.store.accounts.findOne({ _id: account.apiKey });
    expect(stored?.inboundUrl).toBe("http://127.0.0.1:9/inbound");
    expect(stored?.keywordReplies).toEqual({
      STOP: "Acme: unsubscribed.\nText START to come back.",
    });

    // Emptied: the URL is cleared, the reply is the default again.
    expect((await save(cookie, { inboundUrl: "", stopReply: "" })).status).toBe(303);
    const cleared = await settingsForm(cookie);
    expect(cleared.inboundUrl).toBe("");
    expect(cleared.stopReply).toBe(defaults.stopReply);
  });

  it("refuses a wrong URL or reply with a 400 naming the field, what was typed kept", async () => {
    const { account } = await accountWithNumbers(0);
    const cookie = await signIn(service.baseUrl, account);
    const refused = await save(cookie, { inboundUrl: "ftp://example.com/x", helpReply: "HELP" });
    expect(refused.status).toBe(400);
    const refusedPage = await refused.text();
    expect(errorFields(refusedPage).sort()).toEqual(["helpReply", "inboundUrl"]);
    expect(refusedPage).toContain("must not be an opt-out word itself");
    expect(refusedPage).toContain('value="ftp://example.com/x"');
    expect((await settingsForm(cookie)).inboundUrl).toBe("");

    const forged = await postForm(`${service.baseUrl}/dashboard/settings/inbound`, cookie, {
      inboundUrl: "http://127.0.0.1:9/forged",
    });
    expect(forged.status).toBe(403);
    expect((await settingsForm(cookie)).inboundUrl).toBe("");
  });
});

describe("dashboard: two-way pages count toward the account's limit once each", () => {
  let limited: RunningService;
  beforeAll(async () => {
    // Five requests a second, bursts of ten.
    limited = await startService({ SMS_RATE_LIMIT_RPS: "5" });
  }, 60_000);
  afterAll(async () => {
    await limited?.close();
  });

  it("a settings save reads and writes through two calls, and is one request", async () => {
    const account = await limited.createAccount();
    const cookie = await signIn(limited.baseUrl, account); // one of the ten
    const form = await formPage(limited.baseUrl, cookie, "/settings"); // two
    const saves = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        postForm(`${limited.baseUrl}/dashboard/settings/inbound`, form.cookie, {
          _csrf: form.token,
          inboundUrl: `http://127.0.0.1:9/in/${i}`,
        }),
      ),
    );
    // Each would take three if its calls were counted too: more than the burst holds.
    expect(saves.map((s) => s.status)).toEqual(Array(8).fill(303));
    // The pages are counted: more of them at once than the burst are refused.
    const views = await Promise.all(
      Array.from({ length: 30 }, () => page(limited.baseUrl, cookie, "/inbound")),
    );
    expect(views.some((v) => v.status === 429)).toBe(true);
  });
});
