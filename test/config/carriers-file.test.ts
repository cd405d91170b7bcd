import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CarriersFileError, parseCarriersFile } from "../../src/config/carriers-file.ts";
import { ConfigError, loadConfig } from "../../src/config/config.ts";

// SMS_CARRIERS_FILE (issue 27, item 1): the example loads; every problem names its path and
// line; the service does not start with one. The one-carrier shorthand gives the same shape.

const EXAMPLE = readFileSync("deploy/carriers.example.yaml", "utf8");
const ENV = { ALPHA_SMPP_PASSWORD: "alpha-secret", BETA_SMPP_PASSWORD: "beta-secret" };
const defaults = { pricePerPartMicros: 1_000_000, simTps: undefined, env: ENV };

const BASE = `carriers:
  - { name: alpha, url: "smpp://a:pw@smsc-a.example:2775", binds: 2, window: 10, tps: 100 }
  - { name: beta, url: simulator }
routes:
  - { name: germany, match: { countries: [DE] }, carriers: [alpha, beta] }
  - { name: bulk-uk, match: { prefixes: ["+447"] }, split: { alpha: 70, beta: 30 } }
  - { name: default, carriers: [beta, alpha] }
prices:
  default: 1
`;

function problemsOf(text: string, env: NodeJS.ProcessEnv = ENV): string[] {
  try {
    parseCarriersFile(text, "test.yaml", { ...defaults, env });
  } catch (error) {
    expect(error).toBeInstanceOf(CarriersFileError);
    return (error as CarriersFileError).problems;
  }
  throw new Error("the file was accepted");
}

