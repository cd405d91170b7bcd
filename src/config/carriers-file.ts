/**
 * `SMS_CARRIERS_FILE` (docs/design.md "Routing, failover and prices"): YAML parsed by `yaml`, its shape
 * checked by a JSON Schema (carriers-schema.ts, Ajv), then what a schema cannot say: names,
 * URLs, countries, prefixes, carriers that exist, the default route last, prices in whole
 * micro-units. Every problem names its path and line (`routes[1].carriers[0]: unknown carrier
 * "gama" (line 9)`), all at once; the service does not start with any.
 */

import { readFileSync } from "node:fs";
import { Ajv, type ErrorObject } from "ajv";
import { type CountryCode, getCountryCallingCode } from "libphonenumber-js/max";
import { LineCounter, parseDocument } from "yaml";
import {
  type CarrierPlan,
  type CarrierSpec,
  DEFAULT_FAILOVER,
  type PriceSpec,
  type RouteMatch,
  type RouteSpec,
  SIMULATOR_WINDOW,
  type SmppSettings,
} from "../delivery/routing/carrier-plan.ts";
import { isKnownCountry } from "../domain/destination.ts";
import { DEFAULT_RISK, type RiskSettings } from "../domain/risk-settings.ts";
import type { DefaultAlphabet } from "../smpp/alphabets.ts";
import { parseSmppUrl } from "../smpp/endpoint.ts";
import { CARRIERS_FILE_SCHEMA } from "./carriers-schema.ts";

export class CarriersFileError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join("; "));
    this.name = "CarriersFileError";
  }
}

export interface CarriersFileDefaults {
  /** SMS_PRICE_PER_PART, the price of every destination when the file has no `prices`. */
  pricePerPartMicros: number;
  /** SMS_SIM_TPS, for simulator carriers that give no `tps`. */
  simTps: number | undefined;
  /** Where `${NAME}` in a carrier's url is looked up (passwords kept out of the file). */
  env: NodeJS.ProcessEnv;
}

export function loadCarriersFile(path: string, defaults: CarriersFileDefaults): CarrierPlan {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new CarriersFileError([`cannot read ${path}: ${(error as NodeJS.ErrnoException).code}`]);
  }
  return parseCarriersFile(text, path, defaults);
}

// What the schema has checked, as read.
interface FileCarrier {
  name: string;
  url: string;
  binds?: number;
  window?: number;
  tps?: number;
  systemType?: string;
  enquireLinkSeconds?: number;
  concatenation?: "sar" | "udh";
  moAlphabet?: DefaultAlphabet;
  country?: string;
  nationalPrefix?: string;
  receiptIds?: "exact" | "auto";
  multipartReceipts?: "each" | "any";
}
interface FileRoute {
  name: string;
  match?: { countries?: string[]; prefixes?: string[]; numberTypes?: string[]; senders?: string[] };
  carriers?: string[];
  split?: Record<string, number>;
}
interface CarriersFile {
  carriers: FileCarrier[];
  routes: FileRoute[];
  prices?: {
    default?: number;
    countries?: Record<string, number>;
    prefixes?: Record<string, number>;
  };
  failover?: Partial<typeof DEFAULT_FAILOVER>;
  risk?: { mode?: RiskSettings["mode"]; prefixBurst?: Partial<RiskSettings["prefixBurst"]> };
}

type Path = readonly (string | number)[];

const ajv = new Ajv({ allErrors: true });
let validate: ReturnType<typeof ajv.compile> | undefined;

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
const NAME_RULE = "1 to 32 letters, digits, - or _, starting with a letter or digit";
const PREFIX = /^\+[1-9][0-9]{0,14}$/;
const SMPP_ONLY = [
  "binds",
  "systemType",
  "enquireLinkSeconds",
  "concatenation",
  "country",
  "nationalPrefix",
  "receiptIds",
  "multipartReceipts",
] as const;

