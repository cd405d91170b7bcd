import type { FastifyInstance } from "fastify";
import { type Dashboard, serviceErrors } from "./page-kit.ts";
import { signedInAccount, signInCall, startSession } from "./session.ts";

// Sign-in and sign-out. The credentials are checked by a service call like any other door's
// (the call guards authenticate it, and a failure counts toward the address's failed-
// authentication limit); the secret is never stored nor shown again.

interface SignInBody {
  apiKey?: unknown;
  apiSecret?: unknown;
}

const text = (value: unknown): string => (typeof value === "string" ? value : "");

export function signInPages(app: FastifyInstance, dashboard: Dashboard): void {
  const { clients, directory, config } = dashboard.deps;

  app.get<{ Querystring: { "signed-out"?: string } }>("/sign-in", async (request, reply) => {
    const account = await signedInAccount(request, directory, config.dashboardSessionMinutes);
    if (account) return reply.redirect("/dashboard/overview", 303);
    return dashboard.render(reply, "sign-in", {
      title: "Sign in",
      apiKey: "",
      errors: {},
      signedOut: request.query["signed-out"] !== undefined,
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
      startSession(request, apiKey);
      return reply.redirect("/dashboard/overview", 303);
    },
  );

  app.post("/sign-out", { preValidation: app.csrfProtection }, async (request, reply) => {
    request.session.delete();
    return reply.redirect("/dashboard/sign-in?signed-out", 303);
  });
}
