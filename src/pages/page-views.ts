import csrfProtection from "@fastify/csrf-protection";
import view from "@fastify/view";
import { Eta } from "eta";
import type { FastifyInstance } from "fastify";

// What every server-rendered door (the dashboard, the operator's console) sets up alike: a CSRF
// token for every form, Eta views that escape every `<%= %>`, and headers for pages that run no
// script and hold data no cache should keep. Each door registers its own session first.

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  // Pages show an account's traffic or the operator's view: no shared or back-button cache.
  "cache-control": "no-store",
};

/** Registers CSRF protection (on the door's secure session), the views in `views`, the headers. */
export async function registerPageViews(
  app: FastifyInstance,
  options: { views: string; production: boolean },
): Promise<void> {
  await app.register(csrfProtection, { sessionPlugin: "@fastify/secure-session" });
  await app.register(view, {
    engine: { eta: new Eta({ views: options.views, autoEscape: true, cache: options.production }) },
    templates: options.views,
  });
  app.addHook("onRequest", async (_request, reply) => {
    reply.headers(SECURITY_HEADERS);
  });
}