describe("the carriers file", () => {
  it("loads the example in deploy/", () => {
    const plan = parseCarriersFile(EXAMPLE, "example", defaults);
    expect(plan.carriers.map((c) => [c.name, c.kind])).toEqual([
      ["alpha", "smpp"],
      ["beta", "smpp"],
      ["lab", "simulator"],
    ]);
    const [alpha, beta] = plan.carriers;
    expect(alpha?.kind === "smpp" && alpha.smpp).toMatchObject({
      endpoint: { host: "smsc-a.example", port: 2775, tls: false, password: "alpha-secret" },
      binds: 2,
      window: 10,
      tps: 100,
      concatenation: "sar",
    });
    expect(beta?.kind === "smpp" && beta.smpp).toMatchObject({
      endpoint: { tls: true, port: 3550, password: "beta-secret" },
      systemType: "VMA",
      concatenation: "udh",
    });
    expect(beta?.moAlphabet).toBe("latin1");
    expect(plan.routes.map((r) => r.name)).toEqual(["germany", "bulk-uk", "alerts", "default"]);
    expect(plan.routes[1]).toMatchObject({
      match: { prefixes: ["447"], numberTypes: ["MOBILE"] },
      carriers: ["alpha", "beta"],
      split: [
        { carrier: "alpha", weight: 70 },
        { carrier: "beta", weight: 30 },
      ],
    });
    expect(plan.routes[3]?.match).toBeUndefined();
    expect(plan.prices.defaultMicros).toBe(50_000);
    expect(plan.prices.countries.get("GG")).toBe(60_000);
    expect(plan.prices.prefixes.get("4915")).toBe(90_000);
    expect(plan.failover).toEqual({ afterSeconds: 15, circuitWindow: 50, circuitOpenSeconds: 30 });
  });

  it("takes the defaults of SMS_SMPP_* and SMS_PRICE_PER_PART for what it leaves out", () => {
    const plan = parseCarriersFile(
      'carriers: [{ name: a, url: "smpp://a:pw@h" }, { name: s, url: simulator }]\nroutes: [{ name: d, carriers: [a, s] }]\n',
      "t",
      { ...defaults, pricePerPartMicros: 2_500_000, simTps: 7 },
    );
    const [a, s] = plan.carriers;
    expect(a?.kind === "smpp" && a.smpp).toMatchObject({
      binds: 1,
      window: 10,
      tps: 50,
      enquireLinkS: 30,
      systemType: "",
      receiptIds: "auto",
      multipartReceipts: "any",
    });
    expect(a?.kind === "smpp" && a.smpp.numbering).toBeUndefined();
    expect(s?.kind === "simulator" && s.simulator).toEqual({ window: 500, tps: 7 });
    expect(plan.prices.defaultMicros).toBe(2_500_000);
  });

  it("reads how a carrier writes numbers and receipts (docs/design.md: Carrier-grade SMPP)", () => {
    const plan = parseCarriersFile(
      'carriers: [{ name: a, url: "smpp://a:pw@h", country: DE, receiptIds: exact, multipartReceipts: each }, { name: b, url: "smpp://b:pw@h", country: GB, nationalPrefix: "" }]\nroutes: [{ name: d, carriers: [a, b] }]\n',
      "t",
      defaults,
    );
    const [a, b] = plan.carriers;
    expect(a?.kind === "smpp" && a.smpp).toMatchObject({
      receiptIds: "exact",
      multipartReceipts: "each",
      numbering: { country: "DE", callingCode: "49", nationalPrefix: "0" },
    });
    expect(b?.kind === "smpp" && b.smpp.numbering).toEqual({
      country: "GB",
      callingCode: "44",
      nationalPrefix: "",
    });
    expect(
      problemsOf(
        'carriers: [{ name: a, url: "smpp://a:pw@h", country: XX, receiptIds: hex }, { name: s, url: simulator, nationalPrefix: "0" }]\nroutes: [{ name: d, carriers: [a] }]\n',
      ),
    ).toEqual(["carriers[0].receiptIds: must be one of exact, auto (line 1)"]);
    expect(
      problemsOf(
        'carriers: [{ name: a, url: "smpp://a:pw@h", country: XX }, { name: s, url: simulator, nationalPrefix: "0" }]\nroutes: [{ name: d, carriers: [a] }]\n',
      ),
    ).toEqual([
      'carriers[0].country: unknown country "XX": expected an ISO 3166-1 alpha-2 code in capitals (line 1)',
      "carriers[1].nationalPrefix: only for smpp:// and smpps:// carriers (line 1)",
    ]);
  });

  it.each([
    [
      "an unknown carrier in a route",
      BASE.replace("carriers: [alpha, beta]", "carriers: [alpha, gama]"),
      'routes[0].carriers[1]: unknown carrier "gama" (line 5)',
    ],
    [
      "an unknown carrier in a split",
      BASE.replace("split: { alpha: 70", "split: { gama: 70"),
      'routes[1].split.gama: unknown carrier "gama" (line 6)',
    ],
    [
      "a carrier listed twice",
      BASE.replace("carriers: [beta, alpha]", "carriers: [beta, beta]"),
      'routes[2].carriers[1]: carrier "beta" is listed twice (line 7)',
    ],
    [
      "no default route",
      BASE.replace("  - { name: default, carriers: [beta, alpha] }\n", ""),
      "routes[1].match: the last route is the default route: it must have no match (line 6)",
    ],
    [
      "a default route that is not last",
      BASE.replace(
        "  - { name: germany,",
        "  - { name: first, carriers: [alpha] }\n  - { name: germany,",
      ),
      "routes[0]: only the last route may have no match (the default route): the routes after it would never be used (line 5)",
    ],
    [
      "a weight of 0",
      BASE.replace("beta: 30", "beta: 0"),
      "routes[1].split.beta: must be > 0 (line 6)",
    ],
    [
      "a negative weight",
      BASE.replace("beta: 30", "beta: -3"),
      "routes[1].split.beta: must be > 0 (line 6)",
    ],
    [
      "both carriers and split",
      BASE.replace("split: { alpha: 70, beta: 30 }", "carriers: [alpha], split: { alpha: 1 }"),
      "routes[1]: give either carriers (in failover order) or split (weights), not both (line 6)",
    ],
    [
      "a duplicate carrier name",
      BASE.replace("name: beta, url: simulator", "name: alpha, url: simulator"),
      'carriers[1].name: "alpha" is already the name of carriers[0] (line 3)',
    ],
    [
      "a duplicate route name",
      BASE.replace("name: bulk-uk", "name: germany"),
      'routes[1].name: "germany" is already the name of routes[0] (line 6)',
    ],
    [
      "a name that cannot be a metric label",
      BASE.replace("name: beta,", 'name: "be ta",'),
      'carriers[1].name: "be ta" must be 1 to 32 letters, digits, - or _, starting with a letter or digit (line 3)',
    ],
    [
      "a URL of another scheme",
      BASE.replace("smpp://a:pw@", "http://a:pw@"),
      "carriers[0].url: expected smpp://SYSTEM_ID:PASSWORD@HOST:PORT, smpps://… or simulator (line 2)",
    ],
    [
      "an SMPP URL without a system id",
      BASE.replace("smpp://a:pw@", "smpp://:pw@"),
      "carriers[0].url: expected smpp://SYSTEM_ID:PASSWORD@HOST:PORT or smpps://…; the system id is missing (line 2)",
    ],
    [
      "an unset variable in a URL",
      BASE.replace("a:pw@", "a:$" + "{ALPHA_PASSWORD}@"),
      "carriers[0].url: environment variable ALPHA_PASSWORD is not set (line 2)",
    ],
    [
      "an SMPP field on the simulator",
      BASE.replace("url: simulator", "url: simulator, binds: 2"),
      "carriers[1].binds: only for smpp:// and smpps:// carriers (line 3)",
    ],
    [
      "an SMPP window over 1000",
      BASE.replace("window: 10,", "window: 5000,"),
      "carriers[0].window: at most 1000 for an SMPP carrier (per bind) (line 2)",
    ],
    [
      "a country that is no ISO code",
      BASE.replace("countries: [DE]", "countries: [UK]"),
      'routes[0].match.countries[0]: unknown country "UK": expected an ISO 3166-1 alpha-2 code in capitals (the United Kingdom is "GB") (line 5)',
    ],
    [
      "a country in lower case",
      BASE.replace("default: 1", "countries: { de: 0.1 }"),
      'prices.countries.de: unknown country "de": expected an ISO 3166-1 alpha-2 code in capitals (line 9)',
    ],
    [
      "a prefix without +",
      BASE.replace('"+447"', '"447"'),
      'routes[1].match.prefixes[0]: "447" must be + and up to 15 digits, not starting with 0 (e.g. "+4915") (line 6)',
    ],
    [
      "a price prefix with a space",
      BASE.replace("default: 1", 'prefixes: { "+49 15": 0.1 }'),
      'prices.prefixes["+49 15"]: "+49 15" must be + and up to 15 digits, not starting with 0 (e.g. "+4915") (line 9)',
    ],
    [
      "a price finer than a micro-unit",
      BASE.replace("default: 1", "default: 0.0000001"),
      "prices.default: at most 6 decimals (line 9)",
    ],
    [
      "a negative price",
      BASE.replace("default: 1", "default: -1"),
      "prices.default: must be >= 0 (line 9)",
    ],
    [
      "an unknown field",
      BASE.replace("binds: 2", "bind: 2"),
      "carriers[0].bind: unknown field (line 2)",
    ],
    ["a missing url", BASE.replace(", url: simulator", ""), "carriers[1].url: required (line 3)"],
    [
      "an unknown number type",
      BASE.replace('prefixes: ["+447"]', "numberTypes: [CELL]"),
      "routes[1].match.numberTypes[0]: must be one of FIXED_LINE, FIXED_LINE_OR_MOBILE, MOBILE, PREMIUM_RATE, TOLL_FREE, SHARED_COST, VOIP, PERSONAL_NUMBER, PAGER, UAN, VOICEMAIL (line 6)",
    ],
    [
      "a string for a number",
      BASE.replace("tps: 100", "tps: lots"),
      "carriers[0].tps: must be integer (line 2)",
    ],
    ["a file with no carriers", "routes: []\n", "carriers: required"],
    ["an empty file", "", "(the file): must be object"],
    [
      "broken YAML",
      BASE.replace("routes:\n", "routes: [\n"),
      "Block collections are not allowed within flow collections at line 5, column 3",
    ],
    [
      "a key given twice",
      BASE.replace("prices:\n  default: 1", "prices:\n  default: 1\n  default: 2"),
      "Map keys must be unique at line 10, column 3",
    ],
  ])("refuses %s, naming the path", (_, text, message) => {
    expect(problemsOf(text)).toContain(message);
  });

  it("reports every problem at once, and never a password", () => {
    const problems = problemsOf(
      BASE.replace("carriers: [alpha, beta]", "carriers: [gama]")
        .replace("smpp://a:pw@", "smpp://a:hunter2@smsc a")
        .replace("name: bulk-uk", "name: germany"),
    );
    expect(problems).toHaveLength(3);
    expect(problems.join("\n")).not.toContain("hunter2");
  });
});

