import type { FastifyInstance } from "fastify";
import { type Console, field } from "./console-kit.ts";
import {
  checkSignIn,
  endOperatorSession,
  signedInOperator,
  startOperatorSession,
} from "./operator-session.ts";

export function signInPages(app: FastifyInstance, console: Console): void {
  app.get("/sign-in", async (request, reply) => {
    if (await signedInOperator(request, console.deps)) return reply.redirect("/accounts", 303);
    return console.render(reply, "sign-in", { title: "Sign in", operatorName: "" });
  });

  app.post("/sign-in", { preValidation: app.csrfProtection }, async (request, reply) => {
    const name = field(request.body, "operator");
    const errors = checkSignIn(request, console.deps, field(request.body, "token"), name);
    if (errors) {
      const status = errors.token ? 401 : errors.request ? 429 : 400;
      return console.render(reply.code(status), "sign-in", {
        title: "Sign in",
        operatorName: name,
        errors,
      });
    }
    await startOperatorSession(request, name, console.deps);
    return reply.redirect("/accounts", 303);
  });

  app.post("/sign-out", { preValidation: app.csrfProtection }, async (request, reply) => {
    await endOperatorSession(request, console.deps);
    return reply.redirect("/sign-in", 303);
  });
}
