// The house's floors: which room of src/ may import which (`npm run lint:layers`, run in CI and by
// test/foundation/layers.test.ts). docs/architecture.md draws the same floors. A room not listed
// here fails the check until it is given its place.
//
// From the bottom up: the contract's generated code and the pure rules; the store; the shared
// scheduling, tracing, the SMPP protocol and the HTML doors' error pages; the capabilities
// (opt-outs, inbound, delivery, notifier) and what watches them; the services; the doors; the
// composition root.
const BASE = ["gen", "domain", "errors", "logger.ts", "logging.ts", "request-context.ts"];

/** room (a folder of src/, or a file at its top) → the rooms it may import besides itself. */
const MAY_IMPORT = {
  domain: ["gen"],
  errors: ["gen", "domain"],
  "logger.ts": [],
  "request-context.ts": [],
  "logging.ts": ["request-context.ts"],
  store: [...BASE],
  "dev-database": [...BASE],
  scheduling: [...BASE, "store"],
  tracing: [...BASE, "store"],
  smpp: [...BASE, "scheduling"],
  "rate-limits": [...BASE, "scheduling"],
  "request-bodies": [...BASE, "rate-limits"],
  pages: [...BASE],
  "opt-outs": [...BASE, "store"],
  accounts: [...BASE, "store", "opt-outs"],
  "quiet-hours": [...BASE],
  inbound: [...BASE, "store", "smpp", "opt-outs"],
  delivery: [...BASE, "store", "scheduling", "tracing", "smpp", "inbound"],
  money: [...BASE, "store"],
  lifecycle: [...BASE, "store", "delivery"],
  metrics: [...BASE, "store", "delivery", "lifecycle"],
  notifier: [...BASE, "store", "scheduling", "tracing", "inbound", "metrics"],
  config: [...BASE, "smpp", "delivery", "notifier"],
  connections: [...BASE, "config"],
  services: [
    ...BASE,
    ...["store", "tracing", "rate-limits", "opt-outs", "inbound", "delivery", "metrics", "money"],
    "accounts",
    "quiet-hours",
  ],
  idempotency: [...BASE, "store", "services"],
  rest: [
    ...BASE,
    ...["store", "tracing", "rate-limits", "request-bodies", "config", "connections", "services"],
    "accounts",
  ],
  rpc: [...BASE, "rate-limits", "request-bodies", "services"],
  dashboard: [
    ...BASE,
    ...["store", "rate-limits", "config", "services", "rest", "money", "accounts", "pages"],
  ],
  cli: [...BASE, "config"],
  console: [...BASE, "store", "rate-limits", "config", "rest", "money", "accounts", "pages"],
};

const room = (name) => (name.endsWith(".ts") ? `^src/${name}$` : `^src/${name}/`);
const ROOT = ["app.ts", "background.ts", "main.ts"];

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "A circle means a type or value lives in a room that is not its own.",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "room-has-a-floor",
      comment: "Every room of src/ has its place in .dependency-cruiser.cjs (MAY_IMPORT).",
      severity: "error",
      from: {
        path: "^src/",
        pathNot: [...Object.keys(MAY_IMPORT), ...ROOT].map(room),
      },
      to: {},
    },
    {
      name: "nothing-imports-the-root",
      comment:
        "The composition root (app.ts, background.ts, main.ts) is imported by nothing below it.",
      severity: "error",
      from: { path: "^src/", pathNot: ROOT.map(room) },
      to: { path: ROOT.map(room) },
    },
    ...Object.entries(MAY_IMPORT).map(([name, may]) => ({
      name: `floor-of-${name.replace(/\.ts$/, "")}`,
      comment: `${name} imports only ${may.join(", ") || "itself"}.`,
      severity: "error",
      from: { path: room(name) },
      to: {
        path: "^(src|gen)/",
        pathNot: [name, ...may].map((r) => (r === "gen" ? "^gen/" : room(r))),
      },
    })),
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    exclude: { path: "\\.d\\.ts$" },
  },
};