describe("SMS_CARRIERS_FILE and the one-carrier shorthand", () => {
  const dir = mkdtempSync(join(tmpdir(), "carriers-"));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it("without the file, SMS_CARRIER and SMS_PRICE_PER_PART make one carrier, one route, one price", () => {
    const sim = loadConfig({ SMS_PRICE_PER_PART: "0.5" }).carriers;
    expect(sim.carriers).toEqual([
      {
        name: "simulator",
        kind: "simulator",
        moAlphabet: undefined,
        simulator: { window: 500, tps: undefined },
      },
    ]);
    expect(sim.routes).toEqual([
      { name: "default", match: undefined, carriers: ["simulator"], split: undefined },
    ]);
    expect(sim.prices).toEqual({
      defaultMicros: 500_000,
      countries: new Map(),
      prefixes: new Map(),
    });

    const smpp = loadConfig({
      SMS_CARRIER: "smpp",
      SMS_SMPP_URL: "smpp://esme:pw@127.0.0.1:2775",
      SMS_SMPP_WINDOW: "20",
    }).carriers;
    expect(smpp.carriers[0]).toMatchObject({
      name: "smpp",
      kind: "smpp",
      smpp: { window: 20, binds: 1, endpoint: { systemId: "esme" } },
    });
    expect(smpp.routes[0]?.carriers).toEqual(["smpp"]);
  });

  it("with the file, the plan is the file's", () => {
    const config = loadConfig({ SMS_CARRIERS_FILE: file("good.yaml", BASE) });
    expect(config.carriers.carriers.map((c) => c.name)).toEqual(["alpha", "beta"]);
    expect(config.carriers.routes).toHaveLength(3);
  });

  it("the one-carrier worker delivers through the default route's first carrier, not a simulator", () => {
    const smpp = loadConfig({
      SMS_CARRIERS_FILE: file(
        "smpp-first.yaml",
        BASE.replace("carriers: [beta, alpha]", "carriers: [alpha, beta]"),
      ),
    });
    expect(smpp.carrier).toBe("smpp");
    expect(smpp.smpp).toMatchObject({ endpoint: { host: "smsc-a.example" }, binds: 2, tps: 100 });
    expect(loadConfig({ SMS_CARRIERS_FILE: file("sim-first.yaml", BASE) }).carrier).toBe(
      "simulator",
    );
  });

  it("a bad file is a configuration error naming the variable, the file and the path", () => {
    const path = file(
      "bad.yaml",
      BASE.replace("carriers: [alpha, beta]", "carriers: [alpha, gama]"),
    );
    let error: unknown;
    try {
      loadConfig({ SMS_CARRIERS_FILE: path, PORT: "eighty" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toContain(
      `SMS_CARRIERS_FILE ${path}: routes[0].carriers[1]: unknown carrier "gama" (line 5)`,
    );
    // Reported with the other variables' problems, all at once.
    expect((error as ConfigError).problems.some((p) => p.startsWith("PORT:"))).toBe(true);
  });

  it("a missing file, and SMS_CARRIER beside the file, are errors", () => {
    expect(() => loadConfig({ SMS_CARRIERS_FILE: join(dir, "none.yaml") })).toThrow(
      /SMS_CARRIERS_FILE .*none\.yaml: cannot read .*none\.yaml: ENOENT/,
    );
    expect(() =>
      loadConfig({ SMS_CARRIERS_FILE: file("ok.yaml", BASE), SMS_CARRIER: "simulator" }),
    ).toThrow(/SMS_CARRIER: not used with SMS_CARRIERS_FILE/);
  });

  it("the service stops with exit 1 and one clear message", () => {
    const path = file(
      "start.yaml",
      BASE.replace("carriers: [alpha, beta]", "carriers: [alpha, gama]"),
    );
    const run = spawnSync(process.execPath, ["--import", "tsx", "src/main.ts"], {
      env: { ...process.env, SMS_CARRIERS_FILE: path, MONGODB_URI: "mongodb://127.0.0.1:1" },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/invalid configuration/i);
    expect(run.stderr).toContain(`routes[0].carriers[1]: unknown carrier "gama" (line 5)`);
    expect(run.stderr).not.toMatch(/at .*\.ts:\d+/); // no stack trace
  });
});
