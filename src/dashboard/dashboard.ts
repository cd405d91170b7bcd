import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { registerErrorPages } from "../pages/error-pages.ts";
import { registerPageViews } from "../pages/page-views.ts";
import { registerBodyParsers } from "../rest/body-parsers.ts";
import { accountPages } from "./account-pages.ts";
import { inboundPages } from "./inbound-pages.ts";
import { messagePages } from "./message-pages.ts";
import { optOutPages } from "./opt-out-pages.ts";
import { type Dashboard, type DashboardDeps, serviceErrors } from "./page-kit.ts";
import { registerSession, signedInAccount } from "./session.ts";
import { settingsPages } from "./settings-pages.ts";
import { signInPages } from "./sign-in-pages.ts";

// The account dashboard (docs/design.md "Account dashboard"): server-rendered pages under /dashboard on
// PORT, reading and writing only through the services (the same in-process clients as REST), with
// the signed-in account handed to them by the session (session.ts). Eta escapes every `<%= %>`;
// no page runs a script, so the Content-Security-Policy allows none.

const VIEWS = fileURLToPath(new URL("./views/", import.meta.url));
const STYLESHEET = readFileSync(new URL("./views/dashboard.css", import.meta.url), "utf8");

/** Registered with `{ prefix: "/dashboard" }` in a scope of its own. */
export async function dashboardRoutes(app: FastifyInstance, deps: DashboardDeps): Promise<void> {
  registerBodyParsers(app);
  await deps.sessions.ensureIndexes();
  await registerSession(app, {
    key: deps.config.dashboardSessionKey,
    production: deps.config.production,
    minutes: deps.config.dashboardSessionMinutes,
  });
  await registerPageViews(app, { views: VIEWS, production: deps.config.production });

  const dashboard: Dashboard = {
    deps,
    render(reply, page, data, account) {
      return reply
        .type("text/html; charset=utf-8")
        .view(page, { ...data, account, csrfToken: reply.generateCsrf() });
    },
    signedIn(handler) {
      return async (request, reply) => {
        const account = await signedInAccount(request, deps);
        if (!account) return reply.redirect("/dashboard/sign-in", 303);
        // Over the limit: the services' RESOURCE_EXHAUSTED, shown by the error page as a 429.
        deps.limits?.admitAccount(account.apiKey);
        return handler(request, reply, account);
      };
    },
  };

  registerErrorPages(app, {
    name: "dashboard",
    render: (reply, title, errors) => dashboard.render(reply, "error", { title, errors }),
    refusal: serviceErrors,
  });
  app.get("/assets/dashboard.css", async (_request, reply) =>
    reply.type("text/css; charset=utf-8").header("cache-control", "max-age=300").send(STYLESHEET),
  );
  app.get("/", async (_request, reply) => reply.redirect("/dashboard/overview", 303));
  signInPages(app, dashboard);
  accountPages(app, dashboard);
  messagePages(app, dashboard);
  inboundPages(app, dashboard);
  optOutPages(app, dashboard);
  settingsPages(app, dashboard);
}
