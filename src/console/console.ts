import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import { registerErrorPages } from "../pages/error-pages.ts";
import { registerPageViews } from "../pages/page-views.ts";
import { registerBodyParsers } from "../rest/body-parsers.ts";
import { accountPages } from "./account-pages.ts";
import { carriersPage } from "./carriers-page.ts";
import { type Console, type ConsoleDeps, refusal } from "./console-kit.ts";
import { operationPages } from "./operation-pages.ts";
import { registerOperatorSession, signedInOperator } from "./operator-session.ts";
import { queuePages } from "./queue-pages.ts";
import { riskPage } from "./risk-page.ts";
import { signInPages } from "./sign-in-pages.ts";
import { usagePage } from "./usage-page.ts";

// The operator's console (docs/design.md "Accounts, API keys and the operator console"): its own
// HTTP server on OPERATOR_PORT / OPERATOR_HOST (loopback by default), server-rendered pages whose
// every action is an AdminService call made as the signed-in operator. No page runs a script; Eta
// escapes every `<%= %>`; every form carries a CSRF token and the cookie is SameSite=Strict.

const VIEWS = fileURLToPath(new URL("./views/", import.meta.url));
// The dashboard's stylesheet (one look for both), then the console's few rules of its own.
const STYLESHEET =
  readFileSync(new URL("../dashboard/views/dashboard.css", import.meta.url), "utf8") +
  readFileSync(new URL("./views/console.css", import.meta.url), "utf8");

/** The console's server, not listening yet (main.ts listens on OPERATOR_PORT). */
export async function consoleServer(
  deps: ConsoleDeps,
  logger: FastifyServerOptions["logger"],
): Promise<FastifyInstance> {
  const app = Fastify({ logger: logger ?? false, bodyLimit: 64 * 1024 });
  registerBodyParsers(app);
  await deps.sessions.ensureIndexes();
  await registerOperatorSession(app, deps);
  await registerPageViews(app, { views: VIEWS, production: deps.config.production });

  const console: Console = {
    deps,
    render(reply, page, data, operator) {
      return reply
        .type("text/html; charset=utf-8")
        .view(page, { errors: {}, ...data, operator, csrfToken: reply.generateCsrf() });
    },
    signedIn(handler) {
      return async (request, reply) => {
        const operator = await signedInOperator(request, deps);
        if (!operator) return reply.redirect("/sign-in", 303);
        return handler(request, reply, operator);
      };
    },
  };

  registerErrorPages(app, {
    name: "console",
    render: (reply, title, errors) => console.render(reply, "error", { title, errors }),
    refusal,
  });
  app.get("/assets/console.css", async (_request, reply) =>
    reply.type("text/css; charset=utf-8").header("cache-control", "max-age=300").send(STYLESHEET),
  );
  app.get("/", async (_request, reply) => reply.redirect("/accounts", 303));
  signInPages(app, console);
  accountPages(app, console);
  queuePages(app, console);
  operationPages(app, console);
  carriersPage(app, console);
  usagePage(app, console);
  riskPage(app, console);
  return app;
}