/** The plan in `text` (the file's content; `source` names it in the plan). */
export function parseCarriersFile(
  text: string,
  source: string,
  defaults: CarriersFileDefaults,
): CarrierPlan {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true });
  if (doc.errors.length > 0) {
    // "Map keys must be unique at line 3, column 3:", without the code frame that follows.
    throw new CarriersFileError(doc.errors.map((e) => e.message.replace(/:?\n[\s\S]*$/, "")));
  }
  // The line of the node at `path`, else of the nearest one above it (a missing field's map).
  const lineOf = (path: Path): string => {
    for (let n = path.length; n > 0; n--) {
      const node = doc.getIn(path.slice(0, n), true) as { range?: [number, number, number] };
      const offset = node?.range?.[0];
      if (offset !== undefined) return ` (line ${lines.linePos(offset).line})`;
    }
    return "";
  };
  const problems: string[] = [];
  const problem: Report = (path, message) => {
    problems.push(`${formatPath(path)}: ${message}${lineOf(path)}`);
  };

  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // An alias to no anchor, or too many aliases.
    throw new CarriersFileError([(error as Error).message]);
  }
  validate ??= ajv.compile(CARRIERS_FILE_SCHEMA);
  if (!validate(data)) {
    for (const error of validate.errors ?? []) schemaProblem(error, problem);
    throw new CarriersFileError(problems);
  }
  const file = data as CarriersFile;
  const carriers = readCarriers(file.carriers, defaults, problem);
  // Every listed name, even of a carrier with a bad url: its routes are not wrong too.
  const routes = readRoutes(file.routes, new Set(file.carriers.map((c) => c.name)), problem);
  const prices: PriceSpec = file.prices
    ? readPrices(file.prices, problem)
    : { defaultMicros: defaults.pricePerPartMicros, countries: new Map(), prefixes: new Map() };
  if (problems.length > 0) throw new CarriersFileError(problems);
  return {
    source,
    carriers,
    routes,
    prices,
    failover: { ...DEFAULT_FAILOVER, ...file.failover },
    risk: {
      mode: file.risk?.mode ?? DEFAULT_RISK.mode,
      prefixBurst: { ...DEFAULT_RISK.prefixBurst, ...file.risk?.prefixBurst },
    },
  };
}

type Report = (path: Path, message: string) => void;

function schemaProblem(error: ErrorObject, problem: Report): void {
  const path: (string | number)[] = error.instancePath
    .split("/")
    .slice(1)
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  const params = error.params as Record<string, unknown>;
  if (error.keyword === "required") problem([...path, String(params.missingProperty)], "required");
  else if (error.keyword === "additionalProperties") {
    problem([...path, String(params.additionalProperty)], "unknown field");
  } else if (error.keyword === "enum") {
    problem(path, `must be one of ${(params.allowedValues as string[]).join(", ")}`);
  } else problem(path, error.message ?? "is not valid");
}

function readCarriers(
  list: FileCarrier[],
  defaults: CarriersFileDefaults,
  problem: Report,
): CarrierSpec[] {
  const seen = new Map<string, number>();
  const carriers: CarrierSpec[] = [];
  list.forEach((c, i) => {
    const at = (...rest: (string | number)[]) => ["carriers", i, ...rest];
    checkName(c.name, at("name"), seen, "carriers", problem);
    const base = { name: c.name, moAlphabet: c.moAlphabet };
    if (c.url === "simulator") {
      for (const field of SMPP_ONLY) {
        if (c[field] !== undefined) problem(at(field), "only for smpp:// and smpps:// carriers");
      }
      const tps = c.tps ?? defaults.simTps;
      carriers.push({
        ...base,
        kind: "simulator",
        simulator: { window: c.window ?? SIMULATOR_WINDOW, tps: tps === 0 ? undefined : tps },
      });
      return;
    }
    const url = expandVariables(c.url, defaults.env);
    if ("missing" in url) {
      problem(at("url"), `environment variable ${url.missing} is not set`);
      return;
    }
    if (!/^smpps?:\/\//i.test(url.value)) {
      // Never the value: it holds a password.
      problem(at("url"), "expected smpp://SYSTEM_ID:PASSWORD@HOST:PORT, smpps://… or simulator");
      return;
    }
    let endpoint: ReturnType<typeof parseSmppUrl>;
    try {
      endpoint = parseSmppUrl(url.value);
    } catch (error) {
      problem(at("url"), (error as Error).message);
      return;
    }
    // SMS_SMPP_WINDOW's range: SMSCs rarely allow more unacknowledged submit_sm per bind.
    if (c.window !== undefined && c.window > 1000) {
      problem(at("window"), "at most 1000 for an SMPP carrier (per bind)");
    }
    const tps = c.tps ?? 50;
    if (c.nationalPrefix !== undefined && c.country === undefined)
      problem(at("nationalPrefix"), "needs the carrier's country");
    let numbering: SmppSettings["numbering"];
    if (c.country !== undefined) {
      if (!isKnownCountry(c.country)) {
        problem(
          at("country"),
          `unknown country "${c.country}": expected an ISO 3166-1 alpha-2 code in capitals`,
        );
      } else {
        numbering = {
          country: c.country,
          callingCode: getCountryCallingCode(c.country as CountryCode),
          nationalPrefix: c.nationalPrefix ?? "0",
        };
      }
    }
    carriers.push({
      ...base,
      kind: "smpp",
      smpp: {
        endpoint,
        systemType: c.systemType ?? "",
        binds: c.binds ?? 1,
        window: c.window ?? 10,
        tps: tps === 0 ? undefined : tps,
        enquireLinkS: c.enquireLinkSeconds ?? 30,
        concatenation: c.concatenation ?? "sar",
        receiptIds: c.receiptIds ?? "auto",
        multipartReceipts: c.multipartReceipts ?? "any",
        ...(numbering && { numbering }),
      },
    });
  });
  return carriers;
}

