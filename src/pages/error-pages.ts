import type { FastifyError, FastifyInstance, FastifyReply } from "fastify";

// The error and not-found pages of the server-rendered doors (the dashboard and the operator's
// console). Each door renders them in its own look and maps its own service refusals; what is
// left (a stale form, a bad request, a crash) is answered alike by both.

export type PageErrors = Record<string, string[]>;

export interface ErrorPages {
  /** Who answers, in the log and the stale-form message: "dashboard", "console". */
  name: string;
  /** Renders the door's `error` view with this title and these errors. */
  render(reply: FastifyReply, title: string, errors: PageErrors): FastifyReply;
  /** A service refusal as the page's status and errors; anything else is thrown again. */
  refusal(error: unknown, reply: FastifyReply): { status: number; errors: PageErrors };
}

/** Sets `app`'s error and not-found handlers to render the door's error page. */
export function registerErrorPages(app: FastifyInstance, pages: ErrorPages): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { status, errors } = errorPage(error, reply, pages);
    if (status >= 500) request.log.error({ err: error }, `${pages.name} request failed`);
    return pages.render(reply.code(status), `Error ${status}`, errors);
  });
  app.setNotFoundHandler((request, reply) =>
    pages.render(reply.code(404), "Not found", {
      request: [`no such page: ${request.url.split("?")[0]}`],
    }),
  );
}

function errorPage(
  error: FastifyError,
  reply: FastifyReply,
  pages: ErrorPages,
): { status: number; errors: PageErrors } {
  if (error.code === "FST_CSRF_MISSING_SECRET" || error.code === "FST_CSRF_INVALID_TOKEN") {
    return {
      status: 403,
      errors: {
        request: [`the form was not sent from this ${pages.name}, or it is stale: reload it`],
      },
    };
  }
  try {
    return pages.refusal(error, reply);
  } catch {
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) return { status, errors: { request: [error.message] } };
    return { status: 500, errors: { request: ["internal error; please retry later"] } };
  }
}
