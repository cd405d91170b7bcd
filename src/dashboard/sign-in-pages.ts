import type { FastifyInstance } from "fastify";
import { type Dashboard, serviceErrors } from "./page-kit.ts";
import {
  endEverySession,
  endSession,
  signedInAccount,
  signInCall,
  startSession,
} from "./session.ts";

// Sign-in and sign-out. The credentials are checked by a service call like any other door's
// (the call guards authenticate it, and a failure counts toward the address's failed-
// authentication limit); the secret is never stored nor shown again. Signing out ends the
// session on the server (session.ts); signing out everywhere ends every session of the account.

interface SignInBody {
  apiKey?: unknown;
  apiSecret?: unknown;
}

const text = (value: unknown): string => (typeof value === "string" ? value : "");

export function signInPages(app: FastifyInstance, dashboard: Dashboard): void {
  const { clients } = dashboard.deps;

  app.get<{ Querystring: { "signed-out"?: string } }>("/sign-in", async (request, reply) => {
    const account = await signedInAccount(request, dashboard.deps);
    if (account) return reply.redirect("/dashboard/overview", 303);
    return dashboard.render(reply, "sign-in", {
      title: "Sign in",
      apiKey: "",
      errors: {},
      signedOut: request.query["signed-out"] !== undefined,
      everywhere: request.query["signed-out"] === "everywhere",
    });
  });

  app.post<{ Body: SignInBody }>(
    "/sign-in",
    { preValidation: app.csrfProtection },
    async (request, reply) => {
      const apiKey = text(request.body?.apiKey);
      const apiSecret = text(request.body?.apiSecret);
      try {
        // The smallest call an account may make: its answer is not used, its authentication is.
        await clients.senderNames.listSenderNames(
          { pageSize: 1 },
          signInCall(request, apiKey, apiSecret),
        );
      } catch (error) {
        const { status, errors } = serviceErrors(error, reply);
        return dashboard.render(reply.code(status), "sign-in", {
          title: "Sign in",
          apiKey,
          errors,
          signedOut: false,
        });
      }
      await startSession(request, apiKey, dashboard.deps);
      return reply.redirect("/dashboard/overview", 303);
    },
  );

  app.post("/sign-out", { preValidation: app.csrfProtection }, async (request, reply) => {
    await endSession(request, dashboard.deps);
    return reply.redirect("/dashboard/sign-in?signed-out", 303);
  });

  // Not counted against the account's request limit: ending sessions that may have been stolen
  // must work while someone else uses up the account's allowance.
  app.post(
    "/sign-out-everywhere",
    { preValidation: app.csrfProtection },
    async (request, reply) => {
      const account = await signedInAccount(request, dashboard.deps);
      if (!account) return reply.redirect("/dashboard/sign-in", 303);
      await endEverySession(request, account, dashboard.deps);
      return reply.redirect("/dashboard/sign-in?signed-out=everywhere", 303);
    },
  );
}