/** `${NAME}` replaced from the environment; the first unset name otherwise. */
function expandVariables(
  value: string,
  env: NodeJS.ProcessEnv,
): { value: string } | { missing: string } {
  let missing: string | undefined;
  const expanded = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const found = env[name];
    if (found === undefined || found === "") missing ??= name;
    return found ?? "";
  });
  return missing ? { missing } : { value: expanded };
}

function checkName(
  name: string,
  path: Path,
  seen: Map<string, number>,
  list: string,
  problem: Report,
): void {
  if (!NAME.test(name)) problem(path, `"${name}" must be ${NAME_RULE}`);
  const first = seen.get(name);
  if (first !== undefined) problem(path, `"${name}" is already the name of ${list}[${first}]`);
  else seen.set(name, path[1] as number);
}

function readRoutes(list: FileRoute[], known: Set<string>, problem: Report): RouteSpec[] {
  const seen = new Map<string, number>();
  const routes: RouteSpec[] = [];
  list.forEach((r, i) => {
    const at = (...rest: (string | number)[]) => ["routes", i, ...rest];
    checkName(r.name, at("name"), seen, "routes", problem);
    const match = readMatch(r.match, at("match"), problem);
    const last = i === list.length - 1;
    if (last && match) {
      problem(at("match"), "the last route is the default route: it must have no match");
    } else if (!last && !match) {
      problem(
        at(),
        "only the last route may have no match (the default route): the routes after it would never be used",
      );
    }
    if ((r.carriers === undefined) === (r.split === undefined)) {
      problem(at(), "give either carriers (in failover order) or split (weights), not both");
      return;
    }
    const names = r.carriers ?? Object.keys(r.split ?? {});
    const listed = new Set<string>();
    names.forEach((name, j) => {
      const path = r.carriers ? at("carriers", j) : at("split", name);
      if (!known.has(name)) problem(path, `unknown carrier "${name}"`);
      else if (listed.has(name)) problem(path, `carrier "${name}" is listed twice`);
      listed.add(name);
    });
    routes.push({
      name: r.name,
      match,
      carriers: names,
      split: r.split
        ? Object.entries(r.split).map(([carrier, weight]) => ({ carrier, weight }))
        : undefined,
    });
  });
  return routes;
}

/** undefined when no criterion is given (the default route). */
function readMatch(match: FileRoute["match"], path: Path, problem: Report): RouteMatch | undefined {
  if (!match || Object.keys(match).length === 0) return undefined;
  const result: { -readonly [K in keyof RouteMatch]: RouteMatch[K] } = {};
  if (match.countries) {
    for (const [j, c] of match.countries.entries())
      checkCountry(c, [...path, "countries", j], problem);
    result.countries = match.countries;
  }
  if (match.prefixes) {
    for (const [j, p] of match.prefixes.entries())
      checkPrefix(p, [...path, "prefixes", j], problem);
    result.prefixes = match.prefixes.map((p) => p.slice(1));
  }
  if (match.numberTypes) result.numberTypes = match.numberTypes as RouteMatch["numberTypes"];
  if (match.senders) {
    match.senders.forEach((s, j) => {
      if (s === "") problem([...path, "senders", j], "must not be empty");
    });
    result.senders = match.senders;
  }
  return result;
}

function checkCountry(code: string, path: Path, problem: Report): void {
  if (isKnownCountry(code)) return;
  const hint = code === "UK" ? ' (the United Kingdom is "GB")' : "";
  problem(
    path,
    `unknown country "${code}": expected an ISO 3166-1 alpha-2 code in capitals${hint}`,
  );
}

function checkPrefix(prefix: string, path: Path, problem: Report): void {
  if (!PREFIX.test(prefix)) {
    problem(path, `"${prefix}" must be + and up to 15 digits, not starting with 0 (e.g. "+4915")`);
  }
}

function readPrices(prices: NonNullable<CarriersFile["prices"]>, problem: Report): PriceSpec {
  const micros = (value: number, path: Path): number => {
    const scaled = Math.round(value * 1_000_000);
    if (Math.abs(scaled - value * 1_000_000) > 1e-6) problem(path, "at most 6 decimals");
    return scaled;
  };
  const countries = new Map<string, number>();
  for (const [code, price] of Object.entries(prices.countries ?? {})) {
    const path = ["prices", "countries", code];
    checkCountry(code, path, problem);
    countries.set(code, micros(price, path));
  }
  const prefixes = new Map<string, number>();
  for (const [prefix, price] of Object.entries(prices.prefixes ?? {})) {
    const path = ["prices", "prefixes", prefix];
    checkPrefix(prefix, path, problem);
    prefixes.set(prefix.slice(1), micros(price, path));
  }
  const fallback = prices.default;
  return {
    defaultMicros: fallback === undefined ? undefined : micros(fallback, ["prices", "default"]),
    countries,
    prefixes,
  };
}

/** `routes[1].carriers[0]`, `prices.prefixes["+4915"]`. */
export function formatPath(path: Path): string {
  let text = "";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(segment)) text += text ? `.${segment}` : segment;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text || "(the file)";
}
